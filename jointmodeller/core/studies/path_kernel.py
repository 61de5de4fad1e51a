"""Every muscle path of a model at one pose in one compiled call (OpenSim's GeometryPath rules).

``pack_paths`` flattens a list of ``core.studies.muscle_paths.PathSpec`` into arrays once (points,
conditional ranges, moving points as encoded Functions, wrap objects); ``solve_paths`` then takes the
body poses R_GB (nb, 3, 3), p_GB (nb, 3) and the coordinates q and returns every path's points (body,
r_B, position in G, wrap object and slot, surface length, original point index) and length —
conditional via points, moving points, the choice of segment per wrap object, the iteration over
several wrap objects and OpenSim's stale wrap-point positions (``stale``) as in
``muscle_paths.calc_path``, which is this kernel on one path. ``unit_tension_forces`` turns the
solved paths into the body forces of unit tension (force and moment about each body origin, in G)
and the generalized forces of the moving points' own motion; with the tree's Jacobians
(``body_jacobians``) that is seed 002's generalized-force moment arm about every coordinate at once,
with no re-solve per coordinate (``generalized_forces``).

The wrap solvers are ``core.geometry.wrap_analytic.wrap_kernel``. All kernels go through
``core._jit.njit`` (cached on disk; plain Python with ``JOINTMODELLER_NUMBA=0``). Arrays are passed
with fixed dtypes (float64, int64, C order) so each kernel compiles once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.core._jit import njit
from jointmodeller.core.geometry import wrap_analytic as wa
from jointmodeller.core.multibody.functions import encode_for_table, eval_function_1d

WRAP_CONVERGENCE_M = 0.0005
"""OpenSim's wrap iteration over several wrap objects stops when the length changes less than this."""
MAX_WRAP_PASSES = 8


@dataclass(frozen=True)
class PackedPaths:
    """Paths as flat arrays (P paths, N points, W wrap objects in all). Point g of path p is
    ``pt_off[p] <= g < pt_off[p + 1]``; its moving components (``mv_on[g]``) are functions
    ``mv_f[g, a]`` of q[mv_q[g, a]] (-1: at 0), r_B = mv_A[g] r_L + mv_b[g]; ``mv_u``: the
    coordinates' speed indices (-1 unknown). Wrap w of path p is ``wr_off[p] <= w < wr_off[p + 1]``,
    kind a ``wrap_analytic`` kind, dims (3,), quadrant (axis, sign), 1-based point range
    (start, end; -1 = path ends). ``cap``: most points a solved path can have."""

    names: tuple
    pt_off: np.ndarray
    pt_body: np.ndarray
    pt_r: np.ndarray
    pt_cond: np.ndarray
    pt_range: np.ndarray
    mv_on: np.ndarray
    mv_f: np.ndarray
    mv_q: np.ndarray
    mv_u: np.ndarray
    mv_A: np.ndarray
    mv_b: np.ndarray
    ftype: np.ndarray
    foff: np.ndarray
    fdata: np.ndarray
    wr_off: np.ndarray
    wr_body: np.ndarray
    wr_R: np.ndarray
    wr_p: np.ndarray
    wr_kind: np.ndarray
    wr_dims: np.ndarray
    wr_axis: np.ndarray
    wr_sign: np.ndarray
    wr_range: np.ndarray
    out_off: np.ndarray

    @property
    def n_paths(self) -> int:
        return len(self.names)

    def arrays(self) -> tuple:
        """The arrays ``_solve`` takes, in its order."""
        return (self.pt_off, self.pt_body, self.pt_r, self.pt_cond, self.pt_range, self.mv_on, self.mv_f,
                self.mv_q, self.mv_A, self.mv_b, self.ftype, self.foff, self.fdata, self.wr_off, self.wr_body,
                self.wr_R, self.wr_p, self.wr_kind, self.wr_dims, self.wr_axis, self.wr_sign, self.wr_range,
                self.out_off)


