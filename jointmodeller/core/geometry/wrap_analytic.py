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

The solvers are compiled kernels (``core._jit.njit``, cached on disk; plain Python with
``JOINTMODELLER_NUMBA=0``): ``cylinder_kernel``, ``ellipsoid_kernel`` and ``sphere_kernel`` take the
end points as 3-tuples and return ``(status, r1, r2, length, points)`` — what the path kernel
(``core.studies.path_kernel``) calls for every segment; ``wrap_kernel`` dispatches on a kind from
Python, and ``wrap_cylinder``, ``wrap_ellipsoid`` and ``wrap_sphere`` return a ``WrapResult``.
3-vectors are tuples of floats with a few compiled helpers (``_add``, ``_sub``, ``_axpy``, ...), not
small arrays: numba compiles scalar code several times faster than array expressions, and the first
use of the kernels in a fresh environment pays that compile (it is cached on disk after).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jointmodeller.core._jit import njit
from jointmodeller.core.tolerances import tol

INSIDE, NO_WRAP, WRAPPED, MANDATORY = -1, 0, 1, 2
CYLINDER, ELLIPSOID, SPHERE, UNWRAPPED = 0, 1, 2, 3
"""Kinds for ``wrap_kernel`` (UNWRAPPED: an object the solvers do not wrap, e.g. a torus)."""
KINDS = {"cylinder": CYLINDER, "ellipsoid": ELLIPSOID, "sphere": SPHERE}

TANGENCY_THRESHOLD = float(np.radians(0.1))
"""Cylinder tangent points are refined until the path's direction changes by less than this."""
MAX_TANGENT_ITERATIONS = 100
CYLINDER_SEGMENT_M = 0.002
ELLIPSOID_SEGMENT_M = 0.001
MU_BLEND_MIN, MU_BLEND_MAX = 0.7073, 0.9
NUM_FAN_SAMPLES = 300
SV_BOUNDARY_BLEND = 0.3
ROUNDOFF = 1e-13
GEOMETRIC_ZERO = float(tol.zero)
_Z = (0.0, 0.0, 0.0)
_EZ = (0.0, 0.0, 1.0)


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


# --------------------------------------------------------------------------------------------------
# 3-vectors as tuples (compiled helpers)
# --------------------------------------------------------------------------------------------------
@njit
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit
def _mul(s, a):
    return (s * a[0], s * a[1], s * a[2])


@njit
def _div(a, s):
    return (a[0] / s, a[1] / s, a[2] / s)


@njit
def _axpy(s, x, y):
    """s x + y."""
    return (s * x[0] + y[0], s * x[1] + y[1], s * x[2] + y[2])


@njit
def _ediv(a, b):
    """Componentwise a / b."""
    return (a[0] / b[0], a[1] / b[1], a[2] / b[2])


@njit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit
def _norm(v):
    return np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


@njit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit
def _unit(v):
    n = _norm(v)
    if n > 0.0:
        return _div(v, n)
    return _Z


@njit
def _dsign(x):
    return 1 if x >= 0.0 else -1


@njit
def _acos(x):
    return np.arccos(min(max(x, -1.0), 1.0))


@njit
def _put(out, k, v):
    out[k, 0] = v[0]
    out[k, 1] = v[1]
    out[k, 2] = v[2]


@njit
def _with(v, axis, x):
    """v with component ``axis`` replaced by x."""
    if axis == 0:
        return (x, v[1], v[2])
    if axis == 1:
        return (v[0], x, v[2])
    return (v[0], v[1], x)


@njit
def _rotate(axis, angle, v):
    """v turned by ``angle`` about the unit (or zero: identity) ``axis`` (Rodrigues)."""
    if _norm(axis) == 0.0:
        return v
    c = np.cos(angle)
    s = np.sin(angle)
    return _axpy(_dot(axis, v) * (1.0 - c), axis, _axpy(s, _cross(axis, v), _mul(c, v)))


@njit
def _closest_on_line(pt, line_pt, direction):
    """Closest point to pt on the line through line_pt along direction (need not be unit)."""
    d = _unit(direction)
    return _axpy(_dot(_sub(pt, line_pt), d), d, line_pt)


