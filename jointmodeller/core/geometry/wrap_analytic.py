"""Wrapping a straight path segment over analytic obstacles, the way OpenSim does it.

Each ``wrap_*`` function takes the segment's end points p1, p2 (3,) in the obstacle's own frame
(cylinder axis = z, centred at the origin; sphere/ellipsoid centred at the origin with semi-axes
along x, y, z) and returns a ``WrapResult``: the tangent points r1 (path leaves the straight line
from p1) and r2 (joins the line to p2), the length of the path on the surface between them, and a
few surface points for drawing. The decision rules follow OpenSim 4 (WrapCylinder, WrapEllipsoid,
WrapSphere) so that imported models give OpenSim's path lengths:

* unconstrained obstacles (quadrant "all") wrap only when the straight segment passes through them
  ("mandatory" wrap); a quadrant ("+x", "-y", ...) restricts the path to one side and may also wrap
  a segment that misses the obstacle ("wrapped");
* cylinder: tangent lines from each end point, the preliminary tangent points slid along the axis
  onto the plane through p1, p2 and the apex, then a helix between them — with tangency refined to
  0.1° when the path has several wrap objects (``single=False``), as OpenSim does;
* ellipsoid: the path lies in the plane through p1, p2 and a point c1 of the surface (the "hybrid"
  choice of c1: closest point to the segment's axial crossing, blended with the average of the
  closest-point "fan" directions), tangent in that plane, sampled every 1 mm of chord.

Statuses: INSIDE (an end point is inside: no wrap), NO_WRAP, WRAPPED, MANDATORY.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jointmodeller.core.spatial_math import axis_angle_matrix, cross
from jointmodeller.core.tolerances import tol

INSIDE, NO_WRAP, WRAPPED, MANDATORY = -1, 0, 1, 2

TANGENCY_THRESHOLD = np.radians(0.1)
"""Cylinder tangent points are refined until the path's direction changes by less than this."""
MAX_TANGENT_ITERATIONS = 100
CYLINDER_SEGMENT_M = 0.002
ELLIPSOID_SEGMENT_M = 0.001
MU_BLEND_MIN, MU_BLEND_MAX = 0.7073, 0.9
NUM_FAN_SAMPLES = 300
SV_BOUNDARY_BLEND = 0.3
ROUNDOFF = 1e-13
_DN = np.array([0.0, 0.0, 1.0])
_P0 = np.array([0.0, 0.0, -1.0])


@dataclass
class WrapResult:
    """Outcome of wrapping one segment: status, tangent points r1/r2 (3,), surface length [m],
    surface points (k, 3) from r1 to r2 (all in the obstacle frame)."""

    status: int
    r1: np.ndarray = field(default_factory=lambda: np.zeros(3))
    r2: np.ndarray = field(default_factory=lambda: np.zeros(3))
    length: float = 0.0
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    @property
    def wraps(self) -> bool:
        return self.status in (WRAPPED, MANDATORY) and len(self.points) > 0


def parse_quadrant(quadrant: str) -> tuple[int, int]:
    """("+x" | "x" | "-y" | ... | "all") -> (axis 0–2, sign ±1), sign 0 meaning unconstrained."""
    q = (quadrant or "all").strip().lower()
    if q in ("all", "unassigned", ""):
        return 0, 0
    sign = -1 if q.startswith("-") else 1
    axis = q.lstrip("+-")
    if axis not in ("x", "y", "z"):
        raise ValueError(f"quadrant must be all, ±x, ±y or ±z, got {quadrant!r}")
    return "xyz".index(axis), sign


def _dsign(x: float) -> int:
    return 1 if x >= 0.0 else -1


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v)
    return v / n if n > 0.0 else np.zeros(3)


def _acos(x: float) -> float:
    return float(np.arccos(np.clip(x, -1.0, 1.0)))


