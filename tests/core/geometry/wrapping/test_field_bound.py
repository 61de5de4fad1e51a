"""The obstacles' distance fields only bound the exact queries' work (issue 17 item 2): a taut path
over obstacles that carry fields is the same path, to the last bit, as over the same obstacles
without, through cold starts and warm-started sequences of poses."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.data import using
from jointmodeller.core.geometry.sdf import SignedDistanceField
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose, closest_over_obstacles
from jointmodeller.core.geometry.wrapping.taut_path import TautPathSolver
from tests.core.mechanics.contact.helpers import random_rotation

pytestmark = pytest.mark.slow  # builds the demo and two bone fields (~10 s): make test runs it, test-fast not


@pytest.fixture(scope="module")
def elbow():
    """The demo elbow's bones as obstacles twice (with and without fields), its wrapped ligaments'
    attachments, and its initial pose."""
    from jointmodeller.app.build import build_mechanical_system
    from jointmodeller.app.demo import build_demo_project

    built = build_mechanical_system(build_demo_project(), contact=False)
    provider = built.system.path_provider
    paths = list(provider.paths.values())
    plain = [MeshObstacle(ob.vertices_B, ob.faces, ob.body, ob.name) for ob in paths[0].obstacles]
    fielded = [MeshObstacle(ob.vertices_B, ob.faces, ob.body, ob.name,
                            sdf=SignedDistanceField.build(ob.vertices_B, ob.faces)) for ob in plain]
    assert all(ob.sdf is not None for ob in fielded)
    kin = built.system.kinematics(built.state.y)
    return paths, plain, fielded, kin


def _poses(kin, n: int, seed: int):
    """Poses of the ulna turned about the elbow by up to 3° from the start, in 0.3° steps."""
    rng = np.random.default_rng(seed)
    R = kin.R_GB.copy()
    p = kin.p_G.copy()
    out = []
    for _ in range(n):
        dR = random_rotation(rng, np.radians(0.3))
        R[1] = dR @ R[1]
        p[1] = dR @ (p[1] - p[0]) + p[0]
        out.append(Pose(p.copy(), R.copy()))
    return out


def _strings(plain, kin):
    """Strings across each bone: ends 0.7 of its extent either side of its box centre along one axis,
    shifted 0.2 of another, fixed to that bone (their straight lines pass through it)."""
    pose = Pose(kin.p_G, kin.R_GB)
    out = []
    for ob in plain:
        V = pose.to_global(ob.body, ob.vertices_B)
        lo, hi = V.min(axis=0), V.max(axis=0)
        centre, extent = 0.5 * (lo + hi), hi - lo
        for ax, off in ((0, 2), (2, 0), (2, 1)):
            a, b = centre.copy(), centre.copy()
            a[ax] -= 0.7 * extent[ax]
            b[ax] += 0.7 * extent[ax]
            a[off] += 0.2 * extent[off]
            b[off] += 0.2 * extent[off]
            out.append((ob.body, pose.to_body(ob.body, a[None])[0], pose.to_body(ob.body, b[None])[0]))
    return out


def test_taut_paths_over_fielded_obstacles_are_the_same_paths(elbow):
    """Cold, then warm over poses of the forearm turning about the elbow: identical paths,
    iteration counts and unit-tension loads, for the demo's ligaments and for strings that wrap."""
    paths, plain, fielded, kin = elbow
    poses = _poses(kin, 6, seed=4)
    strings = [(tp.body_a, tp.r_a_B, tp.body_b, tp.r_b_B) for tp in paths]
    strings += [(body, a, body, b) for body, a, b in _strings(plain, kin)]
    contacts = 0
    for body_a, r_a, body_b, r_b in strings:
        runs = []
        for obstacles in (plain, fielded):
            solver = TautPathSolver(obstacles)
            with using():  # own warm starts
                out = []
                for pose in poses:
                    a = pose.to_global(body_a, r_a[None])[0]
                    b = pose.to_global(body_b, r_b[None])[0]
                    out.append(solver.solve(a, b, body_a, body_b, pose))
            runs.append(out)
        contacts += sum(w.info["n_contacts"] for w in runs[0])
        for w0, w1 in zip(*runs):
            assert np.array_equal(w0.points_G, w1.points_G) and w0.length == w1.length
            assert w0.iterations == w1.iterations
            assert np.array_equal(w0.load_dir_G, w1.load_dir_G)
    assert contacts > 20  # the strings do wrap


