"""MJM's muscle-wrapping heuristic (seed 004 §3.3, §5), faithfully, as a selectable method.

1. A cylindrical frame on the straight line origin a → insertion b: v along the line (eq. 39),
   w = X × v / |X × v| with helper X = (1, 0, 0) (eq. 40; X = (0, 1, 0) when the line is parallel to
   it), u = v × w (eq. 41).
2. Surface points inside the search cylinder are projected on the (u, w) plane (eqs. 42–45) and
   binned into 36 sectors of 10°; per sector the point count ("minimum mass") and the covariance
   Σ(pu² + pw²) (eq. 46) are formed.
3. The chosen sector (fewest points, least covariance, or the residual-covariance walk that re-checks
   the neighbouring sectors for the remaining length, eq. 55) defines a mid-plane; every mesh edge
   is intersected with it (eqs. 47–54).
4. The convex-hull line of those intersections in the plane, from a to b, is the path; it is offset
   along the surface normals by the tissue's centroid distance, and each point remembers its body.
5. The last point on the origin body and the first on the insertion body are the effective
   attachment points; body changes along the path give the sub-segments.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose
from jointmodeller.core.geometry.wrapping.path import WrapPath, make_path

N_SECTORS = 36
SECTOR = 2.0 * np.pi / N_SECTORS
METHODS = ("mass", "covariance", "residual")


def cylindrical_frame(a_G: np.ndarray, b_G: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Unit u, v, w (3,) of MJM eqs. 38–41 and the line length |b - a|."""
    lvec = np.asarray(b_G, float) - np.asarray(a_G, float)
    L = float(np.linalg.norm(lvec))
    if L == 0.0:
        raise ValueError("origin and insertion coincide")
    v = lvec / L
    X = np.array([1.0, 0.0, 0.0])
    if np.linalg.norm(np.cross(X, v)) < 1e-6:  # line parallel to the helper vector
        X = np.array([0.0, 1.0, 0.0])
    w = np.cross(X, v)
    w /= np.linalg.norm(w)
    u = np.cross(v, w)
    return u, v, w, L


