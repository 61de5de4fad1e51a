"""Wrapping on the real bone meshes of ../shared/meshes (skipped when absent).

The OpenSim femur/tibia are coarse closed surfaces (456 and 145 vertices); the Lenhart femur
subchondral bone is an open sheet. VTP files are read with pyvista here (tests only; the core
never imports it).
"""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation

from jointmodeller.core.geometry.wrapping.mjm_path import mjm_path
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose, closest_over_obstacles
from jointmodeller.core.geometry.wrapping.path import FREE
from jointmodeller.core.mechanics.wrapped_tissue import TissuePath
from tests.core.geometry.wrapping.axis_moment_arms import moment_arm
from tests.core.geometry.wrapping.test_taut_path import brute_distance

KNEE_B = np.array([-0.005, -0.405, 0.0])  # tibia frame origin in the femur frame (gait2392-like)


def read_vtp(path) -> trimesh.Trimesh:
    pv = pytest.importorskip("pyvista")
    m = pv.read(str(path)).triangulate().clean()
    return trimesh.Trimesh(np.asarray(m.points, float), m.faces.reshape(-1, 4)[:, 1:], process=True)


@pytest.fixture(scope="module")
def knee(shared_meshes):
    femur = read_vtp(shared_meshes / "femur_r.vtp")
    tibia = read_vtp(shared_meshes / "tibia_r.vtp")
    return femur, tibia


def knee_pose(flex_deg: float) -> Pose:
    R = Rotation.from_euler("z", -flex_deg, degrees=True).as_matrix()
    return Pose(np.array([[0, 0, 0], [0, 0, 0], KNEE_B]), np.stack([np.eye(3), np.eye(3), R]))


def quadriceps_like(femur: trimesh.Trimesh, tibia: trimesh.Trimesh, obstacles) -> TissuePath:
    """Anterior femoral shaft (y ≈ -0.30) to the anterior tibial crest (y ≈ -0.08)."""
    V, W = femur.vertices, tibia.vertices
    sel = (V[:, 1] > -0.32) & (V[:, 1] < -0.28)
    ia = np.flatnonzero(sel)[np.argmax(V[sel, 0])]
    sel = (W[:, 1] > -0.10) & (W[:, 1] < -0.06)
    ib = np.flatnonzero(sel)[np.argmax(W[sel, 0])]
    return TissuePath(1, V[ia], 2, W[ib], obstacles)


def assert_not_through(meshes_G: list[trimesh.Trimesh], points: np.ndarray, body: np.ndarray) -> None:
    """No vertex inside a bone, and no span with a free end passes *through* one.

    A span may cut a corner of the bone where the string bends over an edge between two of its
    vertices (the polyline's chord error), but never deeper than a quarter of its length; a span
    tunnelling through a bone would be inside over most of its length.
    """
    for mesh in meshes_G:
        size = float(np.linalg.norm(mesh.extents))
        inside = mesh.contains(points)
        if inside.any():  # only points on the surface may be called inside by ray parity
            d = brute_distance(mesh, points[inside])
            assert d.max() <= 1e-6 * size, f"a path point is {d.max():.3g} m inside"
        free_end = np.flatnonzero((body[:-1] == FREE) | (body[1:] == FREE))
        t = np.linspace(0.1, 0.9, 9)
        samples = points[free_end, None, :] + t[None, :, None] * (points[free_end + 1] - points[free_end])[:, None, :]
        L = np.linalg.norm(points[free_end + 1] - points[free_end], axis=1)
        flat = samples.reshape(-1, 3)
        inside = mesh.contains(flat).reshape(samples.shape[:2])
        rows = np.flatnonzero(inside.any(axis=1))
        for r in rows:
            depth = brute_distance(mesh, samples[r][inside[r]]).max()
            assert depth < 0.25 * L[r], f"span {free_end[r]} is {depth:.3g} m deep in a bone (length {L[r]:.3g})"


