"""Study adapters for the runner: every study as ``fn(progress, cancel) -> RunRecord`` where
``progress(fraction, sample=None)``; dynamics also sends live batches of simulated states.

The live dynamics run is app.studies' dynamics study with one addition: after every accepted
integrator step :class:`StepStreamer` samples the step at STREAM_HZ slots of wall time from the
integrator's own dense output (explicit and implicit methods alike), so the GUI plays distinct
simulated states at a steady rate however long a step takes. The stored run is the same as
``run_dynamics`` stores.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from jointmodeller.model.results import BodyPoses, RunRecord, concat_poses
from jointmodeller.model.specs import Project

STREAM_HZ = 90.0
"""Simulated states per second of wall time in the live stream (the viewport draws what it can of them)."""
MAX_STATES_PER_STEP = 360
"""A step that took longer than MAX_STATES_PER_STEP / STREAM_HZ seconds is sampled this many times."""
EXTRAS_DUTY = 0.10
"""At most this share of the study's wall time goes to display extras (tissue forces and wrapped
paths at accepted states, contact patches)."""
CONTACT_SAMPLE_HZ = 2.0
"""Contact patches are evaluated for display at most this often (each costs a contact evaluation)."""


def stream_poses(system, names: list[str], ys: np.ndarray) -> BodyPoses:
    """The poses of states ys (k, 13n) (quaternions normalised), as a run stores them."""
    from jointmodeller.app.run_poses import poses_of_states  # the GUI starts without the numerics

    return poses_of_states(system, names, ys)


def _tissue_ends(system, kin) -> tuple[np.ndarray, np.ndarray]:
    ts = system.tissues
    return kin.points_G(ts.body_a, ts.r_a_B), kin.points_G(ts.body_b, ts.r_b_B)


def _extras(system, t: float, y: np.ndarray, contacts: list | None) -> dict:
    """Tissue forces (m,) and paths (list of (k_i, 3)) at state y, and contact points/pressures when
    ``contacts`` are given; {} when the system cannot say (a display extra never stops the run)."""
    out: dict = {}
    try:
        kin = system.kinematics(y)
        loads = system.tissue_forces.evaluate(t, kin)
        out["tissue_force_N"] = np.asarray(loads.tension, float)
        pa, pb = _tissue_ends(system, kin)
        paths = [np.vstack([pa[i], pb[i]]) for i in range(system.tissues.count)]
        last = getattr(getattr(system, "path_provider", None), "last", {}) or {}
        for i, wp in last.items():
            if 0 <= int(i) < len(paths) and getattr(wp, "points_G", None) is not None and len(wp.points_G) >= 2:
                paths[int(i)] = np.asarray(wp.points_G, float)
        out["tissue_paths_G"] = paths
        if contacts:
            res = [c.evaluate(t, kin) for c in contacts if hasattr(c, "evaluate")]
            if res:
                out["contact_points_G"] = np.concatenate([r.points_G for r in res]).reshape(-1, 3)
                out["contact_pressure_Pa"] = np.concatenate([r.pressure for r in res]).reshape(-1)
    except Exception:  # a display extra: never let it stop the run
        return {}
    return out


def _blend_paths(a: list | None, b: list, w: float) -> list:
    """Paths between two solved ones: point-wise blend where a path kept its point count, else b's."""
    if a is None or len(a) != len(b):
        return [np.array(p, float) for p in b]
    return [(1.0 - w) * pa + w * pb if pa.shape == pb.shape else np.array(pb, float) for pa, pb in zip(a, b)]