@njit
def _intersect_lines(p1, p2, p3, p4):
    """Closest points of lines p1p2 and p3p4: (found, point on 1, s along p1->p2 as a fraction of
    its length, point on 2, t likewise); found False when parallel."""
    v1 = _sub(p2, p1)
    m1 = _norm(v1)
    if m1 > 0:
        v1 = _div(v1, m1)
    v2 = _sub(p4, p3)
    m2 = _norm(v2)
    if m2 > 0:
        v2 = _div(v2, m2)
    cr = _cross(v1, v2)
    den = _dot(cr, cr)
    if abs(den) <= ROUNDOFF:
        return False, p1, 0.0, p3, 0.0
    d = _sub(p3, p1)
    t = _dot(d, _cross(v1, cr)) / den  # det of the rows (d, v1, cr)
    s = _dot(d, _cross(v2, cr)) / den
    return True, _axpy(s, v1, p1), s / m1, _axpy(t, v2, p3), t / m2


@njit
def _segment_plane(a, b, normal, d):
    """Intersection of segment ab with the plane n·x + d = 0: (found, point)."""
    v = _sub(b, a)
    den = _dot(v, normal)
    if abs(den) < 1e-5:
        return False, a
    t = (-d - _dot(normal, a)) / den
    if t < -1e-5 or t > 1.0 + 1e-5:
        return False, a
    return True, _axpy(t, v, a)


@njit
def _empty():
    """No surface points (written as ``return STATUS, _Z, _Z, 0.0, _empty()``: a status passed to a
    compiled helper would be typed as a literal and compile one specialisation per status)."""
    return np.zeros((0, 3))


# --------------------------------------------------------------------------------------------------
# Cylinder
# --------------------------------------------------------------------------------------------------
@njit
def _cylinder_tangents(p, pa, R):
    """The two tangent points from p onto the circle of radius R about the axis point pa."""
    vv = _sub(p, pa)
    dist_p = _norm(vv)
    vv = _div(vv, dist_p)
    sin_t = R / dist_p
    d = R * sin_t
    pp = _axpy(d, vv, pa)
    h = np.sqrt(max(R * R - d * d, 0.0))
    uu = _cross(_EZ, vv)
    return _axpy(h, uu, pp), _axpy(-h, uu, pp), dist_p