def pack_paths(specs) -> PackedPaths:
    """PackedPaths of a sequence of PathSpec (``core.studies.muscle_paths``)."""
    i64, f64 = np.int64, np.float64
    pt_off, wr_off, out_off = [0], [0], [0]
    body, r, cond, rng = [], [], [], []
    mv_on, mv_f, mv_q, mv_u, mv_A, mv_b = [], [], [], [], [], []
    ftype: list[int] = []
    foff, chunks = [], []
    size = 0
    wb, wR, wp, wk, wd, wax, wsg, wrg = [], [], [], [], [], [], [], []
    for spec in specs:
        n = len(spec.body)
        moving = {mp.index: mp for mp in spec.moving}
        for k in range(n):
            body.append(int(spec.body[k]))
            r.append(np.asarray(spec.r_B[k], f64))
            cond.append(int(spec.cond[k]))
            rng.append(np.asarray(spec.cond_range[k], f64))
            mp = moving.get(k)
            fi = [-1, -1, -1]
            if mp is not None:
                for a, fn in enumerate(mp.fns):
                    t, _, data = encode_for_table(fn)
                    fi[a] = len(ftype)
                    ftype.append(t)
                    foff.append(size)
                    chunks.append(np.asarray(data, f64))
                    size += len(data)
            mv_on.append(mp is not None)
            mv_f.append(fi)
            mv_q.append(list(mp.qidx) if mp is not None else [-1, -1, -1])
            mv_u.append(list(mp.uidx) if mp is not None else [-1, -1, -1])
            mv_A.append(np.asarray(mp.A, f64) if mp is not None else np.eye(3))
            mv_b.append(np.asarray(mp.b, f64) if mp is not None else np.zeros(3))
        for w in spec.wraps:
            wb.append(int(w.body))
            wR.append(np.asarray(w.R_BW, f64))
            wp.append(np.asarray(w.p_BW, f64))
            wk.append(wa.KINDS.get(w.kind, wa.UNWRAPPED))
            d = np.zeros(3)
            d[:min(3, len(w.dims))] = np.asarray(w.dims, f64)[:3]
            wd.append(d)
            axis, sign = wa.parse_quadrant(w.quadrant)
            wax.append(axis)
            wsg.append(sign)
            wrg.append((int(w.start), int(w.end)))
        pt_off.append(len(body))
        wr_off.append(len(wb))
        out_off.append(out_off[-1] + n + 2 * len(spec.wraps))

    def arr(x, dt, shape):
        return np.ascontiguousarray(np.array(x, dt).reshape(shape))

    return PackedPaths(
        tuple(s.name for s in specs), arr(pt_off, i64, (-1,)), arr(body, i64, (-1,)), arr(r, f64, (-1, 3)),
        arr(cond, i64, (-1,)), arr(rng, f64, (-1, 2)), arr(mv_on, np.bool_, (-1,)), arr(mv_f, i64, (-1, 3)),
        arr(mv_q, i64, (-1, 3)), arr(mv_u, i64, (-1, 3)), arr(mv_A, f64, (-1, 3, 3)), arr(mv_b, f64, (-1, 3)),
        arr(ftype or [0], i64, (-1,)), arr(foff or [0], i64, (-1,)),
        arr(np.concatenate(chunks) if chunks else np.zeros(1), f64, (-1,)),
        arr(wr_off, i64, (-1,)), arr(wb, i64, (-1,)), arr(wR, f64, (-1, 3, 3)), arr(wp, f64, (-1, 3)),
        arr(wk, i64, (-1,)), arr(wd, f64, (-1, 3)), arr(wax, i64, (-1,)), arr(wsg, i64, (-1,)),
        arr(wrg, i64, (-1, 2)), arr(out_off, i64, (-1,)))


