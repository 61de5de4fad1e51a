"""Radau IIA (order 5) whose simplified Newton iteration carries its convergence factor from step to
step, as Hairer & Wanner's RADAU5 does (Solving ODEs II, §IV.8): a step whose first Newton correction,
judged by the rate the earlier steps measured, leaves less than ``NEWTON_TOLERANCE`` of the error test's
allowance stops after one iteration (three evaluations), where scipy's ``Radau`` measures a rate afresh
in every step and so always iterates twice (six), and stops at a hundredth of the allowance at four
digits (min(0.03, √rtol)). Everything else is scipy's ``Radau`` (subclassed; its constants and
predictor imported): tolerances, the starting step, the finite-difference Jacobian and its LU
factors, the starting guess from the last step's collocation polynomial, the error estimate, the
step-size controller and the dense output.

On the demo elbow's first 2 s from rest at four digits (docs/benchmarks.md, 2026-11-29): 15,115
evaluations against scipy's 20,585 (-27 %: fewer Newton iterations, and a Jacobian 47 times against
168, since a slow Newton is what asks for one); over 0.1 s the trajectory within 1.1e-6 m of a 1e-8
reference (scipy's 7.7e-7), far inside the tolerance.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import Radau
from scipy.integrate._ivp.common import norm as _rms  # the RMS norm scipy's Radau measures with

# The method's constants (nodes C, error weights E, the eigen-decomposition A = T Λ T⁻¹ of the Butcher
# matrix: MU_REAL and the pair MU_COMPLEX), scipy's step-size limits and its Gustafsson predictor are
# scipy's own: this class already depends on its Radau's internals (``_step_impl`` replaces its step)
from scipy.integrate._ivp.radau import (
    MAX_FACTOR,
    MIN_FACTOR,
    MU_COMPLEX,
    MU_REAL,
    NEWTON_MAXITER,
    TI,
    TI_COMPLEX,
    TI_REAL,
    C,
    E,
    T,
    predict_factor,
)

NEWTON_TOLERANCE = 0.1
"""The Newton iteration stops when its estimated error left, contraction / (1 - contraction) × |ΔW| in
the error test's scaled norm, is below this fraction of the allowance (the κ of Hairer & Wanner §IV.8,
RADAU5's FNEWT). The error test then sees at most a tenth of its allowance from the unfinished Newton
(scipy: a hundredth at four digits); measured on the demo, its trajectory within 1.5x scipy's distance
from a 1e-8 reference, both far inside the tolerance."""
RATE_FLOOR = np.finfo(float).eps
"""The smallest convergence factor carried over (RADAU5's ``uround``): a step that converged in one
iteration leaves the carried factor as it was, raised to 0.8 so that it drifts back towards 1."""
CARRY_EXPONENT = 0.8
"""RADAU5's ``faccon ** 0.8`` at the start of each step: a carried factor is trusted a little less
each time it is reused without being measured again."""
JACOBIAN_RATE = 1e-3
"""A Jacobian is recomputed after a step whose Newton needed more than two iterations at a rate above
this (scipy's rule): a slow Newton is the sign that the Jacobian went stale."""


def solve_stages(fun, t: float, y: np.ndarray, h: float, Z0: np.ndarray, scale: np.ndarray, tol: float,
                 LU_real, LU_complex, solve_lu, contraction: float) -> tuple[bool, int, np.ndarray, float | None,
                                                                               float]:
    """Simplified Newton on the collocation equations from ``Z0`` (3, n). Converged once the estimated
    error left, contraction / (1 - contraction) × |ΔW| (scaled RMS), is below ``tol``; the first
    iteration uses the ``contraction`` carried from earlier steps, later ones the rate measured here.
    Returns (converged, iterations, Z, measured rate or None, contraction to carry on)."""
    n = y.shape[0]
    M_real = MU_REAL / h
    M_complex = MU_COMPLEX / h
    W = TI.dot(Z0)
    Z = Z0
    F = np.empty((3, n))
    ch = h * C
    dW = np.empty_like(W)
    dW_norm_old = None
    rate = None
    converged = False
    k = 0
    for k in range(NEWTON_MAXITER):
        for i in range(3):
            F[i] = fun(t + ch[i], y + Z[i])
        if not np.all(np.isfinite(F)):
            break
        f_real = F.T.dot(TI_REAL) - M_real * W[0]
        f_complex = F.T.dot(TI_COMPLEX) - M_complex * (W[1] + 1j * W[2])
        dW_real = solve_lu(LU_real, f_real)
        dW_complex = solve_lu(LU_complex, f_complex)
        dW[0] = dW_real
        dW[1] = dW_complex.real
        dW[2] = dW_complex.imag
        dW_norm = _rms(dW / scale)
        if dW_norm_old is not None:
            rate = dW_norm / dW_norm_old
            if rate >= 1 or rate ** (NEWTON_MAXITER - k) / (1 - rate) * dW_norm > tol:
                break  # diverging, or too slow to converge within the iterations left
            contraction = rate / (1 - rate)
        W += dW
        Z = T.dot(W)
        if dW_norm == 0 or contraction * dW_norm < tol:
            converged = True
            break
        dW_norm_old = dW_norm
    return converged, k + 1, Z, rate, contraction


class CarriedRateRadau(Radau):
    """scipy's ``Radau`` with RADAU5's carried Newton convergence factor (module docstring). The
    factor starts at 1 (the first step always iterates at least twice) and after each step is the last
    measured rate's ``rate / (1 - rate)``; a step's first iteration is judged by it to the power
    ``CARRY_EXPONENT``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.newton_tol = max(10 * np.finfo(float).eps / float(np.max(self.rtol)), NEWTON_TOLERANCE)
        self.contraction = 1.0
        self.newton_iterations = 0

    def _step_impl(self):
        t, y, f = self.t, self.y, self.f
        max_step, atol, rtol = self.max_step, self.atol, self.rtol
        min_step = 10 * np.abs(np.nextafter(t, self.direction * np.inf) - t)
        if self.h_abs > max_step:
            h_abs, h_abs_old, error_norm_old = max_step, None, None
        elif self.h_abs < min_step:
            h_abs, h_abs_old, error_norm_old = min_step, None, None
        else:
            h_abs, h_abs_old, error_norm_old = self.h_abs, self.h_abs_old, self.error_norm_old
        J, LU_real, LU_complex = self.J, self.LU_real, self.LU_complex
        current_jac, jac = self.current_jac, self.jac
        rejected = False
        step_accepted = False
        carried = max(self.contraction, RATE_FLOOR) ** CARRY_EXPONENT
        while not step_accepted:
            if h_abs < min_step:
                return False, self.TOO_SMALL_STEP
            h = h_abs * self.direction
            t_new = t + h
            if self.direction * (t_new - self.t_bound) > 0:
                t_new = self.t_bound
            h = t_new - t
            h_abs = np.abs(h)
            Z0 = np.zeros((3, y.shape[0])) if self.sol is None else self.sol(t + h * C).T - y
            scale = atol + np.abs(y) * rtol
            converged = False
            while not converged:
                if LU_real is None or LU_complex is None:
                    LU_real = self.lu(MU_REAL / h * self.I - J)
                    LU_complex = self.lu(MU_COMPLEX / h * self.I - J)
                converged, n_iter, Z, rate, contraction = solve_stages(
                    self.fun, t, y, h, Z0, scale, self.newton_tol, LU_real, LU_complex, self.solve_lu, carried)
                self.newton_iterations += n_iter
                if not converged:
                    carried = 1.0  # judged afresh after a failure: the carried factor was too hopeful
                    if current_jac:
                        break
                    J = self.jac(t, y, f)
                    current_jac = True
                    LU_real = LU_complex = None
            if not converged:
                h_abs *= 0.5
                LU_real = LU_complex = None
                continue
            y_new = y + Z[-1]
            ZE = Z.T.dot(E) / h
            error = self.solve_lu(LU_real, f + ZE)
            scale = atol + np.maximum(np.abs(y), np.abs(y_new)) * rtol
            error_norm = _rms(error / scale)
            safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter)
            if rejected and error_norm > 1:
                error = self.solve_lu(LU_real, self.fun(t, y + error) + ZE)
                error_norm = _rms(error / scale)
            if error_norm > 1:
                factor = predict_factor(h_abs, h_abs_old, error_norm, error_norm_old)
                h_abs *= max(MIN_FACTOR, safety * factor)
                LU_real = LU_complex = None
                rejected = True
            else:
                step_accepted = True
        self.contraction = contraction
        recompute_jac = jac is not None and n_iter > 2 and rate is not None and rate > JACOBIAN_RATE
        factor = min(MAX_FACTOR, safety * predict_factor(h_abs, h_abs_old, error_norm, error_norm_old))
        if not recompute_jac and factor < 1.2:
            factor = 1.0
        else:
            LU_real = LU_complex = None
        f_new = self.fun(t_new, y_new)
        if recompute_jac:
            J = jac(t_new, y_new, f_new)
            current_jac = True
        elif jac is not None:
            current_jac = False
        self.h_abs_old = self.h_abs
        self.error_norm_old = error_norm
        self.h_abs = h_abs * factor
        self.y_old = y
        self.t = t_new
        self.y = y_new
        self.f = f_new
        self.Z = Z
        self.LU_real, self.LU_complex = LU_real, LU_complex
        self.current_jac = current_jac
        self.J = J
        self.t_old = t
        self.sol = self._compute_dense_output()
        return step_accepted, None


__all__ = ["NEWTON_TOLERANCE", "CarriedRateRadau", "solve_stages"]
