"""Compiled loops of :mod:`jointmodeller.core.mechanics.contact` (issue 17: live dynamics with contact).

- :func:`bed_points`, :func:`exact_springs`: bed vertices in the other body's frame (only the rows
  an evaluation needs) and the contact points from a closest-point search's found rows (the exact
  search's, or the field geometry's search on the field's node faces, core.geometry.field_faces),
  in G, written compacted (the rows beneath the surface only).
- :func:`spring_forces`: each spring's force on its bed body (normal force with Hunt–Crossley
  dissipation from the relative point velocity along the normal, plus the MJM lateral spring), as
  ``ContactPair.evaluate`` reports them.
- :func:`accumulate_spring_forces`: the same forces scattered straight into the bodies' force and
  moment sums (``ContactPair.accumulate``: dynamics and quasi-static sweeps need only the sums).
- :func:`record_certificates`: the exact geometry's closest-face certificates of a search's rows
  written into their vertices' next slots (``ClosestCertificates.record``).

Every formula is written once, in :func:`spring_force_at` and the helpers it calls
(``contact_laws.hunt_crossley``, ``point_force_kernels``); with ``JOINTMODELLER_NUMBA=0`` the same
functions run as plain Python (core._jit). Frames: ``_o`` the other body's (the field's) frame,
``_B`` the bed body's, ``_G`` global.
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import NUMBA_ENABLED, njit
from jointmodeller.core.geometry.collision_proximity import certificate_bounds, certificate_bounds_row
from jointmodeller.core.mechanics.contact_laws import hunt_crossley_jit
from jointmodeller.core.mechanics.point_force_kernels import point_velocity_at, scatter_point_force_at


@njit(error_model="numpy")
def bed_points_kernel(vertices_B, rows, R_ob, p_ob, compact, out):  # pragma: no cover - numba
    """out[v] (compact: out[r]) = R_ob vertices_B[v] + p_ob for v = rows[r]: bed vertices in the other
    body's frame."""
    for r in range(rows.shape[0]):
        v = rows[r]
        x = vertices_B[v, 0]
        y = vertices_B[v, 1]
        z = vertices_B[v, 2]
        o = r if compact else v
        for k in range(3):
            out[o, k] = (x * R_ob[k, 0] + y * R_ob[k, 1] + z * R_ob[k, 2]) + p_ob[k]


def bed_points(vertices_B: np.ndarray, rows: np.ndarray, R_ob: np.ndarray, p_ob: np.ndarray,
               out: np.ndarray, compact: bool = False) -> None:
    """Write the bed vertices ``rows`` (k,) of vertices_B (n, 3), carried into the other body's frame
    by R_ob, p_ob, into those rows of out (n, 3); the other rows are left as they are (an evaluation
    needs only its candidates'). ``compact``: into out's first k rows instead, in the order of rows."""
    if not NUMBA_ENABLED:
        if compact:
            out[:len(rows)] = vertices_B[rows] @ R_ob.T + p_ob
        else:
            out[rows] = vertices_B[rows] @ R_ob.T + p_ob
        return
    bed_points_kernel(vertices_B, np.asarray(rows, np.int64), _f64(R_ob), _f64(p_ob), bool(compact), out)


@njit(error_model="numpy", inline="always")
def _write_spring(m, sx, sy, sz, px, py, pz, nx, ny, nz, R_Go, p_Go, mid_G, normal_G, offset_G,
                  depth):  # pragma: no cover - numba
    """Row m of the springs from a bed point p, its closest surface point s and the smooth normal n there
    (the other body's frame): offset s − p, normal and midpoint carried into G, depth along the normal
    floored at 0. The one implementation: both geometries' spring kernels call it."""
    ox = sx - px
    oy = sy - py
    oz = sz - pz
    qx = 0.5 * (sx + px)
    qy = 0.5 * (sy + py)
    qz = 0.5 * (sz + pz)
    along = 0.0
    for k in range(3):
        o = ox * R_Go[k, 0] + oy * R_Go[k, 1] + oz * R_Go[k, 2]
        n = nx * R_Go[k, 0] + ny * R_Go[k, 1] + nz * R_Go[k, 2]
        offset_G[m, k] = o
        normal_G[m, k] = n
        mid_G[m, k] = p_Go[k] + (qx * R_Go[k, 0] + qy * R_Go[k, 1] + qz * R_Go[k, 2])
        along += o * n
    depth[m] = max(along, 0.0)


