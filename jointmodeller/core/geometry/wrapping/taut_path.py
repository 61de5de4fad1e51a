"""The true shortest path: a frictionless taut string over the bone surfaces in their current poses.

The string is a polyline x_0..x_N with fixed ends. Among polylines that stay outside the bones the
one of least *energy* Σ|x_{i+1} - x_i|² is the shortest path with evenly spaced vertices (Cauchy–
Schwarz: E >= L²/N, with equality at constant spacing). Each iteration solves that quadratic
problem with the vertices in contact held on their tangent planes (one banded linear solve, the
KKT system of an active-set method), then retracts contact vertices onto the surface by a closest-
point query. A contact whose multiplier turns negative (the string would lift off) is released.
Warm starts reuse the previous contacts, carried along with their bodies, so a path evolves
smoothly and usually converges in one or two iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_banded

from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose, closest_over_obstacles
from jointmodeller.core.geometry.wrapping.path import FREE, WrapPath, make_path

N_SECTORS = 36


@dataclass
class TautOptions:
    """Solver settings.

    n_segments: polyline segments (vertices = n_segments + 1); chord error ~ (κ L/n)²/24.
    max_iter: iteration cap; tol: step size (fraction of the path length) that counts as converged.
    k_nearest: nearest vertices whose faces are searched in closest-point queries.
    """

    n_segments: int = 96
    max_iter: int = 60
    tol: float = 1e-7
    k_nearest: int = 4


def _tangent_rows(n: np.ndarray) -> np.ndarray:
    """Rotation rows (m, 3, 3): two unit tangents and the unit normal n (m, 3) last."""
    a = np.zeros_like(n)
    idx = np.argmin(np.abs(n), axis=1)
    a[np.arange(len(n)), idx] = 1.0
    t1 = np.cross(n, a)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(n, t1)
    return np.stack([t1, t2, n], axis=1)


def solve_energy_kkt(
    x: np.ndarray,
    active: np.ndarray,
    normal: np.ndarray,
    lam: np.ndarray | None = None,
    shape_G: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimise Σ|x_{i+1}-x_i|² over the interior vertices of x (N+1, 3) with the ends fixed and
    each active vertex i kept on its tangent plane n_i·(y_i - x_i) = 0.

    active (N-1,) bool, normal (N-1, 3) unit normals. Returns the new polyline (N+1, 3) and the
    contact multipliers (N-1,) (n_i · ∂(E/2)/∂y_i; positive where the surface pushes the string,
    zero for free vertices). One banded solve of the 3(N-1) KKT system, bandwidth 5 each side.
    With the previous multipliers lam (N-1,) and the surface shape operators shape_G (N-1, 3, 3)
    the tangent rows carry the curvature term -λ S of the Lagrangian Hessian (a Newton step on
    the surface, quadratic convergence); without them it is a Gauss–Newton step (linear).
    """
    N1 = x.shape[0] - 2
    R = np.tile(np.eye(3), (N1, 1, 1))
    if active.any():
        R[active] = _tangent_rows(normal[active])
    D = 2.0 * R
    Off = -R.copy()
    # constraint rows replace the normal-gradient row of active vertices
    D[active, 2, :] = normal[active]
    Off[active, 2, :] = 0.0
    rhs = np.zeros((N1, 3))
    if lam is not None and shape_G is not None and active.any():
        Ra = R[active]
        lS = np.maximum(lam[active], 0.0)[:, None, None] * shape_G[active]
        # keep the tangent blocks positive definite: cap the curvature term at half the diagonal
        big = np.abs(np.linalg.eigvalsh(lS)).max(axis=1)
        lS *= np.minimum(1.0, 1.0 / np.maximum(big, 1e-300))[:, None, None]
        curv = Ra[:, :2, :] @ lS  # (a, 2, 3): T (λS), acting on the tangential displacement
        D[active, :2, :] -= curv
        rhs[active, :2] -= np.einsum("aij,aj->ai", curv, x[1:-1][active])
    rhs[0] -= Off[0] @ x[0]
    rhs[-1] -= Off[-1] @ x[-1]
    rhs[active, 2] = np.einsum("ij,ij->i", normal[active], x[1:-1][active])
    n = 3 * N1
    ab = np.zeros((11, n))
    blk = np.arange(N1)
    r = (3 * blk[:, None, None] + np.arange(3)[None, :, None]).repeat(3, axis=2)  # (N1,3,3)
    c = 3 * blk[:, None, None] + np.arange(3)[None, None, :]
    c = np.broadcast_to(c, r.shape)
    ab[5 + r - c, c] = D
    # x_{i-1} columns: block i-1 (exists for i >= 1)
    ab[5 + r[1:] - (c[1:] - 3), c[1:] - 3] = Off[1:]
    ab[5 + r[:-1] - (c[:-1] + 3), c[:-1] + 3] = Off[:-1]
    y = solve_banded((5, 5), ab, rhs.reshape(-1)).reshape(N1, 3)
    out = x.copy()
    out[1:-1] = y
    grad = 2.0 * y - out[:-2] - out[2:]
    lam = np.where(active, np.einsum("ij,ij->i", normal, grad), 0.0)
    return out, lam