@njit
def cylinder_kernel(p1, p2, radius, length, axis, sign, single):
    """Wrap segment p1–p2 (3-tuples) over a cylinder of ``radius`` about z, ``length`` long,
    centred at 0; quadrant (axis, sign) as from ``parse_quadrant``. Returns (status, r1, r2, length,
    points (k, 3))."""
    R = radius
    r2sq = R * R
    if p1[0] ** 2 + p1[1] ** 2 < r2sq or p2[0] ** 2 + p2[1] ** 2 < r2sq:
        return INSIDE, _Z, _Z, 0.0, _empty()
    found, near12, t12, near00, _ = _intersect_lines(p1, p2, (0.0, 0.0, -0.5 * length), (0.0, 0.0, 0.5 * length))
    if not found:
        near12, t12, near00 = p1, -1.0, (0.0, 0.0, p1[2])
    dn = _sub(near12, near00)
    crosses = _dot(dn, dn) < r2sq and 0.0 < t12 < 1.0
    status = WRAPPED
    if sign == 0:
        if not crosses:
            return NO_WRAP, _Z, _Z, 0.0, _empty()
        status = MANDATORY
    p11 = (0.0, 0.0, p1[2])
    p22 = (0.0, 0.0, p2[2])
    r1a, r1b, d1 = _cylinder_tangents(p1, p11, R)
    r2a, r2b, d2 = _cylinder_tangents(p2, p22, R)
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
                return NO_WRAP, _Z, _Z, 0.0, _empty()
        r1am, r1bm, r2am, r2bm = _sub(r1a, p11), _sub(r1b, p11), _sub(r2a, p22), _sub(r2b, p22)
        alpha = _acos(_dot(r1am, r2bm) / (_norm(r1am) * _norm(r2bm)))
        beta = _acos(_dot(r1bm, r2am) / (_norm(r1bm) * _norm(r2am)))
        s1a, s1b = _dsign(r1a[axis]) == sign, _dsign(r1b[axis]) == sign
        s2a, s2b = _dsign(r2a[axis]) == sign, _dsign(r2b[axis]) == sign
        if (s1a and s1b and s2a) or (not s1a and s1b) or (not s1a and not s1b and s2a):
            r1, r2, far_side = r1b, r2a, not (alpha > beta)
        elif (s1a and s1b) or (s1a and not s1b) or (not s1a and not s1b and s2b):
            r1, r2, far_side = r1a, r2b, alpha > beta
        else:  # no candidate on the active side
            if alpha > beta:
                r1, r2 = r1a, r2b
            else:
                r1, r2 = r1b, r2a
            far_side = True
        sum_musc = _add(_sub(r1, p1), _sub(r2, p2))
        sum_r = _add(_sub(r1, p11), _sub(r2, p22))
        long_wrap = _dot(sum_r, sum_musc) < 0.0
    else:
        u1a, u1b = _unit(_sub(r1a, p11)), _unit(_sub(r1b, p11))
        u2a, u2b = _unit(_sub(r2a, p22)), _unit(_sub(r2b, p22))
        d0, d1_, d2_, d3 = _dot(u1a, u2a), _dot(u1a, u2b), _dot(u1b, u2a), _dot(u1b, u2b)
        if d0 > d1_ and d0 > d2_ and d0 > d3:
            r1, r2 = r1a, r2a
        elif d1_ > d2_ and d1_ > d3:
            r1, r2 = r1a, r2b
        elif d2_ > d3:
            r1, r2 = r1b, r2a
        else:
            r1, r2 = r1b, r2b
    # apex: where the path crosses the plane through the axis point nearest the muscle line
    t = d1 / (d1 + d2)
    mpt = _axpy(t, _sub(p2, p1), p1)
    axispt = (0.0, 0.0, mpt[2])
    pn = _unit(_cross(_unit(_sub(p1, axispt)), _unit(_sub(p2, axispt))))
    apex1 = _axpy(R, _unit(_cross(_EZ, pn)), axispt)
    apex2 = _axpy(R, _unit(_cross(pn, _EZ)), axispt)
    m1 = _sub(mpt, apex1)
    m2 = _sub(mpt, apex2)
    near1 = _dot(m1, m1) < _dot(m2, m2)
    if far_side:
        apex = apex2 if near1 else apex1
    else:
        apex = apex1 if near1 else apex2
    # slide r1/r2 along the axis onto the plane through p1, p2 and the apex
    pn = _unit(_cross(_unit(_sub(p1, apex)), _unit(_sub(p2, apex))))
    dpl = -_dot(p1, pn)
    ok1, r1p = _segment_plane(_axpy(-10.0, _EZ, r1), _axpy(10.0, _EZ, r1), pn, dpl)
    ok2, r2p = _segment_plane(_axpy(-10.0, _EZ, r2), _axpy(10.0, _EZ, r2), pn, dpl)
    # (OpenSim measures along the direction of p22 from p11 here; replicated for equal results)
    d12 = _sub(p11, p22)
    if ok1:
        q = _sub(_closest_on_line(r1p, p11, p22), p22)
        if _dot(q, q) < _dot(d12, d12):
            r1 = r1p
    if ok2:
        q = _sub(_closest_on_line(r2p, p11, p22), p11)
        if _dot(q, q) < _dot(d12, d12):
            r2 = r2p
    half = 0.5 * length
    if (r1[2] < -half or r1[2] > half) and (r2[2] < -half or r2[2] > half):
        return NO_WRAP, _Z, _Z, 0.0, _empty()
    r1, r2, arc, pts = _spiral_path(p1, p2, r1, r2, R, long_wrap, single)
    return status, r1, r2, arc, pts


@njit
def _spiral_point(r1a, axial_vec, uu, ax, sense, t, theta, R):
    return _axpy(t, axial_vec, _axpy(R, _rotate(ax, sense * t * theta, uu), r1a))


@njit
def _adjust_tangent(pt, r, w):
    """Slide tangent point r along the axis so the line pt–r meets the surface at w tangentially:
    (moved, new r); not moved when already tangent to within TANGENCY_THRESHOLD."""
    alpha = _acos(_dot(_unit(_sub(r, pt)), _EZ))
    omega = _acos(_dot(_unit(_sub(w, r)), _EZ))
    if abs(alpha - omega) <= TANGENCY_THRESHOLD:
        return False, r
    pa = _closest_on_line(pt, r, _EZ)
    wa = _closest_on_line(w, r, _EZ)
    found, _, _, hit2, _ = _intersect_lines(pt, w, pa, wa)
    if not found:
        return False, r
    return True, _axpy(1.5, _sub(hit2, r), r)


