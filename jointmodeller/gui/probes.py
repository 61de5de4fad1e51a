"""Probes of the running GUI for `jointmodeller bench` (group gui): start-up scripts and the live
run measurement. They live in the GUI package because they drive Qt; the bench only runs them in
child processes and reads their numbers.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import numpy as np

from jointmodeller.app.picking import mass_pose
from jointmodeller.app.run_poses import poses_from_mesh_frames
from jointmodeller.model.results import RunRecord
from jointmodeller.model.specs import Project

# Both print "SHOWN <wall seconds since the parent's t0> <this process's CPU seconds>"; the app also "VIEW ...".
STARTUP_BASELINE = """
import sys, time
t0 = float(sys.argv[1])
from PySide6.QtWidgets import QApplication, QMainWindow
app = QApplication([])
w = QMainWindow(); w.resize(1200, 800); w.show()
app.processEvents()
print("SHOWN", time.time() - t0, time.process_time(), flush=True)
"""

STARTUP_APP = """
import sys, time
t0 = float(sys.argv[1])
from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
from jointmodeller.gui.main_window import MainWindow
w = MainWindow(settings=QSettings(sys.argv[2], QSettings.IniFormat), confirm=False)
w.open_demo()
seen = {}
def stamp(key):
    seen.setdefault(key, (time.time() - t0, time.process_time()))
def view_ready():
    stamp("VIEW")
    QTimer.singleShot(0, app.quit)
w.viewport.windowPainted.connect(lambda: stamp("SHOWN"))
w.viewport.viewReady.connect(view_ready)
w.show()
QTimer.singleShot(120_000, app.quit)
app.exec()
for key in ("SHOWN", "VIEW"):
    if key in seen:
        print(key, *seen[key], flush=True)
