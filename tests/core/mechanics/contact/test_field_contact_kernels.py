"""The compiled contact path (core.mechanics.contact_field_kernels) against the numpy formulas it
replaced and a fresh exact search: the field geometry's springs, the force law (Hunt–Crossley with
nonzero body velocities, MJM lateral springs) and the forces and moments accumulate adds, on the demo
elbow's cartilage pair at several poses (issue 17). With JOINTMODELLER_NUMBA=0 the same kernels run as plain Python."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.geometry.collision import relative_pose_B
from jointmodeller.core.mechanics.contact import ContactPair
from jointmodeller.core.mechanics.contact_laws import StribeckFriction, hunt_crossley
from jointmodeller.core.mechanics.forces import BodyKinematics
from tests.core.mechanics.contact.helpers import kinematics

#: a few rounding errors of the total force (the kernels sum in another order than numpy's matmul)
RTOL = 1e-10

SHIFTS = ([0, 2e-4, 0], [0, -2e-4, 0], [0, 0, 3e-4], [2e-4, 2e-4, 2e-4], [-2e-4, -2e-4, -2e-4])


def _reference_forces(pair: ContactPair, kin: BodyKinematics, sp) -> tuple[np.ndarray, np.ndarray]:
    """The numpy formulas of ContactPair._forces_on_bed before the kernel."""
    other = pair.b if sp.bed_body == pair.a else pair.a
    n = sp.normal_G
    f_el = sp.stiffness * sp.depth

    def r_B(body):
        return (sp.point_G - kin.p_G[body]) @ kin.R_GB[body]

    def velocity(body):
        rb = r_B(body)
        arm = np.einsum("ij,mj->mi", kin.R_GB[body], rb)
        return kin.v_G[body] + np.cross(kin.w_G[body], arm)

    v_rel = velocity(sp.bed_body) - velocity(other)
    rate = -(v_rel * n).sum(axis=1) if pair.dissipation > 0 or pair.friction is not None else np.zeros(len(n))
    f_n = hunt_crossley(f_el, rate, pair.dissipation)
    force = f_n[:, None] * n
    if sp.lateral > 0:
        lat = sp.offset_G - (sp.offset_G * n).sum(axis=1)[:, None] * n
        force = force + (sp.lateral * sp.stiffness)[:, None] * lat
    if pair.friction is not None:
        slip = v_rel - (v_rel * n).sum(axis=1)[:, None] * n
        force = force + pair.friction.force(slip, f_n)
    return force, f_n


def _reference_sums(pair: ContactPair, kin: BodyKinematics) -> tuple[np.ndarray, np.ndarray]:
    """Forces and moments about each centre of mass (n, 3) from the reference forces, with numpy."""
    F, T = np.zeros_like(kin.p_G), np.zeros_like(kin.p_G)
    for sp in pair._all_springs(kin):
        f_bed, _ = _reference_forces(pair, kin, sp)
        sign = 1.0 if sp.bed_body == pair.a else -1.0
        for body, f in ((pair.a, sign * f_bed), (pair.b, -sign * f_bed)):
            F[body] += f.sum(axis=0)
            T[body] += np.cross(sp.point_G - kin.p_G[body], f).sum(axis=0)
    return F, T


@pytest.fixture(scope="module")
def demo_field_pair():
    """The demo elbow's cartilage pair on fields (read from the disk cache, built the first time) and
    its kinematics at the start."""
    from jointmodeller.app.build import build_mechanical_system
    from jointmodeller.app.demo import build_demo_project

    built = build_mechanical_system(build_demo_project(), wrapping=False, contact_geometry="field")
    pair = next(e for e in built.system.extra_elements if isinstance(e, ContactPair))
    assert pair.geometry == "field"
    return pair, built.system.kinematics(built.state.y)


def _moving_kinematics(kin0: BodyKinematics, shift, k: int) -> BodyKinematics:
    """kin0 with the second body shifted and turned a little, both moving (so dissipation matters)."""
    rng = np.random.default_rng(k)
    p = kin0.p_G.copy()
    p[1] += np.asarray(shift, float)
    angle = 2e-4 * rng.normal(size=3)
    K = np.array([[0, -angle[2], angle[1]], [angle[2], 0, -angle[0]], [-angle[1], angle[0], 0]])
    R = kin0.R_GB.copy()
    R[1] = (np.eye(3) + K + 0.5 * K @ K) @ R[1]
    u, _, vt = np.linalg.svd(R[1])
    R[1] = u @ vt
    return kinematics(p, R, rng.normal(0, 0.02, p.shape), rng.normal(0, 0.3, p.shape))


def _fresh_exact_springs(pair: ContactPair, kin: BodyKinematics, sp, band: float) -> dict:
    """The springs of a fresh exact closest-point search of every bed vertex (numpy formulas)."""
    other = pair.b if sp.bed_body == pair.a else pair.a
    bed, surf = (pair.surface_a, pair.surface_b) if sp.bed_body == pair.a else (pair.surface_b, pair.surface_a)
    R_ob, p_ob = relative_pose_B(kin.p_G, kin.R_GB, sp.bed_body, other)
    P_o = bed.vertices_B @ R_ob.T + p_ob
    cp = surf.proximity.closest(P_o, pair.search_distance, beneath_only=True)
    inside = cp.depth > -band if band > 0 else cp.depth > 0.0
    idx, s_o = cp.index[inside], cp.closest[inside]
    R_Go = kin.R_GB[other]
    offset_G = (s_o - P_o[idx]) @ R_Go.T
    normal_G = cp.normal[inside] @ R_Go.T
    return {"idx": idx, "face": cp.face[inside], "offset_G": offset_G, "normal_G": normal_G,
            "mid_G": kin.p_G[other] + (0.5 * (s_o + P_o[idx])) @ R_Go.T,
            "depth": np.maximum((offset_G * normal_G).sum(axis=1), 0.0)}


@pytest.mark.slow
@pytest.mark.parametrize("band", [0.0, 1e-4])
def test_field_springs_equal_a_fresh_exact_search(demo_field_pair, band):
    """The face field's springs (the field choosing each bed vertex's faces, core.geometry.field_faces;
    candidates, held faces and threads reused over micrometre steps) against a fresh exact search of every
    bed vertex: the same bed vertices and, to rounding, points, normals, offsets and depths, but for the
    few where the two searches' face sets differ (measured: at most 3 of some 2,000 springs at a pose,
    depths up to 3.2 µm apart, half a percent of the penetration limit)."""
    pair, kin0 = demo_field_pair
    for k, shift in enumerate(SHIFTS):
        for step in range(3):  # micrometre steps: the second and third reuse the first's work
            kin = _moving_kinematics(kin0, np.asarray(shift, float) * (1.0 + 0.01 * step), k)
            springs = pair._springs_at(kin, band)
            assert springs
            for sp in springs:
                ref = _fresh_exact_springs(pair, kin, sp, band)
                assert len(ref["idx"]) > 100
                common, i, j = np.intersect1d(sp.bed_vertex, ref["idx"], return_indices=True)
                assert len(sp.bed_vertex) + len(ref["idx"]) - 2 * len(common) <= 1e-3 * len(ref["idx"])
                scale = float(np.abs(kin.p_G).max())
                same = np.abs(sp.point_G[i] - ref["mid_G"][j]).max(axis=1) <= 1e-14 * scale
                assert np.mean(~same) <= 3e-3
                assert np.abs(sp.depth[i] - ref["depth"][j]).max() <= 0.02 * pair.penetration_limit
                i, j = i[same], j[same]
                np.testing.assert_allclose(sp.point_G[i], ref["mid_G"][j], rtol=0, atol=1e-14 * scale)
                np.testing.assert_allclose(sp.normal_G[i], ref["normal_G"][j], rtol=0, atol=1e-12)
                np.testing.assert_allclose(sp.offset_G[i], ref["offset_G"][j], rtol=0, atol=1e-14 * scale)
                # a closest point on an edge or corner is on two or more faces: rounding picks one of them
                assert np.mean(sp.face[i] != ref["face"][j]) < 0.01


@pytest.mark.slow
def test_field_contact_forces_and_sums_equal_the_numpy_formulas(demo_field_pair):
    """evaluate's forces equal the old numpy force law; accumulate's sums (the compiled scatter, no
    ContactResult) equal the reference sums and evaluate's; last_result is evaluate's result."""
    pair, kin0 = demo_field_pair
    assert pair.dissipation > 0 and pair.method == "mjm" and pair.friction is None
    for k, shift in enumerate(SHIFTS):
        kin = _moving_kinematics(kin0, shift, k)
        res = pair.evaluate(0.0, kin)
        assert res.n_points > 100
        total = float(np.linalg.norm(res.total_force_G))
        assert total > 0
        ref_F, ref_T = _reference_sums(pair, kin)
        for sp in pair._all_springs(kin):
            force, f_n = pair._forces_on_bed(kin, sp)
            ref_force, ref_f_n = _reference_forces(pair, kin, sp)
            np.testing.assert_allclose(force, ref_force, rtol=0, atol=RTOL * total)
            np.testing.assert_allclose(f_n, ref_f_n, rtol=0, atol=RTOL * total)
        F, T = np.zeros_like(kin.p_G), np.zeros_like(kin.p_G)
        pair.accumulate(0.0, kin, F, T)
        arm = float(np.abs(kin.p_G).max()) + 0.1
        np.testing.assert_allclose(F, ref_F, rtol=0, atol=RTOL * total)
        np.testing.assert_allclose(T, ref_T, rtol=0, atol=RTOL * total * arm)
        np.testing.assert_allclose(F[pair.a], res.total_force_G, rtol=0, atol=RTOL * total)
        np.testing.assert_allclose(F[pair.b], -res.total_force_G, rtol=0, atol=RTOL * total)
        moment_a = np.cross(res.points_G - kin.p_G[pair.a], res.force_G).sum(axis=0)
        np.testing.assert_allclose(T[pair.a], moment_a, rtol=0, atol=RTOL * total * arm)
        last = pair.last_result
        assert last is not None and last.n_points == res.n_points
        np.testing.assert_array_equal(last.force_G, res.force_G)


@pytest.mark.parametrize("method", ["foundation", "mjm"])
def test_sphere_on_plane_both_beds_sums_and_friction(method):
    """Small case (fast in plain Python too): both beds, the compiled accumulate against the numpy
    reference; with friction accumulate goes through evaluate, still equal to the reference."""
    import trimesh

    from tests.core.mechanics.contact.helpers import plane_mesh

    sphere = trimesh.creation.icosphere(3, 0.01)
    plane_v, plane_f = plane_mesh(0.03, 25)
    for friction in (None, StribeckFriction(0.3, 0.2, 0.01, 1e-3)):
        pair = ContactPair(0, 1, sphere.vertices, sphere.faces, plane_v, plane_f, 1e-3, 10e6, 0.45,
                           method=method, bed="both", dissipation=0.5, friction=friction, geometry="field")
        rng = np.random.default_rng(1)
        p = np.array([[0.0005, -0.0003, 0.01 - 1.5e-4], [0.0, 0.0, 0.0]])
        kin = kinematics(p, np.stack([np.eye(3), np.eye(3)]), rng.normal(0, 0.01, (2, 3)),
                         rng.normal(0, 0.1, (2, 3)))
        F, T = np.zeros((2, 3)), np.zeros((2, 3))
        pair.accumulate(0.0, kin, F, T)
        res = pair.last_result
        assert res is not None and res.n_points > 5 and set(res.bed_body) == {0, 1}
        ref_F, ref_T = _reference_sums(pair, kin)
        total = float(np.linalg.norm(res.total_force_G))
        np.testing.assert_allclose(F, ref_F, rtol=0, atol=RTOL * total)
        np.testing.assert_allclose(T, ref_T, rtol=0, atol=RTOL * total * 0.1)
        np.testing.assert_allclose(F[0], res.total_force_G, rtol=0, atol=RTOL * total)


@pytest.fixture(scope="module")
def demo_exact_pair():
    """The demo elbow's cartilage pair on the exact meshes (the dynamics' geometry) and its
    kinematics at the start."""
    from jointmodeller.app.build import build_mechanical_system
    from jointmodeller.app.demo import build_demo_project

    built = build_mechanical_system(build_demo_project(), wrapping=False)
    pair = next(e for e in built.system.extra_elements if isinstance(e, ContactPair))
    assert pair.geometry == "exact"
    return pair, built.system.kinematics(built.state.y)


@pytest.mark.parametrize("band", [0.0, 1e-4])
def test_exact_springs_equal_the_numpy_formulas_on_a_fresh_search(demo_exact_pair, band):
    """The exact geometry's springs (bed points only where needed, the compacted spring rows:
    contact_field_kernels.bed_points, exact_springs), evaluated in a sequence of poses that reuses
    candidates, references and certificates, against the numpy formulas on a fresh closest-point
    search of every bed vertex at each pose: the same bed vertices, points, normals, offsets and depths
    to rounding (and faces, but where a closest point lies on an edge shared by two)."""
    pair, kin0 = demo_exact_pair
    for k, shift in enumerate(SHIFTS):
        for step in range(3):  # micrometre steps: the second and third reuse the first's work
            kin = _moving_kinematics(kin0, np.asarray(shift, float) * (1.0 + 0.01 * step), k)
            springs = pair._springs_at(kin, band)
            assert springs
            for sp in springs:
                ref = _fresh_exact_springs(pair, kin, sp, band)
                assert len(ref["idx"]) > 100
                np.testing.assert_array_equal(sp.bed_vertex, ref["idx"])
                # a closest point on an edge or corner is on two or more faces: rounding picks one of them
                assert np.mean(sp.face != ref["face"]) < 0.01
                scale = float(np.abs(kin.p_G).max())
                np.testing.assert_allclose(sp.point_G, ref["mid_G"], rtol=0, atol=1e-14 * scale)
                np.testing.assert_allclose(sp.normal_G, ref["normal_G"], rtol=0, atol=1e-12)
                np.testing.assert_allclose(sp.offset_G, ref["offset_G"], rtol=0, atol=1e-14 * scale)
                np.testing.assert_allclose(sp.depth, ref["depth"], rtol=0, atol=1e-14 * scale)


def test_recorded_certificates_equal_the_column_formulas(monkeypatch):
    """record_certificates' loop writes what its whole-column form writes, to the bit: rows without a
    face or beyond the distance left alone, a NaN or zero gap or spare and an incomplete set of
    nearest vertices no bound (−inf: never a certificate), each vertex's slot cursor moved
    on (here through a wrap-round); the vertex bound is the farthest nearest vertex plus the spare."""
    import jointmodeller.core.mechanics.contact_field_kernels as kernels
    from jointmodeller.core.mechanics.contact import ClosestCertificates

    rng = np.random.default_rng(7)
    n, k, faces_k, k_near = 50, 30, 6, 6
    P_o = rng.normal(size=(n, 3))
    verts = rng.normal(size=(40, 3))
    searched = np.sort(rng.choice(n, k, replace=False)).astype(np.int64)
    d2 = rng.uniform(0.0, 2e-6, k)
    d2[:3] = np.inf
    face = rng.integers(-1, 100, k).astype(np.int64)
    gap = rng.uniform(0.0, 1e-4, k)
    gap[5] = np.nan
    gap[7] = 0.0
    face[5:9], d2[5:9] = 1, 1e-8  # rows with a NaN gap (5), a NaN spare (6), a zero gap (7), a vertex missing (8)
    face_k = rng.integers(-1, 100, (k, faces_k)).astype(np.int64)
    gap_k = np.where(rng.random(k) < 0.3, 0.0, rng.uniform(0.0, 1e-3, k))
    dk = rng.uniform(0.0, 2e-3, (k, faces_k))
    near = rng.integers(0, len(verts), (k, k_near)).astype(np.int64)
    near[8, 3] = len(verts)  # fewer than k nearest within the bound
    spare = rng.uniform(0.0, 2e-4, k)
    spare[6] = np.nan
    found = (None, None, d2, face, gap, face_k, gap_k, dk)
    start = np.zeros(n, np.int64)
    start[searched[::2]] = 2  # some vertices' next slot is the last: they wrap round to 0
    written = []
    names = ("point_o", "face", "reach", "face_k", "face_k_d", "reach_k", "near_v", "next_v", "near_margin", "cursor")
    for compiled in (True, False):
        monkeypatch.setattr(kernels, "NUMBA_ENABLED", compiled)
        certs = ClosestCertificates.empty(n, k_near, slots=3)
        certs.cursor[:] = start
        for _ in range(2):
            kernels.record_certificates(P_o, searched, found, near, spare, verts, 1e-3, 1e-12,
                                        *(getattr(certs, name) for name in names))
        written.append(certs)
    fast, columns = written
    for name in names:
        np.testing.assert_array_equal(getattr(fast, name), getattr(columns, name), err_msg=name)
    kept = (face >= 0) & (np.sqrt(d2) <= 1e-3)
    assert 0 < kept.sum() < k and np.isneginf(fast.next_v).any() and np.isneginf(fast.reach).any()
    rows = searched[kept]
    np.testing.assert_array_equal(fast.cursor[rows], (start[rows] + 2) % 3)  # written twice
    slot = (start[rows] + 1) % 3
    np.testing.assert_array_equal(fast.face[rows, slot], face[kept])
    farthest = np.linalg.norm(verts[np.minimum(near[kept], len(verts) - 1)] - P_o[rows][:, None], axis=2).max(axis=1)
    certain = (spare[kept] > 0) & np.all(near[kept] < len(verts), axis=1)
    np.testing.assert_allclose(fast.next_v[rows, slot][certain], farthest[certain] + spare[kept][certain] - 1e-12,
                               rtol=0, atol=1e-15)
    assert np.all(np.isneginf(fast.next_v[rows, slot][~certain]))
    np.testing.assert_allclose(fast.near_margin[rows, slot][certain], 0.5 * spare[kept][certain] - 1e-12, rtol=0,
                               atol=1e-18)
    untouched = np.setdiff1d(np.arange(n), rows)
    np.testing.assert_array_equal(fast.cursor[untouched], start[untouched])
    assert np.all(fast.face[untouched] == -1)
