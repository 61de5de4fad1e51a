"""O(n) articulated-body forward dynamics (Featherstone's ABA over mobilizer hinge matrices).

Also used with zero velocity and gravity as the O(n) operator u̇ = M⁻¹ f that the constraint
solver needs (seed 003 §4.2).
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit

from .tree import inv_small, kin_pass


@njit
def _add_xt_i_x(X, Ia, T, out):
    """out += X^T Ia X for 6x6 matrices (T is scratch)."""
    for a in range(6):
        for b in range(6):
            s = 0.0
            for k in range(6):
                s += Ia[a, k] * X[k, b]
            T[a, b] = s
    for a in range(6):
        for b in range(6):
            s = 0.0
            for k in range(6):
                s += X[k, a] * T[k, b]
            out[a, b] += s


@njit
def aba_core(tr, Xup, S, v, c, tau, f_ext, gravity_on):
    """u̇ (nu_total,) from a finished kinematic pass; f_ext (nb, 6) spatial forces on each body
    (moment about the body origin, force), body components; tau generalized forces."""
    nb = tr.parent.shape[0]
    buf = np.zeros(nb * (36 + 6 + 36 + 36 + 6 + 6) + 4 * 36 + 4 * 6)
    o = 0
    IA = buf[o : o + 36 * nb].reshape((nb, 6, 6))
    o += 36 * nb
    IA[:, :, :] = tr.I6
    pA = buf[o : o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    U = buf[o : o + 36 * nb].reshape((nb, 6, 6))
    o += 36 * nb
    Dinv = buf[o : o + 36 * nb].reshape((nb, 6, 6))
    o += 36 * nb
    uu = buf[o : o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    acc = buf[o : o + 6 * nb].reshape((nb, 6))
    o += 6 * nb
    Ia = buf[o : o + 36].reshape((6, 6))
    T = buf[o + 36 : o + 72].reshape((6, 6))
    UD = buf[o + 72 : o + 108].reshape((6, 6))
    D = buf[o + 108 : o + 144].reshape((6, 6))
    o += 144
    pa = buf[o : o + 6]
    Iv = buf[o + 6 : o + 12]
    a0 = buf[o + 12 : o + 18]
    ai = buf[o + 18 : o + 24]
    for i in range(nb):
        I = tr.I6[i]
        for a in range(6):
            s = 0.0
            for b in range(6):
                s += I[a, b] * v[i, b]
            Iv[a] = s
        w0, w1, w2, l0, l1, l2 = v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5]
        # v x* (I v)
        pA[i, 0] = w1 * Iv[2] - w2 * Iv[1] + l1 * Iv[5] - l2 * Iv[4] - f_ext[i, 0]
        pA[i, 1] = w2 * Iv[0] - w0 * Iv[2] + l2 * Iv[3] - l0 * Iv[5] - f_ext[i, 1]
        pA[i, 2] = w0 * Iv[1] - w1 * Iv[0] + l0 * Iv[4] - l1 * Iv[3] - f_ext[i, 2]
        pA[i, 3] = w1 * Iv[5] - w2 * Iv[4] - f_ext[i, 3]
        pA[i, 4] = w2 * Iv[3] - w0 * Iv[5] - f_ext[i, 4]
        pA[i, 5] = w0 * Iv[4] - w1 * Iv[3] - f_ext[i, 5]
    for i in range(nb - 1, -1, -1):
        n = tr.nu[i]
        uo = tr.uoff[i]
        IAi = IA[i]
        Si = S[i]
        Ui = U[i]
        for a in range(6):
            for b in range(6):
                Ia[a, b] = IAi[a, b]
            pa[a] = pA[i, a]
        if n > 0:
            for a in range(6):
                for j in range(n):
                    s = 0.0
                    for k in range(6):
                        s += IAi[a, k] * Si[k, j]
                    Ui[a, j] = s
            for j1 in range(n):
                s2 = tau[uo + j1]
                for k in range(6):
                    s2 -= Si[k, j1] * pA[i, k]
                uu[i, j1] = s2
                for j2 in range(n):
                    s = 0.0
                    for k in range(6):
                        s += Si[k, j1] * Ui[k, j2]
                    D[j1, j2] = s
            if n == 1:
                Dinv[i, 0, 0] = 1.0 / D[0, 0]
            else:
                Di = inv_small(D, n)
                for j1 in range(n):
                    for j2 in range(n):
                        Dinv[i, j1, j2] = Di[j1, j2]
            for a in range(6):
                for j in range(n):
                    s = 0.0
                    for k in range(n):
                        s += Ui[a, k] * Dinv[i, k, j]
                    UD[a, j] = s
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for j in range(n):
                        s += UD[a, j] * Ui[b, j]
                    Ia[a, b] -= s
            for a in range(6):
                s = 0.0
                for j in range(n):
                    s += UD[a, j] * uu[i, j]
                pa[a] += s
        par = tr.parent[i]
        if par >= 0:
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += Ia[a, b] * c[i, b]
                pa[a] += s
            X = Xup[i]
            _add_xt_i_x(X, Ia, T, IA[par])
            for a in range(6):
                s = 0.0
                for k in range(6):
                    s += X[k, a] * pa[k]
                pA[par, a] += s
    udot = np.zeros(tau.shape[0])
    if gravity_on:
        for k in range(3):
            a0[3 + k] = -tr.gravity[k]
    ud = Iv  # scratch reuse
    for i in range(nb):
        par = tr.parent[i]
        X = Xup[i]
        for a in range(6):
            s = c[i, a]
            if par >= 0:
                for b in range(6):
                    s += X[a, b] * acc[par, b]
            else:
                for b in range(6):
                    s += X[a, b] * a0[b]
            ai[a] = s
        n = tr.nu[i]
        if n > 0:
            uo = tr.uoff[i]
            for j in range(n):
                s = uu[i, j]
                for k in range(6):
                    s -= U[i, k, j] * ai[k]
                ud[j] = s
            for j in range(n):
                s = 0.0
                for k in range(n):
                    s += Dinv[i, j, k] * ud[k]
                udot[uo + j] = s
            for a in range(6):
                s = 0.0
                for j in range(n):
                    s += S[i, a, j] * udot[uo + j]
                ai[a] += s
        for a in range(6):
            acc[i, a] = ai[a]
    return udot


@njit
def forward_dynamics(tr, q, u, tau, f_ext):
    """u̇ for state (q, u), generalized forces tau and body spatial forces f_ext (nb, 6)."""
    Xup, S, v, c, R_GB, p_GB = kin_pass(tr, q, u)
    return aba_core(tr, Xup, S, v, c, tau, f_ext, True)


@njit
def minv_times(tr, Xup, S, f):
    """M⁻¹ f in O(n) (ABA with no velocity, gravity or body forces)."""
    nb = tr.parent.shape[0]
    z = np.zeros((nb, 6))
    return aba_core(tr, Xup, S, z, z, f, z, False)
