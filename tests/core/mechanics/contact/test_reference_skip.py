"""Contact evaluations near a reference pose skip bed vertices that were too far above the surface to
have reached it: the contact set and forces must equal those of testing every candidate."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.geometry.collision import RelativeMotion
from jointmodeller.core.mechanics.forces import BodyKinematics


@pytest.fixture(scope="module")
def demo_pair():
    from jointmodeller.app import build, demo
    from jointmodeller.core.mechanics.contact import ContactPair

    built = build.build_mechanical_system(demo.build_demo_project())
    pair = next(e for e in built.system.extra_elements if isinstance(e, ContactPair))
    kin = built.system.kinematics(built.state.y)
    p = kin.p_G.copy()
    p[pair.b] = p[pair.b] + 3e-4 * np.array([0.3, 0.5, 1.0]) / np.linalg.norm([0.3, 0.5, 1.0])  # into contact
    return pair, BodyKinematics(p, kin.R_GB.copy(), np.zeros_like(p), np.zeros_like(p))


def _moved(kin: BodyKinematics, body: int, dx: np.ndarray, dtheta: np.ndarray) -> BodyKinematics:
    p, R = kin.p_G.copy(), kin.R_GB.copy()
    Rot, _ = RelativeMotion(np.zeros(3), dtheta).flow(1.0)
    p[body] = p[body] + dx
    R[body] = Rot @ R[body]
    return BodyKinematics(p, R, kin.v_G, kin.w_G)


@pytest.mark.parametrize("scale", [1e-7, 1e-5, 1e-4])
def test_skipping_far_vertices_changes_nothing(demo_pair, scale):
    pair, kin0 = demo_pair
    rng = np.random.default_rng(7)
    pair._work.references.clear()
    pair.evaluate(0.0, kin0)  # the reference
    for _ in range(6):
        kin = _moved(kin0, pair.b, rng.normal(0, scale, 3), rng.normal(0, scale / 0.02, 3))
        fast = pair.evaluate(0.0, kin)
        assert pair._work.references, "the reference is kept while the bodies stay close"
        saved = dict(pair._work.references)
        pair._work.references.clear()  # every candidate tested
        pair._work.springs = None  # (and not the springs of the same pose just evaluated)
        full = pair.evaluate(0.0, kin)
        pair._work.references.update(saved)
        assert full.n_points > 50
        np.testing.assert_array_equal(fast.bed_vertex, full.bed_vertex)
        np.testing.assert_array_equal(fast.force_G, full.force_G)
        np.testing.assert_array_equal(fast.depth, full.depth)
    # the frozen set with a band (Newton's anticipating set) is the same too
    kin = _moved(kin0, pair.b, np.full(3, scale), np.zeros(3))
    band = pair.penetration_limit
    fast = pair.frozen(kin, band).key()
    pair._work.references.clear()
    pair._work.springs = None
    assert pair.frozen(kin, band).key() == fast


def test_rim_faces_of_open_and_closed_meshes():
    """The rim test behind the skip's exception: an open strip's faces are all on its rim, a closed
    tetrahedron has none, and a fan's inner faces are not."""
    from jointmodeller.core.mechanics.contact import boundary_faces

    strip = np.array([[0, 1, 2], [1, 3, 2]])
    assert boundary_faces(strip).tolist() == [True, True]
    tetra = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    assert not boundary_faces(tetra).any()
    # a closed octahedron with one face removed: only the three faces around the hole are on the rim
    octa = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    rim = boundary_faces(octa[1:])
    assert np.flatnonzero(rim).tolist() == [0, 2, 3]  # the faces sharing an edge with the hole


