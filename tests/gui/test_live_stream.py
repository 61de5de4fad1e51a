"""The live stream of a dynamics run: states sampled from each accepted integrator step (checked
against the integrator's own dense output), played by the viewport at a steady rate with every
state shown at most once, and plots drawn off the GUI thread with coalesced redraws. Behaviour
only: no timing asserts (fake clocks where time matters)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate

from jointmodeller.app.live import StepStreamer, split_batch, stream_poses
from jointmodeller.app.run_poses import mesh_frames
from jointmodeller.gui.playback import Playback
from tests.gui.live_study import turning_batch

pytestmark = [pytest.mark.gui]


def mesh_poses(system, ys):
    """Where the meshes of states ys (k, 13n) are drawn: R_GL (k, n, 3, 3), origin_G (k, n, 3)."""
    return mesh_frames(stream_poses(system, [str(i) for i in range(system.n_bodies)], ys))


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _built(project):
    from jointmodeller.app.build import build_mechanical_system

    return build_mechanical_system(project, contact=False, wrapping=False)


def _streaming(small_project, rate_hz: float):
    """(system, streamer started at t = 0, fake clock, batches, RK45 solver)."""
    built = _built(small_project)
    system = built.system
    clock = FakeClock()
    batches = []
    streamer = StepStreamer(system, list(built.body_names), list(built.tissue_names), batches.append,
                            rate_hz=rate_hz, clock=clock)
    streamer.start(0.0)
    solver = integrate.RK45(system.derivative, 0.0, built.state.y, 0.05, rtol=1e-9, atol=1e-12)
    return system, streamer, clock, batches, solver


def _step(solver, streamer) -> None:
    """One accepted step handed to the streamer as simulate's on_step does."""
    solver.step()
    streamer.stepped(solver.t, solver.y.copy(), lambda ts: solver.dense_output()(ts).T)


def test_streamer_sends_each_step_as_distinct_states_from_its_dense_output(small_project):
    """Each accepted step that took 0.125 s of (fake) wall time comes as 6 states at 48 per second,
    evenly spread over the step in simulated time, the last being the accepted state; the others
    agree with the integrator's own dense output of that step."""
    system, streamer, clock, batches, solver = _streaming(small_project, 48.0)
    steps = []
    for _ in range(8):
        t_prev = solver.t
        clock.now += 0.125  # each step "takes" an eighth of a second (exact in binary)
        _step(solver, streamer)
        steps.append((t_prev, solver.t, solver.dense_output(), solver.y.copy()))
    assert len(batches) == len(steps)
    all_times = []
    for batch, (t0, t1, dense, y1) in zip(batches, steps):
        states = split_batch(batch)
        times = np.array([s["time"] for s in states])
        assert len(states) == 6
        assert times[-1] == t1 and np.all(times > t0) and np.all(np.diff(times) > 0)
        assert np.diff(times) == pytest.approx(np.full(5, (t1 - t0) / 6), rel=1e-9)  # even in sim time
        R_ref, o_ref = [], []
        for t in times:
            R, o = mesh_poses(system, dense(t)[None])
            R_ref.append(R[0])
            o_ref.append(o[0])
        o_got = np.array([mesh_frames(s["poses"])[1][0] for s in states])
        R_got = np.array([mesh_frames(s["poses"])[0][0] for s in states])
        assert np.abs(o_got - np.array(o_ref)).max() < 1e-12  # the integrator's own states
        assert np.abs(R_got - np.array(R_ref)).max() < 1e-12
        assert o_got[-1] == pytest.approx(mesh_poses(system, y1[None])[1][0], abs=1e-15)  # accepted state
        assert batch["tissue_force_N"].shape == (6, system.tissues.count)
        all_times.extend(times)
    assert len(np.unique(all_times)) == len(all_times) == streamer.states_sent


