"""Flat array form of a tree of mobilized bodies, and the compiled position/velocity pass.

Bodies are numbered 0..nb-1 with parent[i] < i (-1 = ground). Each body's frame B is its own
(not necessarily the centre of mass); spatial quantities in the recursions are Plücker vectors in
body components (Featherstone), ground is G.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jointmodeller.core._jit import njit

from .mobilizers import joint_kinematics
from .mobilizers import joint_qdot as _qdot


class Tree(NamedTuple):
    """Everything the kernels need, as arrays (constant after build)."""

    parent: np.ndarray  # (nb,) int, -1 = ground
    jtype: np.ndarray  # (nb,) int mobilizer type code
    rev: np.ndarray  # (nb,) int 1 = reversed
    qoff: np.ndarray  # (nb,) int
    uoff: np.ndarray  # (nb,) int
    nq: np.ndarray  # (nb,) int
    nu: np.ndarray  # (nb,) int
    R_PF: np.ndarray  # (nb, 3, 3) F frame in parent body frame (G for ground)
    p_PF: np.ndarray  # (nb, 3)
    R_BM: np.ndarray  # (nb, 3, 3) M frame in child body frame
    p_BM: np.ndarray  # (nb, 3)
    prm: np.ndarray  # (nb, 18) type parameters
    fidx: np.ndarray  # (nb, 6) function indices (custom), -1 = zero
    ftype: np.ndarray
    farg: np.ndarray
    foff: np.ndarray
    fdata: np.ndarray
    I6: np.ndarray  # (nb, 6, 6) spatial inertia about the body origin, body components
    gravity: np.ndarray  # (3,) in G


@njit
def kin_pass(tr, q, u):
    """Position and velocity pass.

    Returns Xup (nb, 6, 6) parent->body motion transforms, S (nb, 6, 6) motion subspaces (first
    nu columns, body components), v (nb, 6) body spatial velocities, c (nb, 6) velocity-product
    accelerations, R_GB (nb, 3, 3), p_GB (nb, 3) body-frame poses.
    """
    nb = tr.parent.shape[0]
    out = np.zeros(nb * (36 + 36 + 6 + 6 + 9 + 3))
    Xup = out[0 : 36 * nb].reshape((nb, 6, 6))
    S = out[36 * nb : 72 * nb].reshape((nb, 6, 6))
    v = out[72 * nb : 78 * nb].reshape((nb, 6))
    c = out[78 * nb : 84 * nb].reshape((nb, 6))
    R_GB = out[84 * nb : 93 * nb].reshape((nb, 3, 3))
    p_GB = out[93 * nb : 96 * nb].reshape((nb, 3))
    # one scratch allocation, carved into views (numba allocations dominate small trees)
    buf = np.zeros(9 + 3 + 36 + 6 + 9 + 9 + 9 + 3 + 3 + 3 + 6 + 6 + 3 + 3)
    R_FM = buf[0:9].reshape((3, 3))
    p_FM = buf[9:12]
    H = buf[12:48].reshape((6, 6))
    hdu = buf[48:54]
    T1 = buf[54:63].reshape((3, 3))
    Q = buf[63:72].reshape((3, 3))
    R_PB = buf[72:81].reshape((3, 3))
    p_MB = buf[81:84]
    tmp = buf[84:87]
    p_PB = buf[87:90]
    vJ = buf[90:96]
    cJ = buf[96:102]
    w = buf[102:105]
    pd = buf[105:108]
    for i in range(nb):
        qo = tr.qoff[i]
        uo = tr.uoff[i]
        nui = tr.nu[i]
        qi = q[qo : qo + tr.nq[i]]
        ui = u[uo : uo + nui]
        joint_kinematics(
            tr.jtype[i], tr.rev[i], tr.prm[i], tr.fidx[i], tr.ftype, tr.farg, tr.foff,
            tr.fdata, qi, ui, nui, R_FM, p_FM, H, hdu,
        )
        R_BM = tr.R_BM[i]
        p_BM = tr.p_BM[i]
        R_PF = tr.R_PF[i]
        for a in range(3):
            p_MB[a] = -(R_BM[0, a] * p_BM[0] + R_BM[1, a] * p_BM[1] + R_BM[2, a] * p_BM[2])
        for a in range(3):
            for b in range(3):
                T1[a, b] = R_PF[a, 0] * R_FM[0, b] + R_PF[a, 1] * R_FM[1, b] + R_PF[a, 2] * R_FM[2, b]
                # Q = R_BM R_FM^T : F components -> B components
                Q[a, b] = R_BM[a, 0] * R_FM[b, 0] + R_BM[a, 1] * R_FM[b, 1] + R_BM[a, 2] * R_FM[b, 2]
        for a in range(3):
            for b in range(3):
                R_PB[a, b] = T1[a, 0] * R_BM[b, 0] + T1[a, 1] * R_BM[b, 1] + T1[a, 2] * R_BM[b, 2]
        for a in range(3):
            tmp[a] = p_FM[a] + R_FM[a, 0] * p_MB[0] + R_FM[a, 1] * p_MB[1] + R_FM[a, 2] * p_MB[2]
        for a in range(3):
            p_PB[a] = tr.p_PF[i, a] + R_PF[a, 0] * tmp[0] + R_PF[a, 1] * tmp[1] + R_PF[a, 2] * tmp[2]
        X = Xup[i]
        for a in range(3):
            # E = R_PB^T ; lower-left row a = r x (column a of R_PB)
            e0, e1, e2 = R_PB[0, a], R_PB[1, a], R_PB[2, a]
            X[a, 0] = e0
            X[a, 1] = e1
            X[a, 2] = e2
            X[3 + a, 3] = e0
            X[3 + a, 4] = e1
            X[3 + a, 5] = e2
            X[3 + a, 0] = p_PB[1] * e2 - p_PB[2] * e1
            X[3 + a, 1] = p_PB[2] * e0 - p_PB[0] * e2
            X[3 + a, 2] = p_PB[0] * e1 - p_PB[1] * e0
        # motion subspace in B: S_w = Q H_w, S_v = Q H_v + p_BM x S_w
        for k in range(3):
            w[k] = 0.0
            pd[k] = 0.0
        for j in range(nui):
            for a in range(3):
                S[i, a, j] = Q[a, 0] * H[0, j] + Q[a, 1] * H[1, j] + Q[a, 2] * H[2, j]
            for a in range(3):
                S[i, 3 + a, j] = Q[a, 0] * H[3, j] + Q[a, 1] * H[4, j] + Q[a, 2] * H[5, j]
            S[i, 3, j] += p_BM[1] * S[i, 2, j] - p_BM[2] * S[i, 1, j]
            S[i, 4, j] += p_BM[2] * S[i, 0, j] - p_BM[0] * S[i, 2, j]
            S[i, 5, j] += p_BM[0] * S[i, 1, j] - p_BM[1] * S[i, 0, j]
            for k in range(3):
                w[k] += H[k, j] * ui[j]
                pd[k] += H[3 + k, j] * ui[j]
        # c_J: [Q hdu_w ; Q (hdu_v - w x pd) + p_BM x cJ_w]
        tmp[0] = hdu[3] - (w[1] * pd[2] - w[2] * pd[1])
        tmp[1] = hdu[4] - (w[2] * pd[0] - w[0] * pd[2])
        tmp[2] = hdu[5] - (w[0] * pd[1] - w[1] * pd[0])
        for a in range(3):
            cJ[a] = Q[a, 0] * hdu[0] + Q[a, 1] * hdu[1] + Q[a, 2] * hdu[2]
            cJ[3 + a] = Q[a, 0] * tmp[0] + Q[a, 1] * tmp[1] + Q[a, 2] * tmp[2]
        cJ[3] += p_BM[1] * cJ[2] - p_BM[2] * cJ[1]
        cJ[4] += p_BM[2] * cJ[0] - p_BM[0] * cJ[2]
        cJ[5] += p_BM[0] * cJ[1] - p_BM[1] * cJ[0]
        for k in range(6):
            s = 0.0
            for j in range(nui):
                s += S[i, k, j] * ui[j]
            vJ[k] = s
        par = tr.parent[i]
        if par >= 0:
            for a in range(6):
                s = vJ[a]
                for b in range(6):
                    s += X[a, b] * v[par, b]
                v[i, a] = s
            for a in range(3):
                for b in range(3):
                    R_GB[i, a, b] = (R_GB[par, a, 0] * R_PB[0, b] + R_GB[par, a, 1] * R_PB[1, b]
                                     + R_GB[par, a, 2] * R_PB[2, b])
                p_GB[i, a] = p_GB[par, a] + (R_GB[par, a, 0] * p_PB[0] + R_GB[par, a, 1] * p_PB[1]
                                             + R_GB[par, a, 2] * p_PB[2])
        else:
            for a in range(6):
                v[i, a] = vJ[a]
            for a in range(3):
                p_GB[i, a] = p_PB[a]
                for b in range(3):
                    R_GB[i, a, b] = R_PB[a, b]
        # c = cJ + v x vJ (motion cross product)
        vw0, vw1, vw2, vv0, vv1, vv2 = v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5]
        c[i, 0] = cJ[0] + vw1 * vJ[2] - vw2 * vJ[1]
        c[i, 1] = cJ[1] + vw2 * vJ[0] - vw0 * vJ[2]
        c[i, 2] = cJ[2] + vw0 * vJ[1] - vw1 * vJ[0]
        c[i, 3] = cJ[3] + vw1 * vJ[5] - vw2 * vJ[4] + vv1 * vJ[2] - vv2 * vJ[1]
        c[i, 4] = cJ[4] + vw2 * vJ[3] - vw0 * vJ[5] + vv2 * vJ[0] - vv0 * vJ[2]
        c[i, 5] = cJ[5] + vw0 * vJ[4] - vw1 * vJ[3] + vv0 * vJ[1] - vv1 * vJ[0]
    return Xup, S, v, c, R_GB, p_GB


@njit
def inv_small(D, n):
    """Inverse of the leading n x n block of D (Gauss–Jordan with partial pivoting)."""
    A = np.zeros((n, 2 * n))
    for i in range(n):
        for j in range(n):
            A[i, j] = D[i, j]
        A[i, n + i] = 1.0
    for col in range(n):
        piv = col
        best = abs(A[col, col])
        for r in range(col + 1, n):
            if abs(A[r, col]) > best:
                best = abs(A[r, col])
                piv = r
        if piv != col:
            for k in range(2 * n):
                tmp = A[col, k]
                A[col, k] = A[piv, k]
                A[piv, k] = tmp
        d = A[col, col]
        for k in range(2 * n):
            A[col, k] /= d
        for r in range(n):
            if r != col:
                f = A[r, col]
                if f != 0.0:
                    for k in range(2 * n):
                        A[r, k] -= f * A[col, k]
    return A[:, n:].copy()


@njit
def qdot_all(tr, q, u, qd):
    """q̇ = N(q) u for the whole tree."""
    nb = tr.parent.shape[0]
    for i in range(nb):
        qo = tr.qoff[i]
        uo = tr.uoff[i]
        _qdot(tr.jtype[i], q[qo : qo + tr.nq[i]], u[uo : uo + tr.nu[i]], qd[qo : qo + tr.nq[i]])


@njit
def normalize_quaternions(tr, q):
    """Project quaternion coordinates back to unit length (in place)."""
    nb = tr.parent.shape[0]
    for i in range(nb):
        jt = tr.jtype[i]
        if jt == 8 or jt == 10:
            qo = tr.qoff[i]
            n = np.sqrt(q[qo] ** 2 + q[qo + 1] ** 2 + q[qo + 2] ** 2 + q[qo + 3] ** 2)
            for k in range(4):
                q[qo + k] /= n


# ---- packed form: two flat buffers, so calls from Python dispatch in ~1 µs instead of typing a
# 19-field namedtuple on every call ----
def pack_tree(tr: Tree) -> tuple[np.ndarray, np.ndarray]:
    """(ibuf int64, fbuf float64) holding every Tree field; inverse of ``unpack_tree``."""
    nb, nf = tr.parent.shape[0], tr.ftype.shape[0]
    ib = np.concatenate([
        [nb, nf], tr.parent, tr.jtype, tr.rev, tr.qoff, tr.uoff, tr.nq, tr.nu, tr.fidx.ravel(),
        tr.ftype, tr.farg, tr.foff,
    ]).astype(np.int64)
    fb = np.concatenate([
        tr.R_PF.ravel(), tr.p_PF.ravel(), tr.R_BM.ravel(), tr.p_BM.ravel(), tr.prm.ravel(),
        tr.I6.ravel(), tr.gravity, tr.fdata,
    ]).astype(np.float64)
    return ib, fb


@njit
def unpack_tree(ib, fb):
    """Tree of views into the packed buffers (no copies)."""
    nb = ib[0]
    nf = ib[1]
    o = 2
    parent = ib[o : o + nb]
    jtype = ib[o + nb : o + 2 * nb]
    rev = ib[o + 2 * nb : o + 3 * nb]
    qoff = ib[o + 3 * nb : o + 4 * nb]
    uoff = ib[o + 4 * nb : o + 5 * nb]
    nq = ib[o + 5 * nb : o + 6 * nb]
    nu = ib[o + 6 * nb : o + 7 * nb]
    o += 7 * nb
    fidx = ib[o : o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    ftype = ib[o : o + nf]
    farg = ib[o + nf : o + 2 * nf]
    foff = ib[o + 2 * nf : o + 3 * nf]
    f = 0
    R_PF = fb[f : f + 9 * nb].reshape((nb, 3, 3))
    f += 9 * nb
    p_PF = fb[f : f + 3 * nb].reshape((nb, 3))
    f += 3 * nb
    R_BM = fb[f : f + 9 * nb].reshape((nb, 3, 3))
    f += 9 * nb
    p_BM = fb[f : f + 3 * nb].reshape((nb, 3))
    f += 3 * nb
    prm = fb[f : f + 18 * nb].reshape((nb, 18))
    f += 18 * nb
    I6 = fb[f : f + 36 * nb].reshape((nb, 6, 6))
    f += 36 * nb
    gravity = fb[f : f + 3]
    fdata = fb[f + 3 :]
    return Tree(parent, jtype, rev, qoff, uoff, nq, nu, R_PF, p_PF, R_BM, p_BM, prm, fidx,
                ftype, farg, foff, fdata, I6, gravity)