def _closest_on_line(pt, line_pt, direction):
    """Closest point to pt on the line through line_pt along direction (need not be unit)."""
    d = _unit(np.asarray(direction, float))
    return line_pt + np.dot(pt - line_pt, d) * d


def _intersect_lines(p1, p2, p3, p4):
    """Closest points of lines p1p2 and p3p4: (point on 1, s along p1->p2 as a fraction of its
    length, point on 2, t likewise); None when parallel."""
    v1 = p2 - p1
    m1 = np.linalg.norm(v1)
    v1 = v1 / m1 if m1 > 0 else v1
    v2 = p4 - p3
    m2 = np.linalg.norm(v2)
    v2 = v2 / m2 if m2 > 0 else v2
    cr = cross(v1, v2)
    den = float(cr @ cr)
    if abs(den) <= ROUNDOFF:
        return None
    d = p3 - p1
    t = float(np.linalg.det(np.array([d, v1, cr]))) / den
    s = float(np.linalg.det(np.array([d, v2, cr]))) / den
    return p1 + s * v1, s / m1, p3 + t * v2, t / m2


def _segment_plane(a, b, normal, d):
    """Intersection of segment ab with the plane n·x + d = 0, or None."""
    v = b - a
    den = float(v @ normal)
    if abs(den) < 1e-5:
        return None
    t = (-d - float(normal @ a)) / den
    if t < -1e-5 or t > 1.0 + 1e-5:
        return None
    return a + t * v