def test_streamer_sends_only_accepted_states_when_steps_are_quicker_than_the_stream(small_project):
    system, streamer, clock, batches, solver = _streaming(small_project, 64.0)
    accepted = []
    for _ in range(40):
        clock.now += 1.0 / 256  # 256 steps a second: one slot per four steps
        _step(solver, streamer)
        accepted.append(solver.t)
    states = [s for b in batches for s in split_batch(b)]
    assert 0 < len(states) < len(accepted)
    assert all(s["time"] in accepted for s in states)  # only accepted states, none interpolated
    assert len(states) == 10


def test_finish_sends_the_last_accepted_state_once_when_no_slot_carried_it(small_project):
    """A run shorter than one stream slot (all its steps inside 1/rate_hz of wall time) still ends
    the live view on its last simulated state; a run whose last step filled a slot sends nothing more."""
    system, streamer, clock, batches, solver = _streaming(small_project, 10.0)
    for _ in range(5):
        clock.now += 0.001
        _step(solver, streamer)
    assert batches == []  # 5 ms of wall time: no slot yet
    streamer.finish()
    assert len(batches) == 1
    (state,) = split_batch(batches[0])
    assert state["time"] == solver.t
    assert mesh_frames(state["poses"])[1][0] == pytest.approx(mesh_poses(system, solver.y[None])[1][0], abs=1e-15)
    streamer.finish()
    assert len(batches) == 1  # once
    clock.now += 0.2
    _step(solver, streamer)  # two slots passed: this step is sent
    assert len(batches) == 2
    streamer.finish()
    assert len(batches) == 2  # already shown


def test_playback_shows_each_state_once_and_drops_what_a_late_draw_passed():
    pb = Playback(rate_hz=10.0, max_lag_s=1.0)
    pb.push(["a", "b", "c", "d"], now=0.0)  # one batch so far: played at rate_hz
    assert pb.take(now=0.0) == "a"  # the first at once
    assert pb.take(now=0.05) is None  # never the same state twice; "b" is 0.1 s on
    assert pb.next_due(now=0.05) == pytest.approx(0.1)
    assert pb.take(now=0.25) == "c" and pb.dropped == 1  # a late draw skips "b"
    assert (pb.received, pb.taken, pb.dropped, len(pb)) == (4, 2, 1, 1)
    pb.push(list(range(25)), now=0.3)  # more than max_lag_s at rate_hz waits: the oldest go
    assert len(pb) == 10 and pb.dropped == 1 + 16  # "d" and 0..14
    assert pb.take(now=0.31) == 15


def test_playback_spreads_bursts_over_the_time_to_the_next():
    """Batches of 30 states once a second (a slow integrator step each): the view keeps moving
    between batches instead of showing 30 states in half a second and then standing still."""
    pb = Playback(rate_hz=60.0)
    taken_at = []
    now, k = 0.0, 0
    while now < 6.0:
        if now >= k:  # a batch every second
            pb.push([(k, j) for j in range(30)], now=now)
            k += 1
        state = pb.take(now=now)
        if state is not None:
            taken_at.append((now, state))
        now = round(now + 0.01, 10)  # a draw every 10 ms
    times = np.array([t for t, _ in taken_at])
    states = [s for _, s in taken_at]
    assert len(set(states)) == len(states) and states == sorted(states)  # each once, in order
    assert pb.taken + pb.dropped + len(pb) == pb.received
    late = times[times > 2.0]
    assert np.diff(late).max() <= 0.1  # after the first batches: no standstill between batches
    per_second = np.histogram(late, bins=np.arange(2.0, 7.0))[0][:-1]
    assert per_second.min() >= 20  # about the 30 a second the batches bring


