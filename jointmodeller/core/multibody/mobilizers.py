"""Mobilizer kinematics (seed 000 eqs. 1–4): X_FM(q), H(q) (6, nu), Ḣu (6,) and q̇ = N(q)u.

Every mobilizer is described by its type code, a parameter row and (custom only) six function
indices. H maps the speeds u to the relative spatial velocity of frame M in F, [w_FM; v_FM], both
in F components, v being the time derivative in F of p_FM (the M origin). ``hdu`` is Ḣu, the
velocity-dependent part of the relative acceleration (derivatives taken in F).

Reversed mobilizers (seed 000 eqs. 15–17) evaluate the forward definition (which describes the
tree parent's frame moving on the tree child's frame) and re-express it parent-to-child, keeping q
and u (hence N) unchanged.
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit
from jointmodeller.core.spatial_math import axis_rotation, cross3, quat_to_R, rodrigues_into

from .functions import eval_function
from .spatial import mm, mv

WELD, PIN, SLIDER, SCREW, UNIVERSAL, CYLINDER, PLANAR = 0, 1, 2, 3, 4, 5, 6
BALL, BALL_QUAT, ELLIPSOID, FREE, CUSTOM = 7, 8, 9, 10, 11

TYPE_CODES = {
    "weld": WELD,
    "pin": PIN,
    "slider": SLIDER,
    "screw": SCREW,
    "universal": UNIVERSAL,
    "cylinder": CYLINDER,
    "planar": PLANAR,
    "ball": BALL,
    "ball_euler": BALL,
    "ball_quaternion": BALL_QUAT,
    "ellipsoid": ELLIPSOID,
    "free": FREE,
    "custom": CUSTOM,
}

# (nq, nu); custom: from its coordinate count
SIZES = {
    WELD: (0, 0),
    PIN: (1, 1),
    SLIDER: (1, 1),
    SCREW: (1, 1),
    UNIVERSAL: (2, 2),
    CYLINDER: (2, 2),
    PLANAR: (3, 3),
    BALL: (3, 3),
    BALL_QUAT: (4, 3),
    ELLIPSOID: (3, 3),
    FREE: (7, 6),
}

# per type, (coordinates, speeds) as SIZES counts them: those that turn the body (True) or translate it (False);
# custom: from its functions (core.multibody.system.rotational_coordinates)
ROTATIONAL = {
    WELD: ((), ()),
    PIN: ((True,), (True,)),
    SLIDER: ((False,), (False,)),
    SCREW: ((True,), (True,)),
    UNIVERSAL: ((True, True), (True, True)),
    CYLINDER: ((True, False), (True, False)),
    PLANAR: ((True, False, False), (True, False, False)),
    BALL: ((True,) * 3, (True,) * 3),
    ELLIPSOID: ((True,) * 3, (True,) * 3),
    BALL_QUAT: ((True,) * 4, (True,) * 3),
    FREE: ((True,) * 4 + (False,) * 3, (True,) * 3 + (False,) * 3),
}

N_PRM = 18  # parameter row width: custom stores 3 rotation axes + 3 translation axes


@njit
def _euler123(q0, q1, q2):
    """Body-fixed x-y-z rotation and the columns W (3, 3) mapping Euler rates to w (in F)."""
    ex = np.array([1.0, 0.0, 0.0])
    ey = np.array([0.0, 1.0, 0.0])
    ez = np.array([0.0, 0.0, 1.0])
    R1 = axis_rotation(ex, q0)
    R12 = mm(R1, axis_rotation(ey, q1))
    R = mm(R12, axis_rotation(ez, q2))
    W = np.empty((3, 3))
    W[:, 0] = ex
    W[:, 1] = mv(R1, ey)
    W[:, 2] = mv(R12, ez)
    return R, W


@njit
def _solve3(A, b):
    """x = A⁻¹ b for a 3x3 system (Cramer)."""
    det = (
        A[0, 0] * (A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1])
        - A[0, 1] * (A[1, 0] * A[2, 2] - A[1, 2] * A[2, 0])
        + A[0, 2] * (A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0])
    )
    x = np.empty(3)
    for k in range(3):
        M = A.copy()
        for r in range(3):
            M[r, k] = b[r]
        x[k] = (
            M[0, 0] * (M[1, 1] * M[2, 2] - M[1, 2] * M[2, 1])
            - M[0, 1] * (M[1, 0] * M[2, 2] - M[1, 2] * M[2, 0])
            + M[0, 2] * (M[1, 0] * M[2, 1] - M[1, 1] * M[2, 0])
        ) / det
    return x


@njit
def forward_kinematics_joint(jt, prm, fidx, ftype, farg, foff, fdata, q, u, nu, R, p, H, hdu):
    """Fill R_FM (3, 3), p_FM (3,), H (6, 6; first nu columns) and hdu = Ḣu (6,) of one
    forward mobilizer at local coordinates q and speeds u."""
    for i in range(3):
        p[i] = 0.0
        for j in range(3):
            R[i, j] = 1.0 if i == j else 0.0
    for i in range(6):
        hdu[i] = 0.0
        for j in range(6):
            H[i, j] = 0.0
    if jt == WELD:
        return
    if jt == PIN or jt == SCREW or jt == CYLINDER or jt == PLANAR:
        cz = np.cos(q[0])
        sz = np.sin(q[0])
        R[0, 0] = cz
        R[0, 1] = -sz
        R[1, 0] = sz
        R[1, 1] = cz
        H[2, 0] = 1.0
        if jt == SCREW:
            p[2] = prm[0] * q[0]
            H[5, 0] = prm[0]
        elif jt == CYLINDER:
            p[2] = q[1]
            H[5, 1] = 1.0
        elif jt == PLANAR:
            p[0] = q[1]
            p[1] = q[2]
            H[3, 1] = 1.0
            H[4, 2] = 1.0
        return
    if jt == SLIDER:
        p[0] = q[0]
        H[3, 0] = 1.0
        return
    if jt == UNIVERSAL:
        R1 = axis_rotation(np.array([1.0, 0.0, 0.0]), q[0])
        R[:, :] = mm(R1, axis_rotation(np.array([0.0, 1.0, 0.0]), q[1]))
        w2 = R1[:, 1]
        H[0, 0] = 1.0
        for i in range(3):
            H[i, 1] = w2[i]
        # d/dt (R1 ey) u1 = (ex u0) × (R1 ey) u1
        w1 = np.array([u[0], 0.0, 0.0])
        hw = cross3(w1, w2) * u[1]
        for i in range(3):
            hdu[i] = hw[i]
        return
    if jt == BALL or jt == ELLIPSOID:
        Rq, W = _euler123(q[0], q[1], q[2])
        R[:, :] = Rq
        for i in range(3):
            H[i, i] = 1.0
        if jt == ELLIPSOID:
            a, b, c = prm[0], prm[1], prm[2]
            n = Rq[:, 2].copy()
            p[0] = a * n[0]
            p[1] = b * n[1]
            p[2] = c * n[2]
            # v = D (w × n) = -D [n]x w   (eq. 13)
            H[3, 1] = a * n[2]
            H[3, 2] = -a * n[1]
            H[4, 0] = -b * n[2]
            H[4, 2] = b * n[0]
            H[5, 0] = c * n[1]
            H[5, 1] = -c * n[0]
            w = np.array([u[0], u[1], u[2]])
            wwn = cross3(w, cross3(w, n))  # eq. 14: D (w × ṅ)
            hdu[3] = a * wwn[0]
            hdu[4] = b * wwn[1]
            hdu[5] = c * wwn[2]
        return
    if jt == BALL_QUAT or jt == FREE:
        R[:, :] = quat_to_R(q[:4])
        for i in range(3):
            H[i, i] = 1.0
        if jt == FREE:
            for i in range(3):
                p[i] = q[4 + i]
                H[3 + i, 3 + i] = 1.0
        return
    # CUSTOM (seed 000 eqs. 18–35); one scratch buffer, scalar arithmetic (allocation-light)
    m = nu
    buf = np.zeros(6 + 3 + 18 + 3 + 18 + 3 + 9 + 9 + 9 + 9 + 3)
    grad = buf[0:6]
    th = buf[6:9]
    th_q = buf[9:27].reshape((3, 6))
    th_uu = buf[27:30]
    pq = buf[30:48].reshape((3, 6))
    p_uu = buf[48:51]
    Ra = buf[51:60].reshape((3, 3))
    R1 = buf[60:69].reshape((3, 3))
    R12 = buf[69:78].reshape((3, 3))
    W = buf[78:87].reshape((3, 3))  # columns W1, W2, W3 (eq. 20)
    thd = buf[87:90]
    for k in range(6):
        fi = fidx[k]
        if fi < 0:
            continue
        v, uhu = eval_function(ftype[fi], farg[fi], foff[fi], fdata, q, u, m, grad)
        if k < 3:
            th[k] = v
            th_uu[k] = uhu
            for j in range(m):
                th_q[k, j] = grad[j]
        else:
            p[k - 3] = v
            p_uu[k - 3] = uhu
            for j in range(m):
                pq[k - 3, j] = grad[j]
    # rotations about body-fixed axes a1, a2, a3 (prm rows 0..8); translation axes A (prm 9..17)
    rodrigues_into(prm[0], prm[1], prm[2], th[0], buf, 60)  # R1
    rodrigues_into(prm[3], prm[4], prm[5], th[1], buf, 51)  # Ra
    for a in range(3):
        for b in range(3):
            R12[a, b] = R1[a, 0] * Ra[0, b] + R1[a, 1] * Ra[1, b] + R1[a, 2] * Ra[2, b]
    rodrigues_into(prm[6], prm[7], prm[8], th[2], buf, 51)  # Ra
    for a in range(3):
        for b in range(3):
            R[a, b] = R12[a, 0] * Ra[0, b] + R12[a, 1] * Ra[1, b] + R12[a, 2] * Ra[2, b]
    for a in range(3):
        W[a, 0] = prm[a]
        W[a, 1] = R1[a, 0] * prm[3] + R1[a, 1] * prm[4] + R1[a, 2] * prm[5]
        W[a, 2] = R12[a, 0] * prm[6] + R12[a, 1] * prm[7] + R12[a, 2] * prm[8]
    for k in range(3):
        s_ = 0.0
        for j in range(m):
            s_ += th_q[k, j] * u[j]
        thd[k] = s_
    p0, p1, p2 = p[0], p[1], p[2]
    for a in range(3):  # p <- A p, A columns are the translation axes
        p[a] = prm[9 + a] * p0 + prm[12 + a] * p1 + prm[15 + a] * p2
    for j in range(m):
        for a in range(3):
            H[a, j] = W[a, 0] * th_q[0, j] + W[a, 1] * th_q[1, j] + W[a, 2] * th_q[2, j]
            H[3 + a, j] = prm[9 + a] * pq[0, j] + prm[12 + a] * pq[1, j] + prm[15 + a] * pq[2, j]
    # Ẇ θ_q u = (w1 × W2) θ̇2 + (w12 × W3) θ̇3 with w1 = W1 θ̇1, w12 = w1 + W2 θ̇2 (eq. 28);
    # W θ̇_q u = W (Σ ∂²θ u u) (eq. 30–33); A ṗ_q u (eq. 35)
    w10, w11, w12_ = W[0, 0] * thd[0], W[1, 0] * thd[0], W[2, 0] * thd[0]
    v0, v1, v2 = w10 + W[0, 1] * thd[1], w11 + W[1, 1] * thd[1], w12_ + W[2, 1] * thd[1]
    c0 = (w11 * W[2, 1] - w12_ * W[1, 1]) * thd[1] + (v1 * W[2, 2] - v2 * W[1, 2]) * thd[2]
    c1 = (w12_ * W[0, 1] - w10 * W[2, 1]) * thd[1] + (v2 * W[0, 2] - v0 * W[2, 2]) * thd[2]
    c2 = (w10 * W[1, 1] - w11 * W[0, 1]) * thd[1] + (v0 * W[1, 2] - v1 * W[0, 2]) * thd[2]
    hdu[0] = c0
    hdu[1] = c1
    hdu[2] = c2
    for a in range(3):
        hdu[a] += W[a, 0] * th_uu[0] + W[a, 1] * th_uu[1] + W[a, 2] * th_uu[2]
        hdu[3 + a] = prm[9 + a] * p_uu[0] + prm[12 + a] * p_uu[1] + prm[15 + a] * p_uu[2]


@njit
def joint_kinematics(jt, rev, prm, fidx, ftype, farg, foff, fdata, q, u, nu, R, p, H, hdu):
    """As ``forward_kinematics_joint`` but honouring reversal (eqs. 15–17): the result always
    describes the tree child's M frame in the tree parent's F frame."""
    forward_kinematics_joint(jt, prm, fidx, ftype, farg, foff, fdata, q, u, nu, R, p, H, hdu)
    if rev == 0:
        return
    # forward result: frame F (on tree parent) moving in M (on tree child): R = R_MF, p = p_MF.
    Rt = R.T.copy()
    pf = p.copy()
    w = np.zeros(3)
    pd = np.zeros(3)
    for j in range(nu):
        for i in range(3):
            w[i] += H[i, j] * u[j]
            pd[i] += H[3 + i, j] * u[j]
    Hn = np.zeros((6, 6))
    for j in range(nu):
        hw = H[:3, j].copy()
        hv = H[3:, j].copy()
        a = mv(Rt, hw)
        b = mv(Rt, hv + cross3(pf, hw))
        for i in range(3):
            Hn[i, j] = -a[i]
            Hn[3 + i, j] = -b[i]
    bw = hdu[:3].copy()
    bv = hdu[3:].copy()
    nw = -mv(Rt, bw)
    nv = mv(Rt, cross3(bw, pf) - bv + 2.0 * cross3(w, pd) - cross3(w, cross3(w, pf)))
    pn = -mv(Rt, pf)
    for i in range(3):
        p[i] = pn[i]
        hdu[i] = nw[i]
        hdu[3 + i] = nv[i]
        for j in range(3):
            R[i, j] = Rt[i, j]
    for i in range(6):
        for j in range(6):
            H[i, j] = Hn[i, j]


@njit
def joint_qdot(jt, q, u, qd):
    """q̇ = N(q) u for one mobilizer (eq. 4); N is the same for a reversed mobilizer."""
    if jt == BALL or jt == ELLIPSOID:
        _, W = _euler123(q[0], q[1], q[2])
        x = _solve3(W, u[:3])
        for i in range(3):
            qd[i] = x[i]
        return
    if jt == BALL_QUAT or jt == FREE:
        w0, x0, y0, z0 = q[0], q[1], q[2], q[3]
        wx, wy, wz = u[0], u[1], u[2]
        # q̇ = ½ [0, w] ⊗ q  (w in F)
        qd[0] = -0.5 * (wx * x0 + wy * y0 + wz * z0)
        qd[1] = 0.5 * (w0 * wx + wy * z0 - wz * y0)
        qd[2] = 0.5 * (w0 * wy + wz * x0 - wx * z0)
        qd[3] = 0.5 * (w0 * wz + wx * y0 - wy * x0)
        if jt == FREE:
            for i in range(3):
                qd[4 + i] = u[3 + i]
        return
    for i in range(u.shape[0]):
        qd[i] = u[i]


def q_equals_u(jt: int) -> bool:
    """True when q̇ = u (N = I) for this mobilizer type."""
    return jt not in (BALL, ELLIPSOID, BALL_QUAT, FREE)