# --------------------------------------------------------------------------------------------------
# Cylinder
# --------------------------------------------------------------------------------------------------
def wrap_cylinder(p1, p2, radius: float, length: float, quadrant: str = "all",
                  single: bool = True) -> WrapResult:
    """Wrap segment p1–p2 over a cylinder of ``radius`` about z, ``length`` long, centred at 0.

    single: the path has only this wrap object (OpenSim then keeps the first tangent estimate
    instead of refining tangency to 0.1°).
    """
    p1 = np.asarray(p1, float)
    p2 = np.asarray(p2, float)
    axis, sign = parse_quadrant(quadrant)
    R = float(radius)
    r2sq = R * R
    if p1[0] ** 2 + p1[1] ** 2 < r2sq or p2[0] ** 2 + p2[1] ** 2 < r2sq:
        return WrapResult(INSIDE)
    hit = _intersect_lines(p1, p2, np.array([0, 0, -0.5 * length]), np.array([0, 0, 0.5 * length]))
    if hit is None:
        near12, t12, near00 = p1, -1.0, np.array([0.0, 0.0, p1[2]])
    else:
        near12, t12, near00, _ = hit
    crosses = float(np.sum((near12 - near00) ** 2)) < r2sq and 0.0 < t12 < 1.0
    status = WRAPPED
    if sign == 0:
        if not crosses:
            return WrapResult(NO_WRAP)
        status = MANDATORY
    p11 = np.array([0.0, 0.0, p1[2]])
    p22 = np.array([0.0, 0.0, p2[2]])

    def candidates(p, pa):
        vv = p - pa
        dist_p = np.linalg.norm(vv)
        vv = vv / dist_p
        sin_t = R / dist_p
        d = R * sin_t
        pp = pa + d * vv
        h = np.sqrt(max(r2sq - d * d, 0.0))
        uu = cross(_DN, vv)
        return pp + h * uu, pp - h * uu, dist_p

    r1a, r1b, d1 = candidates(p1, p11)
    r2a, r2b, d2 = candidates(p2, p22)
    far_side = False
    long_wrap = False
    if sign != 0:
        on1 = _dsign(p1[axis]) == sign
        on2 = _dsign(p2[axis]) == sign
        if on1 or on2:
            if crosses:
                status = MANDATORY
            elif _dsign(p1[axis]) != _dsign(p2[axis]) and _dsign(near12[axis]) != sign:
                status = WRAPPED
            else:
                return WrapResult(NO_WRAP)
        r1am, r1bm, r2am, r2bm = r1a - p11, r1b - p11, r2a - p22, r2b - p22
        alpha = _acos(r1am @ r2bm / (np.linalg.norm(r1am) * np.linalg.norm(r2bm)))
        beta = _acos(r1bm @ r2am / (np.linalg.norm(r1bm) * np.linalg.norm(r2am)))
        s1a, s1b = _dsign(r1a[axis]) == sign, _dsign(r1b[axis]) == sign
        s2a, s2b = _dsign(r2a[axis]) == sign, _dsign(r2b[axis]) == sign
        if (s1a and s1b and s2a) or (not s1a and s1b) or (not s1a and not s1b and s2a):
            r1, r2, far_side = r1b, r2a, not (alpha > beta)
        elif (s1a and s1b) or (s1a and not s1b) or (not s1a and not s1b and s2b):
            r1, r2, far_side = r1a, r2b, alpha > beta
        else:  # no candidate on the active side
            r1, r2 = (r1a, r2b) if alpha > beta else (r1b, r2a)
            far_side = True
        sum_musc = (r1 - p1) + (r2 - p2)
        sum_r = (r1 - p11) + (r2 - p22)
        long_wrap = float(sum_r @ sum_musc) < 0.0
    else:
        u1a, u1b, u2a, u2b = (_unit(r1a - p11), _unit(r1b - p11), _unit(r2a - p22), _unit(r2b - p22))
        dots = [u1a @ u2a, u1a @ u2b, u1b @ u2a, u1b @ u2b]
        pairs = [(r1a, r2a), (r1a, r2b), (r1b, r2a), (r1b, r2b)]
        if dots[0] > dots[1] and dots[0] > dots[2] and dots[0] > dots[3]:
            k = 0
        elif dots[1] > dots[2] and dots[1] > dots[3]:
            k = 1
        elif dots[2] > dots[3]:
            k = 2
        else:
            k = 3
        r1, r2 = pairs[k]
    r1 = r1.copy()
    r2 = r2.copy()
    # apex: where the path crosses the plane through the axis point nearest the muscle line
    t = d1 / (d1 + d2)
    mpt = p1 + t * (p2 - p1)
    axispt = np.array([0.0, 0.0, mpt[2]])
    pn = _unit(cross(_unit(p1 - axispt), _unit(p2 - axispt)))
    vert1 = _unit(cross(_DN, pn))
    vert2 = _unit(cross(pn, _DN))
    apex1 = axispt + R * vert1
    apex2 = axispt + R * vert2
    near1 = np.sum((mpt - apex1) ** 2) < np.sum((mpt - apex2) ** 2)
    apex = (apex2 if near1 else apex1) if far_side else (apex1 if near1 else apex2)
    # slide r1/r2 along the axis onto the plane through p1, p2 and the apex
    pn = _unit(cross(_unit(p1 - apex), _unit(p2 - apex)))
    dpl = -float(p1 @ pn)
    r1p = _segment_plane(r1 - 10.0 * _DN, r1 + 10.0 * _DN, pn, dpl)
    r2p = _segment_plane(r2 - 10.0 * _DN, r2 + 10.0 * _DN, pn, dpl)
    # (OpenSim measures along the direction of p22 from p11 here; replicated for equal results)
    if r1p is not None:
        q = _closest_on_line(r1p, p11, p22)
        if np.sum((q - p22) ** 2) < np.sum((p11 - p22) ** 2):
            r1 = r1p
    if r2p is not None:
        q = _closest_on_line(r2p, p11, p22)
        if np.sum((q - p11) ** 2) < np.sum((p22 - p11) ** 2):
            r2 = r2p
    half = 0.5 * length
    if (r1[2] < -half or r1[2] > half) and (r2[2] < -half or r2[2] > half):
        return WrapResult(NO_WRAP)
    r1, r2, arc, pts = _spiral_path(p1, p2, r1, r2, R, long_wrap, single)
    return WrapResult(status, r1, r2, arc, pts)