class StepStreamer:
    """Live states of an integration, at ``rate_hz`` per second of wall time, all simulated states.

    Give it the initial state (:meth:`start`) and every accepted step (:meth:`stepped`, with the
    step's end time, end state and dense output). After a step it sends ``emit(batch)`` with one state
    per stream slot that passed while the step was computed, spread evenly over the step in simulated
    time: the last is the accepted state, the others come from the integrator's dense output of the
    step. When steps are quicker than the slots, only accepted states are sent (at most one per slot).

    A batch is a dict of stacked arrays: time (k,), step (k,) (index of the accepted step), poses
    (model.results.BodyPoses of k samples), tissue_force_N (k, m) and tissue_paths_G (k lists of
    (k_i, 3)) when known, contact_points_G / contact_pressure_Pa of the last state (at most
    CONTACT_SAMPLE_HZ), step_wall_s, labels and ``"batch": True``. Tissue forces and wrapped paths
    are solved at accepted states within an EXTRAS_DUTY share of the wall time and blended between
    them (path ends always follow the bones).
    """

    def __init__(self, system, names: list[str], tissue_names: list[str], emit: Callable[[dict], None], *,
                 contacts: list | None = None, rate_hz: float = STREAM_HZ,
                 clock: Callable[[], float] = time.perf_counter):
        self.system = system
        self.names = list(names)
        self.tissue_names = list(tissue_names)
        self.emit = emit
        self.contacts = list(contacts or [])
        self.rate_hz = float(rate_hz)
        self.clock = clock
        self._prev_t = 0.0  # time of the last accepted state (set by start)
        self._prev_extras: tuple | None = None  # (t, forces, paths)
        self._slot_wall: float | None = None  # None: not started
        self._step_wall = 0.0
        self._started = clock()
        self._extras_s = 0.0
        self._last_contact = -np.inf
        self.steps = 0
        self.states_sent = 0
        self._unsent: tuple[float, np.ndarray] | None = None  # the last accepted state, when not yet sent
        self.kept: list[tuple[np.ndarray, np.ndarray]] | None = None
        """When a list: every streamed (times (k,), states (k, d)) batch is appended to it (so a stopped
        run can keep what was shown)."""

    def start(self, t: float) -> None:
        """The integration starts at time t (the stream's slots count from now)."""
        self._prev_t = float(t)
        self._slot_wall = self._step_wall = self.clock()

    def stepped(self, t: float, y: np.ndarray, interpolate: Callable[[np.ndarray], np.ndarray]) -> None:
        """The integrator accepted a step ending at time t in state y; ``interpolate(ts) -> (k, d)``
        gives the states within the step (valid during this call only)."""
        if self._slot_wall is None:
            self.start(t)
            return
        if not t > self._prev_t:
            return
        now = self.clock()
        self.steps += 1
        slots = int(np.floor((now - self._slot_wall) * self.rate_hz))
        t0 = self._prev_t
        self._prev_t = float(t)
        if slots < 1:
            self._unsent = (float(t), np.array(y, float))
            return
        self._unsent = None
        if slots > MAX_STATES_PER_STEP:
            slots = MAX_STATES_PER_STEP
            self._slot_wall = now
        else:
            self._slot_wall += slots / self.rate_hz
        ts = t0 + (t - t0) * np.arange(1, slots + 1) / slots
        ts[-1] = t
        ys = np.empty((slots, len(y)))
        if slots > 1:
            ys[:-1] = interpolate(ts[:-1])
        ys[-1] = y
        if self.kept is not None:
            self.kept.append((ts.copy(), ys.copy()))
        self.emit(self._batch(ts, ys, now))
        self._step_wall = now

    def finish(self) -> None:
        """The integration ended: send its last accepted state if no slot has carried it yet (a run
        shorter than one stream slot still shows where it ended)."""
        if self._unsent is None:
            return
        t, y = self._unsent
        self._unsent = None
        ts, ys = np.array([t]), y[None]
        if self.kept is not None:
            self.kept.append((ts.copy(), ys.copy()))
        now = self.clock()
        self.emit(self._batch(ts, ys, now))
        self._step_wall = now

    def _batch(self, ts: np.ndarray, ys: np.ndarray, now: float) -> dict:
        system = self.system
        k = len(ts)
        self.states_sent += k
        batch = {"batch": True, "time": ts, "step": np.full(k, self.steps),
                 "poses": stream_poses(system, self.names, ys), "step_wall_s": float(now - self._step_wall),
                 "labels": {"tissue_force_N": self.tissue_names}}
        t = float(ts[-1])
        spent_ok = self._extras_s <= EXTRAS_DUTY * (now - self._started)
        with_contact = bool(self.contacts) and spent_ok and now - self._last_contact >= 1.0 / CONTACT_SAMPLE_HZ
        extras = {}
        if spent_ok or self._prev_extras is None:
            c0 = self.clock()
            extras = _extras(system, t, ys[-1], self.contacts if with_contact else None)
            self._extras_s += self.clock() - c0
            if with_contact:
                self._last_contact = now
        a = self._prev_extras
        if "tissue_force_N" in extras:
            b = (t, extras["tissue_force_N"], extras["tissue_paths_G"])
        elif a is not None:
            b = a
        else:
            return batch
        ta = a[0] if a is not None else b[0]
        w = np.clip((ts - ta) / (b[0] - ta), 0.0, 1.0) if b[0] > ta else np.ones(k)
        fa = a[1] if a is not None and len(a[1]) == len(b[1]) else b[1]
        batch["tissue_force_N"] = (1.0 - w)[:, None] * fa[None] + w[:, None] * b[1][None]
        paths = []
        try:
            for j in range(k):
                pj = _blend_paths(a[2] if a is not None else None, b[2], float(w[j]))
                pa, pb = _tissue_ends(system, system.kinematics(ys[j]))
                for i, p in enumerate(pj):
                    p[0], p[-1] = pa[i], pb[i]
                paths.append(pj)
            batch["tissue_paths_G"] = paths
        except Exception:  # a display extra: never let it stop the run
            pass
        for key in ("contact_points_G", "contact_pressure_Pa"):
            if key in extras:
                batch[key] = extras[key]
        self._prev_extras = b
        return batch


