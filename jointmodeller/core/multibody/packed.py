"""Compiled entry points taking the packed tree (ibuf, fbuf).

forward_dynamics_p / state_derivative_p are the reference ABA (aba.py over tree.py's views); the
System and the integrators run the lean equivalents in lean.py (equal to 1e-12 in tests).
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit

from .aba import aba_core
from .inverse import rnea_core
from .mass_matrix import crba_core
from .tree import kin_pass, normalize_quaternions, qdot_all, unpack_tree


@njit
def kin_p(ib, fb, q, u):
    return kin_pass(unpack_tree(ib, fb), q, u)


@njit
def aba_p(ib, fb, Xup, S, v, c, tau, f_ext, gravity_on):
    return aba_core(unpack_tree(ib, fb), Xup, S, v, c, tau, f_ext, gravity_on)


@njit
def forward_dynamics_p(ib, fb, q, u, tau, f_ext):
    """u̇ for (q, u), generalized forces tau (nu,) and body spatial forces f_ext (nb, 6)."""
    tr = unpack_tree(ib, fb)
    Xup, S, v, c, R_GB, p_GB = kin_pass(tr, q, u)
    return aba_core(tr, Xup, S, v, c, tau, f_ext, True)


@njit
def state_derivative_p(ib, fb, q, u, tau, f_ext):
    """[q̇; u̇] of an unconstrained tree."""
    tr = unpack_tree(ib, fb)
    Xup, S, v, c, R_GB, p_GB = kin_pass(tr, q, u)
    nq = q.shape[0]
    out = np.empty(nq + u.shape[0])
    qdot_all(tr, q, u, out[:nq])
    out[nq:] = aba_core(tr, Xup, S, v, c, tau, f_ext, True)
    return out


@njit
def rnea_p(ib, fb, Xup, S, v, c, udot, f_ext, gravity_on):
    return rnea_core(unpack_tree(ib, fb), Xup, S, v, c, udot, f_ext, gravity_on)


@njit
def crba_p(ib, fb, Xup, S, n_u):
    return crba_core(unpack_tree(ib, fb), Xup, S, n_u)


@njit
def qdot_p(ib, fb, q, u, qd):
    qdot_all(unpack_tree(ib, fb), q, u, qd)


@njit
def normalize_p(ib, fb, q):
    normalize_quaternions(unpack_tree(ib, fb), q)