def _spiral_point(r1a, axial_vec, uu, ax, sense, t, theta, R):
    return r1a + R * (axis_angle_matrix(ax, sense * t * theta) @ uu) + t * axial_vec


def _adjust_tangent(pt, r, w) -> np.ndarray | None:
    """Slide tangent point r along the axis so the line pt–r meets the surface at w tangentially;
    None when already tangent to within TANGENCY_THRESHOLD."""
    alpha = _acos(_unit(r - pt) @ _DN)
    omega = _acos(_unit(w - r) @ _DN)
    if abs(alpha - omega) <= TANGENCY_THRESHOLD:
        return None
    pa = _closest_on_line(pt, r, _DN)
    wa = _closest_on_line(w, r, _DN)
    hit = _intersect_lines(pt, w, pa, wa)
    if hit is None:
        return None
    return r + 1.5 * (hit[2] - r)


def _spiral_path(p1, p2, r1, r2, R, far_side, single):
    """Helix on the cylinder from r1 to r2: (r1, r2, length, points)."""
    sense = -1.0 if far_side else 1.0
    for _ in range(MAX_TANGENT_ITERATIONS + 1):
        r1a = np.array([0.0, 0.0, r1[2]])
        r2a = np.array([0.0, 0.0, r2[2]])
        axial_vec = r2a - r1a
        uu = (r1 - r1a) / R
        vv = (r2 - r2a) / R
        theta = _acos(uu @ vv / (np.linalg.norm(uu) * np.linalg.norm(vv)))
        if far_side:
            theta = 2.0 * np.pi - theta
        arc = float(np.hypot(R * theta, np.linalg.norm(axial_vec)))
        ax = _unit(cross(uu, vv))
        if single:
            pts = np.array([_spiral_point(r1a, axial_vec, uu, ax, sense, t, theta, R) for t in (0.0, 1.0)])
            return r1, r2, arc, pts
        n = max(int(arc / CYLINDER_SEGMENT_M), 1)
        if n > 1 and _ < MAX_TANGENT_ITERATIONS:
            t = 1.0 / n
            w1 = _spiral_point(r1a, axial_vec, uu, ax, sense, t, theta, R)
            w2 = _spiral_point(r1a, axial_vec, uu, ax, sense, 1.0 - t, theta, R)
            n1 = _adjust_tangent(p1, r1, w1)
            n2 = _adjust_tangent(p2, r2, w2)
            if n1 is not None or n2 is not None:
                r1 = n1 if n1 is not None else r1
                r2 = n2 if n2 is not None else r2
                continue
        ts = np.arange(n) / n
        pts = np.array([_spiral_point(r1a, axial_vec, uu, ax, sense, t, theta, R) for t in ts])
        return r1, r2, arc, np.vstack([pts, r2])
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------------------------------
# Ellipsoid (and sphere as an ellipsoid with equal radii when OpenSim semantics are wanted)
# --------------------------------------------------------------------------------------------------
def _closest_ellipse(a, b, u, v):
    """Closest point (x, y) on the ellipse (x/a)² + (y/b)² = 1 to (u, v) (Eberly's Newton)."""
    a2, b2 = a * a, b * b
    near_x = abs(u) <= ROUNDOFF
    near_y = abs(v) <= ROUNDOFF
    if near_x and near_y:
        return ((-a if u < 0 else a), v) if a < b else (u, (-b if v < 0 else b))
    if near_x:
        if a >= b or abs(v) >= b - a2 / b:
            return u, (b if v >= 0 else -b)
        y = b2 * v / (b2 - a2)
        return a * np.sqrt(abs(1 - (y / b) ** 2)), y
    if near_y:
        if b >= a or abs(u) >= a - b2 / a:
            return (a if u >= 0 else -a), v
        x = a2 * u / (a2 - b2)
        return x, b * np.sqrt(abs(1 - (x / a) ** 2))
    t = 0.0 if (u / a) ** 2 + (v / b) ** 2 < 1.0 else max(a, b) * np.hypot(u, v)
    P = t + a2
    Q = t + b2
    for _ in range(64):
        P, Q = t + a2, t + b2
        f = P * P * Q * Q - a2 * u * u * Q * Q - b2 * v * v * P * P
        if abs(f) < 1e-9:
            break
        fp = 2.0 * (P * Q * (P + Q) - a2 * u * u * Q - b2 * v * v * P)
        t -= f / fp
    return a2 * u / P, b2 * v / Q