class LiveState(dict):
    """One state of a live batch, as :func:`split_batch` gives it: a plain sample dict whose "poses"
    (the BodyPoses of this state alone) is made when first read (``state["poses"]``,
    ``state.get("poses")``), so splitting a batch of hundreds of states on the GUI thread checks no
    pose of the states the view skips. Until read, "poses" is not among its keys()."""

    __slots__ = ("_batch", "_index")

    def __init__(self, batch: dict, index: int, items: dict):
        super().__init__(items)
        self._batch = batch
        self._index = index

    def _poses(self) -> BodyPoses:
        poses = self._batch["poses"].take([self._index])
        self["poses"] = poses
        return poses

    def __missing__(self, key):
        if key == "poses":
            return self._poses()
        raise KeyError(key)

    def __contains__(self, key) -> bool:
        return key == "poses" or super().__contains__(key)

    def get(self, key, default=None):
        if key == "poses" and not super().__contains__(key):
            return self._poses()
        return super().get(key, default)


def split_batch(batch: dict) -> list[dict]:
    """The states of a live batch as single samples (what ``render.frames.frame_from_sample`` reads),
    each a :class:`LiveState` whose poses are taken from the batch when read; a plain sample comes
    back alone. Contact data goes with the last state."""
    if not isinstance(batch, dict) or not batch.get("batch"):
        return [batch]
    times = np.asarray(batch["time"], float).tolist()
    steps = np.asarray(batch["step"]).astype(int).tolist()
    paths = batch.get("tissue_paths_G")
    forces = batch.get("tissue_force_N")
    labels = batch["labels"]
    out: list[dict] = []
    for j, (t, step) in enumerate(zip(times, steps)):
        s = {"time": t, "step": step, "labels": labels}
        if forces is not None:
            s["tissue_force_N"] = forces[j]
        if paths is not None:
            s["tissue_paths_G"] = paths[j]
        out.append(LiveState(batch, j, s))
    for key in ("contact_points_G", "contact_pressure_Pa"):
        if key in batch and out:
            out[-1][key] = batch[key]
    return out