@njit
def _spiral_path(p1, p2, r1, r2, R, far_side, single):
    """Helix on the cylinder from r1 to r2: (r1, r2, length, points)."""
    sense = -1.0 if far_side else 1.0
    for it in range(MAX_TANGENT_ITERATIONS + 1):
        r1a = (0.0, 0.0, r1[2])
        r2a = (0.0, 0.0, r2[2])
        axial_vec = _sub(r2a, r1a)
        uu = _div(_sub(r1, r1a), R)
        vv = _div(_sub(r2, r2a), R)
        theta = _acos(_dot(uu, vv) / (_norm(uu) * _norm(vv)))
        if far_side:
            theta = 2.0 * np.pi - theta
        arc = np.hypot(R * theta, _norm(axial_vec))
        ax = _unit(_cross(uu, vv))
        if single:
            pts = np.empty((2, 3))
            for k in range(2):
                _put(pts, k, _spiral_point(r1a, axial_vec, uu, ax, sense, float(k), theta, R))
            return r1, r2, arc, pts
        n = max(int(arc / CYLINDER_SEGMENT_M), 1)
        if n > 1 and it < MAX_TANGENT_ITERATIONS:
            t = 1.0 / n
            w1 = _spiral_point(r1a, axial_vec, uu, ax, sense, t, theta, R)
            w2 = _spiral_point(r1a, axial_vec, uu, ax, sense, 1.0 - t, theta, R)
            moved1, n1 = _adjust_tangent(p1, r1, w1)
            moved2, n2 = _adjust_tangent(p2, r2, w2)
            if moved1 or moved2:
                r1 = n1
                r2 = n2
                continue
        pts = np.empty((n + 1, 3))
        for k in range(n):
            _put(pts, k, _spiral_point(r1a, axial_vec, uu, ax, sense, k / n, theta, R))
        _put(pts, n, r2)
        return r1, r2, arc, pts
    return r1, r2, 0.0, np.zeros((0, 3))  # not reached


# --------------------------------------------------------------------------------------------------
# Ellipsoid
# --------------------------------------------------------------------------------------------------
@njit
def _closest_ellipse(a, b, u, v):
    """Closest point (x, y) on the ellipse (x/a)² + (y/b)² = 1 to (u, v) (Eberly's Newton)."""
    a2, b2 = a * a, b * b
    near_x = abs(u) <= ROUNDOFF
    near_y = abs(v) <= ROUNDOFF
    if near_x and near_y:
        if a < b:
            return (-a if u < 0 else a), v
        return u, (-b if v < 0 else b)
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


@njit
def _closest_ellipsoid(radii, p, special_axis):
    """Closest point on the ellipsoid with semi-axes radii to p (3-tuples).

    A point on a coordinate plane (or any point when ``special_axis`` >= 0 is given) reduces to the
    2-D ellipse problem in that plane, as OpenSim does; otherwise Newton on the Lagrange parameter.
    """
    a, b, c = radii[0], radii[1], radii[2]
    ax = special_axis
    if ax < 0:
        best = np.inf
        for i in range(3):
            if abs(p[i]) <= ROUNDOFF:
                s = a + b + c - radii[i]
                if s < best:
                    ax, best = i, s
    if ax == 0:
        y, z = _closest_ellipse(b, c, p[1], p[2])
        return (p[0], y, z)
    if ax == 1:
        z, x = _closest_ellipse(c, a, p[2], p[0])
        return (x, p[1], z)
    if ax == 2:
        x, y = _closest_ellipse(a, b, p[0], p[1])
        return (x, y, p[2])
    u, v, w = p[0], p[1], p[2]
    a2, b2, c2 = a * a, b * b, c * c
    inside = (u / a) ** 2 + (v / b) ** 2 + (w / c) ** 2 < 1.0
    t = 0.0 if inside else max(a, max(b, c)) * np.sqrt(u * u + v * v + w * w)
    for _ in range(64):
        P, Q, Rr = t + a2, t + b2, t + c2
        f = (P * Q * Rr) ** 2 - a2 * u * u * (Q * Rr) ** 2 - b2 * v * v * (P * Rr) ** 2 - c2 * w * w * (P * Q) ** 2
        if abs(f) < 1e-9:
            return (a2 * u / P, b2 * v / Q, c2 * w / Rr)
        fp = 2.0 * (P * Q * Rr * (Q * Rr + P * Rr + P * Q) - a2 * u * u * Q * Rr * (Q + Rr)
                    - b2 * v * v * P * Rr * (P + Rr) - c2 * w * w * P * Q * (P + Q))
        t = t - f / (1.0 if fp == 0 else fp)
    P, Q, Rr = t + a2, t + b2, t + c2  # Newton stalled: the last iterate
    return (a2 * u / P, b2 * v / Q, c2 * w / Rr)