w.close()
"""
"""Prints "SHOWN" when the main window with the demo (its tables and panels, the 3D view's placeholder)
has been painted, and "VIEW" when the 3D view exists and has rendered its first frame of the demo."""


class StallWatch:
    """Where the GUI thread is when its event loop is late: a ``tick_ms`` QTimer on the GUI thread
    stamps each tick; a plain watchdog thread looks every ``poll_ms`` and, while the last tick is
    older than ``threshold_ms``, records the GUI thread's stack (``sys._current_frames()``). A stall
    in C code that holds the GIL cannot be sampled by a Python thread: with ``dump_file`` set,
    faulthandler also dumps every thread's stack to it whenever a tick is ``threshold_ms`` late (a
    C-level timer, re-armed at each tick).

    ``stalls`` after :meth:`stop`: one dict per late tick, ``at_s`` (since start), ``ms`` (the gap) and
    ``stacks`` (each sample's innermost ``depth`` frames, "file:line function", outermost first);
    :meth:`report` prints them as text."""

    def __init__(self, threshold_ms: float = 50.0, tick_ms: int = 10, poll_ms: float = 5.0, depth: int = 14,
                 dump_file=None):
        self.threshold_s = threshold_ms / 1000.0
        self.tick_ms = int(tick_ms)
        self.poll_s = poll_ms / 1000.0
        self.depth = int(depth)
        self.dump_file = dump_file
        self.stalls: list[dict] = []
        self._samples: dict[float, list[list[str]]] = {}
        self._last = 0.0
        self._t0 = 0.0
        self._gui_ident = 0
        self._stop = None
        self._thread = None
        self._timer = None

    def start(self) -> None:
        import threading

        from PySide6.QtCore import QTimer

        self._gui_ident = threading.get_ident()
        self._t0 = self._last = time.perf_counter()
        self._stop = threading.Event()
        self._timer = QTimer()
        self._timer.setInterval(self.tick_ms)
        self._timer.timeout.connect(self._tick)
        self._timer.start()
        self._thread = threading.Thread(target=self._watch, name="stall-watch", daemon=True)
        self._thread.start()
        self._arm()

    def _arm(self) -> None:
        if self.dump_file is not None:
            import faulthandler

            faulthandler.dump_traceback_later(self.threshold_s, repeat=False, file=self.dump_file)

    def _tick(self) -> None:
        now = time.perf_counter()
        last, self._last = self._last, now
        self._arm()
        if now - last > self.threshold_s:
            self.stalls.append({"at_s": last - self._t0, "ms": 1000.0 * (now - last),
                                "stacks": self._samples.pop(last, [])})
        else:
            self._samples.pop(last, None)

    def _watch(self) -> None:
        import sys
        import traceback

        while not self._stop.wait(self.poll_s):
            last = self._last
            if time.perf_counter() - last <= self.threshold_s:
                continue
            frame = sys._current_frames().get(self._gui_ident)
            if frame is None:
                continue
            stack = traceback.extract_stack(frame)[-self.depth:]
            self._samples.setdefault(last, []).append(
                [f"{os.path.relpath(f.filename) if 'jointmodeller' in f.filename else os.path.basename(f.filename)}"
                 f":{f.lineno} {f.name}" for f in stack])
            del frame

    def stop(self) -> list[dict]:
        if self._timer is not None:
            self._timer.stop()
        if self._stop is not None:
            self._stop.set()
            self._thread.join(timeout=2.0)
        if self.dump_file is not None:
            import faulthandler

            faulthandler.cancel_dump_traceback_later()
        return self.stalls

    def report(self, min_ms: float = 0.0) -> str:
        """The stalls of at least ``min_ms``, each with its distinct sampled stacks (most seen first)."""
        import collections

        out = []
        for s in self.stalls:
            if s["ms"] < min_ms:
                continue
            out.append(f"stall {s['ms']:.0f} ms at {s['at_s']:.2f} s ({len(s['stacks'])} samples)")
            for stack, n in collections.Counter(tuple(st) for st in s["stacks"]).most_common(3):
                out.append(f"  x{n}:")
                out.extend(f"    {line}" for line in stack)
        return "\n".join(out)


def turning_study(project: Project, steps: int = 120, work_s: float = 0.004, angle_rad: float = 0.8):
    """fn(progress, cancel) -> RunRecord; each step burns ``work_s`` of CPU in numpy (holding the GIL
    in short pieces as solver code does) and reports a sample with the poses of every mass."""
    poses = [mass_pose(m) for m in project.masses]
    m_att = len(project.attachments)
    tissues = [a.name for a in project.attachments]

    def fn(progress, cancel):
        times, Rs, origins, fs = [], [], [], []
        status = "completed"
        for k in range(steps + 1):
            if cancel.is_set():
                status = "stopped"
                break
            t0 = time.perf_counter()
            a = np.random.default_rng(k).normal(size=2000)
            while time.perf_counter() - t0 < work_s:  # small element-wise kernels, as a force evaluation
                a = np.sin(a) * 1.0001 + np.cos(a) * 1e-3
            t = k / steps
            th = angle_rad * t
            Rz = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1]])
            R = np.stack([p[0] if i == 0 else Rz @ p[0] for i, p in enumerate(poses)])
            origin = np.stack([p[1] if i == 0 else Rz @ p[1] for i, p in enumerate(poses)])
            f = np.full(m_att, 40.0 * t)
            times.append(t)
            Rs.append(R)
            origins.append(origin)
            fs.append(f)
            progress(t, {"time": t, "poses": poses_from_mesh_frames(project, R[None], origin[None]),
                         "tissue_force_N": f, "labels": {"tissue_force_N": tissues}})
        return RunRecord(study="dynamics", status=status,
                         series={"time": np.array(times), "tissue_force_N": np.array(fs).reshape(len(times), m_att)},
                         labels={"tissue_force_N": tissues},
                         poses=poses_from_mesh_frames(project, np.array(Rs).reshape(-1, len(poses), 3, 3),
                                                      np.array(origins).reshape(-1, len(poses), 3)))

    return fn


def demo_window():
    """(QApplication, MainWindow) on the demo, shown at 1200×800 with settings and recovery in a temporary
    folder, its first events processed and its 3D view made: where the probes start."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from jointmodeller.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    tmp = tempfile.mkdtemp()
    os.environ.setdefault("JOINTMODELLER_RECOVERY_DIR", os.path.join(tmp, "recovery"))
    w = MainWindow(settings=QSettings(os.path.join(tmp, "s.ini"), QSettings.IniFormat), confirm=False)
    w.open_demo()
    w.resize(1200, 800)
    w.show()
    for _ in range(20):
        app.processEvents()
        time.sleep(0.01)
    t0 = time.perf_counter()
    while not w.viewport.has_view and time.perf_counter() - t0 < 120:  # made after the window is shown
        app.processEvents()
        time.sleep(0.01)
    w.viewport.ensure_view()
    return app, w


def measure_live(seconds_idle: float = 2.0, seconds_live: float = 8.0, t_end: float = 0.5,
                 watch: StallWatch | None = None) -> dict:
    """In this process (needs a display): frames drawn and event-loop stalls during a live run of
    the demo. A frame is a distinct simulated state drawn (never one drawn before); stalls are the
    gaps between ticks of a 10 ms timer from pressing start to the stored run shown (building the
    system, the live window, stopping, storing and plotting the run). ``error``: the study's failure
    message (then nothing was streamed), else None; ``platform``: Qt's platform plugin (under
    ``offscreen`` no window is exposed, so no frame is ever shown). ``watch``: a :class:`StallWatch`
    run over the same span as the stall figure (from pressing start to the stored run shown)."""
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from jointmodeller.render.scene import SceneFrame

    app, w = demo_window()
    project = w.doc.project
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))

    def spin(until) -> None:
        """Run the event loop (as the application does, blocking between events) until ``until()``."""
        loop = QEventLoop()
        check = QTimer()
        check.setInterval(5)
        check.timeout.connect(lambda: loop.quit() if until() else None)
        check.start()
        if not until():
            loop.exec()
        check.stop()

    t_warm = time.perf_counter()  # the main window's warm-up imports (begun after its first show) done, as
    spin(lambda: w.warm_up_finished() or time.perf_counter() - t_warm > 60)  # they are when a user presses Start
    timer.start()
    t_idle = time.perf_counter()
    spin(lambda: time.perf_counter() - t_idle > seconds_idle)
    idle = np.diff(ticks) if len(ticks) > 1 else np.zeros(1)

    note = "app dynamics study in its own process"
    fn = None
    if "dynamics" in w.studies:
        w.run_panel.t_end.setValue(t_end)
    else:
        fn = turning_study(project, steps=400, work_s=0.006)
        note = "scripted motion (app dynamics study not installed)"
    done = [False]
    batches = [0]
    failure: list[str] = []
    w.runFinished.connect(lambda _r: done.__setitem__(0, True))
    for runner in (w.runner, w.process_runner):
        runner.failed.connect(lambda m: (failure.append(m), done.__setitem__(0, True)))
        runner.sample.connect(lambda _s: batches.__setitem__(0, batches[0] + 1))
    ticks.clear()
    if watch is not None:
        watch.start()
    t_start = time.perf_counter()
    ticks.append(t_start)
    w.start_study("dynamics", fn=fn)
    spin(lambda: w.viewport.frames_drawn > 0 or done[0] or time.perf_counter() - t_start > 180)
    f0, d0, b0, r0 = w.viewport.frames_drawn, w.viewport.draw_seconds, batches[0], w.viewport.playback.received
    n_shown0 = len(w.viewport.shown_live)
    t0 = time.perf_counter()
    spin(lambda: done[0] or time.perf_counter() - t0 > seconds_live)
    t_live_end = time.perf_counter()
    wall = t_live_end - t0
    frames = w.viewport.frames_drawn - f0
    draw_s = w.viewport.draw_seconds - d0
    n_batches = batches[0] - b0
    received = w.viewport.playback.received - r0
    shown = list(w.viewport.shown_live)[n_shown0:]
    w._active.stop()
    spin(lambda: done[0] or time.perf_counter() - t_live_end > 120)  # the stopped run is stored and shown
    t_done = time.perf_counter()
    spin(lambda: time.perf_counter() - t_done > 1.0)
    timer.stop()
    if watch is not None:
        watch.stop()
    tk = np.asarray(ticks)
    gaps = np.diff(tk)
    worst = int(np.argmax(gaps))

    def phase_max(a: float, b: float) -> float:
        sel = (tk[1:] > a) & (tk[:-1] < b)
        return 1000 * float(gaps[sel].max()) if sel.any() else 0.0

    times = np.array([s[0] for s in shown], float)
    steps = np.array([s[1] for s in shown], int)

    # baseline: the naive redraw: every frame, each bone's full mesh is moved to G in numpy and
    # uploaded to VTK again (no actor transforms, no display decimation)
    scene = w.viewport.scene
    pl = w.viewport.plotter
    n_rebuild = 6
    import pyvista as pv

    from jointmodeller.app.picking import mass_pose, to_global

    for a in scene.mass_actors.values():
        a.SetVisibility(False)
    t1 = time.perf_counter()
    for _ in range(n_rebuild):
        for m in project.masses:
            faces = np.hstack([np.full((m.mesh.n_faces, 1), 3), m.mesh.faces]).ravel()
            poly = pv.PolyData(to_global(mass_pose(m), m.mesh.vertices_L), faces)
            pl.add_mesh(poly, color=m.colour, smooth_shading=True, name=f"naive:{m.name}", render=False)
        pl.render()
    rebuild_fps = n_rebuild / (time.perf_counter() - t1)
    for m in project.masses:
        pl.remove_actor(f"naive:{m.name}", render=False)
    for a in scene.mass_actors.values():
        a.SetVisibility(True)
    pose_t = time.perf_counter()
    for k in range(n_rebuild):
        scene.set_frame(SceneFrame(tissue_force_N=np.full(len(project.attachments), float(k))))
    pose_fps = n_rebuild / (time.perf_counter() - pose_t)
    w.close()
    return {"fps_live": frames / wall if wall > 0 else 0.0, "frames": frames, "wall_s": wall,
            "batches": n_batches, "states_received": received,
            "distinct_states": int(len(np.unique(times))) if len(times) else 0,
            "steps_spanned": int(len(np.unique(steps[steps >= 0]))) if len(steps) else 0,
            "sim_span_s": float(times.max() - times.min()) if len(times) else 0.0,
            "first_frame_s": t0 - t_start,
            "draw_ms_mean": 1000 * draw_s / max(frames, 1), "fps_pose_only_unthrottled": pose_fps,
            "fps_rebuild": rebuild_fps, "max_stall_ms": 1000 * float(gaps.max()),
            "stall_at_s": float(tk[worst] - t_start),
            "stall_start_ms": phase_max(t_start, t0), "stall_live_ms": phase_max(t0, t_live_end),
            "stall_end_ms": phase_max(t_live_end, tk[-1]),
            "idle_max_gap_ms": 1000 * float(idle.max()),
            "median_gap_ms": 1000 * float(np.median(gaps)), "note": note,
            "platform": QApplication.platformName(), "error": failure[0] if failure else None}


if __name__ == "__main__":
    if "--live" in sys.argv:
        # --stalls [ms]: also print where the GUI thread was in each stall of at least ms (default 80)
        # to stderr, and faulthandler's dumps of every thread to stderr as they happen
        stall_ms = None
        if "--stalls" in sys.argv:
            i = sys.argv.index("--stalls")
            stall_ms = float(sys.argv[i + 1]) if len(sys.argv) > i + 1 else 80.0
        watch = None if stall_ms is None else StallWatch(threshold_ms=stall_ms, dump_file=sys.stderr)
        print(json.dumps(measure_live(watch=watch)), flush=True)
        if watch is not None:
            print(watch.report(), file=sys.stderr, flush=True)