def live_dynamics(project: Project, *, t_end: float, report_dt: float, progress: Callable, cancel,
                  digits: float = 6.0, method: str = "auto", contact: bool = True,
                  wrapping: bool = True, rate_hz: float = STREAM_HZ, **limits) -> RunRecord:
    """app.studies.run_dynamics with live batches of the simulated states (see :class:`StepStreamer`)
    sent as ``progress(fraction, batch)``; ``limits``: max_wall_s, max_steps (run_dynamics' defaults
    when not given) and contact_geometry. A run that ends early (stopped, failed) also keeps every
    state that was streamed (:func:`keep_streamed`): what the user saw is what is stored."""
    from jointmodeller.app.studies import run_dynamics

    fraction_done = [0.0]
    streamed: list = []
    built_seen: list = []
    streamers: list[StepStreamer] = []

    def on_step(built):
        s = StepStreamer(built.system, list(built.body_names), list(built.tissue_names),
                         lambda batch: progress(fraction_done[0], batch), contacts=built.contacts, rate_hz=rate_hz)
        s.kept = streamed
        built_seen.append(built)
        streamers.append(s)
        t0 = float(built.state.t)
        s.start(t0)

        def stepped(t, y, interpolate):
            fraction_done[0] = min(1.0, (t - t0) / max(float(t_end) - t0, 1e-300))
            s.stepped(t, y, interpolate)

        return stepped

    def report(fraction: float) -> None:
        fraction_done[0] = fraction
        progress(fraction)

    run = run_dynamics(project, t_end=t_end, report_dt=report_dt, digits=digits, method=method, progress=report,
                       cancel=cancel, contact=contact, wrapping=wrapping, on_step=on_step, **limits)
    if streamers:
        streamers[-1].finish()  # the last simulated state, when the run ended inside a stream slot
    if run.status != "completed" and streamed and built_seen:
        run = keep_streamed(run, built_seen[-1], streamed)
    simulated = float(run.summary.get("simulated_s") or 0.0)
    progress(1.0 if run.status == "completed" else simulated / max(t_end, 1e-12))
    return run


KEEP_STREAMED_MAX = 2000
"""A run that ends early keeps at most this many streamed states (evenly thinned beyond it): each is
evaluated once more (tissue forces, contact) for the stored series."""


def keep_streamed(run: RunRecord, built, streamed: list[tuple[np.ndarray, np.ndarray]]) -> RunRecord:
    """The run with the streamed states (free-body layout, from :class:`StepStreamer`) merged into its
    series in time order; a time the run already holds keeps the run's sample. Runs whose series
    hold more than the state gives (a tree run's q and u) come back unchanged."""
    from jointmodeller.app.studies import state_series

    ts = np.concatenate([t for t, _ in streamed])
    ys = np.concatenate([y for _, y in streamed])
    have = np.asarray(run.series.get("time", np.zeros(0)), float).reshape(-1)
    new = ~np.isin(ts, have) & np.isfinite(ts) & np.isfinite(ys).all(axis=1)
    ts, ys = ts[new], ys[new]
    if len(ts) == 0:
        return run
    if len(ts) > KEEP_STREAMED_MAX:
        pick = np.unique(np.linspace(0, len(ts) - 1, KEEP_STREAMED_MAX).round().astype(int))
        ts, ys = ts[pick], ys[pick]
    try:
        poses, extra, _ = state_series(built, ts, ys)
    except Exception:  # the stored run must not be lost to its extra samples
        return run
    if set(run.series) != set(extra) or any(
            np.asarray(run.series[k]).shape[1:] != np.asarray(extra[k]).shape[1:] for k in extra) or (
            run.poses is None or run.poses.bodies != poses.bodies):
        return run
    order = np.argsort(np.concatenate([have, ts]), kind="stable")
    run.series = {k: np.concatenate([np.asarray(run.series[k]), np.asarray(extra[k])])[order] for k in run.series}
    run.poses = concat_poses([run.poses, poses]).take(order)
    run.summary = dict(run.summary, streamed_states_kept=int(len(ts)))
    run.message = (run.message + "; " if run.message else "") + f"{len(ts)} streamed states kept"
    return run


