"""The true shortest path: a frictionless taut string over the bone surfaces in their current poses.

The string is a polyline x_0..x_N with fixed ends. Among polylines that stay outside the bones the
one of least *energy* Σ|x_{i+1} - x_i|² is the shortest path with evenly spaced vertices (Cauchy–
Schwarz: E >= L²/N, with equality at constant spacing). Each iteration solves that quadratic
problem with the vertices in contact held on their tangent planes (one banded linear solve, the
KKT system of an active-set method), then retracts contact vertices onto the surface by a closest-
point query. A contact whose multiplier turns negative (the string would lift off) is peeled off.
Once the contact set holds still, the tangent rows carry the surface curvature (from the
interpolated vertex normals), making the step a Newton step on the surface.

Two phases: the smooth phase uses interpolated vertex normals (a smooth bone); the facet polish
then uses the flat faces themselves, so the result is the exact optimum on the polyhedron and the
force method agrees with -dl/dq. On coarse meshes with sharp edges the polish may not settle; it is
then dropped. Safeguards against the cycles that sharp edges and ridges cause: Newton steps much
longer than the previous step fall back to Gauss–Newton, stalls are damped for a few iterations,
and late release/re-contact cycles are held in contact.

Cold starts begin from the upper hull of MJM-like sectors (the sector with the shortest detour),
with the vertices that lie on a bone already in contact, so the first solve cannot pull the
string through a bone. Warm starts reuse the previous contacts, carried along with their bodies:
the path keeps its way round the bones (its homotopy class) as they move, and usually converges
in two to five iterations.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import get_lapack_funcs

from jointmodeller.core.data import work_of
from jointmodeller.core.geometry.wrapping import _kernels
from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle, Pose, closest_over_obstacles
from jointmodeller.core.geometry.wrapping.path import FREE, WrapPath, make_path, straight_path

N_SECTORS = 36

#: LAPACK's banded solver, called directly: scipy.linalg.solve_banded((5, 5), ...) makes the same
#: call (into a (16, n) array whose first 5 rows are the factorisation's fill) after ~20 µs of checks
_GBSV = get_lapack_funcs("gbsv", (np.zeros((1, 1)),))


def _solve_banded_5(ab: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """solve_banded((5, 5), ab, rhs) for ab (11, n), rhs (n,) float64: the same LAPACK gbsv call."""
    a2 = np.zeros((16, ab.shape[1]))
    a2[5:, :] = ab
    _, _, y, info = _GBSV(5, 5, a2, rhs, overwrite_ab=True, overwrite_b=True)
    if info > 0:
        raise np.linalg.LinAlgError("singular matrix")
    if info < 0:
        raise ValueError(f"illegal value in {-info}-th argument of internal gbsv")
    return y


@dataclass
class TautOptions:
    """Solver settings.

    n_segments: polyline segments (vertices = n_segments + 1); chord error ~ (κ L/n)²/24.
    max_iter: iteration cap; tol: largest vertex step (fraction of the end-to-end distance) that
    counts as converged (the length is stationary, so its error is of order tol²).
    k_nearest: nearest vertices whose faces are searched in closest-point queries.
    facet_polish: finish on the flat faces themselves (exact polyhedral optimum, so the force
    method and -dl/dq agree to ~1e-4) instead of the smooth normal field (~1e-3, fewer iterations).
    facet_iter: iteration budget of the facet polish before it is abandoned for the smooth optimum.
    free_shortcut: a warm start that was free (no contact) and whose straight line still clears every
    bone is returned as that line at once, without the iterations that would reproduce it (to
    rounding: forces differ by ~1e-10 N). Off by default: on the demo's equilibrium that rounding-level
    change took Newton through 54 iterations instead of 21; dynamics turns it on (app.build).
    penetration: depth (fraction of the end-to-end distance) below which a free vertex just off its
    lift-off point is not pulled back into contact; this ends release/re-contact cycles.
    """

    n_segments: int = 96
    max_iter: int = 80
    tol: float = 1e-5
    k_nearest: int = 4
    facet_polish: bool = True
    penetration: float = 1e-8
    facet_iter: int = 12
    free_shortcut: bool = False


def solve_energy_kkt(
    x: np.ndarray,
    active: np.ndarray,
    normal: np.ndarray,
    lam: np.ndarray | None = None,
    shape_G: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimise Σ w_i|x_{i+1}-x_i|² over the interior vertices of x (N+1, 3) with the ends fixed
    and each active vertex i kept on its tangent plane n_i·(y_i - x_i) = 0.

    weights (N,) default to 1 (the energy); w_i = 1/|x_{i+1}-x_i| makes the fixed point of the
    iteration a critical point of the *length* (iteratively reweighted least squares).

    active (N-1,) bool, normal (N-1, 3) unit normals. Returns the new polyline (N+1, 3) and the
    contact multipliers (N-1,) (n_i · ∂(E/2)/∂y_i; positive where the surface pushes the string,
    zero for free vertices). One banded solve of the 3(N-1) KKT system, bandwidth 5 each side.
    With the previous multipliers lam (N-1,) and the surface shape operators shape_G (N-1, 3, 3)
    the tangent rows carry the curvature term -λ S of the Lagrangian Hessian (a Newton step on
    the surface, quadratic convergence); without them it is a Gauss–Newton step (linear).
    """
    N1 = x.shape[0] - 2
    w = np.ones(N1 + 1) if weights is None else np.asarray(weights, float)
    wl, wr = w[:-1], w[1:]  # weights of the spans before and after each interior vertex
    use_curv = lam is not None and shape_G is not None
    ab, rhs = _kernels.assemble_kkt(
        np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(active, dtype=np.bool_),
        np.ascontiguousarray(normal, dtype=float),
        np.ascontiguousarray(lam if use_curv else np.zeros(N1), dtype=float),
        np.ascontiguousarray(shape_G if use_curv else np.zeros((N1, 3, 3)), dtype=float), w, use_curv,
    )
    y = _solve_banded_5(ab, rhs).reshape(N1, 3)
    out = x.copy()
    out[1:-1] = y
    grad = (wl + wr)[:, None] * y - wl[:, None] * out[:-2] - wr[:, None] * out[2:]
    lam = np.where(active, np.einsum("ij,ij->i", normal, grad), 0.0)
    return out, lam