@dataclass
class SolvedPaths:
    """Every path at one pose: path p's points are rows ``off[p] : off[p] + n[p]`` of body (-1
    ground), r_B (3,) in the body frame, x_G (3,) where the path's straight stretches meet (OpenSim's
    stale wrap-point positions when asked for), wrap (-1: a path point, else the path's wrap object
    index), slot (1, 2: first/second wrap point), arc (surface length from the previous wrap point,
    on slot 2), index (the path point, -1 for wrap points), seg (6,) on slot 2: the segment's ends
    in the wrap object's frame when it was wrapped (to redraw the surface). length (P,) [m]."""

    off: np.ndarray
    n: np.ndarray
    body: np.ndarray
    r_B: np.ndarray
    x_G: np.ndarray
    wrap: np.ndarray
    slot: np.ndarray
    arc: np.ndarray
    index: np.ndarray
    seg: np.ndarray
    length: np.ndarray

    def wrapped(self) -> np.ndarray:
        """(P,) bool: a wrap object in use."""
        return np.array([bool((self.wrap[o:o + k] >= 0).any()) for o, k in zip(self.off, self.n)], bool)


# --------------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------------
@njit
def _row(A, k):
    return (A[k, 0], A[k, 1], A[k, 2])


@njit
def _to_G(R_GB, p_GB, body, r):
    """Body-frame point r (3-tuple) of ``body`` (-1 ground) in G."""
    if body < 0:
        return r
    R = R_GB[body]
    return (p_GB[body, 0] + R[0, 0] * r[0] + R[0, 1] * r[1] + R[0, 2] * r[2],
            p_GB[body, 1] + R[1, 0] * r[0] + R[1, 1] * r[1] + R[1, 2] * r[2],
            p_GB[body, 2] + R[2, 0] * r[0] + R[2, 1] * r[1] + R[2, 2] * r[2])


@njit
def _rot(R, v):
    """R v (R (3, 3) array, v a 3-tuple)."""
    return (R[0, 0] * v[0] + R[0, 1] * v[1] + R[0, 2] * v[2],
            R[1, 0] * v[0] + R[1, 1] * v[1] + R[1, 2] * v[2],
            R[2, 0] * v[0] + R[2, 1] * v[1] + R[2, 2] * v[2])


@njit
def _rotT(R, v):
    """Rᵀ v."""
    return (R[0, 0] * v[0] + R[1, 0] * v[1] + R[2, 0] * v[2],
            R[0, 1] * v[0] + R[1, 1] * v[1] + R[2, 1] * v[2],
            R[0, 2] * v[0] + R[1, 2] * v[1] + R[2, 2] * v[2])


@njit
def _in_wrap_frame(R_GB, p_GB, wbody, R_BW, wr_p, w, x):
    """Point x (G) in the frame W of wrap object w (R_BW, wr_p[w]) on ``wbody``."""
    if wbody >= 0:
        x = _rotT(R_GB[wbody], wa._sub(x, _row(p_GB, wbody)))
    return _rotT(R_BW, wa._sub(x, _row(wr_p, w)))


@njit
def _where(R_GB, p_GB, Lb, Lr, Lw, Ls, k, stale, cache, has):
    """Where point k of the working list meets its straight stretches: its current position, or with
    ``stale`` a wrap point's first position at this pose (OpenSim 4's cached wrap points)."""
    w = Lw[k]
    x = _to_G(R_GB, p_GB, Lb[k], _row(Lr, k))
    if stale and w >= 0:
        s = Ls[k] - 1
        if not has[w, s]:
            cache[w, s, 0] = x[0]
            cache[w, s, 1] = x[1]
            cache[w, s, 2] = x[2]
            has[w, s] = True
        return (cache[w, s, 0], cache[w, s, 1], cache[w, s, 2])
    return x


@njit
def _list_length(R_GB, p_GB, Lb, Lr, Lw, Ls, La, n, stale, cache, has):
    total = 0.0
    for k in range(n - 1):
        if Lw[k] >= 0 and Lw[k] == Lw[k + 1]:
            total += La[k + 1]
        else:
            xb = _where(R_GB, p_GB, Lb, Lr, Lw, Ls, k + 1, stale, cache, has)
            xa = _where(R_GB, p_GB, Lb, Lr, Lw, Ls, k, stale, cache, has)
            total += wa._norm(wa._sub(xb, xa))
    return total