@njit(error_model="numpy")
def exact_springs_kernel(points_o, index, closest_o, normal_o, depth_in, face_in, above, R_Go, p_Go,
                         idx_out, mid_G, normal_G, offset_G, depth, face_out):  # pragma: no cover - numba
    """The springs of the found rows deeper than ``-above`` (above = 0: strictly beneath); returns their
    count m, rows [:m] of the outputs filled (see :func:`exact_springs`)."""
    m = 0
    for r in range(index.shape[0]):
        if not depth_in[r] > -above:
            continue
        v = index[r]
        _write_spring(m, closest_o[r, 0], closest_o[r, 1], closest_o[r, 2], points_o[v, 0], points_o[v, 1],
                      points_o[v, 2], normal_o[r, 0], normal_o[r, 1], normal_o[r, 2], R_Go, p_Go, mid_G, normal_G,
                      offset_G, depth)
        idx_out[m] = v
        face_out[m] = face_in[r]
        m += 1
    return m


@njit(error_model="numpy")
def searched_springs_kernel(q_o, s_o, n_o, d2, face_in, distance, above, R_Go, p_Go,
                            row_out, mid_G, normal_G, offset_G, depth, face_out):  # pragma: no cover - numba
    """:func:`exact_springs_kernel` straight from a search's rows (``SurfaceProximity.search_near``'s
    layout: a face within ``distance``, the signed depth ±distance by the side of the smooth normal, as
    ``collision_proximity._within_kernel`` signs it), without the found rows in between."""
    m = 0
    for r in range(q_o.shape[0]):
        if not (face_in[r] >= 0 and np.sqrt(d2[r]) <= distance):
            continue
        dist = np.sqrt(d2[r])
        side = ((s_o[r, 0] - q_o[r, 0]) * n_o[r, 0] + (s_o[r, 1] - q_o[r, 1]) * n_o[r, 1]) \
            + (s_o[r, 2] - q_o[r, 2]) * n_o[r, 2]
        if not (dist if side > 0.0 else -dist) > -above:
            continue
        _write_spring(m, s_o[r, 0], s_o[r, 1], s_o[r, 2], q_o[r, 0], q_o[r, 1], q_o[r, 2], n_o[r, 0], n_o[r, 1],
                      n_o[r, 2], R_Go, p_Go, mid_G, normal_G, offset_G, depth)
        row_out[m] = r
        face_out[m] = face_in[r]
        m += 1
    return m


def searched_springs(q_o: np.ndarray, found: tuple, distance: float, above: float, R_Go: np.ndarray,
                     p_Go: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                np.ndarray]:
    """:func:`exact_springs` of points q_o (k, 3) (the other body's frame) from a search's rows ``found`` =
    (s (k, 3), n (k, 3), d2 (k,), face (k,)): the rows with a face within ``distance`` whose depth signed
    by the smooth normal's side is deeper than −above (row (m,), midpoint_G, normal_G, offset_G, depth,
    face). The same springs as ``SurfaceProximity.found`` then :func:`exact_springs`, in one pass."""
    s_o, n_o, d2, face_in = found
    if not NUMBA_ENABLED:
        cp = _within_rows(q_o, s_o, n_o, d2, face_in, distance)
        return exact_springs(q_o, cp.index, cp.closest, cp.normal, cp.depth, cp.face, above, R_Go, p_Go)
    k = len(q_o)
    row = np.empty(k, np.int64)
    mid_G = np.empty((k, 3))
    normal_G = np.empty((k, 3))
    offset_G = np.empty((k, 3))
    depth = np.empty(k)
    face = np.empty(k, np.int64)
    m = searched_springs_kernel(_f64(q_o), _f64(s_o), _f64(n_o), _f64(d2), np.asarray(face_in, np.int64),
                                float(distance), float(above), _f64(R_Go), _f64(p_Go), row, mid_G, normal_G,
                                offset_G, depth, face)
    return row[:m], mid_G[:m], normal_G[:m], offset_G[:m], depth[:m], face[:m]