def test_bounded_points_are_exact_near_and_never_above_their_distance_away(elbow):
    """closest_over_obstacles with a bound: points within exact_below of an obstacle (and those in
    exact_where) get the exact answer; every other distance reported is at most the true one."""
    _, plain, fielded, kin = elbow
    pose = Pose(kin.p_G, kin.R_GB)
    rng = np.random.default_rng(7)
    centre = kin.p_G.mean(axis=0)
    x = centre + rng.normal(0.0, 0.01, (2000, 3))
    ref = closest_over_obstacles(plain, pose, x)
    where = rng.random(len(x)) < 0.1
    got = closest_over_obstacles(fielded, pose, x, exact_below=0.0, exact_where=where)
    sd_ref, sd = ref[2], got[2]
    assert np.all(sd <= sd_ref + 1e-12)
    exact = (sd_ref <= 0.0) | where
    assert exact.sum() > 50 and (~exact).sum() > 50
    for a, b in zip(ref, got):
        assert np.array_equal(a[exact], b[exact])


@pytest.mark.parametrize("facets", [False, True])
def test_fused_kernels_give_the_per_obstacle_results_bit_for_bit(elbow, monkeypatch, facets):
    """closest_over_obstacles' compiled per-obstacle kernels (exact_rows, merge_obstacle) against the
    numpy glue around MeshObstacle.closest they replace: the same arrays to the last bit, with and
    without fields, bounds and exact_where, for points on, near and far from the bones (outside their
    boxes' margins), with and without shape operators. Uncompiled too (JOINTMODELLER_NUMBA=0)."""
    from jointmodeller.core.geometry.wrapping import _kernels, obstacles

    _, plain, fielded, kin = elbow
    monkeypatch.setattr(_kernels, "USE_NUMBA", True)  # MeshObstacle.closest's kernel (plain Python without numba)
    pose = Pose(kin.p_G, kin.R_GB)
    rng = np.random.default_rng(11)
    centre = kin.p_G.mean(axis=0)
    x = centre + np.concatenate([rng.normal(0.0, 0.01, (300, 3)), rng.normal(0.0, 0.2, (100, 3)),
                                 0.5 * np.eye(3), -0.5 * np.eye(3)])
    where = rng.random(len(x)) < 0.2
    cases = [(plain, {}), (fielded, {}), (fielded, {"exact_below": 0.0}), (fielded, {"exact_below": -1e-4}),
             (fielded, {"exact_below": 0.0, "exact_where": where}), (plain, {"exact_below": 0.0, "exact_where": where}),
             (fielded, {"exact_below": 0.002, "shape": False})]
    kinds = set()
    for obs, kw in cases:
        monkeypatch.setattr(obstacles, "FUSED", False)
        ref = closest_over_obstacles(obs, pose, x, facets=facets, **kw)
        monkeypatch.setattr(obstacles, "FUSED", True)
        got = obstacles._closest_fused(obs, pose, x, 4, facets, kw.get("exact_below"), kw.get("exact_where"),
                                       kw.get("shape", True))
        for a, b in zip(ref, got):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        if kw.get("shape", True) and not facets:
            assert np.abs(got[5]).max() > 0.0  # curvature reported
        ob = obs[0]
        xb = pose.to_body(ob.body, x)
        lower = ob.sdf.value(xb) - ob.sdf.error_bound if (ob.sdf is not None and "exact_below" in kw) else None
        _, _, kind = _kernels.exact_rows(np.ascontiguousarray(xb), lower, kw.get("exact_below"), kw.get("exact_where"),
                                         ob.box_lo, ob.box_hi, ob.far_margin, np.empty(len(x)))
        kinds.update(("kind", int(c)) for c in np.unique(kind))
    assert {("kind", 0), ("kind", 1), ("kind", 2)} <= kinds  # exact, far and bounded points all seen