@pytest.mark.parametrize("flex", [0.0, 30.0, 60.0, 90.0])
def test_knee_path_over_the_condyles(knee, flex):
    femur, tibia = knee
    obstacles = [MeshObstacle(femur.vertices, femur.faces, 1), MeshObstacle(tibia.vertices, tibia.faces, 2)]
    tp = quadriceps_like(femur, tibia, obstacles)
    pose = knee_pose(flex)
    path = tp(pose, warm=False)
    a, b = tp.ends_G(pose)
    straight = float(np.linalg.norm(b - a))
    tib_G = tibia.copy()
    tib_G.apply_transform(np.block([[pose.R_GB[2], pose.p_G[2][:, None]], [np.zeros((1, 3)), np.ones((1, 1))]]))
    assert_not_through([femur, tib_G], path.points_G, path.body)
    mjm = mjm_path(a, b, 1, 2, obstacles, pose, method="covariance")
    if flex == 0.0:  # extended: the line in front of the knee is clear
        assert path.length == pytest.approx(straight, rel=1e-12)
        assert (path.body[1:-1] == FREE).all()
    else:  # flexed: it wraps the anterior femur, no longer than the MJM heuristic's path
        # wrapping is needed (the straight line runs through the femur) and happens: the path is
        # longer by a margin, rests on the femur (at least one contact besides the origin; how many
        # of the 95 interior vertices land on the coarse facets varies with the CPU's rounding),
        # and over its front (+x), not round the back of the bone
        line = a + np.linspace(0.0, 1.0, 201)[:, None] * (b - a)
        assert femur.contains(line).any()
        assert path.converged
        assert path.length > straight * 1.01
        on_femur = path.points_G[1:-1][path.body[1:-1] == 1]
        assert len(on_femur) >= 1
        assert (on_femur[:, 0] > femur.centroid[0]).all()
        assert path.length <= mjm.length * (1 + 1e-3)
        # taut: re-solving from the result (warm start) finds no shorter path beyond the solver's
        # accuracy. On the facets (exact polyhedral optimum) the solver stops when no vertex moves
        # more than tol·scale (TautOptions.tol, scale = |b - a|); with a contraction of at most 0.8
        # per iteration (else it damps) every vertex is within δ = 4·tol·scale of the optimum, and
        # as the length is stationary there it is off by at most Σ δ²/h = N·δ²/(L/N) ≤ 16·N²·tol²·scale
        # (N spans of length h = L/N, L ≥ scale). Where the facet polish did not settle (coarse,
        # sharp edges), the solver returns the optimum over the smooth normal field instead, whose
        # documented accuracy is ~1e-3 (TautOptions.facet_polish): 1e-3·L, as against MJM above
        # (measured here: 9e-5·L at 30°, 1e-16 where the polish settles).
        opt = tp.solver.options
        if path.info["facets"]:
            slack = 16 * opt.n_segments**2 * opt.tol**2 * straight
        else:
            slack = 1e-3 * path.length
        again = tp(pose, warm=True)
        assert again.length >= path.length - slack
    # effective attachments (MJM §5): following the path from the origin, the last point on the
    # femur before a point of another body; from the insertion back, the first tibia point after
    # the last femur point (free points carry no body); the pull leaves along the path
    first_tibia = np.flatnonzero(path.body == 2)[0]
    k = np.flatnonzero(path.body[:first_tibia] == 1)[-1]
    assert np.allclose(path.attach_a_G, path.points_G[k])
    e = path.points_G[k + 1] - path.points_G[k]
    assert np.allclose(path.dir_a_G, e / np.linalg.norm(e))
    j = k + np.flatnonzero(path.body[k:] == 2)[0]
    assert np.allclose(path.attach_b_G, path.points_G[j])
    segs = [(sg.body_a, sg.body_b) for sg in path.segments]
    assert segs[0][0] == 1 and segs[-1][1] == 2


@pytest.mark.parametrize("flex", [30.0, 90.0])
def test_knee_moment_arm_methods_agree_on_refined_meshes(knee, flex):
    """On loop-subdivided bones (7k + 2k vertices) excursion and force methods agree."""
    femur, tibia = (m.subdivide_loop(2) for m in knee)
    obstacles = [MeshObstacle(femur.vertices, femur.faces, 1), MeshObstacle(tibia.vertices, tibia.faces, 2)]
    tp = quadriceps_like(femur, tibia, obstacles)
    pose = knee_pose(flex)
    ma = moment_arm(tp, pose, 2, pose.p_G[2], np.array([0.0, 0.0, 1.0]))
    assert abs(ma.force) > 0.01  # centimetres, as a knee extensor's
    assert ma.agreement < 0.03


def test_open_sheet_path_passes_over_the_condyles(shared_meshes):
    """The Lenhart femur subchondral bone is an open surface: the path stays on its outer side."""
    sheet = trimesh.load(shared_meshes / "lenhart2015-R-femur-subchondral-bone.stl")
    assert not sheet.is_watertight
    ob = MeshObstacle(sheet.vertices, sheet.faces, 1)
    V, N = sheet.vertices, sheet.vertex_normals
    i, j = np.argmax(V[:, 0]), np.argmin(V[:, 0])
    a, b = V[i] + 0.003 * N[i], V[j] + 0.003 * N[j]  # 3 mm off the front and back of the bone
    assert sheet.ray.intersects_any(a[None], ((b - a) / np.linalg.norm(b - a))[None])[0]
    tp = TissuePath(0, a, 2, b, [ob])
    pose = Pose.identity(3)
    path = tp(pose, warm=False)
    assert path.converged and path.length > np.linalg.norm(b - a)
    _, _, sd, _, _, _ = closest_over_obstacles([ob], pose, path.points_G)
    assert sd.min() > -1e-6 * ob.size  # never on the inner side of the sheet
    assert_not_through([sheet], path.points_G, path.body)
    mjm = mjm_path(a, b, 0, 2, [ob], pose, method="covariance")
    assert path.length <= mjm.length * (1 + 1e-3)
