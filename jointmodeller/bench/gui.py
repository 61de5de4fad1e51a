"""GUI benchmarks: start-up time with the demo, viewport frame rate and event-loop stalls during a
live run of the demo. Each figure has a baseline measured in the same run.

- startup_s: process start to main window shown with the demo (demo cache warm; the cold figure is in
  the note): the window painted with its panels and tables holding the demo; since the progressive
  start-up (2026-11-27) its 3D view is still a placeholder then ("Preparing the 3D view…"); baseline:
  a bare QApplication with an empty QMainWindow shown.
- startup_view_s: process start to the first frame of the demo rendered in the 3D view (the view made
  after the window is shown); same runs and baseline as startup_s. Before the progressive start-up the
  window was shown with its first 3D frame, so the two figures were one.
- viewport_fps_live: frames per second the window showed during 8 s of a live dynamics run of the
  demo, where a frame is a distinct simulated state (streamed from the integrator's accepted steps and
  its own dense output of each step) drawn and composed on screen, never one shown before; baseline: the same frames
  drawn by rebuilding the scene (mesh upload) each frame.
- edit_redraw_ms: a one-cell edit of the demo (a tissue type's stiffness) to the scene redrawn, the
  scene updated incrementally (only the actors the edit touched); baseline: the same edits with the
  scene rebuilt whole (``Viewport.incremental`` off), alternating with them in one process
  (:mod:`jointmodeller.gui.edit_probe`); medians, with the part spent updating and rendering the scene
  in the note.
- max_stall_ms: longest gap between ticks of a 10 ms timer from pressing start to the stopped run
  stored and plotted (system build, live playback, stop, storing, plots); baseline: the same timer
  with the window idle (the machine's own scheduling noise).
- live_sim_rate (issue 17): simulated time shown per wall second during the same live run (the span of
  the simulated times of the states the window showed, over the wall time they took; ≥ 1 is real
  time); baseline: MuJoCo's real-time factor on the same project (``bench.mujoco_peer``, a short
  time box, ``mj_step`` alone, no drawing), None without mujoco.

The live run is the dynamics study of the app when it is installed, else a scripted motion of the
demo's free bone (noted). Windows need a display: without one the measurements run under xvfb-run
(Xvfb, as the GUI tests through pytest-xvfb), and without that the group fails saying so. A window-less
Qt platform (``QT_QPA_PLATFORM=offscreen``, where no frame is ever shown) is not passed on to the
measuring processes. When the live study fails, the live figures are NaN with the reason in the note.

startup_s is the fastest of three warm starts, beside the fastest of three baseline starts measured
in turn with them (a shared machine's load comes and goes); the note lists all of them and the CPU
time the fastest GUI process had used by its first window.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from jointmodeller.bench.harness import Figure
from jointmodeller.gui.probes import STARTUP_APP, STARTUP_BASELINE

NO_WINDOW_PLATFORMS = ("offscreen", "minimal")
"""Qt platform plugins that expose no window: a frame is never shown there (0 fps), so the children
do not inherit them from ``QT_QPA_PLATFORM``."""
WARM_STARTS = 3
"""Warm start-ups measured (and as many baseline ones); the figure is the fastest of them."""


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _child_env(env: dict) -> dict:
    """The children's environment: a window-less Qt platform plugin (e.g. ``QT_QPA_PLATFORM=offscreen``
    set for headless tests) is dropped, so they draw on the display or under Xvfb."""
    env = dict(env)
    if env.get("QT_QPA_PLATFORM", "").split(":")[0] in NO_WINDOW_PLATFORMS:
        del env["QT_QPA_PLATFORM"]
    return env


def _wrap(cmd: list[str]) -> list[str]:
    """``cmd`` run on the display, else under xvfb-run (a virtual X server, as the GUI tests use
    through pytest-xvfb); without either the group cannot measure and says so."""
    if _has_display() or sys.platform == "win32" or sys.platform == "darwin":
        return cmd
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        raise RuntimeError("the gui group needs a display: set DISPLAY, or install Xvfb (xvfb-run; apt package "
                           "xvfb) so that it runs the windows on a virtual X server")
    return [xvfb, "-a", "-s", "-screen 0 1600x1000x24"] + cmd


def _shown_after(script: str, env: dict, *args: str, key: str = "SHOWN") -> tuple[float, float]:
    """(wall seconds from before the process starts to the window shown, that process's CPU seconds
    by then); the CPU time depends much less on a shared machine's load than the wall time."""
    return _stamps(script, env, *args)[key]


