"""Narrow-band signed distance fields (core.geometry.sdf) against exact closest-point queries, and
their disk cache (io.sdf_cache).

Bounds used here, all derived from the grid (see also the module doc of core.geometry.sdf):

- VALUE: the signed distance d is 1-Lipschitz; a trilinear value is the convex combination
  Σ w_c d(c) of its cell's 8 corners with Σ w_c = 1, so
  |I(p) − d(p)| ≤ Σ w_c |c − p| ≤ sqrt(Σ w_c |c − p|²) = h·sqrt(Σ_axes t(1 − t)) ≤ h·√3/2
  (Jensen; t the fractional cell position per axis) wherever the 8 corners are unclamped, which holds
  for |d(p)| ≤ w − h√3 (corners lie within h√3 of p): ``field.error_bound`` inside
  ``field.accurate_band``. For an open sheet d is 1-Lipschitz only away from the rim's sign flip: a
  point whose rim distance exceeds |d| + 2h√3 has no cell point whose closest point is on the rim.
- ROUNDING: values are stored as float32, |float32(v) − v| ≤ 2⁻²⁴|v| ≤ 2⁻²⁴ w; ``rounding(field)``
  = 2⁻²³ w (+1e-12 m for float64 arithmetic) covers it with a factor 2.
- GRADIENT: each component of the trilinear gradient is a convex combination (bilinear weights) of
  difference quotients along the cell's 4 edges in that axis, each the mean of ∂d/∂x along the edge.
  The gradient of d at any x is the unit direction from x's closest point, which lies in the normal
  cone of the closest feature, inside the cone of the normals of the faces at that feature (faces
  within |d(x)| of x). Every x of p's cell has |d(x)| ≤ |d(p)| + h√3 and lies within h√3 of p, so
  those faces lie within r = |d(p)| + 2h√3 of p. With α = the largest |n_f − n(p)| over them (n(p)
  the exact unit normal at p), |g − n(p)| ≤ √3·α, and for the unit vector ĝ, |ĝ − n| ≤ 2|g − n|.
  Where all 8 corners share one face's interior as their closest point the field is linear on the
  cell (the plane's distance), so g equals that face's normal up to rounding: ≤ 2√3·rounding/h.
- VALUE, FINER: with the same α, d(c) − d(p) = n(p)·(c − p) + r_c with |r_c| ≤ α|c − p| (integrate
  ∇d along the segment), and trilinear weights reproduce the linear part exactly (Σ w_c (c − p) = 0),
  so |I(p) − d(p)| ≤ α·h√3/2: the Lipschitz bound scaled by how much the normals turn near p.
"""

from __future__ import annotations

import math
import os
import zipfile

import numpy as np
import pytest
import trimesh
from scipy.spatial import cKDTree

from jointmodeller.core._jit import NUMBA_ENABLED
from jointmodeller.core.geometry.sdf import FAR_INSIDE, SignedDistanceField
from jointmodeller.io import sdf_cache

needs_numba = pytest.mark.skipif(not NUMBA_ENABLED, reason="JOINTMODELLER_NUMBA=0: builds too slow in plain Python")

SQRT3 = math.sqrt(3.0)
R_SPHERE = 0.02
H_SPHERE = 2.5e-4


# ------------------------------------------------------------------ helpers --------------------------

def rounding(field: SignedDistanceField) -> float:
    return field.band * 2.0 ** -23 + 1e-12