def study_function(study: str, project: Project, **options) -> Callable:
    """``fn(progress, cancel)`` running ``study`` ("equilibrium", "dynamics", "laxity") on ``project``."""
    if study == "dynamics":
        t_end = float(options.get("t_end", 1.0))
        report_dt = float(options.get("report_dt", min(t_end / 200.0, 0.01)))
        extra = {k: options[k] for k in ("digits", "method", "contact", "wrapping", "max_wall_s", "max_steps",
                                         "contact_geometry") if k in options}
        return lambda progress, cancel: live_dynamics(project, t_end=t_end, report_dt=report_dt,
                                                      progress=progress, cancel=cancel, **extra)
    from jointmodeller.app.registry import study as registered

    entry = registered(study)  # KeyError naming the choices
    chosen = {k: v for k, v in options.items() if k in entry.options}
    if "live" in entry.options:
        chosen.setdefault("live", True)  # the viewport follows each solved pose
    return lambda progress, cancel: entry.run(project, progress=progress, cancel=cancel, **chosen)


__all__ = ["SPARE_IMPORTS", "STREAM_HZ", "LiveState", "StepStreamer", "keep_streamed", "live_dynamics",
           "serve_one_study", "split_batch", "stream_poses", "study_function"]


PROGRESS_INTERVAL_S = 1.0 / 20.0
CHILD_NICE = 5
"""The study process's niceness increment: it computes whenever the GUI does not need the CPU."""


SPARE_IMPORTS = ("jointmodeller.app.registry", "jointmodeller.app.studies", "jointmodeller.app.build",
                 "jointmodeller.app.laxity", "jointmodeller.app.mobilized", "jointmodeller.core.multibody.integrate",
                 "scipy.integrate", "scipy.optimize")
"""What a spare study process imports while it waits for its study (a study's own imports: seconds)."""


def serve_one_study(jobs, queue, cancel, resume) -> None:
    """Entry point of a spare study process, started before the user asks for a study: imports what
    studies need (:data:`SPARE_IMPORTS`), says ("ready", None) through ``queue``, then runs the one
    study that arrives on ``jobs`` as (study, project, options) as :func:`run_in_child` does; None
    on ``jobs`` (or its end) lets the process exit unused."""
    import importlib

    _lower_priority()
    for name in SPARE_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional part: the study imports it (and says why) if it needs it
            pass
    queue.put(("ready", None))
    try:
        job = jobs.get()
    except (EOFError, OSError):
        return
    if job is None:
        return
    study, project, options = job
    _run_study(study, project, options, queue, cancel, resume)


def _lower_priority() -> None:
    """This process computes at CHILD_NICE below the GUI: drawing and input come first when the CPUs
    are busy."""
    import os

    if hasattr(os, "nice"):
        try:
            os.nice(CHILD_NICE)
        except OSError:
            pass


def run_in_child(study: str, project: Project, options: dict, queue, cancel, resume) -> None:
    """Entry point of a study process: runs ``study`` and sends ("progress", f), ("sample", dict),
    then ("done", RunRecord) or ("failed", message) through ``queue``; waits while ``resume`` is clear
    and stops when ``cancel`` is set. No Qt here: the GUI process polls the queue."""
    _lower_priority()
    _run_study(study, project, options, queue, cancel, resume)


def _run_study(study: str, project: Project, options: dict, queue, cancel, resume) -> None:
    """Run ``study`` in this (study) process, reporting through ``queue`` as run_in_child says."""
    import traceback

    last = [-1.0, 0.0]

    def progress(fraction: float, sample=None) -> None:
        resume.wait()
        now = time.perf_counter()
        f = float(fraction)
        if (f > last[0] and now - last[1] >= PROGRESS_INTERVAL_S) or f >= 1.0:
            last[0], last[1] = f, now
            queue.put(("progress", f))
        if sample is not None:
            queue.put(("sample", sample))

    try:
        run = study_function(study, project, **options)(progress, cancel)
    except Exception as exc:  # reported to the GUI, which stays up
        queue.put(("failed", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"))
        return
    queue.put(("done", run))
