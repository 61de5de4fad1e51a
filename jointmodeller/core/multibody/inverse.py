"""Recursive Newton–Euler inverse dynamics and mobilizer reaction forces."""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit

from .spatial import crf, mtv, mv
from .tree import kin_pass


@njit
def rnea_core(tr, Xup, S, v, c, udot, f_ext, gravity_on):
    """Generalized forces tau (nu_total,) that produce udot, and the spatial force each mobilizer
    transmits from parent to child, f_joint (nb, 6), child body components about its origin."""
    nb = tr.parent.shape[0]
    a = np.zeros((nb, 6))
    f = np.zeros((nb, 6))
    a0 = np.zeros(6)
    if gravity_on:
        a0[3:] = -tr.gravity
    for i in range(nb):
        par = tr.parent[i]
        ap = a[par] if par >= 0 else a0
        ai = mv(Xup[i], ap) + c[i]
        n = tr.nu[i]
        uo = tr.uoff[i]
        for k in range(n):
            for r in range(6):
                ai[r] += S[i, r, k] * udot[uo + k]
        a[i] = ai
        Iv = mv(tr.I6[i], v[i])
        f[i] = mv(tr.I6[i], ai) + crf(v[i], Iv) - f_ext[i]
    tau = np.zeros(udot.shape[0])
    for i in range(nb - 1, -1, -1):
        n = tr.nu[i]
        uo = tr.uoff[i]
        for k in range(n):
            s = 0.0
            for r in range(6):
                s += S[i, r, k] * f[i, r]
            tau[uo + k] = s
        par = tr.parent[i]
        if par >= 0:
            f[par] += mtv(Xup[i], f[i])
    return tau, f


@njit
def inverse_dynamics(tr, q, u, udot, f_ext):
    """tau such that forward_dynamics(q, u, tau, f_ext) = udot."""
    Xup, S, v, c, R_GB, p_GB = kin_pass(tr, q, u)
    tau, f = rnea_core(tr, Xup, S, v, c, udot, f_ext, True)
    return tau