def face_normals(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    return n / np.linalg.norm(n, axis=1)[:, None]


def exact_closest(v, f, p):
    """Exact closest points (k, 3), unsigned distances (k,), faces (k,) and barycentrics (k, 3), by
    brute force over candidate faces: the nearest vertex bounds the distance by dv, so the closest
    face has a point within dv of p and its centroid lies within dv + its circumradius. (trimesh's
    proximity.closest_point was seen to miss the closest face for points near an icosphere.)"""
    from jointmodeller.core.geometry.triangles import closest_point_on_triangles

    p = np.asarray(p, float)
    tri = v[f]
    cent = tri.mean(axis=1)
    circum = np.linalg.norm(tri - cent[:, None], axis=2).max(axis=1)
    dv, _ = cKDTree(v).query(p)
    lists = cKDTree(cent).query_ball_point(p, dv * (1 + 1e-9) + circum.max() + 1e-12)
    counts = np.array([len(x) for x in lists])
    pi = np.repeat(np.arange(len(p)), counts)
    fi = np.concatenate([np.asarray(x, np.int64) for x in lists])
    c, bary = closest_point_on_triangles(p[pi], tri[fi, 0], tri[fi, 1], tri[fi, 2])
    d2 = ((c - p[pi]) ** 2).sum(axis=1)
    order = np.lexsort((d2, pi))  # per point, the smallest first
    first = order[np.r_[0, np.cumsum(counts)[:-1]]]
    return c[first], np.sqrt(d2[first]), fi[first], bary[first]


def winding_number(v, f, p, chunk=200):
    """Generalised winding number (Van Oosterom & Strackee solid angles): ~1 inside, ~0 outside."""
    out = np.empty(len(p))
    tri = v[f]
    for s in range(0, len(p), chunk):
        q = p[s:s + chunk, None, None, :]
        a, b, c = (tri[None, :, k, :] - q[:, :, 0, :] for k in range(3))
        la, lb, lc = (np.linalg.norm(x, axis=2) for x in (a, b, c))
        num = np.einsum("ijk,ijk->ij", a, np.cross(b, c))
        den = la * lb * lc + np.einsum("ijk,ijk->ij", a, b) * lc + np.einsum("ijk,ijk->ij", b, c) * la \
            + np.einsum("ijk,ijk->ij", c, a) * lb
        out[s:s + chunk] = (2.0 * np.arctan2(num, den)).sum(axis=1) / (4.0 * np.pi)
    return out


def rim_distance(v, f, p):
    """Distance (k,) from points to the boundary edges of the mesh (inf when closed)."""
    e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    u, counts = np.unique(e, axis=0, return_counts=True)
    rim = u[counts == 1]
    if len(rim) == 0:
        return np.full(len(p), np.inf)
    a, b = v[rim[:, 0]], v[rim[:, 1]]
    out = np.full(len(p), np.inf)
    for s in range(0, len(p), 256):
        q = p[s:s + 256, None, :]
        ab = b - a
        t = np.clip(((q - a) * ab).sum(axis=2) / (ab * ab).sum(axis=1), 0.0, 1.0)
        d = np.linalg.norm(q - (a + t[..., None] * ab), axis=2)
        out[s:s + 256] = d.min(axis=1)
    return out


def sample_near(v, f, n, reach, rng):
    """Points within about ``reach`` of the surface: area-weighted random surface points, moved along
    the face normal by up to ±reach and jittered."""
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    area = np.linalg.norm(fn, axis=1)
    face = rng.choice(len(f), n, p=area / area.sum())
    r = rng.random((n, 2))
    flip = r.sum(axis=1) > 1
    r[flip] = 1 - r[flip]
    s = v[f[face, 0]] + r[:, :1] * (v[f[face, 1]] - v[f[face, 0]]) + r[:, 1:] * (v[f[face, 2]] - v[f[face, 0]])
    nrm = fn[face] / area[face, None]
    return s + nrm * rng.uniform(-reach, reach, (n, 1)) + rng.normal(0, 0.2 * reach, (n, 3))


def cap_angle_bound(fn_unit, centroids, circum, tree, p, dist, n_exact, h, extra=0.0):
    """α per point: the largest |n_f − n(p)| over faces within |d| + 2h√3 (+ extra) of p (a superset:
    faces whose centroid is within that plus their circumradius)."""
    out = np.zeros(len(p))
    reach = np.abs(dist) + 2 * SQRT3 * h + extra + circum.max()
    for i, idx in enumerate(tree.query_ball_point(p, reach)):
        out[i] = np.linalg.norm(fn_unit[idx] - n_exact[i], axis=1).max()
    return out


def face_cap_alpha(v, f, p, dist, n_exact, h, extra=0.0):
    fn = face_normals(v, f)
    cent = v[f].mean(axis=1)
    circum = np.linalg.norm(v[f] - cent[:, None], axis=2).max(axis=1)
    return cap_angle_bound(fn, cent, circum, cKDTree(cent), p, dist, n_exact, h, extra)


def cell_corners(field: SignedDistanceField, p: np.ndarray) -> np.ndarray:
    """(k, 8, 3): the lattice nodes at the corners of each point's cell."""
    t = (p - field.origin) / field.spacing
    i0 = np.clip(np.floor(t).astype(np.int64), 0, field.node_dims - 2)
    off = np.array([[c & 1, (c >> 1) & 1, c >> 2] for c in range(8)])
    return field.origin + (i0[:, None, :] + off[None]) * field.spacing


@pytest.fixture(scope="module")
def sphere():
    m = trimesh.creation.icosphere(5, R_SPHERE)
    v, f = np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)
    return v, f, SignedDistanceField.build(v, f, spacing=H_SPHERE)