def _within_rows(q_o, s_o, n_o, d2, face_in, distance):
    from jointmodeller.core.geometry.collision_proximity import SurfaceProximity

    return SurfaceProximity.found(q_o, np.arange(len(q_o)), s_o, n_o, d2, face_in, np.zeros(len(q_o)), distance)


def exact_springs(points_o: np.ndarray, index: np.ndarray, closest_o: np.ndarray, normal_o: np.ndarray,
                  depth_in: np.ndarray, face_in: np.ndarray, above: float, R_Go: np.ndarray, p_Go: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(bed vertex (m,), midpoint_G (m, 3), unit normal_G (m, 3), offset_G (m, 3), depth (m,), face (m,))
    of the exact geometry's springs: the found bed vertices ``index`` (k,) at points_o[index] (the
    other body's frame) with their closest surface points closest_o (k, 3), smooth normals normal_o
    and signed depths depth_in, kept where deeper than −above; the offset to the surface, the normal
    and the midpoint carried into G by R_Go, p_Go, and the depth measured along the smooth normal,
    floored at 0 (as Smith2018 measures it: the force falls to zero where a vertex leaves contact, also
    across an edge where its closest point turns away from the normal)."""
    if not NUMBA_ENABLED:
        inside = depth_in > -above
        idx = index[inside]
        s_o = closest_o[inside]
        offset_G = (s_o - points_o[idx]) @ R_Go.T
        normal_G = normal_o[inside] @ R_Go.T
        mid_G = p_Go + (0.5 * (s_o + points_o[idx])) @ R_Go.T
        return idx, mid_G, normal_G, offset_G, np.maximum((offset_G * normal_G).sum(axis=1), 0.0), face_in[inside]
    k = len(index)
    idx = np.empty(k, np.int64)
    mid_G = np.empty((k, 3))
    normal_G = np.empty((k, 3))
    offset_G = np.empty((k, 3))
    depth = np.empty(k)
    face = np.empty(k, np.int64)
    m = exact_springs_kernel(points_o, np.asarray(index, np.int64), _f64(closest_o), _f64(normal_o), _f64(depth_in),
                             np.asarray(face_in, np.int64), float(above), _f64(R_Go), _f64(p_Go), idx, mid_G,
                             normal_G, offset_G, depth, face)
    return idx[:m], mid_G[:m], normal_G[:m], offset_G[:m], depth[:m], face[:m]


@njit(error_model="numpy")
def spring_force_at(nx, ny, nz, k, depth, rate, dissipation, lateral, ox, oy, oz):  # pragma: no cover - numba
    """(fx, fy, fz, f_n) of a spring on its bed body: the normal force f_n = Hunt–Crossley of the
    elastic force k·depth at penetration rate ``rate`` along the unit normal n, plus lateral·k times
    the offset o's part across n (lateral = 0: none). Numbers (the compiled loops: a compiled call
    passing arrays would cost their reference counts) or arrays of m springs (the numpy path)."""
    f_n = hunt_crossley_jit(k * depth, rate, dissipation)
    fx = f_n * nx
    fy = f_n * ny
    fz = f_n * nz
    if lateral > 0.0:
        kl = lateral * k
        along = ox * nx + oy * ny + oz * nz
        fx = fx + kl * (ox - along * nx)
        fy = fy + kl * (oy - along * ny)
        fz = fz + kl * (oz - along * nz)
    return fx, fy, fz, f_n


@njit(error_model="numpy")
def relative_rate(p_G, R_GB, v_G, w_G, bed_body, other, px, py, pz, nx, ny, nz):  # pragma: no cover - numba
    """(rate, v_rel x, y, z): the velocity of the bed body's point at p (G) relative to the other
    body's point there, and the penetration rate −v_rel·n (numbers, or arrays on the numpy path)."""
    ux, uy, uz = _body_point_velocity(p_G, R_GB, v_G, w_G, bed_body, px, py, pz)
    sx, sy, sz = _body_point_velocity(p_G, R_GB, v_G, w_G, other, px, py, pz)
    ux -= sx
    uy -= sy
    uz -= sz
    return -(ux * nx + uy * ny + uz * nz), ux, uy, uz