@njit
def _eigh2(a, b, c):
    """Eigenvalues (ascending) w0, w1 and unit eigenvectors (columns) of [[a, b], [b, c]]."""
    if b == 0.0:
        if a <= c:
            return a, c, 1.0, 0.0, 0.0, 1.0
        return c, a, 0.0, 1.0, 1.0, 0.0
    m = 0.5 * (a + c)
    d = np.hypot(0.5 * (a - c), b)
    w0 = m - d
    x1, y1 = b, w0 - a
    x2, y2 = w0 - c, b
    if x1 * x1 + y1 * y1 >= x2 * x2 + y2 * y2:
        x, y = x1, y1
    else:
        x, y = x2, y2
    n = np.hypot(x, y)
    x, y = x / n, y / n
    return w0, m + d, x, y, -y, x


@njit
def _plane_tangent_point(p, p_other, a, vs, vs4, same_side_as):
    """(found, r): the point r on the curve (ellipsoid ∩ plane vs·x + vs4 = 0) whose tangent line
    passes through p, on the same side of the line p–p_other as ``same_side_as`` (a point of the
    plane)."""
    # parametrise the planar ellipse: centre and two conjugate directions in the plane
    if abs(vs[0]) < 0.9:
        e1 = _unit(_cross(vs, (1.0, 0.0, 0.0)))
    else:
        e1 = _unit(_cross(vs, (0.0, 1.0, 0.0)))
    e2 = _cross(vs, e1)
    x0 = _mul(-vs4, vs)  # a point of the plane
    ia2 = (1.0 / (a[0] * a[0]), 1.0 / (a[1] * a[1]), 1.0 / (a[2] * a[2]))
    e1D = (e1[0] * ia2[0], e1[1] * ia2[1], e1[2] * ia2[2])
    e2D = (e2[0] * ia2[0], e2[1] * ia2[1], e2[2] * ia2[2])
    x0D = (x0[0] * ia2[0], x0[1] * ia2[1], x0[2] * ia2[2])
    # quadratic form of the ellipsoid restricted to the plane: x = x0 + s e1 + t e2
    A00 = _dot(e1D, e1)
    A01 = _dot(e1D, e2)
    A11 = _dot(e2D, e2)
    b0 = _dot(x0D, e1)
    b1 = _dot(x0D, e2)
    cst = _dot(x0D, x0) - 1.0
    det = A00 * A11 - A01 * A01
    c0 = -(A11 * b0 - A01 * b1) / det
    c1 = -(A00 * b1 - A01 * b0) / det
    k = cst - (c0 * (A00 * c0 + A01 * c1) + c1 * (A01 * c0 + A11 * c1))  # (s-ctr)ᵀA(s-ctr) = -k
    w0, w1, v00, v10, v01, v11 = _eigh2(A00, A01, A11)
    rad0 = np.sqrt(max(-k / w0, 0.0))
    rad1 = np.sqrt(max(-k / w1, 0.0))
    centre = _axpy(c1, e2, _axpy(c0, e1, x0))
    ax1 = _mul(rad0, _axpy(v00, e1, _mul(v10, e2)))
    ax2 = _mul(rad1, _axpy(v01, e1, _mul(v11, e2)))
    # tangent from p: in the ellipse's unit-circle coordinates, the polar of p (ax1 ⟂ ax2)
    d = _sub(p, centre)
    n1 = _dot(ax1, ax1)
    n2 = _dot(ax2, ax2)
    q0 = _dot(ax1, d) / n1 if n1 > 0.0 else 0.0
    q1 = _dot(ax2, d) / n2 if n2 > 0.0 else 0.0
    qq = q0 * q0 + q1 * q1
    if qq <= 1.0:
        return False, p
    s = np.sqrt(qq - 1.0) / qq
    ca = _axpy(q1 / qq + q0 * s, ax2, _axpy(q0 / qq - q1 * s, ax1, centre))
    cb = _axpy(q1 / qq - q0 * s, ax2, _axpy(q0 / qq + q1 * s, ax1, centre))
    line = _sub(p_other, p)
    side = np.sign(_dot(_cross(line, _sub(same_side_as, p)), vs))
    if np.sign(_dot(_cross(line, _sub(ca, p)), vs)) == side:
        return True, ca
    if np.sign(_dot(_cross(line, _sub(cb, p)), vs)) == side:
        return True, cb
    return True, ca