def convex_signed_distance(v, f, p):
    """Exact signed distance to a convex closed mesh: trimesh's distance, negative where p is behind
    every face plane."""
    _, d, _, _ = exact_closest(v, f, p)
    fn = face_normals(v, f)
    inside = np.ones(len(p), bool)
    for s in range(0, len(p), 500):
        q = p[s:s + 500]
        side = np.einsum("ijk,jk->ij", q[:, None, :] - v[f[:, 0]][None], fn)
        inside[s:s + 500] = side.max(axis=1) < 0
    return np.where(inside, -d, d)


# ------------------------------------------------------------------ sphere ---------------------------

@needs_numba
def test_sphere_value_within_the_interpolation_bound_of_exact_and_analytic_distance(sphere):
    v, f, field = sphere
    rng = np.random.default_rng(1)
    p = sample_near(v, f, 3000, 0.95 * field.accurate_band, rng)
    exact = convex_signed_distance(v, f, p)
    sel = np.abs(exact) <= field.accurate_band
    assert sel.sum() > 1000  # the test is not vacuous
    value = field.value(p)
    assert np.abs(value - exact)[sel].max() <= field.error_bound + rounding(field)
    # the analytic sphere: the icosphere lies between its inscribed ball (radius = smallest face-plane
    # distance from the centre) and the sphere, and signed distance is monotone under inclusion, so
    # |d_mesh − (|x| − R)| ≤ R − r_in
    r_in = np.abs((v[f[:, 0]] * face_normals(v, f)).sum(axis=1)).min()
    analytic = np.linalg.norm(p, axis=1) - R_SPHERE
    assert np.abs(value - analytic)[sel].max() <= field.error_bound + (R_SPHERE - r_in) + rounding(field)
    # the numpy path is the same interpolation (a few float64 roundings of values ~w apart)
    # the finer bound, α·h√3/2, with α from the faces near each point
    c, dist, _, _ = exact_closest(v, f, p[sel])
    ok = dist > 1e-3 * field.spacing  # the exact normal is defined
    q, n_exact = p[sel][ok], (p[sel][ok] - c[ok]) / exact[sel][ok, None]
    alpha = face_cap_alpha(v, f, q, exact[sel][ok], n_exact, field.spacing)
    assert np.all(np.abs(value[sel][ok] - exact[sel][ok]) <= np.minimum(alpha, 1.0) * field.error_bound
                  + rounding(field))
    v2, g2 = field.value_and_gradient(p, use_numba=False)
    v1, g1 = field.value_and_gradient(p)
    assert np.abs(v1 - v2).max() <= 64 * np.finfo(float).eps * field.band
    assert np.abs(g1 - g2).max() <= 64 * np.finfo(float).eps * field.band / field.spacing