@njit
def _move_row(Lb, Lr, Lw, Ls, La, Li, Lseg, to, frm):
    Lb[to] = Lb[frm]
    Lw[to] = Lw[frm]
    Ls[to] = Ls[frm]
    La[to] = La[frm]
    Li[to] = Li[frm]
    for c in range(3):
        Lr[to, c] = Lr[frm, c]
    for c in range(6):
        Lseg[to, c] = Lseg[frm, c]


@njit
def _drop_wrap(Lb, Lr, Lw, Ls, La, Li, Lseg, n, wid):
    """Remove the wrap points of wrap object ``wid`` from the working list; its new length."""
    m = np.int64(0)  # (not a literal 0: one compiled specialisation of _move_row)
    for k in range(n):
        if Lw[k] == wid:
            continue
        if m != k:
            _move_row(Lb, Lr, Lw, Ls, La, Li, Lseg, m, k)
        m += 1
    return m


@njit
def _fn(ftype, foff, fdata, fi, x):
    """(value, slope) of encoded function fi at x (the spline arithmetic compiled once here, not
    inlined into each kernel that evaluates a moving point)."""
    v, d1, _ = eval_function_1d(ftype[fi], foff[fi], fdata, x, 0.0)
    return v, d1


@njit
def _point_B(g, q, pt_r, mv_on, mv_f, mv_q, mv_A, mv_b, ftype, foff, fdata):
    """r_B (3-tuple) of path point g at coordinates q (a moving point's functions evaluated)."""
    if not mv_on[g]:
        return _row(pt_r, g)
    rL0 = 0.0
    rL1 = 0.0
    rL2 = 0.0
    for a in range(3):
        fi = mv_f[g, a]
        x = q[mv_q[g, a]] if mv_q[g, a] >= 0 else 0.0
        v, _ = _fn(ftype, foff, fdata, fi, x)
        if a == 0:
            rL0 = v
        elif a == 1:
            rL1 = v
        else:
            rL2 = v
    return wa._add(_rot(mv_A[g], (rL0, rL1, rL2)), _row(mv_b, g))


