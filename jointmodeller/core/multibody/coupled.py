"""Compiled coordinate couplers: q_dep = f(q_indep) rows, multipliers and projection in numba.

Systems whose constraints are all ``CoordinateCoupler``s (the knee of seed 000 §4 built as planar
+ couplers) run forward dynamics and integration fully compiled, so the mobilizer-vs-constraint
comparison measures the formulation, not Python overhead. The coupler table is packed as
cb (m, 16) int64 rows [dep_q, dep_u, n_ind, function, ind_q (6), ind_u (6)], its functions as a
separate flat function table (cft, cfa, cfo, cfd).

``coupled_udot`` is the plainly written reference; System.forward_dynamics and the compiled DOPRI5
driver of integrate.simulate run ``lean.coupled_into`` (same formula on the lean kernels; equal to 1e-12 in tests).
"""

from __future__ import annotations

import numpy as np

from jointmodeller.core._jit import njit
from jointmodeller.core.tolerances import tol

from .aba import aba_core
from .functions import FunctionTable, eval_function
from .tree import kin_pass, qdot_all, unpack_tree

N_CB = 16  # dep_q, dep_u, n_ind, fn, ind_q[6], ind_u[6]
_RANK = tol.rank  # numba reads module globals as compile-time constants


def pack_couplers(system) -> tuple[np.ndarray, tuple] | None:
    """Packed coupler table, or None unless every constraint is a CoordinateCoupler."""
    from .constraints import CoordinateCoupler

    cons = system.constraints
    if not cons or not all(type(c) is CoordinateCoupler for c in cons):
        return None
    table = FunctionTable()
    cb = np.zeros((len(cons), N_CB), np.int64)
    for r, con in enumerate(cons):
        n = len(con.independent)
        if n > 6:
            return None
        cb[r, 0], cb[r, 1], cb[r, 2] = con.dependent, con._ud, n
        cb[r, 3] = table.add(con.function)
        cb[r, 4 : 4 + n] = con.independent
        cb[r, 10 : 10 + n] = con._ui
    return cb, table.arrays()


@njit
def coupler_rows(cb, cft, cfa, cfo, cfd, q, u, nu):
    """c (m,), G (m, nu), k (m,) with c̈ = G u̇ + k."""
    m = cb.shape[0]
    c = np.zeros(m)
    G = np.zeros((m, nu))
    k = np.zeros(m)
    qi = np.zeros(6)
    ui = np.zeros(6)
    grad = np.zeros(6)
    for r in range(m):
        n = cb[r, 2]
        for j in range(n):
            qi[j] = q[cb[r, 4 + j]]
            ui[j] = u[cb[r, 10 + j]]
        fi = cb[r, 3]
        f, uhu = eval_function(cft[fi], cfa[fi], cfo[fi], cfd, qi, ui, n, grad)
        c[r] = q[cb[r, 0]] - f
        G[r, cb[r, 1]] += 1.0
        for j in range(n):
            G[r, cb[r, 10 + j]] -= grad[j]
        k[r] = -uhu
    return c, G, k


@njit
def _solve_or_lstsq(Y, b):
    """Y x = b by Gaussian elimination with partial pivoting; the least-squares (minimum-norm)
    solution when Y is singular, i.e. the constraints are redundant (seed 003 §4.2)."""
    m = b.shape[0]
    A = Y.copy()
    x = b.copy()
    scale = 0.0
    for i in range(m):
        for j in range(m):
            scale = max(scale, abs(A[i, j]))
    for col in range(m):
        piv = col
        for r in range(col + 1, m):
            if abs(A[r, col]) > abs(A[piv, col]):
                piv = r
        if abs(A[piv, col]) <= _RANK * scale:
            return np.linalg.lstsq(Y, b, rcond=_RANK)[0]
        if piv != col:
            for k in range(m):
                A[col, k], A[piv, k] = A[piv, k], A[col, k]
            x[col], x[piv] = x[piv], x[col]
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
    return x


@njit
def coupled_udot(tr, cb, cft, cfa, cfo, cfd, q, u, tau, f_ext):
    """u̇ with coupler multipliers from Y λ = G u̇0 + k, Y = G M⁻¹ Gᵀ (least squares)."""
    nb = tr.parent.shape[0]
    nu = u.shape[0]
    Xup, S, v, c, R_GB, p_GB = kin_pass(tr, q, u)
    udot0 = aba_core(tr, Xup, S, v, c, tau, f_ext, True)
    cerr, G, k = coupler_rows(cb, cft, cfa, cfo, cfd, q, u, nu)
    m = G.shape[0]
    z = np.zeros((nb, 6))
    MiGt = np.zeros((nu, m))
    for r in range(m):
        col = aba_core(tr, Xup, S, z, z, G[r].copy(), z, False)
        for a in range(nu):
            MiGt[a, r] = col[a]
    Y = np.zeros((m, m))
    rhs = np.zeros(m)
    for r in range(m):
        s = k[r]
        for a in range(nu):
            s += G[r, a] * udot0[a]
        rhs[r] = s
        for r2 in range(m):
            s2 = 0.0
            for a in range(nu):
                s2 += G[r, a] * MiGt[a, r2]
            Y[r, r2] = s2
    lam = _solve_or_lstsq(Y, rhs)
    udot = udot0.copy()
    for a in range(nu):
        for r in range(m):
            udot[a] -= MiGt[a, r] * lam[r]
    return udot


@njit
def _min_norm(G, r):
    """Minimum-norm x with G x = r: x = Gᵀ (G Gᵀ)⁻¹ r (least squares if G Gᵀ is singular)."""
    m, n = G.shape
    GGt = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            s = 0.0
            for k in range(n):
                s += G[i, k] * G[j, k]
            GGt[i, j] = s
    y = _solve_or_lstsq(GGt, r)
    x = np.zeros(n)
    for k in range(n):
        s = 0.0
        for i in range(m):
            s += G[i, k] * y[i]
        x[k] = s
    return x


@njit
def project_coupled(tr, cb, cft, cfa, cfo, cfd, q, u, tol):
    """Coordinate projection (q then u) onto the coupler manifolds, in place; returns max |c|."""
    nu = u.shape[0]
    nq = q.shape[0]
    dq = np.zeros(nq)
    for _ in range(20):
        c, G, k = coupler_rows(cb, cft, cfa, cfo, cfd, q, u, nu)
        err = 0.0
        for r in range(c.shape[0]):
            err += c[r] * c[r]
        if np.sqrt(err / max(c.shape[0], 1)) <= tol:
            break
        du = _min_norm(G, c)
        qdot_all(tr, q, du, dq)
        for a in range(nq):
            q[a] -= dq[a]
    c, G, k = coupler_rows(cb, cft, cfa, cfo, cfd, q, u, nu)
    r = G @ u
    du = _min_norm(G, r)
    for a in range(nu):
        u[a] -= du[a]
    worst = 0.0
    for a in range(c.shape[0]):
        worst = max(worst, abs(c[a]))
    return worst


@njit
def coupled_udot_p(ib, fb, cb, cft, cfa, cfo, cfd, q, u, tau, f_ext):
    return coupled_udot(unpack_tree(ib, fb), cb, cft, cfa, cfo, cfd, q, u, tau, f_ext)