def _stamps(script: str, env: dict, *args: str) -> dict[str, tuple[float, float]]:
    """The (wall, CPU) seconds the start-up script printed, by key ("SHOWN"; the app's "VIEW": the 3D
    view's first frame). A script that prints no "VIEW" (an older one, which showed the window with its
    first 3D frame) gives its "SHOWN" for both."""
    t0 = time.time()
    out = subprocess.run(_wrap([sys.executable, "-c", script, repr(t0), *args]), capture_output=True, text=True,
                         env=_child_env(env), timeout=300)
    seen: dict[str, tuple[float, float]] = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("SHOWN", "VIEW"):
            seen[parts[0]] = (float(parts[1]), float(parts[2]) if len(parts) > 2 else float("nan"))
    if "SHOWN" not in seen:
        raise RuntimeError(f"start-up script failed: {out.stderr[-800:]}")
    seen.setdefault("VIEW", seen["SHOWN"])
    return seen


def _startup(tmp: str) -> tuple[list[dict], float, list[tuple[float, float]]]:
    """(warm start-ups, the cold one's wall time to the window shown, baseline start-ups): each warm
    one {"SHOWN": (wall, CPU), "VIEW": (wall, CPU)} seconds, each baseline (wall, CPU): the cold start
    builds the demo and its decimated meshes into a fresh cache; the warm ones read them back. Baseline
    and warm runs alternate, so both see the same load of a shared machine."""
    env = dict(os.environ, JOINTMODELLER_CACHE=os.path.join(tmp, "cache"),
               JOINTMODELLER_RECOVERY_DIR=os.path.join(tmp, "recovery"))
    ini = os.path.join(tmp, "settings.ini")
    cold = _shown_after(STARTUP_APP, env, ini)[0]
    warm: list[dict] = []
    base = []
    for _ in range(WARM_STARTS):
        base.append(_shown_after(STARTUP_BASELINE, env))
        warm.append(_stamps(STARTUP_APP, env, ini))
    return warm, cold, base


def _edit_redraw(env: dict) -> Figure:
    """gui.edit_redraw_ms, measured in a child process (needs a window, as the live figures)."""
    out = subprocess.run(_wrap([sys.executable, "-m", "jointmodeller.gui.edit_probe"]), capture_output=True,
                         text=True, env=_child_env(env), timeout=300)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"edit redraw measurement failed: {out.stderr[-800:]}")
    d = json.loads(lines[-1])
    med = {k: statistics.median(d[k]) for k in ("incremental_ms", "full_ms", "incremental_scene_ms", "full_scene_ms")}
    return Figure("edit_redraw_ms", med["incremental_ms"], "ms", med["full_ms"],
                  "full rebuild of the scene for the same edit (all actors removed and re-added)", True,
                  note=f"demo, {len(d['incremental_ms'])} edits of spring {d['spring']!r}'s kx per mode, alternating, "
                       f"medians; of that, the scene updated and rendered {med['incremental_scene_ms']:.1f} ms "
                       f"(rebuilt and rendered {med['full_scene_ms']:.1f} ms); the rest is the document and its "
                       f"tables; {d['actors']} actors; Qt platform {d['platform']}")


