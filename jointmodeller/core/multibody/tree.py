"""Flat array form of a tree of mobilized bodies, and the compiled position/velocity pass.

Bodies are numbered 0..nb-1 with parent[i] < i (-1 = ground). Each body's frame B is its own
(not necessarily the centre of mass); spatial quantities in the recursions are Plücker vectors in
body components (Featherstone), ground is G.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jit import njit
from .mobilizers import joint_kinematics
from .mobilizers import joint_qdot as _qdot
from .spatial import cross, crm, mm, motion_matrix, mv


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
    Xup = np.zeros((nb, 6, 6))
    S = np.zeros((nb, 6, 6))
    v = np.zeros((nb, 6))
    c = np.zeros((nb, 6))
    R_GB = np.zeros((nb, 3, 3))
    p_GB = np.zeros((nb, 3))
    R_FM = np.zeros((3, 3))
    p_FM = np.zeros(3)
    H = np.zeros((6, 6))
    hdu = np.zeros(6)
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
        R_MB = R_BM.T.copy()
        p_MB = -mv(R_MB, tr.p_BM[i])
        R_PF = tr.R_PF[i]
        R_PB = mm(mm(R_PF, R_FM), R_MB)
        p_PB = tr.p_PF[i] + mv(R_PF, p_FM + mv(R_FM, p_MB))
        Xup[i] = motion_matrix(R_PB.T.copy(), p_PB)
        R_MF = R_FM.T.copy()
        w = np.zeros(3)
        pd = np.zeros(3)
        for j in range(nui):
            sw = mv(R_MF, H[:3, j])
            sv = mv(R_MF, H[3:, j])
            a = mv(R_BM, sw)
            b = mv(R_BM, sv - cross(p_MB, sw))
            for k in range(3):
                S[i, k, j] = a[k]
                S[i, 3 + k, j] = b[k]
                w[k] += H[k, j] * ui[j]
                pd[k] += H[3 + k, j] * ui[j]
        cw = mv(R_MF, hdu[:3])
        cv = mv(R_MF, hdu[3:] - cross(w, pd))
        cJ = np.empty(6)
        cJ[:3] = mv(R_BM, cw)
        cJ[3:] = mv(R_BM, cv - cross(p_MB, cw))
        vJ = np.zeros(6)
        for j in range(nui):
            for k in range(6):
                vJ[k] += S[i, k, j] * ui[j]
        par = tr.parent[i]
        if par >= 0:
            v[i] = mv(Xup[i], v[par]) + vJ
            R_GB[i] = mm(R_GB[par], R_PB)
            p_GB[i] = p_GB[par] + mv(R_GB[par], p_PB)
        else:
            v[i] = vJ
            R_GB[i] = R_PB
            p_GB[i] = p_PB
        c[i] = cJ + crm(v[i], vJ)
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