@needs_numba
def test_sphere_sign_inside_outside_and_far_values(sphere):
    v, f, field = sphere
    rng = np.random.default_rng(2)
    d = rng.normal(size=(4000, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    p = d * rng.uniform(0.0, 3.0 * R_SPHERE, (4000, 1))  # also beyond the lattice box
    # the mesh's signed distance is within R − r_in of the sphere's (see the test above)
    r_in = np.abs((v[f[:, 0]] * face_normals(v, f)).sum(axis=1)).min()
    analytic = np.linalg.norm(p, axis=1) - R_SPHERE
    slack = R_SPHERE - r_in
    value = field.value(p)
    clear = np.abs(analytic) > 2 * field.spacing + slack
    assert np.all(np.sign(value[clear]) == np.sign(analytic[clear]))
    # every corner farther than the band (the cell's corners are within h√3): the clamped ±w,
    # inside from the sign flood fill of blocks left out
    far = np.abs(analytic) > field.band + SQRT3 * field.spacing + slack
    assert (far & (analytic < 0)).sum() > 100 and (far & (analytic > 0)).sum() > 100
    assert np.allclose(value[far], np.sign(analytic[far]) * field.band, rtol=0, atol=rounding(field))
    assert np.any(field.block_index == FAR_INSIDE)
    # every kept block holds a band node
    assert np.all((np.abs(field.values) < field.band * (1 - 1e-6)).reshape(len(field.values), -1).any(axis=1))


@needs_numba
def test_sphere_gradient_within_the_angle_of_the_exact_normal(sphere):
    v, f, field = sphere
    rng = np.random.default_rng(3)
    p = sample_near(v, f, 2000, 0.95 * field.accurate_band, rng)
    c, dist, _, _ = exact_closest(v, f, p)
    exact = convex_signed_distance(v, f, p)
    sel = (np.abs(exact) <= field.accurate_band) & (dist > 1e-3 * field.spacing)
    p, c, exact = p[sel], c[sel], exact[sel]
    n_exact = (p - c) / exact[:, None]  # outward unit normal: the gradient of d at p
    _, g = field.value_and_gradient(p)
    fn = face_normals(v, f)
    cent = v[f].mean(axis=1)
    circum = np.linalg.norm(v[f] - cent[:, None], axis=2).max(axis=1)
    alpha = cap_angle_bound(fn, cent, circum, cKDTree(cent), p, exact, n_exact, field.spacing)
    err = np.linalg.norm(g - n_exact, axis=1)
    assert np.all(err <= SQRT3 * alpha + 2 * SQRT3 * rounding(field) / field.spacing)
    # and the stated angle for this mesh: at most asin(√3·max α) (a few degrees for icosphere(5))
    stated = math.asin(min(1.0, SQRT3 * alpha.max()))
    cosang = (g * n_exact).sum(axis=1) / np.linalg.norm(g, axis=1)
    assert np.arccos(np.clip(cosang, -1, 1)).max() <= stated + 1e-6


@needs_numba
def test_projection_onto_the_field_lands_on_the_surface(sphere):
    v, f, field = sphere
    rng = np.random.default_rng(4)
    p = sample_near(v, f, 1000, 0.9 * field.accurate_band, rng)
    p = p[np.abs(convex_signed_distance(v, f, p)) <= field.accurate_band]
    proj = field.project(p)
    assert proj.converged.all()
    # |d_field(x)| ≤ tol at the end, and |d(x) − d_field(x)| ≤ error_bound
    tol = 1e-4 * field.spacing
    assert np.abs(convex_signed_distance(v, f, proj.points)).max() <= field.error_bound + tol + rounding(field)
    radial = proj.points / np.linalg.norm(proj.points, axis=1)[:, None]
    assert np.all((proj.normal * radial).sum(axis=1) > math.cos(math.radians(10)))


# ------------------------------------------------------------------ open sheets ----------------------

@needs_numba
def test_open_sheet_sign_is_the_side_of_the_face_normals():
    m = trimesh.creation.icosphere(4, R_SPHERE)
    keep = m.triangles_center[:, 2] > 0.3 * R_SPHERE  # a polar cap: an open sheet, normals outward
    v, f = np.asarray(m.vertices, float), np.asarray(m.faces[keep], np.int64)
    field = SignedDistanceField.build(v, f, spacing=H_SPHERE)
    assert not field.closed
    rng = np.random.default_rng(5)
    p = sample_near(v, f, 3000, 0.95 * field.accurate_band, rng)
    c, dist, tid, bary = exact_closest(v, f, p)
    fn = face_normals(v, f)
    away = rim_distance(v, f, p) - dist > 2 * SQRT3 * field.spacing
    interior = bary.min(axis=1) > 1e-9
    side = np.sign(((p - c) * fn[tid]).sum(axis=1))
    sel = away & interior & (dist <= field.accurate_band)
    assert sel.sum() > 500
    value = field.value(p)
    assert np.abs(value - side * dist)[sel].max() <= field.error_bound + rounding(field)
    clear = sel & (dist > 2 * field.spacing)
    assert np.all(np.sign(value[clear]) == side[clear])
    # unsigned, wherever the rim is far enough (edge and vertex closest points included)
    sel = away & (dist <= field.accurate_band)
    assert np.abs(np.abs(value) - dist)[sel].max() <= field.error_bound + rounding(field)


# ------------------------------------------------------------------ real meshes ----------------------

REAL = ["lenhart2015-R-tibia-cartilage.stl", "arm_r_humerus.vtp", "lenhart2015-R-patella-bone.stl"]


def is_closed(f):
    e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    return bool(np.all(np.unique(e, axis=0, return_counts=True)[1] == 2))


def read_real(shared_meshes, name):
    import warnings

    from jointmodeller.io.meshes import read_mesh

    path = shared_meshes / name
    if not path.is_file():
        pytest.skip(f"{name} is absent")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # open surfaces are reported, as expected
        m = read_mesh(path, units="m")
    return np.asarray(m.vertices_L, float), np.asarray(m.faces, np.int64)


@pytest.mark.slow
@needs_numba
@pytest.mark.parametrize("name", REAL)
def test_real_mesh_value_and_sign_against_exact_queries(shared_meshes, name):
    v, f = read_real(shared_meshes, name)
    field = SignedDistanceField.build(v, f)  # default spacing
    rng = np.random.default_rng(6)
    # fewer points for a closed mesh: the winding-number reference costs points × faces
    p = sample_near(v, f, 800 if is_closed(f) else 2000, 0.95 * field.accurate_band, rng)
    c, dist, tid, bary = exact_closest(v, f, p)
    value = field.value(p)
    if field.closed:
        side = np.where(winding_number(v, f, p) > 0.5, -1.0, 1.0)  # independent of the pseudo-normals
        away = np.ones(len(p), bool)
    else:
        fn = face_normals(v, f)
        side = np.where(bary.min(axis=1) > 1e-9, np.sign(((p - c) * fn[tid]).sum(axis=1)), np.nan)
        away = rim_distance(v, f, p) - dist > 2 * SQRT3 * field.spacing
    band = dist <= field.accurate_band
    signed = away & band & np.isfinite(side)
    assert signed.sum() > 200  # not vacuous
    bound = field.error_bound + rounding(field)
    assert np.abs(value - side * dist)[signed].max() <= bound
    clear = signed & (dist > 2 * field.spacing)
    assert np.all(np.sign(value[clear]) == side[clear])
    assert np.abs(np.abs(value) - dist)[away & band].max() <= bound
    if field.closed:  # far away: the clamped value with the right sign
        lo, hi = field.origin, field.origin + (field.node_dims - 1) * field.spacing
        q = rng.uniform(lo, hi, (400, 3))
        _, dq, _, _ = exact_closest(v, f, q)
        far = dq > field.band + SQRT3 * field.spacing
        sq = np.where(winding_number(v, f, q[far]) > 0.5, -1.0, 1.0)
        assert np.allclose(field.value(q[far]), sq * field.band, rtol=0, atol=rounding(field))


@pytest.mark.slow
@needs_numba
@pytest.mark.parametrize("name", REAL)
def test_real_mesh_gradient_is_the_face_normal_away_from_edges(shared_meshes, name):
    from jointmodeller.core.geometry.sdf import mean_edge_length

    v, f = read_real(shared_meshes, name)
    # cells well inside single faces need a spacing well below the edge length (the default is half)
    field = SignedDistanceField.build(v, f, spacing=mean_edge_length(v, f) / 8)
    rng = np.random.default_rng(7)
    p = sample_near(v, f, 1500, 0.8 * field.accurate_band, rng)
    corners = cell_corners(field, p).reshape(-1, 3)
    _, dc, tc, bc = exact_closest(v, f, corners)
    tc, bc, dc = tc.reshape(-1, 8), bc.reshape(-1, 8, 3), dc.reshape(-1, 8)
    # all 8 corners see the interior of one face, unclamped: d is that face's plane distance on the
    # whole cell (linear), so the trilinear gradient is exactly its normal (up to value rounding)
    same = (tc == tc[:, :1]).all(axis=1) & (bc.min(axis=(1, 2)) > 1e-9) & (dc.max(axis=1) < field.band)
    assert same.sum() >= 10  # not vacuous
    _, g = field.value_and_gradient(p[same])
    n = face_normals(v, f)[tc[same, 0]]
    assert np.linalg.norm(g - n, axis=1).max() <= 2 * SQRT3 * rounding(field) / field.spacing + 1e-9


# ------------------------------------------------------------------ invariances ----------------------

def bumpy_mesh():
    """An asymmetric closed mesh (a squashed, bumped icosphere), no shared files needed."""
    m = trimesh.creation.icosphere(4, 0.015)
    v = np.asarray(m.vertices, float) * [1.0, 0.7, 1.3]
    v += 0.002 * np.sin(180 * v[:, [1, 2, 0]])
    return v, np.asarray(m.faces, np.int64)


@needs_numba
def test_translation_mirror_and_quarter_turn_invariance():
    v, f = bumpy_mesh()
    h = 3e-4
    field = SignedDistanceField.build(v, f, spacing=h)
    rng = np.random.default_rng(8)
    p = sample_near(v, f, 2000, field.band, rng)
    base, gbase = field.value_and_gradient(p)
    # equal values up to float32 rounding (one ulp of values within ±w: 2⁻²³·w) and float64 rounding
    # of node positions; gradients the same divided by h
    tol = 4 * rounding(field)
    t = np.array([0.0123, -0.0457, 0.0301])
    moved = SignedDistanceField.build(v + t, f, spacing=h)
    assert np.abs(moved.value(p + t) - base).max() <= tol
    # mirror x about the box centre, faces flipped to keep them outward: the centred lattice maps onto itself
    cx = 0.5 * (v[:, 0].min() + v[:, 0].max())
    vm = v.copy()
    vm[:, 0] = 2 * cx - v[:, 0]
    mirrored = SignedDistanceField.build(vm, f[:, ::-1], spacing=h)
    pm = p.copy()
    pm[:, 0] = 2 * cx - p[:, 0]
    vmv, gm = mirrored.value_and_gradient(pm)
    assert np.abs(vmv - base).max() <= tol
    assert np.abs(gm * [-1, 1, 1] - gbase).max() <= 8 * tol / h
    # a quarter turn about z (exact in floating point: (x, y) -> (−y, x))
    vr = np.column_stack([-v[:, 1], v[:, 0], v[:, 2]])
    turned = SignedDistanceField.build(vr, f, spacing=h)
    pr = np.column_stack([-p[:, 1], p[:, 0], p[:, 2]])
    assert np.abs(turned.value(pr) - base).max() <= tol


def test_plain_python_build_and_query_match_the_compiled_ones():
    v, f = tiny_mesh()
    plain = SignedDistanceField.build(v, f, spacing=1.5e-3, band_cells=3, use_numba=False)
    compiled = SignedDistanceField.build(v, f, spacing=1.5e-3, band_cells=3)
    assert np.array_equal(plain.block_index, compiled.block_index)
    assert np.abs(plain.values - compiled.values).max() <= rounding(plain)
    p = np.random.default_rng(9).uniform(-0.02, 0.02, (300, 3))
    a, ga = compiled.value_and_gradient(p)
    b, gb = compiled.value_and_gradient(p, use_numba=False)
    assert np.abs(a - b).max() <= 64 * np.finfo(float).eps * compiled.band
    assert np.abs(ga - gb).max() <= 64 * np.finfo(float).eps * compiled.band / compiled.spacing


def test_bad_input_is_refused():
    v, f = bumpy_mesh()
    with pytest.raises(ValueError):
        SignedDistanceField.build(v, f, spacing=0.0)
    with pytest.raises(ValueError):
        SignedDistanceField.build(v, f, spacing=1e-3, band_cells=1)
    with pytest.raises(ValueError):
        SignedDistanceField.build(v, f + len(v), spacing=1e-3)
    tv, tf = tiny_mesh()
    assert np.isnan(SignedDistanceField.build(tv, tf, spacing=1e-3).value(np.array([[np.nan, 0, 0]]))).all()


# ------------------------------------------------------------------ contact --------------------------

def linear_force(area, depth, normal, k=1.0e9):
    """A simple linear contact law: Σ k·A_i·max(δ_i, 0)·n_i [N] (k in N/m³)."""
    return k * (area * np.maximum(depth, 0.0))[:, None] * normal


def vertex_areas(v, f):
    tri = v[f]
    a = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    out = np.zeros(len(v))
    for k in range(3):
        np.add.at(out, f[:, k], a / 3)
    return out


def contact_comparison(va, fa, field, bed, area, k=1.0e9):
    """Depth, normal and force of bed points against mesh A, from the field and from the repo's exact
    contact query (SurfaceProximity: exact closest point, interpolated vertex normal), with the bounds
    derived in the module doc. Returns (|ΔF|, bound on |ΔF|, |F|, number of points in contact)."""
    from jointmodeller.core.geometry.collision_proximity import SurfaceProximity

    prox = SurfaceProximity.build(va, fa)
    cp = prox.closest(bed, field.band)  # every bed point within w of A's surface
    band = np.abs(cp.depth) <= field.accurate_band
    # precondition: in contact, and no point deeper than the accurate band
    assert (cp.depth > 0).sum() > 20 and np.all(band | (cp.depth < 0))
    idx, depth, normal, closest = cp.index[band], cp.depth[band], cp.normal[band], cp.closest[band]
    p = bed[idx]
    d, g = field.value_and_gradient(p)
    # normals: the exact gradient n at p, and the contact code's interpolated vertex normal, which is a
    # normalised mean of normals of faces within one longest edge of the closest point
    n_exact = (closest - p) / depth[:, None]
    fn = face_normals(va, fa)
    cent = va[fa].mean(axis=1)
    circum = np.linalg.norm(va[fa] - cent[:, None], axis=2).max(axis=1)
    tree = cKDTree(cent)
    alpha = cap_angle_bound(fn, cent, circum, tree, p, depth, n_exact, field.spacing)
    alpha_v = cap_angle_bound(fn, cent, circum, tree, p, depth, n_exact, field.spacing, extra=prox.max_edge)
    # depth: |δ_field − δ_exact| ≤ h√3/2, and ≤ α·h√3/2 (the finer bound) (+ rounding)
    e_depth = np.minimum(alpha, 1.0) * field.error_bound + rounding(field)
    assert np.all(np.abs(-d - depth) <= e_depth)
    g_unit = g / np.linalg.norm(g, axis=1)[:, None]
    e_grad = SQRT3 * alpha + 2 * SQRT3 * rounding(field) / field.spacing
    assert np.all(np.linalg.norm(g_unit - n_exact, axis=1) <= 2 * e_grad)
    nu = 2 * e_grad + alpha_v  # |ĝ − n_vertex| ≤ |ĝ − n| + |n − n_vertex|
    assert np.all(np.linalg.norm(g_unit - normal, axis=1) <= nu)
    # force: |max(δf,0) n̂f − max(δe,0) n_e| ≤ |δf − δe| + max(δe,0)·|n̂f − n_e|
    a = area[idx]
    f_field = linear_force(a, -d, g_unit, k).sum(axis=0)
    f_exact = linear_force(a, depth, normal, k).sum(axis=0)
    bound = k * (a * (e_depth + np.maximum(depth, 0) * nu)).sum()
    # every other bed point is outside by more than the accurate band (> h√3): every corner of its
    # cell is outside (clamping keeps the sign), so the field's depth is negative too: no force
    others = np.setdiff1d(np.arange(len(bed)), idx)
    assert np.all(field.value(bed[others]) > 0)
    err = np.linalg.norm(f_field - f_exact)
    assert err <= bound
    return err, bound, np.linalg.norm(f_exact), int((depth > 0).sum())


@needs_numba
def test_contact_depth_normal_and_force_against_the_exact_query_two_spheres(sphere):
    va, fa, field = sphere
    mb = trimesh.creation.icosphere(5, 0.025)
    u = np.array([0.3, -0.5, 0.81])
    u /= np.linalg.norm(u)
    overlap = 0.0004
    bed = np.asarray(mb.vertices) + u * (R_SPHERE + 0.025 - overlap)
    contact_comparison(va, fa, field, bed, vertex_areas(np.asarray(mb.vertices), np.asarray(mb.faces)))


@needs_numba
def test_contact_depth_normal_and_force_against_the_exact_query_demo_cartilage():
    from jointmodeller.app.demo import load_demo_meshes

    meshes = load_demo_meshes()
    hum, uln = meshes["humerus_cartilage"], meshes["ulna_cartilage"]
    va, fa = np.asarray(hum.vertices_L, float), np.asarray(hum.faces, np.int64)
    vb, fb = np.asarray(uln.vertices_L, float), np.asarray(uln.faces, np.int64)
    field = SignedDistanceField.build(va, fa)
    assert field.closed
    # press the ulna's cartilage onto the humerus's: 0.3 mm towards it (0.1 mm clearance at rest)
    towards = va.mean(axis=0) - vb.mean(axis=0)
    towards /= np.linalg.norm(towards)
    contact_comparison(va, fa, field, vb + 0.0003 * towards, vertex_areas(vb, fb))


# ------------------------------------------------------------------ disk cache -----------------------

@pytest.fixture()
def small_mesh():
    m = trimesh.creation.icosphere(3, 0.01)
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)


def assert_same_field(a: SignedDistanceField, b: SignedDistanceField):
    for (na, xa), (nb, xb) in zip(a.to_arrays().items(), b.to_arrays().items()):
        assert na == nb and xa.dtype == xb.dtype and xa.shape == xb.shape
        assert xa.tobytes() == xb.tobytes(), na


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("JOINTMODELLER_CACHE", str(tmp_path / "jm"))
    assert sdf_cache.cache_dir() == tmp_path / "jm" / "sdf"
    monkeypatch.delenv("JOINTMODELLER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sdf_cache.cache_dir() == tmp_path / "xdg" / "jointmodeller" / "sdf"


def test_cache_key_depends_on_mesh_and_grid(small_mesh):
    v, f = small_mesh
    k = sdf_cache.cache_key(v, f, 5e-4)
    assert k == sdf_cache.cache_key(v.copy(), f.astype(np.int32), 5e-4)  # content, not identity or dtype
    v2 = v.copy()
    v2[0, 0] = np.nextafter(v2[0, 0], 1.0)
    assert len({k, sdf_cache.cache_key(v2, f, 5e-4), sdf_cache.cache_key(v, f[:, [1, 2, 0]], 5e-4),
                sdf_cache.cache_key(v, f, 5e-4 * (1 + 1e-12)), sdf_cache.cache_key(v, f, 5e-4, 5)}) == 5


@needs_numba
def test_cache_round_trip_is_bit_for_bit(monkeypatch, tmp_path, small_mesh):
    monkeypatch.setenv("JOINTMODELLER_CACHE", str(tmp_path))
    v, f = small_mesh
    first = sdf_cache.cached_field(v, f, 5e-4)
    assert not first.hit and first.stored and first.path.parent == tmp_path / "sdf"
    second = sdf_cache.cached_field(v, f, 5e-4)
    assert second.hit and second.path == first.path
    assert_same_field(first.field, second.field)
    assert_same_field(first.field, SignedDistanceField.build(v, f, spacing=5e-4))
    p = np.random.default_rng(10).uniform(-0.012, 0.012, (500, 3))
    assert first.field.value(p).tobytes() == second.field.value(p).tobytes()
    with np.load(first.path, allow_pickle=False) as npz:  # plain arrays only
        assert all(npz[n].dtype != object for n in npz.files)


def _tamper_value(path):
    with np.load(path, allow_pickle=False) as npz:
        arrays = {n: npz[n] for n in npz.files}
    arrays["values"] = arrays["values"].copy()
    arrays["values"].reshape(-1)[7] += np.float32(1e-5)
    np.savez(path, **arrays)


def _index_out_of_range(path):
    """A self-consistent file (digest recomputed) whose block table points past the values: must be
    refused by the checks, never reach the kernels."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {n: npz[n] for n in npz.files}
    table = arrays["block_index"].copy()
    table.reshape(-1)[np.flatnonzero(table.reshape(-1) >= 0)[0]] = len(arrays["values"]) + 5
    arrays["block_index"] = table
    fake = SignedDistanceField(arrays["origin"], float(arrays["spacing"]), float(arrays["band"]),
                               arrays["node_dims"], table, arrays["values"], bool(arrays["closed"]))
    arrays["digest"] = np.array(fake.digest())
    np.savez(path, **arrays)


def _flip_byte(path):
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


def _pickled(path):
    np.save(open(path, "wb"), np.array([{"evil": 1}], dtype=object), allow_pickle=True)


CORRUPTIONS = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "garbage": lambda p: p.write_bytes(os.urandom(4096)),
    "empty": lambda p: p.write_bytes(b""),
    "flipped_byte": lambda p: _flip_byte(p),
    "tampered_value": _tamper_value,
    "index_out_of_range": _index_out_of_range,
    "pickled": _pickled,
    "other_mesh_file": None,  # filled in the test: a valid file of another mesh under this key's name
}


@needs_numba
@pytest.mark.parametrize("how", sorted(CORRUPTIONS))
def test_corrupt_cache_file_is_rebuilt_not_trusted(monkeypatch, tmp_path, small_mesh, how):
    monkeypatch.setenv("JOINTMODELLER_CACHE", str(tmp_path))
    v, f = small_mesh
    good = sdf_cache.cached_field(v, f, 5e-4)
    if how == "other_mesh_file":
        other = sdf_cache.cached_field(v * 1.1, f, 5e-4)
        good.path.write_bytes(other.path.read_bytes())
    else:
        CORRUPTIONS[how](good.path)
    again = sdf_cache.cached_field(v, f, 5e-4)
    assert not again.hit and again.stored and again.reason.startswith("rebuilt")
    assert_same_field(again.field, good.field)
    third = sdf_cache.cached_field(v, f, 5e-4)  # the rewritten file is good again
    assert third.hit
    assert_same_field(third.field, good.field)


def tiny_mesh():
    m = trimesh.creation.icosphere(1, 0.01)
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)


def test_unwritable_cache_folder_still_gives_the_field(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    v, f = tiny_mesh()
    res = sdf_cache.cached_field(v, f, 1e-3, folder=blocker / "sdf")
    assert not res.hit and not res.stored
    assert_same_field(res.field, SignedDistanceField.build(v, f, spacing=1e-3))


def test_zip_member_crc_is_checked(tmp_path):
    """numpy's npz reader goes through zipfile, which checks each member's CRC-32: a flipped byte in
    the values is caught even before the digest is compared."""
    v, f = tiny_mesh()
    field = SignedDistanceField.build(v, f, spacing=1e-3)
    path = sdf_cache.save_field(field, tmp_path / "x.npz", "k")
    with zipfile.ZipFile(path) as z:
        assert all(i.CRC for i in z.infolist())
    assert_same_field(sdf_cache.load_field(path, "k"), field)
    with pytest.raises(ValueError):
        sdf_cache.load_field(path, "another key")