@njit
def _solve(R_GB, p_GB, q, stale, pt_off, pt_body, pt_r, pt_cond, pt_range, mv_on, mv_f, mv_q, mv_A, mv_b,
           ftype, foff, fdata, wr_off, wr_body, wr_R, wr_p, wr_kind, wr_dims, wr_axis, wr_sign, wr_range, out_off):
    P = pt_off.shape[0] - 1
    N = out_off[P]
    o_n = np.zeros(P, np.int64)
    o_body = np.zeros(N, np.int64)
    o_r = np.zeros((N, 3))
    o_x = np.zeros((N, 3))
    o_wrap = np.full(N, -1, np.int64)
    o_slot = np.zeros(N, np.int64)
    o_arc = np.zeros(N)
    o_index = np.full(N, -1, np.int64)
    o_seg = np.zeros((N, 6))
    o_len = np.zeros(P)
    cap = 0
    maxw = 1
    for p in range(P):
        cap = max(cap, out_off[p + 1] - out_off[p])
        maxw = max(maxw, wr_off[p + 1] - wr_off[p])
    Lb = np.zeros(cap, np.int64)
    Lr = np.zeros((cap, 3))
    Lw = np.zeros(cap, np.int64)
    Ls = np.zeros(cap, np.int64)
    La = np.zeros(cap)
    Li = np.zeros(cap, np.int64)
    Lseg = np.zeros((cap, 6))
    active = np.zeros(cap, np.bool_)
    cache = np.zeros((maxw, 2, 3))
    has = np.zeros((maxw, 2), np.bool_)
    order = np.zeros(maxw, np.int64)
    results = np.zeros(maxw, np.int64)
    for p in range(P):
        g0 = pt_off[p]
        n0 = pt_off[p + 1] - g0
        w0 = wr_off[p]
        nw = wr_off[p + 1] - w0
        n = np.int64(0)  # (not a literal 0: one specialisation of the helpers it is passed to)
        for k in range(n0):
            g = g0 + k
            c = pt_cond[g]
            active[k] = c < 0 or (pt_range[g, 0] <= q[c] <= pt_range[g, 1])
            if active[k]:
                Lb[n] = pt_body[g]
                wa._put(Lr, n, _point_B(g, q, pt_r, mv_on, mv_f, mv_q, mv_A, mv_b, ftype, foff, fdata))
                Lw[n] = -1
                Ls[n] = 0
                La[n] = 0.0
                Li[n] = k
                n += 1
        for w in range(nw):
            order[w] = w
            results[w] = wa.NO_WRAP
            has[w, 0] = False
            has[w, 1] = False
        last = np.inf
        passes = 1 if nw < 2 else MAX_WRAP_PASSES
        cut = False
        for kk in range(passes):
            for i in range(nw):
                wid = order[i]
                w = w0 + wid
                results[i] = wa.NO_WRAP
                n = _drop_wrap(Lb, Lr, Lw, Ls, La, Li, Lseg, n, wid)
                ws = 0 if wr_range[w, 0] < 1 else wr_range[w, 0] - 1
                we = n0 - 1 if wr_range[w, 1] < 1 else min(wr_range[w, 1] - 1, n0 - 1)
                fwd = -1
                for k in range(ws, we + 1):
                    if active[k]:
                        fwd = k
                        break
                rev = -1
                for k in range(we, ws - 1, -1):
                    if active[k]:
                        rev = k
                        break
                if fwd < 0 or rev < 0:
                    cut = True
                    break
                start = 0
                end = 0
                for j in range(n):
                    if Lw[j] < 0 and Li[j] == fwd:
                        start = j
                    if Lw[j] < 0 and Li[j] == rev:
                        end = j
                best_at = -1
                best_r1 = (0.0, 0.0, 0.0)
                best_r2 = (0.0, 0.0, 0.0)
                best_xa = (0.0, 0.0, 0.0)
                best_xb = (0.0, 0.0, 0.0)
                best_len = 0.0
                min_change = np.inf
                R_BW = wr_R[w]
                wbody = wr_body[w]
                for j in range(start, end):
                    if Lw[j] >= 0 and Lw[j] == Lw[j + 1]:
                        continue
                    xa = _in_wrap_frame(R_GB, p_GB, wbody, R_BW, wr_p, w, _to_G(R_GB, p_GB, Lb[j], _row(Lr, j)))
                    xb = _in_wrap_frame(R_GB, p_GB, wbody, R_BW, wr_p, w, _to_G(R_GB, p_GB, Lb[j + 1], _row(Lr, j + 1)))
                    kind = wr_kind[w]
                    dims = wr_dims[w]
                    if kind == wa.CYLINDER:
                        status, r1, r2, arc, pts = wa.cylinder_kernel(xa, xb, dims[0], dims[1], wr_axis[w], wr_sign[w],
                                                                      nw == 1)
                    elif kind == wa.ELLIPSOID:
                        status, r1, r2, arc, pts = wa.ellipsoid_kernel(xa, xb, (dims[0], dims[1], dims[2]), wr_axis[w],
                                                                       wr_sign[w])
                    elif kind == wa.SPHERE:
                        status, r1, r2, arc, pts = wa.sphere_kernel(xa, xb, dims[0], wr_axis[w], wr_sign[w])
                    else:  # not wrapped (a torus)
                        continue
                    results[i] = status
                    if status == wa.MANDATORY:
                        best_at, best_r1, best_r2, best_len, best_xa, best_xb = j, r1, r2, arc, xa, xb
                        break
                    if status == wa.WRAPPED:
                        sa = _where(R_GB, p_GB, Lb, Lr, Lw, Ls, j, stale, cache, has)
                        sb = _where(R_GB, p_GB, Lb, Lr, Lw, Ls, j + 1, stale, cache, has)
                        g1 = _to_G(R_GB, p_GB, wbody, wa._add(_rot(R_BW, r1), _row(wr_p, w)))
                        g2 = _to_G(R_GB, p_GB, wbody, wa._add(_rot(R_BW, r2), _row(wr_p, w)))
                        change = (wa._norm(wa._sub(g1, sa)) + arc + wa._norm(wa._sub(sb, g2))
                                  - wa._norm(wa._sub(sb, sa)))
                        if change < min_change:
                            best_at, best_r1, best_r2, best_len, best_xa, best_xb = j, r1, r2, arc, xa, xb
                            min_change = change
                if best_at >= 0:
                    for k in range(n - 1, best_at, -1):  # open two rows after best_at
                        _move_row(Lb, Lr, Lw, Ls, La, Li, Lseg, k + 2, k)
                    n += 2
                    for s in range(2):
                        at = best_at + 1 + s
                        Lb[at] = wbody
                        wa._put(Lr, at, wa._add(_rot(R_BW, best_r1 if s == 0 else best_r2), _row(wr_p, w)))
                        Lw[at] = wid
                        Ls[at] = s + 1
                        La[at] = 0.0 if s == 0 else best_len
                        Li[at] = -1
                        for c in range(3):
                            Lseg[at, c] = best_xa[c]
                            Lseg[at, 3 + c] = best_xb[c]
            if cut:
                break
            length = _list_length(R_GB, p_GB, Lb, Lr, Lw, Ls, La, n, stale, cache, has)
            if abs(length - last) < WRAP_CONVERGENCE_M:
                break
            last = length
            if kk == 0 and nw > 1 and results[0] == wa.NO_WRAP and results[1] == wa.INSIDE:
                order[0], order[1] = 1, 0
                n = _drop_wrap(Lb, Lr, Lw, Ls, La, Li, Lseg, n, order[1])  # wrap object 0 (not a literal 0)
        o = out_off[p]
        o_n[p] = n
        for k in range(n):
            o_body[o + k] = Lb[k]
            wa._put(o_r, o + k, _row(Lr, k))
            wa._put(o_x, o + k, _where(R_GB, p_GB, Lb, Lr, Lw, Ls, k, stale, cache, has))
            o_wrap[o + k] = Lw[k]
            o_slot[o + k] = Ls[k]
            o_arc[o + k] = La[k]
            o_index[o + k] = Li[k]
            for c in range(6):
                o_seg[o + k, c] = Lseg[k, c]
        o_len[p] = _list_length(R_GB, p_GB, Lb, Lr, Lw, Ls, La, n, stale, cache, has)
    return o_n, o_body, o_r, o_x, o_wrap, o_slot, o_arc, o_index, o_seg, o_len


