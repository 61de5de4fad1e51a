"""Lean compiled forward dynamics: the same ABA as ``aba.py``, without per-call overhead.

``aba.py``/``tree.py`` unpack the tree into ~20 array views and pass arrays between kernels on
every call; for small trees (a knee is one body) that bookkeeping costs several times the
arithmetic. Here one kernel reads the packed tree (ibuf, fbuf) by index, keeps every per-body
quantity in one workspace, and evaluates the common mobilizers (weld, pin, slider, screw,
cylinder, planar, custom) with scalar code inlined into the pass; the others, and reversed
mobilizers, go through ``mobilizers.joint_kinematics``. Articulated-body inertias are computed once
per state and reused by the O(n) M⁻¹f operator, as Simbody does for its constraint multipliers
(seed 003 §4.2), so constrained and unconstrained systems run on the same machinery.

Results equal ``packed.forward_dynamics_p`` / ``coupled.coupled_udot`` to rounding (tested).
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit
from jointmodeller.core.spatial_math import rodrigues_into
from jointmodeller.core.tolerances import tol

from .functions import eval_function, eval_function_1d
from .mobilizers import (
    BALL,
    BALL_QUAT,
    CUSTOM,
    CYLINDER,
    ELLIPSOID,
    FREE,
    PIN,
    PLANAR,
    SCREW,
    SLIDER,
    WELD,
    joint_kinematics,
    joint_qdot,
)

# per-body workspace layout (float64 slots)
_X, _S, _V, _C, _IA, _IAP, _U, _DI, _PA, _UU, _ACC = 0, 36, 72, 78, 84, 120, 156, 192, 228, 234, 240
_PER_BODY = 246
_JS = 130  # joint scratch: R 9, p 3, H 36, hdu 6, grad 6, th/p rows 3*6 + 3*6, misc
_RANK = tol.rank  # numba reads module globals as compile-time constants


@njit(inline="always")
def _tree_sizes(ib):
    return ib[0], ib[1]


@njit(inline="always")
def _custom_joint(ib, fb, i, nb, nf, q, qo, u, uo, m, W, js):
    """Custom mobilizer (seed 000 eqs. 18–35) into joint scratch: R js+0, p js+9, H js+12 (6x6
    row-major; only the first m columns are written and read), hdu js+48. Same arithmetic as
    mobilizers.forward_kinematics_joint; rotations whose angle function is absent are skipped
    (exact identity)."""
    R, P, H, HD = js, js + 9, js + 12, js + 48
    G = js + 54  # grad (6)
    TH = js + 60  # th (3), th_uu (3), p (3), p_uu (3)
    THQ = js + 72  # th_q (3x6)
    PQ = js + 90  # p_q (3x6)
    R1 = js + 108  # 9
    RA = js + 117  # 9 (R12 reuses R after)
    for k in range(12):
        W[TH + k] = 0.0
    for r in range(6):  # th_q and p_q rows (first m columns are all that is read)
        for j in range(m):
            W[THQ + 6 * r + j] = 0.0
    FIDX = 2 + 7 * nb + 6 * i
    FT = 2 + 13 * nb
    FD = 78 * nb + 3
    qi = q[qo : qo + m]
    ui = u[uo : uo + m]
    grad = W[G : G + 6]
    for k in range(6):
        fi = ib[FIDX + k]
        if fi < 0:
            continue
        if m == 1 and ib[FT + nf + fi] == 0:  # one coordinate: scalar evaluation
            val, grad[0], uhu = eval_function_1d(ib[FT + fi], FD + ib[FT + 2 * nf + fi], fb, qi[0], ui[0])
        else:
            val, uhu = eval_function(ib[FT + fi], ib[FT + nf + fi], FD + ib[FT + 2 * nf + fi], fb, qi, ui, m, grad)
        if k < 3:
            W[TH + k] = val
            W[TH + 3 + k] = uhu
            for j in range(m):
                W[THQ + 6 * k + j] = grad[j]
        else:
            W[TH + 6 + k - 3] = val
            W[TH + 9 + k - 3] = uhu
            for j in range(m):
                W[PQ + 6 * (k - 3) + j] = grad[j]
    PR = 24 * nb + 18 * i
    # R1 = rot(a1, th1); R12 = R1 rot(a2, th2); R = R12 rot(a3, th3)
    if ib[FIDX] >= 0:
        rodrigues_into(fb[PR], fb[PR + 1], fb[PR + 2], W[TH], W, R1)
    else:
        for k in range(9):
            W[R1 + k] = 1.0 if k % 4 == 0 else 0.0
    if ib[FIDX + 1] >= 0:
        rodrigues_into(fb[PR + 3], fb[PR + 4], fb[PR + 5], W[TH + 1], W, RA)
        for a in range(3):
            for b in range(3):
                W[R + 3 * a + b] = (W[R1 + 3 * a] * W[RA + b] + W[R1 + 3 * a + 1] * W[RA + 3 + b]
                                    + W[R1 + 3 * a + 2] * W[RA + 6 + b])
    else:
        for k in range(9):
            W[R + k] = W[R1 + k]
    # column W2 = R1 a2, W3 = R12 a3 (R holds R12 here)
    w2x = W[R1] * fb[PR + 3] + W[R1 + 1] * fb[PR + 4] + W[R1 + 2] * fb[PR + 5]
    w2y = W[R1 + 3] * fb[PR + 3] + W[R1 + 4] * fb[PR + 4] + W[R1 + 5] * fb[PR + 5]
    w2z = W[R1 + 6] * fb[PR + 3] + W[R1 + 7] * fb[PR + 4] + W[R1 + 8] * fb[PR + 5]
    w3x = W[R] * fb[PR + 6] + W[R + 1] * fb[PR + 7] + W[R + 2] * fb[PR + 8]
    w3y = W[R + 3] * fb[PR + 6] + W[R + 4] * fb[PR + 7] + W[R + 5] * fb[PR + 8]
    w3z = W[R + 6] * fb[PR + 6] + W[R + 7] * fb[PR + 7] + W[R + 8] * fb[PR + 8]
    if ib[FIDX + 2] >= 0:
        rodrigues_into(fb[PR + 6], fb[PR + 7], fb[PR + 8], W[TH + 2], W, RA)
        for k in range(9):
            W[R1 + k] = W[R + k]  # R12 (R1 no longer needed)
        for a in range(3):
            for b in range(3):
                W[R + 3 * a + b] = (W[R1 + 3 * a] * W[RA + b] + W[R1 + 3 * a + 1] * W[RA + 3 + b]
                                    + W[R1 + 3 * a + 2] * W[RA + 6 + b])
    w1x, w1y, w1z = fb[PR], fb[PR + 1], fb[PR + 2]
    thd0 = 0.0
    thd1 = 0.0
    thd2 = 0.0
    for j in range(m):
        thd0 += W[THQ + j] * ui[j]
        thd1 += W[THQ + 6 + j] * ui[j]
        thd2 += W[THQ + 12 + j] * ui[j]
    p0, p1, p2 = W[TH + 6], W[TH + 7], W[TH + 8]
    for a in range(3):
        W[P + a] = fb[PR + 9 + a] * p0 + fb[PR + 12 + a] * p1 + fb[PR + 15 + a] * p2
    for j in range(m):  # H: first m columns, every row written (the others are never read)
        t0, t1, t2 = W[THQ + j], W[THQ + 6 + j], W[THQ + 12 + j]
        W[H + j] = w1x * t0 + w2x * t1 + w3x * t2
        W[H + 6 + j] = w1y * t0 + w2y * t1 + w3y * t2
        W[H + 12 + j] = w1z * t0 + w2z * t1 + w3z * t2
        s0, s1, s2 = W[PQ + j], W[PQ + 6 + j], W[PQ + 12 + j]
        for a in range(3):
            W[H + 6 * (3 + a) + j] = fb[PR + 9 + a] * s0 + fb[PR + 12 + a] * s1 + fb[PR + 15 + a] * s2
    # hdu (eq. 28, 30–35)
    w10, w11, w12_ = w1x * thd0, w1y * thd0, w1z * thd0
    v0, v1, v2 = w10 + w2x * thd1, w11 + w2y * thd1, w12_ + w2z * thd1
    c0 = (w11 * w2z - w12_ * w2y) * thd1 + (v1 * w3z - v2 * w3y) * thd2
    c1 = (w12_ * w2x - w10 * w2z) * thd1 + (v2 * w3x - v0 * w3z) * thd2
    c2 = (w10 * w2y - w11 * w2x) * thd1 + (v0 * w3y - v1 * w3x) * thd2
    tu0, tu1, tu2 = W[TH + 3], W[TH + 4], W[TH + 5]
    W[HD] = c0 + w1x * tu0 + w2x * tu1 + w3x * tu2
    W[HD + 1] = c1 + w1y * tu0 + w2y * tu1 + w3y * tu2
    W[HD + 2] = c2 + w1z * tu0 + w2z * tu1 + w3z * tu2
    pu0, pu1, pu2 = W[TH + 9], W[TH + 10], W[TH + 11]
    for a in range(3):
        W[HD + 3 + a] = fb[PR + 9 + a] * pu0 + fb[PR + 12 + a] * pu1 + fb[PR + 15 + a] * pu2


@njit(inline="always")
def _joint(ib, fb, i, nb, nf, q, u, W, js):
    """Joint R_FM, p_FM, H, Ḣu of body i into the joint scratch (see _custom_joint)."""
    jt = ib[2 + nb + i]
    rev = ib[2 + 2 * nb + i]
    qo = ib[2 + 3 * nb + i]
    uo = ib[2 + 4 * nb + i]
    nqi = ib[2 + 5 * nb + i]
    n = ib[2 + 6 * nb + i]
    R, P, H, HD = js, js + 9, js + 12, js + 48
    if rev == 0 and jt == CUSTOM:
        _custom_joint(ib, fb, i, nb, nf, q, qo, u, uo, n, W, js)
        return
    simple = rev == 0 and (jt == WELD or jt == PIN or jt == SLIDER or jt == SCREW
                           or jt == CYLINDER or jt == PLANAR)
    if not simple:  # general mobilizers and reversal: the reference implementation
        Rv = W[R : R + 9].reshape((3, 3))
        Hv = W[H : H + 36].reshape((6, 6))
        FT = 2 + 13 * nb
        joint_kinematics(
            jt, rev, fb[24 * nb + 18 * i : 24 * nb + 18 * i + 18], ib[2 + 7 * nb + 6 * i : 2 + 7 * nb + 6 * i + 6],
            ib[FT : FT + nf], ib[FT + nf : FT + 2 * nf], ib[FT + 2 * nf : FT + 3 * nf], fb[78 * nb + 3 :],
            q[qo : qo + nqi], u[uo : uo + n], n, Rv, W[P : P + 3], Hv, W[HD : HD + 6],
        )
        return
    for k in range(12):  # R, p
        W[js + k] = 0.0
    for r in range(6):  # H: first n columns (the only ones read), Ḣu
        for j in range(n):
            W[H + 6 * r + j] = 0.0
        W[HD + r] = 0.0
    W[R] = 1.0
    W[R + 4] = 1.0
    W[R + 8] = 1.0
    if jt == WELD:
        return
    if jt == SLIDER:
        W[P] = q[qo]
        W[H + 18] = 1.0  # H[3, 0]
        return
    cz = np.cos(q[qo])
    sz = np.sin(q[qo])
    W[R] = cz
    W[R + 1] = -sz
    W[R + 3] = sz
    W[R + 4] = cz
    W[H + 12] = 1.0  # H[2, 0]
    if jt == SCREW:
        pitch = fb[24 * nb + 18 * i]
        W[P + 2] = pitch * q[qo]
        W[H + 30] = pitch  # H[5, 0]
    elif jt == CYLINDER:
        W[P + 2] = q[qo + 1]
        W[H + 31] = 1.0  # H[5, 1]
    elif jt == PLANAR:
        W[P] = q[qo + 1]
        W[P + 1] = q[qo + 2]
        W[H + 19] = 1.0  # H[3, 1]
        W[H + 26] = 1.0  # H[4, 2]


@njit(inline="always")
def _kin(ib, fb, q, u, W, nb, nf):
    """Position/velocity pass: X (6x6), S (6 x n, row stride 6), v, c per body into W."""
    js = nb * _PER_BODY
    R, P, H, HD = js, js + 9, js + 12, js + 48
    T = js + _JS  # 64 scratch: T1 9, Q 9, R_PB 9, p_MB 3, p_PB 3, tmp 3, w 3, pd 3, vJ 6, cJ 6
    T1, Q, RPB, PMB, PPB, TMP, WW, PD, VJ, CJ = T, T + 9, T + 18, T + 27, T + 30, T + 33, T + 36, T + 39, T + 42, T + 48
    for i in range(nb):
        _joint(ib, fb, i, nb, nf, q, u, W, js)
        n = ib[2 + 6 * nb + i]
        uo = ib[2 + 4 * nb + i]
        o = i * _PER_BODY
        RBM = 12 * nb + 9 * i
        PBM = 21 * nb + 3 * i
        RPF = 9 * i
        PPF = 9 * nb + 3 * i
        for a in range(3):
            W[PMB + a] = -(fb[RBM + a] * fb[PBM] + fb[RBM + 3 + a] * fb[PBM + 1] + fb[RBM + 6 + a] * fb[PBM + 2])
        for a in range(3):
            for b in range(3):
                W[T1 + 3 * a + b] = (fb[RPF + 3 * a] * W[R + b] + fb[RPF + 3 * a + 1] * W[R + 3 + b]
                                     + fb[RPF + 3 * a + 2] * W[R + 6 + b])
                W[Q + 3 * a + b] = (fb[RBM + 3 * a] * W[R + 3 * b] + fb[RBM + 3 * a + 1] * W[R + 3 * b + 1]
                                    + fb[RBM + 3 * a + 2] * W[R + 3 * b + 2])
        for a in range(3):
            for b in range(3):
                W[RPB + 3 * a + b] = (W[T1 + 3 * a] * fb[RBM + 3 * b] + W[T1 + 3 * a + 1] * fb[RBM + 3 * b + 1]
                                      + W[T1 + 3 * a + 2] * fb[RBM + 3 * b + 2])
        for a in range(3):
            W[TMP + a] = (W[P + a] + W[R + 3 * a] * W[PMB] + W[R + 3 * a + 1] * W[PMB + 1]
                          + W[R + 3 * a + 2] * W[PMB + 2])
        for a in range(3):
            W[PPB + a] = (fb[PPF + a] + fb[RPF + 3 * a] * W[TMP] + fb[RPF + 3 * a + 1] * W[TMP + 1]
                          + fb[RPF + 3 * a + 2] * W[TMP + 2])
        X = o + _X
        for k in range(36):
            W[X + k] = 0.0
        px, py, pz = W[PPB], W[PPB + 1], W[PPB + 2]
        for a in range(3):
            e0, e1, e2 = W[RPB + a], W[RPB + 3 + a], W[RPB + 6 + a]
            W[X + 6 * a] = e0
            W[X + 6 * a + 1] = e1
            W[X + 6 * a + 2] = e2
            W[X + 6 * (3 + a) + 3] = e0
            W[X + 6 * (3 + a) + 4] = e1
            W[X + 6 * (3 + a) + 5] = e2
            W[X + 6 * (3 + a)] = py * e2 - pz * e1
            W[X + 6 * (3 + a) + 1] = pz * e0 - px * e2
            W[X + 6 * (3 + a) + 2] = px * e1 - py * e0
        S = o + _S
        bx, by, bz = fb[PBM], fb[PBM + 1], fb[PBM + 2]
        for k in range(3):
            W[WW + k] = 0.0
            W[PD + k] = 0.0
        for j in range(n):
            for a in range(3):
                W[S + 6 * a + j] = (W[Q + 3 * a] * W[H + j] + W[Q + 3 * a + 1] * W[H + 6 + j]
                                    + W[Q + 3 * a + 2] * W[H + 12 + j])
                W[S + 6 * (3 + a) + j] = (W[Q + 3 * a] * W[H + 18 + j] + W[Q + 3 * a + 1] * W[H + 24 + j]
                                          + W[Q + 3 * a + 2] * W[H + 30 + j])
            s0, s1, s2 = W[S + j], W[S + 6 + j], W[S + 12 + j]
            W[S + 18 + j] += by * s2 - bz * s1
            W[S + 24 + j] += bz * s0 - bx * s2
            W[S + 30 + j] += bx * s1 - by * s0
            uj = u[uo + j]
            for k in range(3):
                W[WW + k] += W[H + 6 * k + j] * uj
                W[PD + k] += W[H + 6 * (3 + k) + j] * uj
        w0, w1, w2 = W[WW], W[WW + 1], W[WW + 2]
        d0, d1, d2 = W[PD], W[PD + 1], W[PD + 2]
        t0 = W[HD + 3] - (w1 * d2 - w2 * d1)
        t1 = W[HD + 4] - (w2 * d0 - w0 * d2)
        t2 = W[HD + 5] - (w0 * d1 - w1 * d0)
        for a in range(3):
            W[CJ + a] = W[Q + 3 * a] * W[HD] + W[Q + 3 * a + 1] * W[HD + 1] + W[Q + 3 * a + 2] * W[HD + 2]
            W[CJ + 3 + a] = W[Q + 3 * a] * t0 + W[Q + 3 * a + 1] * t1 + W[Q + 3 * a + 2] * t2
        W[CJ + 3] += by * W[CJ + 2] - bz * W[CJ + 1]
        W[CJ + 4] += bz * W[CJ] - bx * W[CJ + 2]
        W[CJ + 5] += bx * W[CJ + 1] - by * W[CJ]
        for k in range(6):
            s = 0.0
            for j in range(n):
                s += W[S + 6 * k + j] * u[uo + j]
            W[VJ + k] = s
        par = ib[2 + i]
        V = o + _V
        if par >= 0:
            PV = par * _PER_BODY + _V
            for a in range(6):
                s = W[VJ + a]
                for b in range(6):
                    s += W[X + 6 * a + b] * W[PV + b]
                W[V + a] = s
        else:
            for a in range(6):
                W[V + a] = W[VJ + a]
        vw0, vw1, vw2, vv0, vv1, vv2 = W[V], W[V + 1], W[V + 2], W[V + 3], W[V + 4], W[V + 5]
        j0, j1, j2, j3, j4, j5 = W[VJ], W[VJ + 1], W[VJ + 2], W[VJ + 3], W[VJ + 4], W[VJ + 5]
        C = o + _C
        W[C] = W[CJ] + vw1 * j2 - vw2 * j1
        W[C + 1] = W[CJ + 1] + vw2 * j0 - vw0 * j2
        W[C + 2] = W[CJ + 2] + vw0 * j1 - vw1 * j0
        W[C + 3] = W[CJ + 3] + vw1 * j5 - vw2 * j4 + vv1 * j2 - vv2 * j1
        W[C + 4] = W[CJ + 4] + vw2 * j3 - vw0 * j5 + vv2 * j0 - vv0 * j2
        W[C + 5] = W[CJ + 5] + vw0 * j4 - vw1 * j3 + vv0 * j1 - vv1 * j0


@njit(inline="always")
def _invert_into(W, A, n, out):
    """W[out] <- inverse of the n x n block W[A] (row stride 6), Gauss–Jordan with partial
    pivoting on a local copy held in W[out+36 ...] (72 slots of scratch after ``out``)."""
    M = out + 36  # n x 2n augmented, row stride 12
    for r in range(n):
        for k in range(n):
            W[M + 12 * r + k] = W[A + 6 * r + k]
            W[M + 12 * r + n + k] = 1.0 if r == k else 0.0
    for col in range(n):
        piv = col
        best = abs(W[M + 12 * col + col])
        for r in range(col + 1, n):
            if abs(W[M + 12 * r + col]) > best:
                best = abs(W[M + 12 * r + col])
                piv = r
        if piv != col:
            for k in range(2 * n):
                tmp = W[M + 12 * col + k]
                W[M + 12 * col + k] = W[M + 12 * piv + k]
                W[M + 12 * piv + k] = tmp
        d = W[M + 12 * col + col]
        for k in range(2 * n):
            W[M + 12 * col + k] /= d
        for r in range(n):
            if r != col:
                f = W[M + 12 * r + col]
                if f != 0.0:
                    for k in range(2 * n):
                        W[M + 12 * r + k] -= f * W[M + 12 * col + k]
    for r in range(n):
        for k in range(n):
            W[out + 6 * r + k] = W[M + 12 * r + n + k]


@njit(inline="always")
def _articulated(ib, fb, W, nb):
    """Articulated-body inertias (inward): IA, U = IA S, D⁻¹ and, for bodies with a parent,
    the projected inertia IA − U D⁻¹ Uᵀ that is passed on to it (a base body's is never used)."""
    js = nb * _PER_BODY  # joint scratch reused: 36 for UD, 36 + 72 for the inverse
    UD = js
    INV = js + 36
    for i in range(nb):
        o = i * _PER_BODY
        I6 = 42 * nb + 36 * i
        for k in range(36):
            W[o + _IA + k] = fb[I6 + k]
    for i in range(nb - 1, -1, -1):
        o = i * _PER_BODY
        n = ib[2 + 6 * nb + i]
        par = ib[2 + i]
        IA, S, U, DI, IAP = o + _IA, o + _S, o + _U, o + _DI, o + _IAP
        if n > 0:
            for a in range(6):
                for j in range(n):
                    s = 0.0
                    for k in range(6):
                        s += W[IA + 6 * a + k] * W[S + 6 * k + j]
                    W[U + 6 * a + j] = s
            if n == 1:
                s = 0.0
                for k in range(6):
                    s += W[S + 6 * k] * W[U + 6 * k]
                W[DI] = 1.0 / s
            else:
                for j1 in range(n):  # D into the inverse's input slot (row stride 6)
                    for j2 in range(n):
                        s = 0.0
                        for k in range(6):
                            s += W[S + 6 * k + j1] * W[U + 6 * k + j2]
                        W[UD + 6 * j1 + j2] = s
                _invert_into(W, UD, n, INV)
                for j1 in range(n):
                    for j2 in range(n):
                        W[DI + 6 * j1 + j2] = W[INV + 6 * j1 + j2]
        if par < 0:
            continue
        for k in range(36):
            W[IAP + k] = W[IA + k]
        if n == 1:
            for a in range(6):
                W[UD + a] = W[U + 6 * a] * W[DI]
            for a in range(6):
                for b in range(6):
                    W[IAP + 6 * a + b] -= W[UD + a] * W[U + 6 * b]
        elif n > 1:
            for a in range(6):
                for j in range(n):
                    s = 0.0
                    for k in range(n):
                        s += W[U + 6 * a + k] * W[DI + 6 * k + j]
                    W[UD + 6 * a + j] = s
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for j in range(n):
                        s += W[UD + 6 * a + j] * W[U + 6 * b + j]
                    W[IAP + 6 * a + b] -= s
        # IA[par] += Xᵀ IAP X
        X = o + _X
        PIA = par * _PER_BODY + _IA
        for a in range(6):
            for b in range(6):
                s = 0.0
                for k in range(6):
                    s += W[IAP + 6 * a + k] * W[X + 6 * k + b]
                W[UD + 6 * a + b] = s
        for a in range(6):
            for b in range(6):
                s = 0.0
                for k in range(6):
                    s += W[X + 6 * k + a] * W[UD + 6 * k + b]
                W[PIA + 6 * a + b] += s


@njit(inline="always")
def _bias_and_accel(ib, fb, W, nb, tau, f_ext, dynamic, out):
    """Inward bias pass and outward acceleration pass on the articulated inertias in W.

    dynamic=True: velocity products, gravity and body forces f_ext (nb, 6) act (forward
    dynamics); False: only the generalized forces tau act (the M⁻¹ tau operator). u̇ -> out.
    """
    for i in range(nb):
        PA = i * _PER_BODY + _PA
        if dynamic:
            V = i * _PER_BODY + _V
            I6 = 42 * nb + 36 * i
            w0, w1, w2, l0, l1, l2 = W[V], W[V + 1], W[V + 2], W[V + 3], W[V + 4], W[V + 5]
            iv0 = iv1 = iv2 = iv3 = iv4 = iv5 = 0.0
            for b in range(6):
                vb = W[V + b]
                iv0 += fb[I6 + b] * vb
                iv1 += fb[I6 + 6 + b] * vb
                iv2 += fb[I6 + 12 + b] * vb
                iv3 += fb[I6 + 18 + b] * vb
                iv4 += fb[I6 + 24 + b] * vb
                iv5 += fb[I6 + 30 + b] * vb
            W[PA] = w1 * iv2 - w2 * iv1 + l1 * iv5 - l2 * iv4 - f_ext[i, 0]
            W[PA + 1] = w2 * iv0 - w0 * iv2 + l2 * iv3 - l0 * iv5 - f_ext[i, 1]
            W[PA + 2] = w0 * iv1 - w1 * iv0 + l0 * iv4 - l1 * iv3 - f_ext[i, 2]
            W[PA + 3] = w1 * iv5 - w2 * iv4 - f_ext[i, 3]
            W[PA + 4] = w2 * iv3 - w0 * iv5 - f_ext[i, 4]
            W[PA + 5] = w0 * iv4 - w1 * iv3 - f_ext[i, 5]
        else:
            for a in range(6):
                W[PA + a] = 0.0
    js = nb * _PER_BODY
    PAL = js  # local pa (6)
    AI = js + 6  # local a_i (6)
    UDV = js + 12  # (6)
    for i in range(nb - 1, -1, -1):
        o = i * _PER_BODY
        n = ib[2 + 6 * nb + i]
        uo = ib[2 + 4 * nb + i]
        S, U, DI, UU, PA, IAP, C = o + _S, o + _U, o + _DI, o + _UU, o + _PA, o + _IAP, o + _C
        for a in range(6):
            W[PAL + a] = W[PA + a]
        if n > 0:
            for j in range(n):
                s = tau[uo + j]
                for k in range(6):
                    s -= W[S + 6 * k + j] * W[PA + k]
                W[UU + j] = s
            for j in range(n):  # D⁻¹ uu
                s = 0.0
                for k in range(n):
                    s += W[DI + 6 * j + k] * W[UU + k]
                W[UDV + j] = s
            for a in range(6):
                s = 0.0
                for j in range(n):
                    s += W[U + 6 * a + j] * W[UDV + j]
                W[PAL + a] += s
        par = ib[2 + i]
        if par >= 0:
            if dynamic:
                for a in range(6):
                    s = 0.0
                    for b in range(6):
                        s += W[IAP + 6 * a + b] * W[C + b]
                    W[PAL + a] += s
            X = o + _X
            PP = par * _PER_BODY + _PA
            for a in range(6):
                s = 0.0
                for k in range(6):
                    s += W[X + 6 * k + a] * W[PAL + k]
                W[PP + a] += s
    G = 78 * nb
    for i in range(nb):
        o = i * _PER_BODY
        par = ib[2 + i]
        X, C, ACC = o + _X, o + _C, o + _ACC
        for a in range(6):
            s = W[C + a] if dynamic else 0.0
            if par >= 0:
                PACC = par * _PER_BODY + _ACC
                for b in range(6):
                    s += W[X + 6 * a + b] * W[PACC + b]
            elif dynamic:  # base acceleration -gravity (linear part)
                for b in range(3):
                    s -= W[X + 6 * a + 3 + b] * fb[G + b]
            W[AI + a] = s
        n = ib[2 + 6 * nb + i]
        if n > 0:
            uo = ib[2 + 4 * nb + i]
            S, U, DI, UU = o + _S, o + _U, o + _DI, o + _UU
            for j in range(n):
                s = W[UU + j]
                for k in range(6):
                    s -= W[U + 6 * k + j] * W[AI + k]
                W[UDV + j] = s
            for j in range(n):
                s = 0.0
                for k in range(n):
                    s += W[DI + 6 * j + k] * W[UDV + k]
                out[uo + j] = s
            for a in range(6):
                s = 0.0
                for j in range(n):
                    s += W[S + 6 * a + j] * out[uo + j]
                W[AI + a] += s
        for a in range(6):
            W[ACC + a] = W[AI + a]


@njit(inline="always")
def workspace_size(nb, nu, m):
    """Floats of workspace for a tree of nb bodies, nu speeds and m coupler rows."""
    return nb * _PER_BODY + _JS + 64 + 2 * m * nu + 2 * m * m + 2 * m + 18


@njit(inline="always")
def fd_into(ib, fb, q, u, tau, f_ext, W, out):
    """u̇ -> out (nu,) for (q, u), generalized forces tau (nu,) and body spatial forces f_ext
    (nb, 6), using the workspace W (``workspace_size``)."""
    nb, nf = _tree_sizes(ib)
    _kin(ib, fb, q, u, W, nb, nf)
    _articulated(ib, fb, W, nb)
    _bias_and_accel(ib, fb, W, nb, tau, f_ext, True, out)


@njit
def forward_dynamics_lean(ib, fb, q, u, tau, f_ext):
    """u̇ (nu,): the result of ``packed.forward_dynamics_p`` with one workspace per call."""
    nb = ib[0]
    W = np.empty(workspace_size(nb, u.shape[0], 0))
    out = np.empty(u.shape[0])
    fd_into(ib, fb, q, u, tau, f_ext, W, out)
    return out


@njit(inline="always")
def _solve_small(Y, b, A, x, m):
    """x <- Y⁻¹ b for a small m x m system by Gaussian elimination with partial pivoting, using
    A (m, m) and x (m,) as storage; the minimum-norm least-squares solution when Y is singular,
    i.e. the constraints are redundant (seed 003 §4.2; only that case allocates)."""
    scale = 0.0
    for i in range(m):
        x[i] = b[i]
        for j in range(m):
            A[i, j] = Y[i, j]
            scale = max(scale, abs(Y[i, j]))
    for col in range(m):
        piv = col
        for r in range(col + 1, m):
            if abs(A[r, col]) > abs(A[piv, col]):
                piv = r
        if abs(A[piv, col]) <= _RANK * scale:
            x[:] = np.linalg.lstsq(Y, b, rcond=_RANK)[0]
            return
        if piv != col:
            for k in range(m):
                t = A[col, k]
                A[col, k] = A[piv, k]
                A[piv, k] = t
            t = x[col]
            x[col] = x[piv]
            x[piv] = t
        for r in range(col + 1, m):
            f = A[r, col] / A[col, col]
            for k in range(col, m):
                A[r, k] -= f * A[col, k]
            x[r] -= f * x[col]
    for r in range(m - 1, -1, -1):
        s = x[r]
        for k in range(r + 1, m):
            s -= A[r, k] * x[k]
        x[r] = s / A[r, r]


@njit(inline="always")
def coupled_into(ib, fb, cb, cft, cfa, cfo, cfd, q, u, tau, f_ext, W, udot):
    """u̇ -> udot (nu,) of a tree with coordinate couplers (rows of ``coupled.pack_couplers``):
    articulated inertias computed once and reused for the m columns of M⁻¹Gᵀ (O(n) each),
    multipliers from Y λ = G u̇0 + k with Y = G M⁻¹Gᵀ, then u̇ = u̇0 − M⁻¹Gᵀ λ (seed 003 §4.2)."""
    nb, nf = _tree_sizes(ib)
    nu = u.shape[0]
    m = cb.shape[0]
    o = nb * _PER_BODY + _JS + 64
    Gm = W[o : o + m * nu].reshape((m, nu))  # rows of G
    o += m * nu
    MiGt = W[o : o + m * nu].reshape((m, nu))  # rows = columns of M⁻¹Gᵀ
    o += m * nu
    Y = W[o : o + m * m].reshape((m, m))
    o += m * m
    A = W[o : o + m * m].reshape((m, m))
    o += m * m
    rhs = W[o : o + m]
    lam = W[o + m : o + 2 * m]
    o += 2 * m
    qi = W[o : o + 6]
    ui = W[o + 6 : o + 12]
    grad = W[o + 12 : o + 18]
    _kin(ib, fb, q, u, W, nb, nf)
    _articulated(ib, fb, W, nb)
    _bias_and_accel(ib, fb, W, nb, tau, f_ext, True, udot)
    for r in range(m):  # G row and k: c̈ = G u̇ + k with k = −Σ ∂²f ui uj
        for a in range(nu):
            Gm[r, a] = 0.0
        n = cb[r, 2]
        for j in range(n):
            qi[j] = q[cb[r, 4 + j]]
            ui[j] = u[cb[r, 10 + j]]
        fi = cb[r, 3]
        if n == 1 and cfa[fi] == 0:  # one independent coordinate: scalar evaluation
            f, grad[0], uhu = eval_function_1d(cft[fi], cfo[fi], cfd, qi[0], ui[0])
        else:
            f, uhu = eval_function(cft[fi], cfa[fi], cfo[fi], cfd, qi, ui, n, grad)
        Gm[r, cb[r, 1]] += 1.0
        for j in range(n):
            Gm[r, cb[r, 10 + j]] -= grad[j]
        s = -uhu
        for a in range(nu):
            s += Gm[r, a] * udot[a]
        rhs[r] = s
    for r in range(m):
        _bias_and_accel(ib, fb, W, nb, Gm[r], f_ext, False, MiGt[r])
    for r in range(m):
        for r2 in range(m):
            s = 0.0
            for a in range(nu):
                s += Gm[r, a] * MiGt[r2, a]
            Y[r, r2] = s
    _solve_small(Y, rhs, A, lam, m)
    for r in range(m):
        for a in range(nu):
            udot[a] -= MiGt[r, a] * lam[r]


@njit
def coupled_udot_lean(ib, fb, cb, cft, cfa, cfo, cfd, q, u, tau, f_ext):
    """u̇ (nu,): the result of ``coupled.coupled_udot`` with one workspace per call."""
    nu = u.shape[0]
    W = np.empty(workspace_size(ib[0], nu, cb.shape[0]))
    udot = np.empty(nu)
    coupled_into(ib, fb, cb, cft, cfa, cfo, cfd, q, u, tau, f_ext, W, udot)
    return udot


@njit(inline="always")
def qdot_into(ib, q, u, out):
    """q̇ = N(q) u -> out (nq,); a copy of u for every mobilizer with q̇ = u."""
    nb = ib[0]
    for i in range(nb):
        jt = ib[2 + nb + i]
        qo = ib[2 + 3 * nb + i]
        uo = ib[2 + 4 * nb + i]
        nqi = ib[2 + 5 * nb + i]
        n = ib[2 + 6 * nb + i]
        if jt == BALL or jt == ELLIPSOID or jt == BALL_QUAT or jt == FREE:
            joint_qdot(jt, q[qo : qo + nqi], u[uo : uo + n], out[qo : qo + nqi])
        else:
            for k in range(n):
                out[qo + k] = u[uo + k]


@njit
def state_derivative_lean(ib, fb, q, u, tau, f_ext):
    """[q̇; u̇] of an unconstrained tree (``packed.state_derivative_p`` through the lean kernel)."""
    nq = q.shape[0]
    nu = u.shape[0]
    out = np.empty(nq + nu)
    W = np.empty(workspace_size(ib[0], nu, 0))
    qdot_into(ib, q, u, out[:nq])
    fd_into(ib, fb, q, u, tau, f_ext, W, out[nq:])
    return out