def _closest_ellipsoid(radii, pts, special_axis: int = -1) -> np.ndarray:
    """Closest points (n, 3) on the ellipsoid with semi-axes radii to pts (n, 3).

    Points on a coordinate plane (or all points when ``special_axis`` is given) reduce to the 2-D
    ellipse problem in that plane, as OpenSim does; the rest use Newton on the Lagrange parameter,
    vectorised over points.
    """
    a, b, c = (float(r) for r in radii)
    pts = np.atleast_2d(np.asarray(pts, float))
    out = np.empty_like(pts)
    general = np.ones(len(pts), bool)
    for k, p in enumerate(pts):
        ax = special_axis
        if ax < 0:
            best = np.inf
            for i in range(3):
                if abs(p[i]) <= ROUNDOFF:
                    s = sum(float(r) for j, r in enumerate((a, b, c)) if j != i)
                    if s < best:
                        ax, best = i, s
        if ax == 0:
            y, z = _closest_ellipse(b, c, p[1], p[2])
            out[k] = (p[0], y, z)
        elif ax == 1:
            z, x = _closest_ellipse(c, a, p[2], p[0])
            out[k] = (x, p[1], z)
        elif ax == 2:
            x, y = _closest_ellipse(a, b, p[0], p[1])
            out[k] = (x, y, p[2])
        else:
            continue
        general[k] = False
    if general.any():
        u, v, w = pts[general].T
        a2, b2, c2 = a * a, b * b, c * c
        inside = (u / a) ** 2 + (v / b) ** 2 + (w / c) ** 2 < 1.0
        t = np.where(inside, 0.0, max(a, b, c) * np.sqrt(u * u + v * v + w * w))
        done = np.zeros(len(t), bool)
        res = np.zeros((len(t), 3))
        for _ in range(64):
            P, Q, Rr = t + a2, t + b2, t + c2
            f = (P * Q * Rr) ** 2 - a2 * u * u * (Q * Rr) ** 2 - b2 * v * v * (P * Rr) ** 2 - c2 * w * w * (P * Q) ** 2
            conv = (np.abs(f) < 1e-9) & ~done
            res[conv] = np.stack([a2 * u / P, b2 * v / Q, c2 * w / Rr], axis=1)[conv]
            done |= conv
            if done.all():
                break
            fp = 2.0 * (P * Q * Rr * (Q * Rr + P * Rr + P * Q) - a2 * u * u * Q * Rr * (Q + Rr)
                        - b2 * v * v * P * Rr * (P + Rr) - c2 * w * w * P * Q * (P + Q))
            t = np.where(done, t, t - f / np.where(fp == 0, 1.0, fp))
        if not done.all():  # Newton stalled: take the last iterate
            P, Q, Rr = t + a2, t + b2, t + c2
            res[~done] = np.stack([a2 * u / P, b2 * v / Q, c2 * w / Rr], axis=1)[~done]
        out[general] = res
    return out