def sector_hull_guess(
    a_G: np.ndarray,
    b_G: np.ndarray,
    obstacles: list[MeshObstacle],
    pose: Pose,
    n_segments: int,
    n_bins: int = 48,
) -> np.ndarray:
    """A cold-start polyline (n_segments+1, 3) in the spirit of MJM's sectors.

    In the cylindrical frame of the straight line a→b the surface vertices are binned into 36
    sectors × n_bins axial bins; the upper hull of each sector's height profile is its detour, the
    sector with the shortest hull is taken, and its hull, resampled evenly, is the guess.
    """
    lvec = b_G - a_G
    L = float(np.linalg.norm(lvec))
    v = lvec / L
    helper = np.array([1.0, 0.0, 0.0])
    if np.linalg.norm(np.cross(helper, v)) < 1e-3:
        helper = np.array([0.0, 1.0, 0.0])
    w = np.cross(helper, v)
    w /= np.linalg.norm(w)
    u = np.cross(v, w)
    height = np.zeros((N_SECTORS, n_bins))
    for ob in obstacles:
        R = pose.R_GB[ob.body]
        a_B = pose.to_body(ob.body, a_G[None])[0]
        F = np.stack([u, v, w], axis=1)  # G components of frame axes (3,3) columns
        F_B = R.T @ F
        rel = (ob.vertices_B - a_B) @ F_B  # (n, 3): pu, s, pw
        s = rel[:, 1]
        inside = (s > 0.0) & (s < L)
        if not inside.any():
            continue
        pu, pw, s = rel[inside, 0], rel[inside, 2], s[inside]
        rho = np.hypot(pu, pw)
        sec = (np.floor(np.mod(np.arctan2(pw, pu), 2 * np.pi) / (2 * np.pi / N_SECTORS)).astype(np.int64)) % N_SECTORS
        sb = np.minimum((s / L * n_bins).astype(np.int64), n_bins - 1)
        np.maximum.at(height, (sec, sb), rho)
    if not height.any():
        t = np.linspace(0.0, 1.0, n_segments + 1)
        return a_G + t[:, None] * lvec
    # per sector, an upper hull over the bin maxima (vectorised over sectors by brute force:
    # a bin's hull height is max over pairs is costly; the envelope of lines from the ends works)
    sc = (np.arange(n_bins) + 0.5) / n_bins * L
    # smallest concave majorant via slopes: h(s) <= max over bins of the tent through (0,0),(s_j,h_j),(L,0)
    # evaluated at bin centres; the hull length of the tent envelope ranks sectors well.
    tent = np.minimum(
        height[:, None, :] * (sc[None, :, None] / sc[None, None, :]),
        height[:, None, :] * ((L - sc[None, :, None]) / (L - sc[None, None, :])),
    )  # (sector, eval s, bin j)
    env = tent.max(axis=2)  # concave-ish majorant sampled at bin centres
    prof = np.concatenate([np.zeros((N_SECTORS, 1)), env, np.zeros((N_SECTORS, 1))], axis=1)
    ss = np.concatenate([[0.0], sc, [L]])
    seglen = np.hypot(np.diff(ss)[None, :], np.diff(prof, axis=1)).sum(axis=1)
    k = int(np.argmin(seglen))
    alpha = (k + 0.5) * 2 * np.pi / N_SECTORS
    d = np.cos(alpha) * u + np.sin(alpha) * w
    pts = a_G + ss[:, None] * v + prof[k][:, None] * d
    return resample_polyline(pts, n_segments)