@njit
def ellipsoid_kernel(p1, p2, radii, axis, sign):
    """Wrap segment p1–p2 over the ellipsoid with semi-axes ``radii`` centred at the origin (all
    3-tuples; OpenSim's "hybrid" method). Wraps only when the segment passes through the ellipsoid.
    Returns (status, r1, r2, length, points (k, 3))."""
    factor = 3.0 / (radii[0] + radii[1] + radii[2])
    p1 = _mul(factor, p1)
    p2 = _mul(factor, p2)
    a = _mul(factor, radii)
    f1 = _ediv(p1, a)
    f2 = _ediv(p2, a)
    p1e = _dot(f1, f1) - 1.0
    p2e = _dot(f2, f2) - 1.0
    if p1e < -1e-4 or p2e < -1e-4:
        return INSIDE, _Z, _Z, 0.0, _empty()
    if abs(_dot(_unit(p1), _unit(p2)) - 1.0) < 1e-4:
        return NO_WRAP, _Z, _Z, 0.0, _empty()
    p1p2 = _sub(p1, p2)
    f1 = _ediv(p1p2, a)
    aa, bb, cc = _dot(f1, f1), 2.0 * _dot(f1, f2), _dot(f2, f2) - 1.0
    disc = bb * bb - 4.0 * aa * cc
    if disc < 0.0:
        return NO_WRAP, _Z, _Z, 0.0, _empty()
    l1 = (-bb + np.sqrt(disc)) / (2.0 * aa)
    l2 = (-bb - np.sqrt(disc)) / (2.0 * aa)
    if not (0.0 < l1 < 1.0) or not (0.0 < l2 < 1.0):
        return NO_WRAP, _Z, _Z, 0.0, _empty()
    r1 = _axpy(l1, p1p2, p2)
    r2 = _axpy(l2, p1p2, p2)
    r1r2 = _sub(r2, r1)
    # wrapping plane: through p1, p2 and c1 (hybrid of Frans' axial method and the fan average)
    mu = _unit(p1p2)
    best = np.int64(0)  # (not a literal 0: one compiled specialisation of _closest_ellipsoid)
    auto = np.int64(-1)
    mub = abs(mu[0])
    for i in range(1, 3):
        if abs(mu[i]) > mub:
            best, mub = i, abs(mu[i])
    tb = -r1[best] / r1r2[best]  # r1r2[best] != 0: the largest component of the segment's direction
    c1 = _Z
    fan_weight = -np.inf
    if mub > MU_BLEND_MIN:
        s = 1.0
        if tb < 0.0 or tb > 1.0:
            s = 0.0
        elif tb < SV_BOUNDARY_BLEND:
            s = tb / SV_BOUNDARY_BLEND
        elif tb > 1.0 - SV_BOUNDARY_BLEND:
            s = (1.0 - tb) / SV_BOUNDARY_BLEND
        if s < 1.0:
            mub = MU_BLEND_MIN + s * (mub - MU_BLEND_MIN)
    if mub > MU_BLEND_MIN:
        c1 = _closest_ellipsoid(a, _axpy(tb, r1r2, r1), best)
    if mub < MU_BLEND_MAX:
        mid = _axpy(0.5, r1r2, r1)
        blade_sum = _Z
        for k in range(1, NUM_FAN_SAMPLES - 1):
            sv = _axpy(k / NUM_FAN_SAMPLES, r1r2, r1)
            blade = _sub(_closest_ellipsoid(a, sv, auto), sv)
            blade_sum = _add(blade_sum, _div(blade, max(_norm(blade), 1e-300)))
        fan_pt = _add(mid, _unit(blade_sum))
        if mub <= MU_BLEND_MIN:
            c1 = _closest_ellipsoid(a, fan_pt, auto)
            fan_weight = 1.0
        else:
            w = (mub - MU_BLEND_MIN) / (MU_BLEND_MAX - MU_BLEND_MIN)
            fan_c1 = _closest_ellipsoid(a, fan_pt, auto)
            c1 = _closest_ellipsoid(a, _axpy(w, c1, _mul(1.0 - w, fan_c1)), auto)
            fan_weight = 1.0 - w
    if sign != 0 and _dsign(c1[axis]) != sign:
        orig = c1[axis]
        c1 = _with(c1, axis, -c1[axis])
        if fan_weight == -np.inf:
            fan_weight = 1.0 - (mub - MU_BLEND_MIN) / (MU_BLEND_MAX - MU_BLEND_MIN)
        fan_weight = min(fan_weight, 1.0)
        if fan_weight > 0.0:
            bis = 0.5 * (orig + c1[axis])
            c1 = _closest_ellipsoid(a, _with(c1, axis, c1[axis] + fan_weight * (bis - c1[axis])), auto)
    vs = _unit(_cross(p1p2, _sub(p1, c1)))
    vs4 = -_dot(vs, c1)
    ok1, t1 = (True, p1) if abs(p1e) < 1e-4 else _plane_tangent_point(p1, p2, a, vs, vs4, c1)
    ok2, t2 = (True, p2) if abs(p2e) < 1e-4 else _plane_tangent_point(p2, p1, a, vs, vs4, c1)
    if not (ok1 and ok2):
        return NO_WRAP, _Z, _Z, 0.0, _empty()
    far = sign == 2  # False, typed as a plain bool (one specialisation of _ellipsoid_arc)
    while True:
        pts, length = _ellipsoid_arc(t1, t2, a, vs, vs4, factor, far)
        n = pts.shape[0]
        if far or sign == 0 or n <= 2:
            break
        # a quadrant: the arc must not turn back towards the end points; else go round the far side
        far = _dot(_unit(_sub(p1, t1)), _unit(_sub((pts[1, 0], pts[1, 1], pts[1, 2]), t1))) > 0.0 or \
            _dot(_unit(_sub(p2, t2)), _unit(_sub((pts[n - 2, 0], pts[n - 2, 1], pts[n - 2, 2]), t2))) > 0.0
        if not far:
            break
    return MANDATORY, _div(t1, factor), _div(t2, factor), length / factor, pts / factor