def test_nearest_from_reference_lists_equals_the_tree_query_where_it_says_so():
    """Points moved by up to `moved` from where their 2k-nearest lists were taken: wherever
    nearest_from_lists claims certainty its k nearest within the bound equal the KD-tree query's
    (as sets); it claims it for most points at small motions and for none once they moved past
    the lists' margin."""
    from jointmodeller.core.geometry.collision_proximity import SurfaceProximity

    rng = np.random.default_rng(3)
    verts = rng.random((4000, 3)) * 0.02
    faces = np.array([[0, 1, 2]])
    prox = SurfaceProximity.build(verts, faces)
    k, bound = 6, 2.5e-3
    q0 = rng.random((500, 3)) * 0.02
    lists, outside = prox.nearest_lists(q0, 2 * k, bound + 1e-4)
    for moved in (1e-6, 3e-5, 1e-4):
        dq = rng.normal(size=q0.shape)
        q = q0 + moved * dq / np.linalg.norm(dq, axis=1, keepdims=True)
        near, ok, _ = prox.nearest_from_lists(q, lists, outside - moved, k, bound)
        ref, _ = prox.nearest_lists(q, k, bound)
        assert ok.mean() > 0.5
        for a, b in zip(near[ok], ref[ok]):
            assert set(a.tolist()) == set(b.tolist())
    # moved farther than the lists' margin: never claimed
    _, ok, _ = prox.nearest_from_lists(q0 + 0.01, lists, outside - 0.01 * np.sqrt(3), k, bound)
    assert not ok.any()


def test_max_displacement_bounds_every_vertex_and_is_tight_for_a_turn_about_the_joint():
    """The bound is never below the largest vertex displacement for random motions, and for a turn
    about the surface's own centre (a joint rotating about itself, the body origin 18 cm away) it is
    within 1.5x of it — not the origin-based bound, which counts the 18 cm lever."""
    from jointmodeller.core.mechanics.contact import ContactSurface

    rng = np.random.default_rng(11)
    sheet = ContactSurface.from_mesh(np.array([[0.18, 0, 0], [0.20, 0, 0], [0.18, 0.02, 0], [0.2, 0.02, 0.01]]),
                                     np.array([[0, 1, 2], [1, 3, 2]]))
    V = sheet.vertices_B
    R0, p0 = np.eye(3), np.zeros(3)
    for _ in range(50):
        Rot, _ = RelativeMotion(np.zeros(3), rng.normal(0, 0.05, 3)).flow(1.0)
        p1 = rng.normal(0, 1e-3, 3)
        actual = np.linalg.norm(V @ Rot.T + p1 - V, axis=1).max()
        assert sheet.max_displacement(Rot, p1, R0, p0) >= actual * (1 - 1e-12)
    c = sheet.centre_B
    Rot, _ = RelativeMotion(np.zeros(3), np.array([0.0, 0.0, 0.01])).flow(1.0)
    p1 = c - Rot @ c  # turn about the centre
    actual = np.linalg.norm(V @ Rot.T + p1 - V, axis=1).max()
    assert actual > 0 and sheet.max_displacement(Rot, p1, R0, p0) <= 1.5 * actual


@pytest.mark.parametrize("scale", [1e-7, 1e-5, 1e-4])
def test_a_frozen_set_skips_far_vertices_and_its_forces_do_not_change(demo_pair, scale):
    """Newton's frozen pair (the anticipating band: thousands of vertices, few in contact) tests
    only the vertices that may have reached the surface since its reference pose; forces, depths
    and the active set equal those of testing every vertex (a fresh evaluation, no reference)."""
    from jointmodeller.core.data import using

    pair, kin0 = demo_pair
    frozen = pair.frozen(kin0, pair.penetration_limit)
    rng = np.random.default_rng(11)
    with using() as data:
        for bd in frozen.beds:
            frozen.springs(kin0, bd)  # the reference
        (refs,) = [w for w in data._work.values() if isinstance(w, dict)]
        far = sum(int((depth0 < -1e-6).sum()) for _, _, depth0 in refs.values())
        assert far > 0.2 * frozen.n_pairs, "a good part of the band lies above the surface: the skip has work"
        for _ in range(5):
            kin = _moved(kin0, pair.b, rng.normal(0, scale, 3), rng.normal(0, scale / 0.02, 3))
            fast = [frozen.springs(kin, bd) for bd in frozen.beds]
            assert len(refs) == len(frozen.beds), "the references are kept while the bodies stay close"
            with using():
                full = [frozen.springs(kin, bd) for bd in frozen.beds]
            for (pts, force, depth, active), (pts1, force1, depth1, active1) in zip(fast, full):
                assert active1.sum() > 50
                np.testing.assert_array_equal(active, active1)
                np.testing.assert_array_equal(force, force1)
                np.testing.assert_array_equal(depth, depth1)
                np.testing.assert_array_equal(pts[active], pts1[active1])  # (where no spring acts, unused)