def solve_paths(packed: PackedPaths, R_GB: np.ndarray, p_GB: np.ndarray, q: np.ndarray,
                stale: bool = False) -> SolvedPaths:
    """Every packed path at the body poses R_GB (nb, 3, 3), p_GB (nb, 3) and coordinates q (for
    conditional and moving points). stale: OpenSim 4's cached wrap-point positions (see
    ``muscle_paths.calc_path``)."""
    R_GB = np.ascontiguousarray(R_GB, np.float64).reshape(-1, 3, 3)
    p_GB = np.ascontiguousarray(p_GB, np.float64).reshape(-1, 3)
    q = np.ascontiguousarray(q, np.float64).reshape(-1)
    if len(q) == 0:
        q = np.zeros(1)
    out = _solve(R_GB, p_GB, q, bool(stale), *packed.arrays())
    return SolvedPaths(packed.out_off[:-1], *out)


@njit
def _unit_tension(o_off, o_n, o_body, o_r, o_x, R_GB, p_GB, nb):
    P = o_n.shape[0]
    Fb = np.zeros((P, nb, 3))
    Mb = np.zeros((P, nb, 3))
    for p in range(P):
        o = o_off[p]
        n = o_n[p]
        for k in range(n - 1):
            a = o + k
            b = a + 1
            if o_body[a] == o_body[b]:
                continue
            e = wa._sub(_row(o_x, b), _row(o_x, a))
            d = wa._norm(e)
            if d == 0.0:
                continue
            e = wa._div(e, d)
            for s in range(2):
                idx = a if s == 0 else b
                body = o_body[idx]
                if body < 0:
                    continue
                f = e if s == 0 else wa._mul(-1.0, e)
                m = wa._cross(wa._sub(_to_G(R_GB, p_GB, body, _row(o_r, idx)), _row(p_GB, body)), f)
                for c in range(3):
                    Fb[p, body, c] += f[c]
                    Mb[p, body, c] += m[c]
    return Fb, Mb


