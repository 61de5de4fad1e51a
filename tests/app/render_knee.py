"""Render the knee demo as the viewport shows it (render.scene.JointScene, off-screen): the bones,
cartilage and ligament bundles coloured by tension at one step of its anterior drawer.

Run: xvfb-run -a python tests/app/render_knee.py [out.png] — runs the demo's drawer and writes
docs/screenshots/knee_demo.png (at the −100 N step, the anterior drawer) by default. Also used by
test_knee_demo.py (off-screen, into test-artifacts/).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

VIEW_DIRECTION_G = (0.85, 0.20, 0.50)
"""From the focal point to the camera: anterolateral and a little from above (the model's G is
OpenSim's: x anterior, y superior, z to the right, i.e. lateral on this right knee)."""


def render_knee(project, run, out: Path, step: int | None = None, size=(900, 900)) -> Path:
    """A PNG of the scene at sample ``step`` of the laxity ``run`` (default: its most negative load)."""
    import pyvista as pv

    from jointmodeller.render.frames import frames_from_run
    from jointmodeller.render.scene import JointScene

    frames = frames_from_run(project, run)
    loads = np.asarray(run.series["load"], float)
    i = int(np.argmin(loads)) if step is None else int(step)
    pl = pv.Plotter(off_screen=True, window_size=size)
    scene = JointScene(pl)
    scene.force_scale_N = 100.0
    scene.build(project, frames.frame(i))
    scene.set_axes_visible(False)
    b = np.asarray(scene.bounds()).reshape(3, 2)
    centre, extent = b.mean(axis=1), float(np.ptp(b, axis=1).max())
    d = np.asarray(VIEW_DIRECTION_G) / np.linalg.norm(VIEW_DIRECTION_G)
    pl.camera.focal_point = tuple(centre)
    pl.camera.position = tuple(centre + d * extent)
    pl.camera.up = (0.0, 1.0, 0.0)
    pl.renderer.ResetCamera(scene.bounds())  # fit the bones, looking along d
    pl.camera.zoom(1.3)
    pl.add_text(f"Knee demo (lenhart2015), 25° flexion: anterior drawer, {frames.label(i)}", font_size=11,
                color="white")
    out.parent.mkdir(parents=True, exist_ok=True)
    pl.screenshot(str(out))
    pl.close()
    return out


if __name__ == "__main__":
    from jointmodeller.app.knee_demo import build_knee_demo_project
    from jointmodeller.app.laxity import run_laxity

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "screenshots" / "knee_demo.png"
    knee = build_knee_demo_project()
    sweep = run_laxity(knee)
    print(sweep.status, sweep.message)
    print(render_knee(knee, sweep, target))