@njit(error_model="numpy")
def _body_point_velocity(p_G, R_GB, v_G, w_G, b, px, py, pz):  # pragma: no cover - numba
    """Velocity (G) of the point of body b at p (G): its r_B = R_GBᵀ (p − p_G[b]) moved with the body
    (``point_force_kernels.point_velocity_at``)."""
    dx = px - p_G[b, 0]
    dy = py - p_G[b, 1]
    dz = pz - p_G[b, 2]
    rx = dx * R_GB[b, 0, 0] + dy * R_GB[b, 1, 0] + dz * R_GB[b, 2, 0]
    ry = dx * R_GB[b, 0, 1] + dy * R_GB[b, 1, 1] + dz * R_GB[b, 2, 1]
    rz = dx * R_GB[b, 0, 2] + dy * R_GB[b, 1, 2] + dz * R_GB[b, 2, 2]
    return point_velocity_at(R_GB, v_G, w_G, b, rx, ry, rz)


@njit(error_model="numpy")
def spring_forces_kernel(p_G, R_GB, v_G, w_G, bed_body, other, point_G, normal_G, depth, stiffness, offset_G,
                         lateral, dissipation, needs_rate, force_out, f_n_out, v_rel_out):  # pragma: no cover
    """:func:`spring_force_at` of every spring into force_out (m, 3), f_n_out (m,), v_rel_out (m, 3)
    (zero unless ``needs_rate``; the rate from :func:`relative_rate`)."""
    for i in range(depth.shape[0]):
        nx = normal_G[i, 0]
        ny = normal_G[i, 1]
        nz = normal_G[i, 2]
        rate = 0.0
        ux = 0.0
        uy = 0.0
        uz = 0.0
        if needs_rate:
            rate, ux, uy, uz = relative_rate(p_G, R_GB, v_G, w_G, bed_body, other, point_G[i, 0], point_G[i, 1],
                                             point_G[i, 2], nx, ny, nz)
        fx, fy, fz, f_n = spring_force_at(nx, ny, nz, stiffness[i], depth[i], rate, dissipation, lateral,
                                          offset_G[i, 0], offset_G[i, 1], offset_G[i, 2])
        force_out[i, 0] = fx
        force_out[i, 1] = fy
        force_out[i, 2] = fz
        f_n_out[i] = f_n
        v_rel_out[i, 0] = ux
        v_rel_out[i, 1] = uy
        v_rel_out[i, 2] = uz


@njit(error_model="numpy")
def accumulate_spring_forces_kernel(p_G, R_GB, v_G, w_G, a, b, sign, bed_body, other, point_G, normal_G, depth,
                                    stiffness, offset_G, lateral, dissipation, needs_rate,
                                    force_G, torque_G):  # pragma: no cover - numba
    """Each spring's force (:func:`spring_force_at`, as :func:`spring_forces_kernel`) times ``sign``
    added at its point to body a, and minus that to body b, with their moments about each centre of
    mass (``scatter_point_force_at``)."""
    for i in range(depth.shape[0]):
        nx = normal_G[i, 0]
        ny = normal_G[i, 1]
        nz = normal_G[i, 2]
        px = point_G[i, 0]
        py = point_G[i, 1]
        pz = point_G[i, 2]
        rate = 0.0
        if needs_rate:
            rate, _, _, _ = relative_rate(p_G, R_GB, v_G, w_G, bed_body, other, px, py, pz, nx, ny, nz)
        fx, fy, fz, _ = spring_force_at(nx, ny, nz, stiffness[i], depth[i], rate, dissipation, lateral,
                                        offset_G[i, 0], offset_G[i, 1], offset_G[i, 2])
        fx = sign * fx
        fy = sign * fy
        fz = sign * fz
        scatter_point_force_at(p_G, a, px, py, pz, fx, fy, fz, force_G, torque_G)
        scatter_point_force_at(p_G, b, px, py, pz, -fx, -fy, -fz, force_G, torque_G)