@njit
def _moving_shares(o_off, o_n, o_body, o_x, o_wrap, o_index, R_GB, q, pt_off, mv_on, mv_f, mv_q, mv_A, ftype, foff,
                   fdata):
    share = np.zeros((o_body.shape[0], 3))
    for p in range(o_n.shape[0]):
        o = o_off[p]
        n = o_n[p]
        for k in range(n):
            idx = o + k
            if o_index[idx] < 0:
                continue
            g = pt_off[p] + o_index[idx]
            if not mv_on[g]:
                continue
            F = (0.0, 0.0, 0.0)  # the unit-tension force on the point: over its straight neighbours
            for j in (k - 1, k + 1):
                if j < 0 or j >= n:
                    continue
                lo = min(j, k)
                if o_wrap[o + lo] >= 0 and o_wrap[o + lo] == o_wrap[o + lo + 1]:
                    continue
                dv = wa._sub(_row(o_x, o + j), _row(o_x, idx))
                d = wa._norm(dv)
                if d > 0:
                    F = wa._add(F, wa._div(dv, d))
            body = o_body[idx]
            for a in range(3):
                qi = mv_q[g, a]
                if qi < 0:
                    continue
                _, d1 = _fn(ftype, foff, fdata, mv_f[g, a], q[qi])
                col = (mv_A[g, 0, a] * d1, mv_A[g, 1, a] * d1, mv_A[g, 2, a] * d1)
                if body >= 0:
                    col = _rot(R_GB[body], col)
                share[idx, a] = wa._dot(col, F)
    return share


def moving_shares(packed: PackedPaths, solved: SolvedPaths, R_GB, q) -> np.ndarray:
    """(rows of ``solved``, 3): each moving point's own motion on its body as −∂L/∂q of component a's
    coordinate (``packed.mv_q``): the unit-tension force on the point (e_i − e_{i−1} over its straight
    neighbours) · R_GB ∂r_B/∂q. Zero on other rows and on components that do not move."""
    R_GB = np.ascontiguousarray(R_GB, np.float64).reshape(-1, 3, 3)
    q = np.ascontiguousarray(q, np.float64).reshape(-1)
    if len(q) == 0:
        q = np.zeros(1)
    return _moving_shares(solved.off, solved.n, solved.body, solved.x_G, solved.wrap, solved.index, R_GB, q,
                          packed.pt_off, packed.mv_on, packed.mv_f, packed.mv_q, packed.mv_A, packed.ftype,
                          packed.foff, packed.fdata)


def point_rows(packed: PackedPaths, solved: SolvedPaths) -> tuple[np.ndarray, np.ndarray]:
    """(path (rows,), packed point g (rows,); g -1 for wrap points and unused rows) of every row."""
    path = np.repeat(np.arange(len(solved.n)), np.diff(np.append(solved.off, len(solved.body))))
    g = np.where(solved.index >= 0, packed.pt_off[path] + solved.index, -1)
    return path, g