def resample_polyline(points: np.ndarray, n_segments: int) -> np.ndarray:
    """Evenly spaced (by arc length) polyline of n_segments spans through points (p, 3)."""
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    if cum[-1] <= 0.0:
        return np.repeat(points[:1], n_segments + 1, axis=0)
    t = np.linspace(0.0, cum[-1], n_segments + 1)
    out = np.stack([np.interp(t, cum, points[:, j]) for j in range(3)], axis=1)
    out[0], out[-1] = points[0], points[-1]
    return out


class TautPathSolver:
    """Shortest path of one tissue over a set of obstacles; remembers its last solution for warm starts.

    One solver per tissue. ``solve`` returns a :class:`WrapPath` whose loads are the exact
    virtual-work forces of a unit tension (ends plus every contact vertex).
    """

    def __init__(self, obstacles: list[MeshObstacle], options: TautOptions | None = None) -> None:
        self.obstacles = list(obstacles)
        self.options = options or TautOptions()
        self._contact_ob: np.ndarray | None = None  # (N-1,) obstacle index or -1
        self._contact_B: np.ndarray | None = None  # (N-1, 3) contact points in body frames
        self._free_G: np.ndarray | None = None  # (N-1, 3)

    def reset(self) -> None:
        """Forget the warm start."""
        self._contact_ob = self._contact_B = self._free_G = None

    def _warm_guess(self, pose: Pose, a_G: np.ndarray, b_G: np.ndarray):
        ob_idx = self._contact_ob
        x = np.empty((len(ob_idx) + 2, 3))
        x[0], x[-1] = a_G, b_G
        x[1:-1] = self._free_G
        for j, ob in enumerate(self.obstacles):
            sel = ob_idx == j
            if sel.any():
                x[1:-1][sel] = pose.to_global(ob.body, self._contact_B[sel])
        return x, ob_idx >= 0

    def solve(
        self,
        a_G: np.ndarray,
        b_G: np.ndarray,
        body_a: int,
        body_b: int,
        pose: Pose,
        warm: bool = True,
    ) -> WrapPath:
        """Taut path from a_G (3,) on body_a to b_G (3,) on body_b with bodies placed by ``pose``."""
        opt = self.options
        a_G = np.asarray(a_G, float)
        b_G = np.asarray(b_G, float)
        N = opt.n_segments
        if warm and self._contact_ob is not None and len(self._contact_ob) == N - 1:
            x, active = self._warm_guess(pose, a_G, b_G)
            cold = False
        else:
            x = sector_hull_guess(a_G, b_G, self.obstacles, pose, N)
            active = np.zeros(N - 1, bool)
            cold = True
        scale = max(float(np.linalg.norm(b_G - a_G)), 1e-12)
        converged = False
        it = 0
        lam = None
        settled = not cold  # Newton curvature term only once the contact set stops changing
        eps = 1e-12 * scale
        for it in range(1, opt.max_iter + 1):
            c, n, sd, which, cB, S = closest_over_obstacles(self.obstacles, pose, x[1:-1], k=opt.k_nearest)
            newly = (sd < -eps) & ~active
            active = active | newly
            x[1:-1][active] = c[active]
            if settled:
                g = 2.0 * x[1:-1] - x[:-2] - x[2:]
                lam0 = np.where(active, np.einsum("ij,ij->i", n, g), 0.0) if lam is None or newly.any() else lam
                x_new, lam = solve_energy_kkt(x, active, n, lam0, S)
            else:
                x_new, lam = solve_energy_kkt(x, active, n)
            release = active & (lam < 0.0)
            step = float(np.max(np.linalg.norm(x_new - x, axis=1)))
            x = x_new
            active = active & ~release
            settled = settled or (not release.any() and not newly.any())
            if step < opt.tol * scale and not release.any() and not newly.any():
                converged = True
                break
        # final retraction: contacts (and any vertex still inside) onto the surface
        c, n, sd, which, cB, _ = closest_over_obstacles(self.obstacles, pose, x[1:-1], k=opt.k_nearest)
        on = active | (sd < 0.0)
        x[1:-1][on] = c[on]
        ob_idx = np.where(on, which, -1)
        self._contact_ob = ob_idx
        self._contact_B = cB
        self._free_G = x[1:-1].copy()
        labels = np.full(N + 1, FREE, np.int64)
        labels[0], labels[-1] = body_a, body_b
        bodies = np.array([ob.body for ob in self.obstacles], np.int64)
        labels[1:-1][on] = bodies[ob_idx[on]]
        return make_path(
            x, labels, "taut", per_vertex_loads=True, iterations=it, converged=converged,
            info={"cold": cold, "n_contacts": int(on.sum())},
        )