def _plane_tangent_point(p, c1, p_other, a, vs, vs4, same_side_as):
    """Point r on the curve (ellipsoid ∩ plane vs·x + vs4 = 0) whose tangent line passes through
    p, on the same side of the line p–p_other as ``same_side_as`` (a point of the plane)."""
    # parametrise the planar ellipse: centre and two conjugate directions in the plane
    e1 = _unit(cross(vs, [1.0, 0.0, 0.0]) if abs(vs[0]) < 0.9 else cross(vs, [0.0, 1.0, 0.0]))
    e2 = cross(vs, e1)
    x0 = -vs4 * vs  # a point of the plane
    # quadratic form of the ellipsoid restricted to the plane: x = x0 + s e1 + t e2
    D = np.diag(1.0 / a ** 2)
    A = np.array([[e1 @ D @ e1, e1 @ D @ e2], [e2 @ D @ e1, e2 @ D @ e2]])
    bvec = np.array([x0 @ D @ e1, x0 @ D @ e2])
    cst = x0 @ D @ x0 - 1.0
    ctr = -np.linalg.solve(A, bvec)
    k = cst - ctr @ A @ ctr  # (s-ctr)ᵀA(s-ctr) = -k
    w, V = np.linalg.eigh(A)
    radii2 = np.sqrt(np.maximum(-k / w, 0.0))
    centre = x0 + ctr[0] * e1 + ctr[1] * e2
    ax1 = (V[0, 0] * e1 + V[1, 0] * e2) * radii2[0]
    ax2 = (V[0, 1] * e1 + V[1, 1] * e2) * radii2[1]
    # tangent from p: in the ellipse's unit-circle coordinates, the polar of p
    M = np.column_stack([ax1, ax2])
    q = np.linalg.lstsq(M, p - centre, rcond=None)[0]
    qq = float(q @ q)
    if qq <= 1.0:
        return None
    base = q / qq
    perp = np.array([-q[1], q[0]]) * np.sqrt(qq - 1.0) / qq
    cands = [centre + M @ (base + perp), centre + M @ (base - perp)]
    line = p_other - p
    side = np.sign(cross(line, same_side_as - p) @ vs)
    for r in cands:
        if np.sign(cross(line, r - p) @ vs) == side:
            return r
    return cands[0]