@njit(error_model="numpy")
def record_certificates_kernel(P_o, searched, near, verts, d2, face, gap, face_k, gap_k, dk, spare, distance, slack,
                               point_o, cert_face, reach, cert_face_k, face_k_d, reach_k, near_v, next_v, near_margin,
                               cursor):  # pragma: no cover - numba
    """:func:`record_certificates` in one pass over the searched rows (each bed vertex once)."""
    slots = reach.shape[1]
    for r in range(searched.shape[0]):
        if not (face[r] >= 0 and np.sqrt(d2[r]) <= distance):
            continue
        v = searched[r]
        c = cursor[v]
        for k in range(3):
            point_o[v, c, k] = P_o[v, k]
        cert_face[v, c] = face[r]
        reach[v, c], reach_k[v, c], next_v[v, c], near_margin[v, c] = certificate_bounds_row(
            P_o[v, 0], P_o[v, 1], P_o[v, 2], near, r, verts, d2[r], gap[r], gap_k[r], spare[r], slack)
        for j in range(face_k.shape[1]):
            cert_face_k[v, c, j] = face_k[r, j]
            face_k_d[v, c, j] = dk[r, j] - slack
        for j in range(near.shape[1]):
            near_v[v, c, j] = near[r, j]
        cursor[v] = (c + 1) % slots


def record_certificates(P_o: np.ndarray, searched: np.ndarray, found: tuple, near: np.ndarray, spare: np.ndarray,
                        verts: np.ndarray, distance: float, slack: float, point_o: np.ndarray, cert_face: np.ndarray,
                        reach: np.ndarray, cert_face_k: np.ndarray, face_k_d: np.ndarray, reach_k: np.ndarray,
                        near_v: np.ndarray, next_v: np.ndarray, near_margin: np.ndarray, cursor: np.ndarray) -> None:
    """Write ``ClosestCertificates.record``'s certificates of the searched bed vertices (k,) (unique
    rows of P_o) whose face lies within ``distance``: each into its vertex's slot ``cursor``, which
    then moves on. ``found``: the search's (s, n, d2, face, gap, face_k, gap_k, dk) per row, near (k, K)
    the nearest surface vertices it searched round (of ``verts``), spare (k,) their spares; the
    bounds as :func:`certificate_bounds` makes them. Compiled: one loop; numba off: the same on whole
    columns."""
    _, _, d2, face, gap, face_k, gap_k, dk = found
    near = np.ascontiguousarray(near, dtype=np.int64)
    if NUMBA_ENABLED:
        record_certificates_kernel(P_o, np.asarray(searched, np.int64), near, verts, d2, face, gap, face_k, gap_k,
                                   dk, _f64(spare), float(distance), float(slack), point_o, cert_face, reach,
                                   cert_face_k, face_k_d, reach_k, near_v, next_v, near_margin, cursor)
        return
    ok = (face >= 0) & (np.sqrt(d2) <= distance)
    rows = searched[ok]
    slot = cursor[rows]
    point_o[rows, slot] = P_o[rows]
    cert_face[rows, slot] = face[ok]
    reach[rows, slot], reach_k[rows, slot], next_v[rows, slot], near_margin[rows, slot] = certificate_bounds(
        P_o[rows], near[ok], verts, d2[ok], gap[ok], gap_k[ok], _f64(spare)[ok], slack)
    cert_face_k[rows, slot] = face_k[ok]
    face_k_d[rows, slot] = dk[ok] - slack
    near_v[rows, slot] = near[ok]
    cursor[rows] = (slot + 1) % reach.shape[1]