@njit
def _ellipsoid_arc(r1, r2, a, vs, vs4, factor, far_side):
    """Points along the plane section of the ellipsoid from r1 to r2, about one per mm of chord,
    and the polyline length (both in the scaled coordinates)."""
    chord = _norm(_sub(r1, r2)) / factor
    if chord < ELLIPSOID_SEGMENT_M:
        pts = np.empty((2, 3))
        for k in range(2):
            _put(pts, k, r1 if k == 0 else r2)
        return pts, _norm(_sub(r1, r2))
    n = min(int(chord / ELLIPSOID_SEGMENT_M), 499)
    imax = np.int64(0)  # (np.int64, not a literal: one specialisation of _with)
    for i in range(1, 3):
        if abs(vs[i]) > abs(vs[imax]):
            imax = i
    a0 = _with(_Z, imax, -vs4 / vs[imax])
    ar1 = _unit(_sub(r1, a0))
    ar2 = _unit(_sub(r2, a0))
    phi0 = _acos(_dot(ar1, ar2))
    dphi = -(2 * np.pi - phi0) / n if far_side else phi0 / n
    vsz = _unit(_cross(ar1, ar2))
    vsy = _cross(vsz, ar1)
    f2 = _ediv(a0, a)
    cc = _dot(f2, f2) - 1.0
    pts = np.empty((n + 1, 3))
    total = 0.0
    prev = r1
    for k in range(n + 1):
        if k == 0:
            pt = r1
        elif k < n:
            phi = k * dphi
            dirs = _axpy(np.cos(phi), ar1, _mul(np.sin(phi), vsy))
            f1 = _ediv(dirs, a)
            aa = _dot(f1, f1)
            bb = 2.0 * _dot(f1, f2)
            mu3 = (-bb + np.sqrt(max(bb * bb - 4.0 * aa * cc, 0.0))) / (2.0 * aa)
            pt = _axpy(mu3, dirs, a0)
        else:
            pt = r2
        _put(pts, k, pt)
        total += _norm(_sub(pt, prev))
        prev = pt
    return pts, total


# --------------------------------------------------------------------------------------------------
# Sphere
# --------------------------------------------------------------------------------------------------
@njit
def _sphere_tangent(p, towards, R):
    dp = _norm(p)
    e = _div(p, dp)
    f = _unit(_axpy(-_dot(towards, e), e, towards))
    ang = np.arccos(R / dp)
    return _mul(R, _axpy(np.cos(ang), e, _mul(np.sin(ang), f)))