def wrap_ellipsoid(p1, p2, radii, quadrant: str = "all") -> WrapResult:
    """Wrap segment p1–p2 over the ellipsoid with semi-axes ``radii`` (3,) centred at the origin
    (OpenSim's "hybrid" method). Wraps only when the segment passes through the ellipsoid."""
    radii = np.asarray(radii, float)
    factor = 3.0 / radii.sum()
    p1 = np.asarray(p1, float) * factor
    p2 = np.asarray(p2, float) * factor
    a = radii * factor
    axis, sign = parse_quadrant(quadrant)
    p1e = float(np.sum((p1 / a) ** 2)) - 1.0
    p2e = float(np.sum((p2 / a) ** 2)) - 1.0
    if p1e < -1e-4 or p2e < -1e-4:
        return WrapResult(INSIDE)
    if abs(_unit(p1) @ _unit(p2) - 1.0) < 1e-4:
        return WrapResult(NO_WRAP)
    p1p2 = p1 - p2
    f1 = p1p2 / a
    f2 = p2 / a
    aa, bb, cc = f1 @ f1, 2.0 * (f1 @ f2), f2 @ f2 - 1.0
    disc = bb * bb - 4.0 * aa * cc
    if disc < 0.0:
        return WrapResult(NO_WRAP)
    l1 = (-bb + np.sqrt(disc)) / (2.0 * aa)
    l2 = (-bb - np.sqrt(disc)) / (2.0 * aa)
    if not (0.0 < l1 < 1.0) or not (0.0 < l2 < 1.0):
        return WrapResult(NO_WRAP)
    r1 = p2 + l1 * p1p2
    r2 = p2 + l2 * p1p2
    r1r2 = r2 - r1
    # wrapping plane: through p1, p2 and c1 (hybrid of Frans' axial method and the fan average)
    mu = np.abs(_unit(p1p2))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = -r1 / r1r2
    t_sv = r1[None, :] + t[:, None] * r1r2[None, :]
    t_c1 = np.array([_closest_ellipsoid(a, t_sv[i:i + 1], special_axis=i)[0] if np.isfinite(t[i])
                     else np.full(3, np.nan) for i in range(3)])
    best = int(np.argmax(mu))
    mub = float(mu[best])
    c1 = sv = None
    fan_weight = -np.inf
    if mub > MU_BLEND_MIN:
        s = 1.0
        tb = t[best]
        if tb < 0.0 or tb > 1.0:
            s = 0.0
        elif tb < SV_BOUNDARY_BLEND:
            s = tb / SV_BOUNDARY_BLEND
        elif tb > 1.0 - SV_BOUNDARY_BLEND:
            s = (1.0 - tb) / SV_BOUNDARY_BLEND
        if s < 1.0:
            mub = MU_BLEND_MIN + s * (mub - MU_BLEND_MIN)
    if mub > MU_BLEND_MIN:
        c1, sv = t_c1[best].copy(), t_sv[best].copy()
    if mub < MU_BLEND_MAX:
        mid = r1 + 0.5 * r1r2
        tt = np.arange(1, NUM_FAN_SAMPLES - 1) / NUM_FAN_SAMPLES
        svs = r1[None, :] + tt[:, None] * r1r2[None, :]
        blades = _closest_ellipsoid(a, svs) - svs
        blades /= np.maximum(np.linalg.norm(blades, axis=1, keepdims=True), 1e-300)
        fan_pt = mid + _unit(blades.sum(axis=0))
        if mub <= MU_BLEND_MIN:
            c1 = _closest_ellipsoid(a, fan_pt)[0]
            sv = mid
            fan_weight = 1.0
        else:
            w = (mub - MU_BLEND_MIN) / (MU_BLEND_MAX - MU_BLEND_MIN)
            fan_c1 = _closest_ellipsoid(a, fan_pt)[0]
            c1 = _closest_ellipsoid(a, w * c1 + (1.0 - w) * fan_c1)[0]
            fan_weight = 1.0 - w
    if sign != 0 and _dsign(c1[axis]) != sign:
        orig = c1.copy()
        c1 = c1.copy()
        c1[axis] = -c1[axis]
        if fan_weight == -np.inf:
            fan_weight = 1.0 - (mub - MU_BLEND_MIN) / (MU_BLEND_MAX - MU_BLEND_MIN)
        fan_weight = min(fan_weight, 1.0)
        if fan_weight > 0.0:
            bis = 0.5 * (orig[axis] + c1[axis])
            c1[axis] = c1[axis] + fan_weight * (bis - c1[axis])
            c1 = _closest_ellipsoid(a, c1)[0]
    vs = _unit(cross(p1p2, p1 - c1))
    vs4 = -float(vs @ c1)
    t1 = p1 if abs(p1e) < 1e-4 else _plane_tangent_point(p1, c1, p2, a, vs, vs4, c1)
    t2 = p2 if abs(p2e) < 1e-4 else _plane_tangent_point(p2, c1, p1, a, vs, vs4, c1)
    if t1 is None or t2 is None:
        return WrapResult(NO_WRAP)
    pts, length = _ellipsoid_arc(t1, t2, a, vs, vs4, factor, far_side=False)
    if sign != 0 and len(pts) > 2:
        if _unit(p1 - t1) @ _unit(pts[1] - t1) > 0.0 or _unit(p2 - t2) @ _unit(pts[-2] - t2) > 0.0:
            pts, length = _ellipsoid_arc(t1, t2, a, vs, vs4, factor, far_side=True)
    return WrapResult(MANDATORY, t1 / factor, t2 / factor, length / factor, pts / factor)