def unit_tension_forces(packed: PackedPaths, solved: SolvedPaths, R_GB, p_GB, q, nu: int):
    """Unit tension along every solved path: Fb (P, nb, 3) forces and Mb (P, nb, 3) moments about
    each body's frame origin, in G (straight stretches between different bodies; forces at the
    points' body-fixed locations, directions from ``solved.x_G`` — as OpenSim's GeometryPath applies
    them), and tau_moving (P, nu): the generalized forces of the moving points' own motion
    (``moving_shares`` at the speed index of each component's coordinate)."""
    R_GB = np.ascontiguousarray(R_GB, np.float64).reshape(-1, 3, 3)
    p_GB = np.ascontiguousarray(p_GB, np.float64).reshape(-1, 3)
    Fb, Mb = _unit_tension(solved.off, solved.n, solved.body, solved.r_B, solved.x_G, R_GB, p_GB, R_GB.shape[0])
    tau = np.zeros((len(solved.n), int(nu)))
    if packed.mv_on.any():
        share = moving_shares(packed, solved, R_GB, q)
        path, g = point_rows(packed, solved)
        rows = np.flatnonzero(g >= 0)
        u = packed.mv_u[g[rows]]
        on = packed.mv_on[g[rows]][:, None] & (u >= 0) & (packed.mv_q[g[rows]] >= 0)
        r, a = np.nonzero(on)
        np.add.at(tau, (path[rows[r]], u[r, a]), share[rows[r], a])
    return Fb, Mb, tau


@njit
def _jacobians(parent, nu, uoff, S, R_GB, p_GB, n_u):
    nb = parent.shape[0]
    Jw = np.zeros((nb, 3, n_u))
    Jv = np.zeros((nb, 3, n_u))
    for k in range(nb):
        j = k
        while j >= 0:
            d = wa._sub(_row(p_GB, k), _row(p_GB, j))
            for c in range(nu[j]):
                col = uoff[j] + c
                sw = _rot(R_GB[j], (S[j, 0, c], S[j, 1, c], S[j, 2, c]))
                sv = wa._add(_rot(R_GB[j], (S[j, 3, c], S[j, 4, c], S[j, 5, c])), wa._cross(sw, d))
                for r in range(3):
                    Jw[k, r, col] = sw[r]
                    Jv[k, r, col] = sv[r]
            j = parent[j]
    return Jw, Jv


def body_jacobians(system, kin) -> tuple[np.ndarray, np.ndarray]:
    """Jw, Jv (nb, 3, nu): angular velocity and frame-origin velocity of every body per unit speed,
    in G (``MultibodySystem.jacobians``, compiled)."""
    tr = system.tree
    return _jacobians(np.asarray(tr.parent, np.int64), np.asarray(tr.nu, np.int64), np.asarray(tr.uoff, np.int64),
                      np.ascontiguousarray(kin.S, np.float64), np.ascontiguousarray(kin.R_GB, np.float64),
                      np.ascontiguousarray(kin.p_GB, np.float64), int(system.nu))


def kernels_on_disk() -> bool:
    """Whether this module's kernels and the tree kinematics they need are in numba's disk cache (see
    ``core._jit.on_disk``): when not, the first paths in this environment compile for a while."""
    from jointmodeller.core._jit import on_disk
    from jointmodeller.core.multibody.packed import kin_p

    return on_disk(kin_p, _solve, _unit_tension, _moving_shares, _jacobians)


def generalized_forces(system, kin, packed: PackedPaths, solved: SolvedPaths, q) -> np.ndarray:
    """(P, nu): f = Jᵀ F of unit tension along every solved path (seed 002's generalized-force
    method, all coordinates at once) plus its moving points' own motion."""
    Fb, Mb, tau = unit_tension_forces(packed, solved, kin.R_GB, kin.p_GB, q, system.nu)
    Jw, Jv = body_jacobians(system, kin)
    P, nb, nu = Fb.shape[0], Fb.shape[1], system.nu
    return tau + Fb.reshape(P, 3 * nb) @ Jv.reshape(3 * nb, nu) + Mb.reshape(P, 3 * nb) @ Jw.reshape(3 * nb, nu)