def test_live_batches_are_played_as_distinct_frames(qtbot, window, small_project):
    """A burst of streamed states is drawn over several turns of the event loop (not all at once),
    each drawn state once, in order; the drawn pose is the state's."""
    w = window(small_project)
    names = [m.name for m in small_project.masses]
    k = 12
    batch = turning_batch(small_project, k, step=np.arange(k) // 4)
    w.study_control.live_project = small_project
    f0 = w.viewport.frames_drawn
    w.study_control.live_sample(batch)
    assert w.viewport.frames_drawn == f0  # queued, not drawn in the caller's turn
    qtbot.waitUntil(lambda: len(w.viewport.playback) == 0 and w.viewport._awaiting is None, timeout=20000)
    shown = list(w.viewport.shown_live)
    times = [t for t, _ in shown]
    assert len(shown) == w.viewport.frames_drawn - f0 >= 1
    assert len(set(times)) == len(times) and times == sorted(times)  # distinct states, in order
    assert w.viewport.playback.taken + w.viewport.playback.dropped == k
    last = int(round(times[-1] / 0.01)) - 1
    M = np.asarray(w.viewport.scene.mass_actors[names[1]].user_matrix)
    a = np.linspace(0.0, 0.5, k)[last]  # turning_batch's state: about z, 1 mm a state higher
    assert M[:3, :3] == pytest.approx(np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]]),
                                      abs=1e-12)
    assert M[:3, 3] == pytest.approx([0.0, 0.0, 0.11 + 0.001 * last], abs=1e-12)


def test_plots_are_drawn_off_the_gui_thread_and_cursor_redraws_coalesce(qtbot):
    from jointmodeller.gui.plots import PlotPanel
    from jointmodeller.model.results import RunRecord

    panel = PlotPanel()
    qtbot.addWidget(panel)
    panel.resize(600, 400)
    panel.show()
    t = np.linspace(0, 1, 51)
    run = RunRecord(study="dynamics", series={"time": t, "tissue_force_N": np.outer(t, [1.0, 2.0])},
                    labels={"tissue_force_N": ["a", "b"]})
    panel.show_run(run, defer=True)
    assert panel.plotted == ["tissue_force_N"] and panel.figure is None  # built in the worker
    qtbot.waitUntil(lambda: panel.draws_shown == 1 and not panel.drawing, timeout=20000)
    assert len(panel.figure.axes) == 1 and panel.canvas.pixmap() is not None
    started = panel.draws_started
    for x in np.linspace(0.0, 0.8, 20):  # scrubbing: twenty cursor moves in one turn of the loop
        panel.set_time(x)
    assert panel.draws_started == started + 1  # one draw in flight, the rest coalesced
    qtbot.waitUntil(lambda: not panel.drawing, timeout=20000)
    assert panel.draws_started <= started + 2
    assert panel._cursors[0].get_xdata()[0] == pytest.approx(0.8)  # the newest time is the one shown


def test_an_implicit_run_streams_its_accepted_states_and_dense_output(small_project):
    """BDF through simulate's on_step: every batch ends on an accepted state, the states between come
    from BDF's own dense output, times only increase, and the last state is where the run ended."""
    from jointmodeller.core.multibody.integrate import report_times, simulate

    built = _built(small_project)
    system = built.system
    clock = FakeClock()
    batches, accepted = [], []
    streamer = StepStreamer(system, list(built.body_names), list(built.tissue_names), batches.append,
                            rate_hz=48.0, clock=clock)
    streamer.start(0.0)

    def on_step(t, y, interpolate):
        clock.now += 0.125
        accepted.append((t, y.copy()))
        mid = 0.5 * (accepted[-2][0] + t) if len(accepted) > 1 else 0.5 * t
        assert np.all(np.isfinite(interpolate(np.array([mid]))))
        streamer.stepped(t, y, interpolate)

    traj = simulate(system, built.state, 0.02, 1e-6, report_times(0.0, 0.02, 0.01), method="BDF", on_step=on_step)
    assert traj.status == "completed" and len(accepted) == traj.n_steps
    states = [st for b in batches for st in split_batch(b)]
    times = np.array([st["time"] for st in states])
    assert len(batches) == len(accepted) and np.all(np.diff(times) > 0)
    ends = {t: y for t, y in accepted}
    for b in batches:
        t_end = float(b["time"][-1])
        assert t_end in ends
        assert mesh_frames(b["poses"])[1][-1] == pytest.approx(mesh_poses(system, ends[t_end][None])[1][0], abs=1e-15)
    assert times[-1] == pytest.approx(0.02, abs=1e-12)
    final = mesh_poses(system, traj.y[-1][None])[1][0]
    assert mesh_frames(states[-1]["poses"])[1][0] == pytest.approx(final, abs=1e-12)