def sector_statistics(
    a_G: np.ndarray,
    frame: tuple[np.ndarray, np.ndarray, np.ndarray, float],
    obstacles: list[MeshObstacle],
    pose: Pose,
    search_radius: float,
    n_stages: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Point count and covariance Σ(pu²+pw²) per (stage, sector), both (n_stages, 36).

    Stages split the axial length 0..L evenly (the residual-covariance walk uses them).
    """
    u, v, w, L = frame
    count = np.zeros((n_stages, N_SECTORS))
    cov = np.zeros((n_stages, N_SECTORS))
    F = np.stack([u, v, w], axis=1)
    for ob in obstacles:  # loop over bodies; vectorised over vertices
        R = pose.R_GB[ob.body]
        a_B = pose.to_body(ob.body, np.asarray(a_G, float)[None])[0]
        rel = (ob.vertices_B - a_B) @ (R.T @ F)  # eqs. 42–44: pu, s (along v), pw
        pu, s, pw = rel[:, 0], rel[:, 1], rel[:, 2]
        r2 = pu * pu + pw * pw
        inside = (s >= 0.0) & (s <= L) & (r2 <= search_radius**2)
        if not inside.any():
            continue
        pu, pw, s, r2 = pu[inside], pw[inside], s[inside], r2[inside]
        alpha = np.mod(np.arctan2(pw, pu), 2 * np.pi)  # eq. 45, measured from +u
        sec = np.minimum((alpha / SECTOR).astype(np.int64), N_SECTORS - 1)
        stage = np.minimum((s / L * n_stages).astype(np.int64), n_stages - 1)
        np.add.at(count, (stage, sec), 1.0)
        np.add.at(cov, (stage, sec), r2)  # eq. 46
    return count, cov


def choose_sectors(count: np.ndarray, cov: np.ndarray, method: str) -> np.ndarray:
    """Sector index per stage (n_stages,) for 'mass', 'covariance' or 'residual'."""
    n_stages = count.shape[0]
    if method == "mass":
        return np.full(n_stages, int(np.argmin(count.sum(axis=0))))
    if method == "covariance":
        return np.full(n_stages, int(np.argmin(cov.sum(axis=0))))
    if method != "residual":
        raise ValueError(f"unknown MJM method {method!r}; use one of {METHODS}")
    # residual covariances (eq. 55 summed over the remaining stages); start on the overall best
    residual = np.cumsum(cov[::-1], axis=0)[::-1]  # residual[i, k] = Σ_{j>=i} cov[j, k]
    k = int(np.argmin(residual[0]))
    out = np.empty(n_stages, np.int64)
    for i in range(n_stages):  # loop over stages (a handful), not over points
        nbrs = np.array([(k - 1) % N_SECTORS, k, (k + 1) % N_SECTORS])
        k = int(nbrs[np.argmin(residual[i, nbrs])])
        out[i] = k
    return out


def midplane_intersections(
    a_G: np.ndarray,
    frame: tuple[np.ndarray, np.ndarray, np.ndarray, float],
    alpha: float,
    s_range: tuple[float, float],
    obstacles: list[MeshObstacle],
    pose: Pose,
    search_radius: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Points where mesh edges cross the half-plane at angle alpha about the line (eqs. 47–54).

    Keeps crossings on the sector's side with s (along v) in s_range and within the search radius.
    Returns points r_p in G (k, 3), their (s, h) plane coordinates (k, 2), interpolated outward
    normals in G (k, 3) and the body of each (k,).
    """
    u, v, w, L = frame
    d = np.cos(alpha) * u + np.sin(alpha) * w  # in-plane direction away from the line
    # the plane normal (w - tp u) of eq. 52, scaled by cos α so α = 90° is no singularity
    n_p = -np.sin(alpha) * u + np.cos(alpha) * w
    pts, sh, nrm, bod = [], [], [], []
    for ob in obstacles:
        R = pose.R_GB[ob.body]
        a_B = pose.to_body(ob.body, np.asarray(a_G, float)[None])[0]
        nB, dB, vB = R.T @ n_p, R.T @ d, R.T @ v
        rel = ob.vertices_B - a_B  # l_i of eq. 42 for every vertex
        side = rel @ nB
        e = ob.edges
        si, sj = side[e[:, 0]], side[e[:, 1]]
        cross = (si * sj < 0.0) | ((si == 0.0) & (sj != 0.0))
        if not cross.any():
            continue
        e = e[cross]
        li, lj = rel[e[:, 0]], rel[e[:, 1]]
        lam = (li @ nB) / ((li - lj) @ nB)  # eq. 52
        lp = li + lam[:, None] * (lj - li)  # eq. 53
        s = lp @ vB
        h = lp @ dB
        keep = (h > 0.0) & (s >= s_range[0]) & (s <= s_range[1]) & (h <= search_radius)
        if not keep.any():
            continue
        lp, s, h, lam, e = lp[keep], s[keep], h[keep], lam[keep], e[keep]
        nv = ob.vertex_normals_B
        nI = (1.0 - lam)[:, None] * nv[e[:, 0]] + lam[:, None] * nv[e[:, 1]]
        nI /= np.maximum(np.linalg.norm(nI, axis=1, keepdims=True), 1e-300)
        pts.append(pose.to_global(ob.body, lp + a_B))  # eq. 54: r_p = r_a + l_p
        sh.append(np.stack([s, h], axis=1))
        nrm.append(nI @ R.T)
        bod.append(np.full(len(s), ob.body, np.int64))
    if not pts:
        return np.zeros((0, 3)), np.zeros((0, 2)), np.zeros((0, 3)), np.zeros(0, np.int64)
    return np.concatenate(pts), np.concatenate(sh), np.concatenate(nrm), np.concatenate(bod)


def upper_hull_chain(sh: np.ndarray, L: float) -> np.ndarray:
    """Indices into sh (k, 2) of the convex-hull line from (0, 0) to (L, 0) over the points (h > 0).

    The upper chain of the 2-D convex hull (qhull) of the points and the two ends, in order of s;
    the two ends are implicit, not returned.
    """
    if len(sh) == 0:
        return np.zeros(0, np.int64)
    P = np.vstack([[0.0, 0.0], sh, [L, 0.0]])
    try:
        hull = ConvexHull(P)
    except QhullError:  # all points on one line: the chain is the ends alone, or the points on it
        return _upper_chain_scan(sh, L)
    ring = list(hull.vertices)  # counter-clockwise
    end = len(P) - 1
    if 0 not in ring or end not in ring:
        return _upper_chain_scan(sh, L)
    k = ring.index(end)
    ring = ring[k:] + ring[:k]  # from (L, 0) counter-clockwise: over the top to (0, 0)
    chain = ring[1:ring.index(0)][::-1]
    return np.asarray(chain, np.int64) - 1


def _upper_chain_scan(sh: np.ndarray, L: float) -> np.ndarray:
    """Monotone-chain (Andrew) version of :func:`upper_hull_chain`, for degenerate inputs."""
    order = np.lexsort((sh[:, 1], sh[:, 0]))
    P = np.vstack([[0.0, 0.0], sh[order], [L, 0.0]])
    idx = np.concatenate([[-1], order, [-2]])
    hull: list[int] = []
    for i in range(len(P)):
        while len(hull) >= 2:
            o, a = P[hull[-2]], P[hull[-1]]
            b = P[i]
            if (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]) >= 0.0:
                hull.pop()  # not a right turn: a is below the chord, drop it
            else:
                break
        hull.append(i)
    chain = idx[hull]
    return chain[(chain >= 0)].astype(np.int64)