def test_certified_closest_faces_change_nothing(demo_pair, monkeypatch):
    """Evaluations micrometres apart (an integrator's or Newton's sequence) with certified closest
    faces (ContactPair's ClosestCertificates) give the same springs, to the bit, as every face
    searched afresh; and the certificates are used (most bed vertices in contact keep their face)."""
    pair, kin0 = demo_pair
    rng = np.random.default_rng(3)
    poses, kin = [], kin0
    for _ in range(8):
        kin = _moved(kin, pair.b, rng.normal(0, 2e-7, 3), rng.normal(0, 1e-5, 3))
        poses.append(kin)
    fast, held = _certified_against_fresh(pair, poses, monkeypatch)
    assert sum(h for h, _ in held) > 0.3 * sum(r.n_points for r in fast[2:])


def _certified_against_fresh(pair, poses, monkeypatch) -> tuple[list, list[tuple[int, int]]]:
    """The pair's results at ``poses`` (evaluated in turn from cold) with certified closest faces, after
    checking them equal to the bit to every face searched afresh; and (held, tested) per certified
    pass of that run."""
    import jointmodeller.core.mechanics.contact as contact
    from jointmodeller.core.geometry.collision_proximity import SurfaceProximity

    held: list[tuple[int, int]] = []
    closest_certified = SurfaceProximity.closest_certified

    def spy(self, *args):
        out = closest_certified(self, *args)
        held.append((int(out[0].sum()), len(out[0])))
        return out

    monkeypatch.setattr(SurfaceProximity, "closest_certified", spy)
    results = {}
    for certified in (True, False):
        monkeypatch.setattr(contact, "CERTIFIED_CLOSEST", certified)
        pair._work.references.clear()
        pair._work.certificates.clear()
        pair._work.springs = None
        results[certified] = [pair.evaluate(0.0, k) for k in poses]
    for fast, full in zip(results[True], results[False]):
        assert full.n_points > 50
        np.testing.assert_array_equal(fast.bed_vertex, full.bed_vertex)
        np.testing.assert_array_equal(fast.force_G, full.force_G)
        np.testing.assert_array_equal(fast.depth, full.depth)
        np.testing.assert_array_equal(fast.points_G, full.points_G)
    return results[True], held


def test_certificates_kept_per_slot_serve_poses_visited_in_turn(demo_pair, monkeypatch):
    """Three poses ~10 um apart visited in turn, as an implicit Runge-Kutta method's stages within a
    step (each pose a little moved at every visit, as Newton's iterations move them): the
    certificates made at each pose stay in their slots, so from the second round on most vertices in
    contact keep their face at every visit (with one slot they would be overwritten in turn), and the
    springs equal a fresh search's to the bit."""
    pair, kin0 = demo_pair
    rng = np.random.default_rng(5)
    stages = [_moved(kin0, pair.b, np.array([0.0, 1e-5 * i, 0.0]), np.zeros(3)) for i in range(3)]
    poses = [_moved(stages[i % 3], pair.b, rng.normal(0, 2e-8, 3), rng.normal(0, 1e-7, 3)) for i in range(12)]
    _, held = _certified_against_fresh(pair, poses, monkeypatch)
    later = held[3:]  # from the second round on: every visit finds its own pose's certificates
    assert all(h > 0.5 * n for h, n in later), later
