"""Time integration with a single accuracy knob α (seed 003 §3.3) and coordinate projection.

An embedded Dormand–Prince 5(4) Runge–Kutta with error control: a step is accepted when the RMS
of the error estimate, each weighted by 1/(α·max(1, |y_i|)), is ≤ 1. With constraints, q and u are
projected back onto the constraint manifolds after every accepted step (seed 003 §3.2), to RMS
position error ≤ ``constraint_tol`` (default α).

Two drivers share the algorithm: ``simulate`` (any system: constraints, Python force elements)
and ``simulate_compiled`` (numba end to end, for trees with no constraints and no Python forces).

``simulate`` never loops without end: a step size that collapses (a non-finite trial state is
rejected and the step shortened, so a diverging run shows as a collapse), a non-finite accepted
state, the step limit or a caller's ``stop`` ends it early with ``status`` "failed" or "stopped"
and the samples reached so far.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.core._jit import njit
from .state import State
from .coupled import N_CB, project_coupled
from .functions import FunctionTable
from .lean import coupled_into, fd_into, qdot_into, state_derivative_lean, workspace_size
from .tree import normalize_quaternions, unpack_tree

# Dormand–Prince 5(4) tableau
_C = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
_A = np.array([
    [0, 0, 0, 0, 0, 0],
    [1 / 5, 0, 0, 0, 0, 0],
    [3 / 40, 9 / 40, 0, 0, 0, 0],
    [44 / 45, -56 / 15, 32 / 9, 0, 0, 0],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
])
_B = _A[6].copy()
_E = np.array([71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40])


@dataclass
class Trajectory:
    """Output of a run: times (k,), q (k, nq), u (k, nu), step counts and the largest constraint
    error seen after projection."""

    t: np.ndarray
    q: np.ndarray
    u: np.ndarray
    n_steps: int
    n_rejected: int
    n_rhs: int
    max_constraint_error: float = 0.0
    status: str = "completed"
    message: str = ""


def _err_norm(err, y, alpha):
    w = alpha * np.maximum(1.0, np.abs(y))
    return np.sqrt(np.mean((err / w) ** 2))


STOP_CHECK_EVERY = 16
"""``stop()`` is asked every this many step attempts (accepted or rejected)."""
STEP_COLLAPSE_EPS = 64.0 * np.finfo(float).eps
"""Smallest step relative to max(1, |t|) by default: shorter steps barely move t (a collapse)."""


def simulate(system, state: State, t_final: float, accuracy: float = 1e-6, out_times=None,
             constraint_tol: float | None = None, tau=None, max_steps: int = 1_000_000,
             min_step: float | None = None, stop=None) -> Trajectory:
    """Integrate from ``state`` to ``t_final``; samples at ``out_times`` (default: every step).

    Ends early (samples so far kept, then the state reached; ``status``/``message`` say why) when the proposed step falls
    below ``min_step`` [s] (default STEP_COLLAPSE_EPS·max(1, |t|)) or an accepted state is not finite
    ("failed"), after ``max_steps`` step attempts ("failed"), or when ``stop()`` (asked every
    STOP_CHECK_EVERY attempts) returns a message ("stopped" with that message).
    """
    nq, nu = system.nq, system.nu
    tol = accuracy if constraint_tol is None else constraint_tol
    has_con = bool(system.constraints)
    if has_con:
        from .constraints import position_error, project_positions, project_velocities
    n_rhs = 0

    fast = not has_con and not system.forces
    tau_v = np.zeros(nu) if tau is None else np.asarray(tau, float)
    f_zero = np.zeros((system.n_bodies, 6))

    def rhs(t, y):
        nonlocal n_rhs
        n_rhs += 1
        if not np.all(np.isfinite(y)):  # an overflowed trial stage: rejected, never handed to the forces
            return np.full(y.size, np.nan)
        if fast:  # one compiled call
            return state_derivative_lean(system._ib, system._fb, y[:nq], y[nq:], tau_v, f_zero)
        st = State(t, y[:nq], y[nq:])
        return np.concatenate([system.qdot(st.q, st.u), system.forward_dynamics(st, tau)])

    def project(t, y):
        st = State(t, y[:nq], y[nq:])
        st.q = system.normalize(st.q)
        if has_con:
            project_positions(system, st, tol)
            project_velocities(system, st)
        return np.concatenate([st.q, st.u])

    t = float(state.t)
    y = project(t, state.y)
    outs = None if out_times is None else np.asarray(out_times, float)
    ts, ys = [t], [y.copy()]
    oi = 0
    if outs is not None:
        ts, ys = [], []
        while oi < outs.size and outs[oi] <= t + 1e-14:
            ts.append(t), ys.append(y.copy())
            oi += 1
    f0 = rhs(t, y)
    h = min(0.01 * max(1.0, np.linalg.norm(y)) / max(np.linalg.norm(f0), 1e-8), t_final - t) * accuracy ** 0.2
    h = max(h, 1e-8)
    n_steps = n_rej = 0
    max_cerr = 0.0
    K = np.zeros((7, y.size))
    status, message = "completed", ""
    while t < t_final - 1e-14:
        attempts = n_steps + n_rej
        if attempts >= max_steps:
            status, message = "failed", f"step limit of {max_steps} steps reached at t = {t:.6g} s"
            break
        if stop is not None and attempts % STOP_CHECK_EVERY == 0:
            reason = stop()
            if reason:
                status, message = "stopped", str(reason)
                break
        h_min = STEP_COLLAPSE_EPS * max(1.0, abs(t)) if min_step is None else max(float(min_step), 0.0)
        if not h >= h_min:  # also NaN
            finite = bool(np.all(np.isfinite(K)))
            status = "failed"
            message = (f"simulation diverged at t = {t:.6g} s: the step size collapsed to {h:.3g} s"
                       + ("" if finite else " (the trial states are not finite)")
                       + "; the model may be too stiff, too light or far out of balance")
            break
        target = t_final if outs is None or oi >= outs.size else min(outs[oi], t_final)
        hs = min(h, target - t)
        K[0] = f0
        with np.errstate(all="ignore"):  # trial stages of a diverging run overflow: the step is rejected
            for s in range(1, 7):
                K[s] = rhs(t + _C[s] * hs, y + hs * (_A[s, :s] @ K[:s]))
            y_new = y + hs * (_B @ K[:6])
            en = _err_norm(hs * (_E @ K), y_new, accuracy)
        if en <= 1.0:
            t += hs
            y = y_new
            f0 = K[6].copy()
            if has_con or system.codes_have_quaternions:
                y = project(t, y)
                f0 = rhs(t, y)
            if not (np.all(np.isfinite(y)) and np.all(np.isfinite(f0))):
                status, message = "failed", f"simulation diverged at t = {t:.6g} s: state is not finite (NaN/Inf)"
                break
                if has_con:
                    c = position_error(system, State(t, y[:nq], y[nq:]))
                    max_cerr = max(max_cerr, float(np.max(np.abs(c))) if c.size else 0.0)
            n_steps += 1
            if outs is None:
                ts.append(t), ys.append(y.copy())
            elif abs(t - target) < 1e-14 and oi < outs.size:
                ts.append(t), ys.append(y.copy())
                oi += 1
            if hs < h and abs(t - target) < 1e-14:
                continue  # a step clipped to an output time keeps the proposed h
        else:
            n_rej += 1
        h = hs * (min(5.0, max(0.2, 0.9 * (max(en, 1e-10)) ** -0.2)) if en == en else 0.2)  # NaN: shorten
    if status != "completed" and (not ts or t > ts[-1]) and np.all(np.isfinite(y)):
        ts.append(t), ys.append(y.copy())  # ended early: keep the state reached, not only the samples
    Y = np.array(ys).reshape(len(ys), y.size)
    return Trajectory(np.array(ts), Y[:, :nq], Y[:, nq:], n_steps, n_rej, n_rhs, max_cerr, status, message)


@njit
def _rhs_compiled(ib, fb, y, nq, nu, tau, fz, cb, cft, cfa, cfo, cfd, W, out):
    """[q̇; u̇] -> out through the lean kernels (lean.py), the same for trees and coupled trees."""
    q = y[:nq]
    u = y[nq:]
    qdot_into(ib, q, u, out[:nq])
    if cb.shape[0] == 0:
        fd_into(ib, fb, q, u, tau, fz, W, out[nq:])
    else:
        coupled_into(ib, fb, cb, cft, cfa, cfo, cfd, q, u, tau, fz, W, out[nq:])


@njit
def _dopri_compiled(ib, fb, y0, t0, t1, alpha, nq, nu, tau, out_times, A, B, C, E, cb, cft, cfa, cfo, cfd, ctol):
    tr = unpack_tree(ib, fb)
    nb = tr.parent.shape[0]
    fz = np.zeros((nb, 6))
    n = y0.shape[0]
    y = y0.copy()
    t = t0
    nout = out_times.shape[0]
    Y = np.zeros((nout, n))
    oi = 0
    while oi < nout and out_times[oi] <= t + 1e-14:
        Y[oi] = y
        oi += 1
    K = np.zeros((7, n))
    W = np.empty(workspace_size(nb, nu, cb.shape[0]))
    f0 = np.empty(n)
    cmax = 0.0
    if cb.shape[0] > 0:
        project_coupled(tr, cb, cft, cfa, cfo, cfd, y[:nq], y[nq:], ctol)
    _rhs_compiled(ib, fb, y, nq, nu, tau, fz, cb, cft, cfa, cfo, cfd, W, f0)
    nrhs = 1
    h = min(0.01 * max(1.0, np.linalg.norm(y)) / max(np.linalg.norm(f0), 1e-8), t1 - t) * alpha**0.2
    h = max(h, 1e-8)
    nsteps = 0
    nrej = 0
    ytmp = np.zeros(n)
    while t < t1 - 1e-14:
        target = t1
        if oi < nout and out_times[oi] < t1:
            target = out_times[oi]
        hs = min(h, target - t)
        K[0] = f0
        for s in range(1, 7):
            for i in range(n):
                acc = 0.0
                for r in range(s):
                    acc += A[s, r] * K[r, i]
                ytmp[i] = y[i] + hs * acc
            _rhs_compiled(ib, fb, ytmp, nq, nu, tau, fz, cb, cft, cfa, cfo, cfd, W, K[s])
            nrhs += 1
        # ytmp now holds the 5th-order solution (row 6 of A equals B)
        ssum = 0.0
        for i in range(n):
            e = 0.0
            for r in range(7):
                e += E[r] * K[r, i]
            w = alpha * max(1.0, abs(ytmp[i]))
            ssum += (hs * e / w) ** 2
        en = np.sqrt(ssum / n)
        if en <= 1.0:
            t += hs
            y[:] = ytmp
            normalize_quaternions(tr, y[:nq])
            f0[:] = K[6]
            if cb.shape[0] > 0:
                cmax = max(cmax, project_coupled(tr, cb, cft, cfa, cfo, cfd, y[:nq], y[nq:], ctol))
                _rhs_compiled(ib, fb, y, nq, nu, tau, fz, cb, cft, cfa, cfo, cfd, W, f0)
                nrhs += 1
            nsteps += 1
            if oi < nout and abs(t - out_times[oi]) < 1e-14:
                Y[oi] = y
                oi += 1
            if hs < h and abs(t - target) < 1e-14:
                continue
        else:
            nrej += 1
        h = hs * min(5.0, max(0.2, 0.9 * max(en, 1e-10) ** -0.2))
    while oi < nout:
        Y[oi] = y
        oi += 1
    return Y, nsteps, nrej, nrhs, cmax


_NO_COUPLERS = (np.zeros((0, N_CB), np.int64), FunctionTable().arrays())  # empty coupler table


def simulate_compiled(system, state: State, t_final: float, accuracy: float = 1e-6, out_times=None,
                      tau=None, constraint_tol: float | None = None) -> Trajectory:
    """As ``simulate`` but compiled end to end; for systems without force elements whose
    constraints (if any) are all coordinate couplers (gravity and constant ``tau`` only)."""
    packed = system._couplers  # packed once when the system was built
    if system.forces or (system.constraints and packed is None):
        raise ValueError("simulate_compiled handles trees with couplers only and no force elements")
    cb, (cft, cfa, cfo, cfd) = _NO_COUPLERS if packed is None else packed
    ctol = accuracy if constraint_tol is None else constraint_tol
    outs = np.array([t_final], float) if out_times is None else np.asarray(out_times, float)
    tau = system._tau0 if tau is None else np.asarray(tau, float)
    q0 = system.normalize(state.q) if system.codes_have_quaternions else state.q
    y0 = np.concatenate((q0, state.u))  # State holds float arrays
    nq = system.nq
    Y, ns, nr, nf, cmax = _dopri_compiled(
        system._ib, system._fb, y0, float(state.t), float(t_final), float(accuracy), nq, system.nu,
        tau, outs, _A, _B, _C, _E, cb, cft, cfa, cfo, cfd, float(ctol),
    )
    return Trajectory(outs, Y[:, :nq], Y[:, nq:], ns, nr, nf, cmax)