def mjm_path(
    a_G: np.ndarray,
    b_G: np.ndarray,
    body_a: int,
    body_b: int,
    obstacles: list[MeshObstacle],
    pose: Pose,
    method: str = "mass",
    offset: float = 0.0,
    search_radius: float | None = None,
    n_stages: int = 10,
) -> WrapPath:
    """MJM path from a_G (3,) on body_a to b_G (3,) on body_b (seed 004 §3.3).

    method: "mass" (fewest points), "covariance" (least Σ(pu²+pw²)) or "residual" (covariance with
    neighbouring sectors re-checked over n_stages axial stages). offset: centroid distance of the
    tissue from the surface along the normals [m]. search_radius: radius of the cylinder around the
    line whose surface points are considered (default: the line length).
    """
    a_G = np.asarray(a_G, float)
    b_G = np.asarray(b_G, float)
    if float(np.linalg.norm(b_G - a_G)) == 0.0:  # coincident ends: nothing to wrap
        return make_path(np.vstack([a_G, b_G]), np.array([body_a, body_b]), f"mjm-{method}", per_vertex_loads=False)
    frame = cylindrical_frame(a_G, b_G)
    u, v, w, L = frame
    R_s = L if search_radius is None else float(search_radius)
    stages = n_stages if method == "residual" else 1
    count, cov = sector_statistics(a_G, frame, obstacles, pose, R_s, stages)
    sectors = choose_sectors(count, cov, method)
    bounds = np.linspace(0.0, L, stages + 1)
    pts, sh, nrm, bod = [], [], [], []
    for i, k in enumerate(sectors):  # one plane per stage (a single plane unless 'residual')
        alpha = (k + 0.5) * SECTOR
        p, q, n, b = midplane_intersections(
            a_G, frame, alpha, (bounds[i], bounds[i + 1]), obstacles, pose, R_s
        )
        pts.append(p)
        sh.append(q)
        nrm.append(n)
        bod.append(b)
    P = np.concatenate(pts)
    SH = np.concatenate(sh)
    NRM = np.concatenate(nrm)
    BOD = np.concatenate(bod)
    chain = upper_hull_chain(SH, L)
    path_pts = P[chain] + offset * NRM[chain]  # the centroid path (§5: r away along the normals)
    points = np.vstack([a_G, path_pts, b_G])
    labels = np.concatenate([[body_a], BOD[chain], [body_b]]).astype(np.int64)
    return make_path(
        points, labels, f"mjm-{method}", per_vertex_loads=False,
        info={"sectors": sectors, "count": count.sum(axis=0), "covariance": cov.sum(axis=0)},
    )