def _ellipsoid_arc(r1, r2, a, vs, vs4, factor, far_side):
    """Points along the plane section of the ellipsoid from r1 to r2, about one per mm of chord,
    and the polyline length (both in the scaled coordinates)."""
    chord = np.linalg.norm(r1 - r2) / factor
    if chord < ELLIPSOID_SEGMENT_M:
        return np.array([r1, r2]), float(np.linalg.norm(r1 - r2))
    n = min(int(chord / ELLIPSOID_SEGMENT_M), 499)
    imax = int(np.argmax(np.abs(vs)))
    u = np.zeros(3)
    u[imax] = 1.0
    a0 = (-vs4 / (vs @ u)) * u
    ar1 = _unit(r1 - a0)
    ar2 = _unit(r2 - a0)
    phi0 = _acos(ar1 @ ar2)
    dphi = -(2 * np.pi - phi0) / n if far_side else phi0 / n
    vsz = _unit(cross(ar1, ar2))
    vsy = cross(vsz, ar1)
    phi = np.arange(1, n) * dphi
    dirs = np.cos(phi)[:, None] * ar1[None, :] + np.sin(phi)[:, None] * vsy[None, :]
    f1 = dirs / a
    f2 = a0 / a
    aa = np.sum(f1 * f1, axis=1)
    bb = 2.0 * (f1 @ f2)
    cc = f2 @ f2 - 1.0
    mu3 = (-bb + np.sqrt(np.maximum(bb * bb - 4.0 * aa * cc, 0.0))) / (2.0 * aa)
    inner = a0[None, :] + mu3[:, None] * dirs
    pts = np.vstack([r1, inner, r2])
    return pts, float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())


def wrap_sphere(p1, p2, radius: float, quadrant: str = "all") -> WrapResult:
    """Wrap segment p1–p2 over a sphere of ``radius`` at the origin: the shortest path (tangent
    lines and a great-circle arc in the plane through p1, p2 and the centre). Wraps when the segment
    passes through the sphere, or — with a quadrant — when the straight segment crosses the
    inactive side; the arc then goes round the active side."""
    p1 = np.asarray(p1, float)
    p2 = np.asarray(p2, float)
    R = float(radius)
    axis, sign = parse_quadrant(quadrant)
    if p1 @ p1 < R * R or p2 @ p2 < R * R:
        return WrapResult(INSIDE)
    d = p2 - p1
    tmin = float(np.clip(-(p1 @ d) / (d @ d), 0.0, 1.0))
    closest = p1 + tmin * d
    crosses = closest @ closest < R * R and 0.0 < tmin < 1.0
    n = cross(p1, p2)
    if np.linalg.norm(n) < tol.zero:
        return WrapResult(NO_WRAP)
    n = _unit(n)
    far = False
    if sign == 0:
        if not crosses:
            return WrapResult(NO_WRAP)
        status = MANDATORY
    else:
        if crosses:
            status = MANDATORY
            far = _dsign(closest[axis]) != sign
        elif _dsign(closest[axis]) != sign and _dsign(p1[axis]) != _dsign(p2[axis]):
            status, far = WRAPPED, True
        else:
            return WrapResult(NO_WRAP)

    def tangent(p, towards):
        dp = np.linalg.norm(p)
        e = p / dp
        f = _unit(towards - (towards @ e) * e)
        ang = np.arccos(R / dp)
        return R * (np.cos(ang) * e + np.sin(ang) * f)

    # in-plane tangent points on the side facing the other end (short way) or away from it (far)
    q2 = p2 if not far else -p2
    q1 = p1 if not far else -p1
    t1 = tangent(p1, q2)
    t2 = tangent(p2, q1)
    u1, u2 = _unit(t1), _unit(t2)
    ang = _acos(u1 @ u2)
    if far:
        ang = 2 * np.pi - ang
    k = max(int(R * ang / CYLINDER_SEGMENT_M), 1)
    rot_axis = _unit(cross(u1, u2)) if not far else -_unit(cross(u1, u2))
    if np.linalg.norm(cross(u1, u2)) < tol.zero:
        rot_axis = n
    pts = np.array([R * (axis_angle_matrix(rot_axis, ang * s) @ u1) for s in np.linspace(0, 1, k + 1)])
    return WrapResult(status, t1, t2, float(R * ang), pts)