@njit
def sphere_kernel(p1, p2, radius, axis, sign):
    """Wrap segment p1–p2 (3-tuples) over a sphere of ``radius`` at the origin: the shortest path
    (tangent lines and a great-circle arc in the plane through p1, p2 and the centre). Wraps when the
    segment passes through the sphere, or — with a quadrant — when the straight segment crosses the
    inactive side; the arc then goes round the active side. Returns (status, r1, r2, length,
    points (k, 3))."""
    R = radius
    if _dot(p1, p1) < R * R or _dot(p2, p2) < R * R:
        return INSIDE, _Z, _Z, 0.0, _empty()
    d = _sub(p2, p1)
    tmin = min(max(-_dot(p1, d) / _dot(d, d), 0.0), 1.0)
    closest = _axpy(tmin, d, p1)
    crosses = _dot(closest, closest) < R * R and 0.0 < tmin < 1.0
    n = _cross(p1, p2)
    if _norm(n) < GEOMETRIC_ZERO:
        return NO_WRAP, _Z, _Z, 0.0, _empty()
    n = _unit(n)
    far = False
    status = MANDATORY
    if sign == 0:
        if not crosses:
            return NO_WRAP, _Z, _Z, 0.0, _empty()
    else:
        if crosses:
            far = _dsign(closest[axis]) != sign
        elif _dsign(closest[axis]) != sign and _dsign(p1[axis]) != _dsign(p2[axis]):
            status, far = WRAPPED, True
        else:
            return NO_WRAP, _Z, _Z, 0.0, _empty()
    # in-plane tangent points on the side facing the other end (short way) or away from it (far)
    q2 = _mul(-1.0, p2) if far else p2
    q1 = _mul(-1.0, p1) if far else p1
    t1 = _sphere_tangent(p1, q2, R)
    t2 = _sphere_tangent(p2, q1, R)
    u1, u2 = _unit(t1), _unit(t2)
    ang = _acos(_dot(u1, u2))
    if far:
        ang = 2 * np.pi - ang
    k = max(int(R * ang / CYLINDER_SEGMENT_M), 1)
    c12 = _cross(u1, u2)
    rot_axis = _mul(-1.0, _unit(c12)) if far else _unit(c12)
    if _norm(c12) < GEOMETRIC_ZERO:
        rot_axis = n
    pts = np.empty((k + 1, 3))
    for i in range(k + 1):
        _put(pts, i, _mul(R, _rotate(rot_axis, ang * (i / k), u1)))
    return status, t1, t2, R * ang, pts


# --------------------------------------------------------------------------------------------------
# The Python-facing functions
# --------------------------------------------------------------------------------------------------
def _t3(v) -> tuple[float, float, float]:
    v = np.asarray(v, float).ravel()
    return (float(v[0]), float(v[1]), float(v[2]))


def wrap_kernel(kind: int, p1, p2, dims, axis: int, sign: int, single: bool = True):
    """Wrap segment p1–p2 (3,) in the object's frame over an object of ``kind`` (CYLINDER: dims
    radius, length; ELLIPSOID: the three semi-axes; SPHERE: radius; anything else: no wrap), quadrant
    (axis, sign). Returns (status, r1 (3,), r2 (3,), length, points (k, 3))."""
    dims = np.asarray(dims, float).ravel()
    a, b = _t3(p1), _t3(p2)
    if kind == CYLINDER:
        out = cylinder_kernel(a, b, float(dims[0]), float(dims[1]), int(axis), int(sign), bool(single))
    elif kind == ELLIPSOID:
        out = ellipsoid_kernel(a, b, _t3(dims[:3]), int(axis), int(sign))
    elif kind == SPHERE:
        out = sphere_kernel(a, b, float(dims[0]), int(axis), int(sign))
    else:
        return NO_WRAP, np.zeros(3), np.zeros(3), 0.0, np.zeros((0, 3))
    status, r1, r2, length, pts = out
    return int(status), np.array(r1, float), np.array(r2, float), float(length), np.asarray(pts)


def _call(kind, p1, p2, dims, quadrant, single=True) -> WrapResult:
    axis, sign = parse_quadrant(quadrant)
    return WrapResult(*wrap_kernel(kind, p1, p2, dims, axis, sign, single))


def wrap_cylinder(p1, p2, radius: float, length: float, quadrant: str = "all",
                  single: bool = True) -> WrapResult:
    """Wrap segment p1–p2 over a cylinder of ``radius`` about z, ``length`` long, centred at 0.

    single: the path has only this wrap object (OpenSim then keeps the first tangent estimate
    instead of refining tangency to 0.1°).
    """
    return _call(CYLINDER, p1, p2, (radius, length), quadrant, single)


def wrap_ellipsoid(p1, p2, radii, quadrant: str = "all") -> WrapResult:
    """Wrap segment p1–p2 over the ellipsoid with semi-axes ``radii`` (3,) centred at the origin
    (OpenSim's "hybrid" method). Wraps only when the segment passes through the ellipsoid."""
    return _call(ELLIPSOID, p1, p2, radii, quadrant)


def wrap_sphere(p1, p2, radius: float, quadrant: str = "all") -> WrapResult:
    """Wrap segment p1–p2 over a sphere of ``radius`` at the origin (see ``sphere_kernel``)."""
    return _call(SPHERE, p1, p2, (radius,), quadrant)
