"""Render the imported arm26 (bones, muscle paths with their wraps, wrap objects) to a PNG.

Run: xvfb-run -a python tests/io/osim/render_arm26.py [out.png] [elbow_deg] — writes
docs/screenshots/arm26.png by default. Also used by test_render_arm26.py (off-screen).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
MODEL = REPO.parent / "shared" / "models" / "arm26" / "arm26.osim"


def render_arm26(model_path: Path, out: Path, elbow_deg: float = 60.0, size=(1000, 1000)) -> Path:
    import pyvista as pv
    from scipy.spatial.transform import Rotation

    from jointmodeller.app.osim_import import import_osim, wrap_ranges
    from jointmodeller.core.studies.muscle_paths import build_multibody, calc_path, path_spec

    project, report = import_osim(model_path)
    model = build_multibody(project)
    q = model.q0.copy()
    q[model.qindex["r_elbow_flex"]] = np.radians(elbow_deg)
    kin = model.system.kinematics(q)
    pl = pv.Plotter(off_screen=True, window_size=size)
    pl.set_background("white")
    for m in project.masses:
        if m.mesh is None:
            continue
        b = model.body[m.name]
        v = m.mesh.vertices_L @ kin.R_GB[b].T + kin.p_GB[b]
        faces = np.hstack([np.full((m.mesh.n_faces, 1), 3), m.mesh.faces]).ravel()
        pl.add_mesh(pv.PolyData(v, faces), color="#e8dcc4", smooth_shading=True, opacity=1.0)
    ranges = wrap_ranges(report)
    colours = ["#c0392b", "#e67e22", "#d35400", "#2980b9", "#8e44ad", "#16a085"]
    for k, att in enumerate(project.attachments):
        spec = path_spec(model, att, project.wrap_objects, ranges.get(att.name))
        st = calc_path(model, spec, q, kin)
        line = st.polyline_G(kin)
        pl.add_mesh(pv.lines_from_points(line), color=colours[k % len(colours)], line_width=5, label=att.name)
        pl.add_points(st.x_G, color=colours[k % len(colours)], point_size=8, render_points_as_spheres=True)
    for w in project.wrap_objects:
        b = model.body[w.body]
        R_BW = Rotation.from_euler("XYZ", w.frame.euler_deg, degrees=True).as_matrix()
        R = (kin.R_GB[b] @ R_BW) if b >= 0 else R_BW
        c = (kin.p_GB[b] + kin.R_GB[b] @ np.asarray(w.frame.origin_L)) if b >= 0 else np.asarray(w.frame.origin_L)
        if w.kind == "cylinder":
            shape = pv.Cylinder(center=(0, 0, 0), direction=(0, 0, 1), radius=w.dimensions_m[0],
                                height=w.dimensions_m[1])
        else:
            shape = pv.ParametricEllipsoid(*w.dimensions_m) if w.kind == "ellipsoid" else pv.Sphere(w.dimensions_m[0])
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R, c
        pl.add_mesh(shape.transform(T, inplace=False), color="#3498db", opacity=0.45)
    pl.add_legend(bcolor="white", size=(0.22, 0.22))
    pl.add_text(f"arm26 imported from OpenSim — elbow {elbow_deg:g}°", font_size=11, color="black")
    pl.camera_position = [(0.12, 0.52, 1.75), (0.12, 0.52, 0.15), (0.0, 1.0, 0.0)]
    out.parent.mkdir(parents=True, exist_ok=True)
    pl.screenshot(str(out))
    pl.close()
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "screenshots" / "arm26.png"
    deg = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    print(render_arm26(MODEL, target, deg))