def _f64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def kinematics_arrays(kin) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(p_G, R_GB, v_G, w_G) of a BodyKinematics as contiguous float64 arrays, for the kernels."""
    return _f64(kin.p_G), _f64(kin.R_GB), _f64(kin.v_G), _f64(kin.w_G)


def spring_forces(arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], bed_body: int, other: int,
                  point_G: np.ndarray, normal_G: np.ndarray, depth: np.ndarray, stiffness: np.ndarray,
                  offset_G: np.ndarray, lateral: float, dissipation: float,
                  needs_rate: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(force on the bed body (m, 3), normal force f_n (m,), relative velocity v_rel_G (m, 3), zero
    unless ``needs_rate``) of m springs; ``arrays`` from :func:`kinematics_arrays`. Compiled: a loop
    (:func:`spring_forces_kernel`); numba switched off: the same functions on whole columns."""
    p_G, R_GB, v_G, w_G = arrays
    point_G, normal_G, depth, stiffness, offset_G = (_f64(x) for x in (point_G, normal_G, depth, stiffness, offset_G))
    m = len(depth)
    if not NUMBA_ENABLED:
        return _spring_forces_columns(arrays, int(bed_body), int(other), point_G, normal_G, depth, stiffness,
                                      offset_G, float(lateral), float(dissipation), bool(needs_rate))
    force = np.empty((m, 3))
    f_n = np.empty(m)
    v_rel = np.empty((m, 3))
    spring_forces_kernel(p_G, R_GB, v_G, w_G, int(bed_body), int(other), point_G, normal_G, depth, stiffness,
                         offset_G, float(lateral), float(dissipation), bool(needs_rate), force, f_n, v_rel)
    return force, f_n, v_rel


def _spring_forces_columns(arrays, bed_body, other, point_G, normal_G, depth, stiffness, offset_G, lateral,
                           dissipation, needs_rate):
    """:func:`spring_forces` with numba switched off: :func:`relative_rate` and
    :func:`spring_force_at` (plain functions then) applied to whole columns."""
    p_G, R_GB, v_G, w_G = arrays
    nx, ny, nz = normal_G.T
    m = len(depth)
    if needs_rate:
        rate, ux, uy, uz = relative_rate(p_G, R_GB, v_G, w_G, bed_body, other, point_G[:, 0], point_G[:, 1],
                                         point_G[:, 2], nx, ny, nz)
        v_rel = np.column_stack([ux, uy, uz]) if m else np.zeros((0, 3))
    else:
        rate = np.zeros(m)
        v_rel = np.zeros((m, 3))
    fx, fy, fz, f_n = spring_force_at(nx, ny, nz, stiffness, depth, rate, dissipation, lateral,
                                      offset_G[:, 0], offset_G[:, 1], offset_G[:, 2])
    force = np.column_stack([fx, fy, fz]) if m else np.zeros((0, 3))
    return force, np.asarray(f_n, dtype=np.float64), v_rel


def accumulate_spring_forces(arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], a: int, b: int,
                             sign: float, bed_body: int, other: int, point_G: np.ndarray, normal_G: np.ndarray,
                             depth: np.ndarray, stiffness: np.ndarray, offset_G: np.ndarray, lateral: float,
                             dissipation: float, needs_rate: bool, force_G: np.ndarray,
                             torque_G: np.ndarray) -> None:
    """Add ``sign`` × the springs' forces (:func:`spring_forces`) to body a at their points, the
    opposite to body b, and their moments about each centre of mass, into force_G, torque_G (n, 3)
    float64 (the kinematics' body count). Compiled: one loop; numba off: :func:`spring_forces` and
    ``np.add.at``."""
    p_G, R_GB, v_G, w_G = arrays
    if not NUMBA_ENABLED:
        force, _, _ = spring_forces(arrays, bed_body, other, point_G, normal_G, depth, stiffness, offset_G,
                                    lateral, dissipation, needs_rate)
        f_a = sign * force
        for body, f in ((a, f_a), (b, -f_a)):
            rows = np.full(len(f), body)
            np.add.at(force_G, rows, f)
            np.add.at(torque_G, rows, np.cross(point_G - p_G[body], f))
        return
    accumulate_spring_forces_kernel(p_G, R_GB, v_G, w_G, int(a), int(b), float(sign), int(bed_body), int(other),
                                    _f64(point_G), _f64(normal_G), _f64(depth), _f64(stiffness),
                                    _f64(offset_G), float(lateral), float(dissipation), bool(needs_rate),
                                    force_G, torque_G)
