"""O(n) articulated-body forward dynamics (Featherstone's ABA over mobilizer hinge matrices).

Also used with zero velocity and gravity as the O(n) operator u̇ = M⁻¹ f that the constraint
solver needs (seed 003 §4.2).
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .spatial import crf, mm, mtm, mtv, mv
from .tree import inv_small, kin_pass


@njit
def aba_core(tr, Xup, S, v, c, tau, f_ext, gravity_on):
    """u̇ (nu_total,) from a finished kinematic pass; f_ext (nb, 6) spatial forces on each body
    (moment about the body origin, force), body components; tau generalized forces."""
    nb = tr.parent.shape[0]
    IA = tr.I6.copy()
    pA = np.zeros((nb, 6))
    for i in range(nb):
        pA[i] = crf(v[i], mv(tr.I6[i], v[i])) - f_ext[i]
    U = np.zeros((nb, 6, 6))
    Dinv = np.zeros((nb, 6, 6))
    uu = np.zeros((nb, 6))
    for i in range(nb - 1, -1, -1):
        n = tr.nu[i]
        uo = tr.uoff[i]
        Ia = IA[i]
        pa = pA[i].copy()
        if n > 0:
            Si = S[i, :, :n]
            Ui = mm(IA[i], Si)
            D = mtm(Si, Ui)
            Di = inv_small(D, n)
            ui = tau[uo : uo + n] - mtv(Si, pA[i])
            for a in range(6):
                for b in range(n):
                    U[i, a, b] = Ui[a, b]
            for a in range(n):
                uu[i, a] = ui[a]
                for b in range(n):
                    Dinv[i, a, b] = Di[a, b]
            UD = mm(Ui, Di)
            Ia = IA[i] - mm(UD, Ui.T)
            pa = pA[i] + mv(Ia, c[i]) + mv(UD, ui)
        else:
            pa = pA[i] + mv(Ia, c[i])
        par = tr.parent[i]
        if par >= 0:
            X = Xup[i]
            IA[par] += mm(mtm(X, Ia), X)
            pA[par] += mtv(X, pa)
    udot = np.zeros(tau.shape[0])
    a = np.zeros((nb, 6))
    a0 = np.zeros(6)
    if gravity_on:
        a0[3:] = -tr.gravity
    for i in range(nb):
        par = tr.parent[i]
        ap = a[par] if par >= 0 else a0
        ai = mv(Xup[i], ap) + c[i]
        n = tr.nu[i]
        if n > 0:
            uo = tr.uoff[i]
            Si = S[i, :, :n]
            ud = mv(Dinv[i, :n, :n], uu[i, :n] - mtv(U[i, :, :n], ai))
            for k in range(n):
                udot[uo + k] = ud[k]
            ai = ai + mv(Si, ud)
        a[i] = ai
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
