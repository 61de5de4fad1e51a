"""GUI benchmarks: start-up time with the demo, viewport frame rate and event-loop stalls during a
live run of the demo. Each figure has a baseline measured in the same run.

- startup_s: process start to main window shown with the demo (demo cache warm; the cold figure is in
  the note); baseline: a bare QApplication with an empty QMainWindow shown.
- viewport_fps_live: frames per second the window showed during 8 s of a live dynamics run of the
  demo, where a frame is a distinct simulated state (streamed from the integrator's accepted steps and
  its own dense output of each step) drawn and composed on screen, never one shown before; baseline: the same frames
  drawn by rebuilding the scene (mesh upload) each frame.
- max_stall_ms: longest gap between ticks of a 10 ms timer from pressing start to the stopped run
  stored and plotted (system build, live playback, stop, storing, plots); baseline: the same timer
  with the window idle (the machine's own scheduling noise).

The live run is the dynamics study of the app when it is installed, else a scripted motion of the
demo's free bone (noted). Windows need a display: without one the measurements run under xvfb-run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from jointmodeller.bench.harness import Figure
from jointmodeller.gui.probes import STARTUP_APP, STARTUP_BASELINE


def _wrap(cmd: list[str]) -> list[str]:
    if os.environ.get("DISPLAY") or sys.platform == "win32" or sys.platform == "darwin":
        return cmd
    xvfb = shutil.which("xvfb-run")
    return [xvfb, "-a", "-s", "-screen 0 1600x1000x24"] + cmd if xvfb else cmd


def _shown_after(script: str, env: dict, *args: str) -> float:
    t0 = time.time()
    out = subprocess.run(_wrap([sys.executable, "-c", script, repr(t0), *args]), capture_output=True, text=True,
                         env=env, timeout=300)
    for line in out.stdout.splitlines():
        if line.startswith("SHOWN"):
            return float(line.split()[1])
    raise RuntimeError(f"start-up script failed: {out.stderr[-800:]}")


def _startup(tmp: str) -> tuple[float, float, float]:
    env = dict(os.environ, JOINTMODELLER_CACHE=os.path.join(tmp, "cache"),
               JOINTMODELLER_RECOVERY_DIR=os.path.join(tmp, "recovery"))
    ini = os.path.join(tmp, "settings.ini")
    base = _shown_after(STARTUP_BASELINE, env)
    cold = _shown_after(STARTUP_APP, env, ini)
    warm = _shown_after(STARTUP_APP, env, ini)
    return warm, cold, base


def run() -> list[Figure]:
    tmp = tempfile.mkdtemp(prefix="jm-bench-gui-")
    try:
        warm, cold, base = _startup(tmp)
        env = dict(os.environ, JOINTMODELLER_CACHE=os.path.join(tmp, "cache"),
                   JOINTMODELLER_RECOVERY_DIR=os.path.join(tmp, "recovery"))
        out = subprocess.run(_wrap([sys.executable, "-m", "jointmodeller.gui.probes", "--live"]), capture_output=True,
                             text=True, env=env, timeout=300)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError(f"live measurement failed: {out.stderr[-800:]}")
        live = json.loads(lines[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
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
        Figure("startup_s", warm, "s", base, "bare QApplication + empty QMainWindow shown", True,
               note=f"demo cache warm; cold (demo built from meshes) {cold:.2f} s"),
        Figure("viewport_fps_live", live["fps_live"], "fps", live["fps_rebuild"],
               "naive redraw: full meshes moved in numpy and uploaded per frame", False, note=frame_note),
        Figure("viewport_fps_pose_only", live["fps_pose_only_unthrottled"], "fps", live["fps_rebuild"],
               "naive redraw: full meshes moved in numpy and uploaded per frame", False,
               note="demo frames drawn back to back (actor transforms, tissue colours), no study running"),
        Figure("max_stall_ms", live["max_stall_ms"], "ms", live["idle_max_gap_ms"],
               "same 10 ms timer, window idle", True,
               note=f"from start pressed to the stopped run stored and plotted; longest while building "
                    f"{live['stall_start_ms']:.0f} ms, during the live playback {live['stall_live_ms']:.0f} ms, "
                    f"stopping/storing/plotting {live['stall_end_ms']:.0f} ms; median gap "
                    f"{live['median_gap_ms']:.1f} ms; {live['note']}"),
    ]

if __name__ == "__main__":
    for f in run():
        print(f)