def _lift_off(active: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Contacts to release (N-1,) bool: per run of consecutive contacts, the most negative
    multiplier, and any negative one at either end of a run (a string peels off from its ends).

    Releasing every negative contact at once makes whole stretches lift, sag through the bone and
    come back; peeling like this converges without such cycles.
    """
    neg = active & (lam < 0.0)
    if not neg.any():
        return neg
    a = active.astype(np.int8)
    start = a & ~np.concatenate([[0], a[:-1]]).astype(bool)
    end = a & ~np.concatenate([a[1:], [0]]).astype(bool)
    run = np.cumsum(start) - 1  # run id of each contact (garbage where inactive)
    out = neg & (start.astype(bool) | end.astype(bool))
    idx = np.flatnonzero(neg)
    order = np.lexsort((lam[idx], run[idx]))  # by run, then most negative first
    idx = idx[order]
    first = np.concatenate([[True], run[idx][1:] != run[idx][:-1]])
    out[idx[first]] = True
    return out


def _weighted_gradient(x: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """∂/∂x_i of ½Σ w_i|x_{i+1}-x_i|² at the interior vertices (N-1, 3)."""
    w = np.ones(len(x) - 1) if weights is None else weights
    wl, wr = w[:-1, None], w[1:, None]
    return (wl + wr) * x[1:-1] - wl * x[:-2] - wr * x[2:]


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


@functools.lru_cache(maxsize=16)
def _line_fractions(n_segments: int) -> np.ndarray:
    """(N+1, 1) fractions 0..1 of a straight line's vertices (read only: shared between calls)."""
    frac = np.linspace(0.0, 1.0, n_segments + 1)[:, None]
    frac.flags.writeable = False
    return frac


#: rounding allowance [m] of the free line's certificate (the line's vertices in a bone's frame are an
#: affine mix of its ends' to within a few ulps of the model's size)
FREE_LINE_SLACK_M = 1e-12


@dataclass
class TautWarmStart:
    """What a TautPathSolver's last solution leaves for the next (in the active core.data.SystemData)."""

    contact_ob: np.ndarray | None = None  # (N-1,) obstacle index or -1
    contact_B: np.ndarray | None = None  # (N-1, 3) contact points in body frames
    free_G: np.ndarray | None = None  # (N-1, 3)
    facets_work: bool = True  # the facet polish settled on these meshes last time
    #: per closed obstacle: the path vertices (N-1, 3) in its body frame where their signed distance
    #: (N-1,) was last queried exactly (NaN: never), certificates for the free shortcut's test
    clear_B: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    #: the free shortcut's certificate for the whole line (closed obstacles only): per obstacle the
    #: line's ends (2, 3) in its body frame and how far each end alone may move (A, B) [m]
    free_ends_B: list[np.ndarray] | None = None
    free_reach: list[tuple[float, float]] | None = None


def lines_still_clear(obstacles: list[MeshObstacle], warms: list[TautWarmStart], ends_G: np.ndarray,
                      pose: Pose) -> np.ndarray:
    """Whether each line between ends_G (k, 2, 3) is certified outside every one of ``obstacles`` by the
    free-line certificate of its warm start (each holding ``free_ends_B`` and ``free_reach`` over these
    obstacles): its ends moved, in each obstacle's frame, by |Δa|, |Δb| with |Δa|/A + |Δb|/B < 1
    (``TautPathSolver._still_free``). (k,) bool, all lines at once."""
    k = len(warms)
    ends_B0 = np.array([w.free_ends_B for w in warms], float).reshape(k, len(obstacles), 2, 3)
    reach = np.array([w.free_reach for w in warms], float).reshape(k, len(obstacles), 2)
    ok = np.ones(k, dtype=bool)
    for j, ob in enumerate(obstacles):
        step = pose.to_body(ob.body, ends_G.reshape(-1, 3)).reshape(k, 2, 3) - ends_B0[:, j]
        move = np.sqrt(np.einsum("kei,kei->ke", step, step)) + FREE_LINE_SLACK_M
        with np.errstate(divide="ignore", invalid="ignore"):
            use = np.where(reach[:, j] > 0.0, move / reach[:, j], np.inf)  # a vertex touching the bone: none
        ok &= use.sum(axis=1) < 1.0
    return ok


class TautPathSolver:
    """Shortest path of one tissue over a set of obstacles, warm-started from its last solution
    (kept in the active core.data.SystemData, not in the solver).

    One solver per tissue. ``solve`` returns a :class:`WrapPath` whose loads are the exact
    virtual-work forces of a unit tension (ends plus every contact vertex).
    """

    def __init__(self, obstacles: list[MeshObstacle], options: TautOptions | None = None) -> None:
        self.obstacles = list(obstacles)
        self.options = options or TautOptions()

    @property
    def warm(self) -> TautWarmStart:
        """The warm start in the active SystemData."""
        return work_of(self, TautWarmStart)

    def reset(self) -> None:
        """Forget the warm start."""
        w = self.warm
        w.contact_ob = w.contact_B = w.free_G = None
        w.clear_B.clear()
        w.free_ends_B = w.free_reach = None

    def _warm_guess(self, pose: Pose, a_G: np.ndarray, b_G: np.ndarray):
        w = self.warm
        ob_idx, contact_B, free_G = w.contact_ob, w.contact_B, w.free_G
        assert ob_idx is not None and contact_B is not None and free_G is not None  # kept together by solve
        x = np.empty((len(ob_idx) + 2, 3))
        x[0], x[-1] = a_G, b_G
        x[1:-1] = free_G
        for j, ob in enumerate(self.obstacles):
            sel = ob_idx == j
            if sel.any():
                x[1:-1][sel] = pose.to_global(ob.body, contact_B[sel])
        return x, ob_idx >= 0

    def _iterate(
        self, x: np.ndarray, active: np.ndarray, pose: Pose, facets: bool, max_iter: int, settled: bool,
        scale: float,
    ) -> tuple[np.ndarray, np.ndarray, bool, int]:
        """Active-set iterations from x (N+1, 3); returns x, active, converged, iterations used."""
        opt = self.options
        lam = None
        eps = opt.penetration * scale  # free vertices this close inside are not re-activated
        spacing = float(np.linalg.norm(np.diff(x, axis=0), axis=1).mean())
        prev_step = spacing
        x = x.copy()
        active = active.copy()
        released = np.zeros_like(active)
        # vertices re-contacted right after release late in the solve are held, ending the cycle
        # that facets meeting at sharp edges cause on coarse meshes
        sticky = np.zeros_like(active)
        stall = 0  # iterations in a row without the step shrinking (a zig-zag along a ridge)
        x_ret = None
        stable = False
        damped = 0  # iterations left of half steps (after a stall), then full steps are retried
        for it in range(1, max_iter + 1):
            # exact where it matters: contacts, and points that may have gone in (sd < -eps)
            c, n, sd, which, cB, S = closest_over_obstacles(
                self.obstacles, pose, x[1:-1], k=opt.k_nearest, facets=facets, exact_below=-eps,
                exact_where=active,
            )
            newly = (sd < -eps) & ~active
            if it > opt.max_iter // 4:  # late in the solve: a lift-off/re-contact cycle is an artefact
                sticky |= newly & released
            active = active | newly
            x[1:-1][active] = c[active]
            # converged when the retracted configuration stops moving (the KKT step itself may
            # not vanish where a contact sits on a sharp rim and is retracted back every time)
            if x_ret is not None and not newly.any() and stable:
                if float(np.max(np.linalg.norm(x - x_ret, axis=1))) < opt.tol * scale:
                    return x, active, True, it
            x_ret = x.copy()
            if settled and active.any() and not damped:
                if lam is None or newly.any():
                    lam = np.where(active, np.einsum("ij,ij->i", n, _weighted_gradient(x, None)), 0.0)
                x_new, lam_new = solve_energy_kkt(x, active, n, lam, S)
                # safeguard: a Newton step far longer than the last step means the curvature model
                # does not hold (contacts still moving, coarse facets); take Gauss–Newton instead
                if float(np.max(np.linalg.norm(x_new - x, axis=1))) > min(3.0 * prev_step, spacing):
                    x_new, lam_new = solve_energy_kkt(x, active, n)
                lam = lam_new
            else:
                x_new, lam = solve_energy_kkt(x, active, n)
            release = _lift_off(active, lam) & ~sticky
            step = float(np.max(np.linalg.norm(x_new - x, axis=1)))
            stall = stall + 1 if step > 0.8 * prev_step else 0
            if stall >= 3 and it > 10 and not damped:
                damped, stall = 6, 0
            x = x + 0.5 * (x_new - x) if damped else x_new
            damped = max(damped - 1, 0)
            active = active & ~release
            released = release
            prev_step = step
            stable = not release.any() and not newly.any()
            settled = stable  # Newton's curvature term only while the contact set holds still
            if step < opt.tol * scale and stable:
                return x, active, True, it
        return x, active, False, max_iter

    def _still_free(self, x: np.ndarray, pose: Pose, body_a: int, body_b: int) -> WrapPath | None:
        """The straight line x (N+1, 3) as the path when no vertex of it lies inside a bone (sd ≥ 0, the
        test the iterations and the final retraction make), else None. The iterations would return the
        same line (an unconstrained energy step from evenly spaced collinear vertices is that line, up
        to rounding) after one closest-point query and one banded solve more. A bone's distance field,
        where it has one, clears the vertices its lower bound puts outside; only the others are
        queried exactly (the same per-point test as :func:`closest_over_obstacles` with
        ``exact_below=0``, without the closest points, normals and curvatures a free path does not use).
        On a closed bone a vertex is also cleared by its last exact query: a signed distance sd0 at
        x0 leaves it outside while |x − x0| < sd0 (the distance is 1-Lipschitz), so the vertices beside
        the attachments, which the field's bound cannot clear, are queried again only once they have
        moved as far as they were from the bone.

        The whole line is cleared at once while each of its vertices, in each (closed) bone's frame,
        has moved less than its clearance c_i when the line was last found free: vertex i is the mix
        (1 − s_i)·a + s_i·b of the ends, so it has moved at most (1 − s_i)·|Δa| + s_i·|Δb|, which is
        below c_i for every i while |Δa|/A + |Δb|/B < 1 with A = min c_i/(1 − s_i), B = min c_i/s_i
        (beside an attachment on that bone, whose end does not move in its frame, B is large)."""
        opt = self.options
        inner = x[1:-1]
        ws = self.warm
        ends = x[[0, -1]]
        if ws.free_reach is not None and ws.free_ends_B is not None and self._line_still_clear(ends, pose):
            return self._free_line(x, body_a, body_b)
        certify = all(ob.is_closed for ob in self.obstacles)
        clearance = [np.zeros(len(inner)) for _ in self.obstacles]
        for j, ob in enumerate(self.obstacles):
            xb = pose.to_body(ob.body, inner)
            rows = np.arange(len(xb))
            if ob.sdf is not None:
                bound = ob.sdf.value(xb) - ob.sdf.error_bound
                rows = np.flatnonzero(bound <= 0.0)
                clearance[j] = np.maximum(bound, 0.0)
                if len(rows) == 0:
                    continue
            ref = ws.clear_B.get(j) if ob.is_closed else None
            if ob.is_closed and (ref is None or len(ref[1]) != len(xb)):
                ref = ws.clear_B[j] = (np.zeros_like(xb), np.full(len(xb), np.nan))
            if ref is not None:
                x0, sd0 = ref
                step = xb[rows] - x0[rows]
                moved = np.sqrt(np.einsum("ij,ij->i", step, step))
                cleared = sd0[rows] > moved  # NaN: not cleared
                clearance[j][rows[cleared]] = (sd0[rows] - moved)[cleared]
                rows = rows[~cleared]
                if len(rows) == 0:
                    continue
            sd = ob.closest(xb[rows], k=opt.k_nearest)[2]
            if ref is not None:
                ref[0][rows] = xb[rows]
                ref[1][rows] = sd
            if not np.all(sd >= 0.0):
                ws.free_ends_B = ws.free_reach = None
                return None
            clearance[j][rows] = sd
        if certify:
            frac = np.arange(1, len(inner) + 1) / (len(inner) + 1)  # the vertices' fractions along the line
            ws.free_ends_B = [pose.to_body(ob.body, ends) for ob in self.obstacles]
            ws.free_reach = [(float(np.min(c / (1.0 - frac), initial=np.inf)), float(np.min(c / frac, initial=np.inf)))
                             for c in clearance]
        return self._free_line(x, body_a, body_b)

    def _line_still_clear(self, ends_G: np.ndarray, pose: Pose) -> bool:
        """Whether the line between ends_G (2, 3) is certified outside every obstacle by the last
        free line's clearance (its ends moved less than it in each obstacle's frame)."""
        return bool(lines_still_clear(self.obstacles, [self.warm], ends_G[None], pose)[0])

    def has_free_line(self) -> bool:
        """Whether the last solve left a free line with its whole-line certificate, so that
        ``solve(..., warm=True)`` returns the straight line for ends within its reach
        (:func:`lines_still_clear`) without solving."""
        ws = self.warm
        return bool(
            self.options.free_shortcut and ws.free_reach is not None and ws.free_ends_B is not None
            and ws.contact_ob is not None and len(ws.contact_ob) == self.options.n_segments - 1
            and not (ws.contact_ob >= 0).any()
        )

    def free_line_path(self, a_G: np.ndarray, b_G: np.ndarray, body_a: int, body_b: int) -> WrapPath:
        """The free path ``solve`` returns for the straight line a_G–b_G (what :meth:`has_free_line` and
        :func:`lines_still_clear` certify), built without touching the warm start."""
        x = a_G + _line_fractions(self.options.n_segments) * (b_G - a_G)
        return straight_path(x, body_a, body_b, "taut", iterations=1, converged=True,
                             info={"cold": False, "n_contacts": 0, "facets": bool(self.options.facet_polish
                                                                                  and self.warm.facets_work)})

    def _free_line(self, x: np.ndarray, body_a: int, body_b: int) -> WrapPath:
        """The straight line x as a free path, and the warm start of one."""
        ws = self.warm
        inner = x[1:-1]
        ws.contact_ob = np.full(len(inner), -1, np.int64)
        ws.contact_B = np.zeros((len(inner), 3))  # read only where contact_ob ≥ 0
        ws.free_G = inner.copy()
        return straight_path(x, body_a, body_b, "taut", iterations=1, converged=True,
                             info={"cold": False, "n_contacts": 0, "facets": bool(self.options.facet_polish
                                                                                  and ws.facets_work)})

    def solve(
        self,
        a_G: np.ndarray,
        b_G: np.ndarray,
        body_a: int,
        body_b: int,
        pose: Pose,
        warm: bool = True,
    ) -> WrapPath:
        """Taut path from a_G (3,) on body_a to b_G (3,) on body_b with bodies placed by ``pose``.

        Smooth phase (interpolated normals, Newton with curvature) then, if enabled, the facet
        polish; a polish that does not settle within ``facet_iter`` iterations (coarse meshes with
        sharp edges) is dropped and the smooth optimum is kept.
        """
        opt = self.options
        a_G = np.asarray(a_G, float)
        b_G = np.asarray(b_G, float)
        N = opt.n_segments
        if float(np.linalg.norm(b_G - a_G)) == 0.0:  # coincident ends: a path of zero length
            x = a_G + np.zeros((N + 1, 1))
            labels = np.full(N + 1, FREE, np.int64)
            labels[0], labels[-1] = body_a, body_b
            self.reset()
            return make_path(x, labels, "taut", per_vertex_loads=True, info={"cold": True, "n_contacts": 0})
        scale = float(np.linalg.norm(b_G - a_G))
        ws = self.warm
        if warm and ws.contact_ob is not None and len(ws.contact_ob) == N - 1:
            if (ws.contact_ob >= 0).any():
                x, active = self._warm_guess(pose, a_G, b_G)
            else:  # free last time: the straight line is the free solution
                x = a_G + _line_fractions(N) * (b_G - a_G)
                active = np.zeros(N - 1, dtype=bool)
                if opt.free_shortcut:
                    free = self._still_free(x, pose, body_a, body_b)
                    if free is not None:
                        return free
            cold = False
        else:
            x = sector_hull_guess(a_G, b_G, self.obstacles, pose, N)
            # vertices of the guess that lie on or near a bone start in contact, so the first
            # solve cannot snap the string back through the bones to the straight line
            spacing0 = float(np.linalg.norm(np.diff(x, axis=0), axis=1).mean())
            _, _, sd0, _, _, _ = closest_over_obstacles(self.obstacles, pose, x[1:-1], k=opt.k_nearest,
                                                        exact_below=0.5 * spacing0, shape=False)
            active = sd0 < 0.5 * spacing0
            cold = True
            ws.facets_work = True
        iterations = 0
        polish = opt.facet_polish and ws.facets_work
        converged = False
        facets_used = False
        if polish and not cold:  # a warm start is already near the facet optimum
            xf, af, ok, k = self._iterate(x, active, pose, True, opt.facet_iter, True, scale)
            iterations += k
            if ok:
                x, active, converged, facets_used = xf, af, True, True
        if not converged:
            x, active, converged, k = self._iterate(x, active, pose, False, opt.max_iter, not cold, scale)
            iterations += k
            if converged and polish:
                xf, af, ok, k = self._iterate(x, active, pose, True, opt.facet_iter, True, scale)
                iterations += k
                if ok:
                    x, active, facets_used = xf, af, True
                else:
                    ws.facets_work = False  # do not retry on every warm step
        # final retraction: contacts (and any vertex still inside) onto the surface
        c, n, sd, which, cB, _ = closest_over_obstacles(self.obstacles, pose, x[1:-1], k=opt.k_nearest,
                                                        exact_below=0.0, exact_where=active, shape=False)
        on = active | (sd < 0.0)
        x[1:-1][on] = c[on]
        ob_idx = np.where(on, which, -1)
        ws.contact_ob = ob_idx
        ws.contact_B = cB
        ws.free_G = x[1:-1].copy()
        labels = np.full(N + 1, FREE, np.int64)
        labels[0], labels[-1] = body_a, body_b
        bodies = np.array([ob.body for ob in self.obstacles], np.int64)
        labels[1:-1][on] = bodies[ob_idx[on]]
        return make_path(
            x, labels, "taut", per_vertex_loads=True, iterations=iterations, converged=converged,
            info={"cold": cold, "n_contacts": int(on.sum()), "facets": facets_used},
        )