def run() -> list[Figure]:
    tmp = tempfile.mkdtemp(prefix="jm-bench-gui-")
    try:
        warm, cold, base = _startup(tmp)
        env = dict(os.environ, JOINTMODELLER_CACHE=os.path.join(tmp, "cache"),
                   JOINTMODELLER_RECOVERY_DIR=os.path.join(tmp, "recovery"))
        out = subprocess.run(_wrap([sys.executable, "-m", "jointmodeller.gui.probes", "--live"]), capture_output=True,
                             text=True, env=_child_env(env), timeout=300)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError(f"live measurement failed: {out.stderr[-800:]}")
        live = json.loads(lines[-1])
        edit = _edit_redraw(env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    shown = [s["SHOWN"] for s in warm]
    viewed = [s["VIEW"] for s in warm]
    w_wall, w_cpu = min(shown)
    v_wall, v_cpu = min(viewed)
    b_wall, b_cpu = min(base)
    startup = Figure("startup_s", w_wall, "s", b_wall, "bare QApplication + empty QMainWindow shown", True,
                     note=f"process start to the main window painted with the demo in its tables (the 3D view "
                          f"a placeholder until startup_view_s); demo cache warm (the project and its decimated "
                          f"meshes), fastest of {len(warm)} "
                          f"({', '.join(f'{t:.2f}' for t, _ in shown)} s; baseline "
                          f"{', '.join(f'{t:.2f}' for t, _ in base)} s); CPU time of the GUI process to its "
                          f"first window {w_cpu:.2f} s (baseline {b_cpu:.2f} s; less load-dependent than the wall "
                          f"time); cold (demo built from meshes) {cold:.2f} s")
    startup_view = Figure("startup_view_s", v_wall, "s", b_wall, "bare QApplication + empty QMainWindow shown",
                          True, note=f"process start to the first frame of the demo rendered in the 3D view, same "
                                     f"warm starts as startup_s, fastest of {len(warm)} "
                                     f"({', '.join(f'{t:.2f}' for t, _ in viewed)} s); CPU time by then "
                                     f"{v_cpu:.2f} s")
    not_shown = None
    if live.get("error"):
        not_shown = f"the live dynamics study failed: {live['error'].strip().splitlines()[-1]}"
    elif live.get("platform") in NO_WINDOW_PLATFORMS:
        not_shown = f"Qt platform {live['platform']!r} exposes no window, so no frame is shown: needs a display"
    mujoco_rate, mujoco_note = _mujoco_rate()
    if not_shown is not None:  # nothing to measure: say why instead of 0 fps and an idle stall
        nan = float("nan")
        return [startup, startup_view, edit,
                Figure("live_sim_rate", nan, "sim s/wall s", mujoco_rate, mujoco_note, False,
                       note=f"not measured: {not_shown}")] + [
            Figure(name, nan, unit, live["fps_rebuild"] if unit == "fps" else live["idle_max_gap_ms"], base_name,
                   unit == "ms", note=f"not measured: {not_shown}")
            for name, unit, base_name in (
                ("viewport_fps_live", "fps", "naive redraw: full meshes moved in numpy and uploaded per frame"),
                ("max_stall_ms", "ms", "same 10 ms timer, window idle"))] + [
            Figure("viewport_fps_pose_only", live["fps_pose_only_unthrottled"], "fps", live["fps_rebuild"],
                   "naive redraw: full meshes moved in numpy and uploaded per frame", False,
                   note="demo frames drawn back to back (actor transforms, tissue colours), no study running")]
    frame_note = (f"a frame = a distinct simulated state shown by the window (never one shown before); "
                  f"{live['note']}; {live['frames']} frames in {live['wall_s']:.1f} s after the first "
                  f"(at {live['first_frame_s']:.1f} s): {live['distinct_states']} distinct states from "
                  f"{live['steps_spanned']} accepted integrator steps spanning {live['sim_span_s']:.3g} s of "
                  f"simulated time ({live['states_received']} states streamed in {live['batches']} batches, "
                  f"90 per wall second of the study, from the integrator's dense output of each accepted step, "
                  f"the last being the accepted state; the rest skipped); mean frame "
                  f"(asked to shown) {live['draw_ms_mean']:.1f} ms; pose-only unthrottled "
                  f"{live['fps_pose_only_unthrottled']:.1f} fps")
    return [
        startup,
        startup_view,
        edit,
        Figure("viewport_fps_live", live["fps_live"], "fps", live["fps_rebuild"],
               "naive redraw: full meshes moved in numpy and uploaded per frame", False, note=frame_note),
        Figure("viewport_fps_pose_only", live["fps_pose_only_unthrottled"], "fps", live["fps_rebuild"],
               "naive redraw: full meshes moved in numpy and uploaded per frame", False,
               note="demo frames drawn back to back (actor transforms, tissue colours), no study running"),
        Figure("live_sim_rate", live["sim_span_s"] / live["wall_s"] if live["wall_s"] > 0 else 0.0,
               "sim s/wall s", mujoco_rate, mujoco_note, False,
               note=(f"{live['sim_span_s']:.3g} s of simulated time shown in {live['wall_s']:.1f} s of the live "
                     f"window (after the first frame, at {live['first_frame_s']:.1f} s); target ≥ 1 (issue 17)")),
        Figure("max_stall_ms", live["max_stall_ms"], "ms", live["idle_max_gap_ms"],
               "same 10 ms timer, window idle", True,
               note=f"from start pressed to the stopped run stored and plotted; longest while building "
                    f"{live['stall_start_ms']:.0f} ms, during the live playback {live['stall_live_ms']:.0f} ms, "
                    f"stopping/storing/plotting {live['stall_end_ms']:.0f} ms; median gap "
                    f"{live['median_gap_ms']:.1f} ms; {live['note']}"),
    ]

MUJOCO_BUDGET_S = 3.0
"""Wall-time box of the MuJoCo baseline of live_sim_rate (its factor settles within a second)."""


def _mujoco_rate() -> tuple[float | None, str]:
    """MuJoCo's real-time factor on the demo (the baseline of live_sim_rate) and the baseline's name;
    None (and why) when mujoco is not installed or the peer fails."""
    from jointmodeller.bench.mujoco_peer import mujoco_module, mujoco_realtime

    if mujoco_module() is None:
        return None, "MuJoCo on the same model: not measured, mujoco is not installed (the peers extra)"
    try:
        from jointmodeller.app.demo import build_demo_project

        r = mujoco_realtime(build_demo_project(), t_end=8.0, budget_s=MUJOCO_BUDGET_S)
    except Exception as exc:  # a broken peer must not hide our figure
        return None, f"MuJoCo on the same model: failed, {type(exc).__name__}: {exc}"
    return float(r["realtime_factor"]), f"MuJoCo {r['version']} on the same model (mj_step alone, no drawing)"


if __name__ == "__main__":
    for f in run():
        print(f)
