"""Composite-rigid-body mass matrix M(q) (nu_total, nu_total), formed only on request."""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit

from .spatial import mm, mtm
from .tree import kin_pass


@njit
def crba_core(tr, Xup, S, n_u):
    nb = tr.parent.shape[0]
    Ic = tr.I6.copy()
    M = np.zeros((n_u, n_u))
    for i in range(nb - 1, -1, -1):
        par = tr.parent[i]
        if par >= 0:
            Ic[par] += mm(mtm(Xup[i], Ic[i]), Xup[i])
    for i in range(nb):
        n = tr.nu[i]
        if n == 0:
            continue
        uo = tr.uoff[i]
        Si = S[i, :, :n]
        F = mm(Ic[i], Si)
        Mii = mtm(Si, F)
        for a in range(n):
            for b in range(n):
                M[uo + a, uo + b] = Mii[a, b]
        j = i
        while tr.parent[j] >= 0:
            F = mtm(Xup[j], F)
            j = tr.parent[j]
            nj = tr.nu[j]
            if nj == 0:
                continue
            uj = tr.uoff[j]
            Mij = mtm(F, S[j, :, :nj])
            for a in range(n):
                for b in range(nj):
                    M[uo + a, uj + b] = Mij[a, b]
                    M[uj + b, uo + a] = Mij[a, b]
    return M


@njit
def mass_matrix(tr, q, n_u):
    Xup, S, v, c, R_GB, p_GB = kin_pass(tr, q, np.zeros(n_u))
    return crba_core(tr, Xup, S, n_u)
