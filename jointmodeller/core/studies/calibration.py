"""Fit model parameters (tissue stiffness scales, slack scales) to measured laxity curves.

Bounded nonlinear least squares (scipy.optimize.least_squares, trust-region reflective) on the
residual "simulated minus measured" at the measured loads. Confidence comes from the Jacobian at
the solution: covariance ≈ s² (JᵀJ)⁻¹ with s² = SSR / (n − p), and 95 % intervals with Student's t.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy import optimize, stats


@dataclass
class CalibrationResult:
    """names (p,), x0 (p,) start, x (p,) fitted, std (p,) standard errors, ci95 (p, 2), residuals (n,)
    at the fit, rmse and max_abs_error (measure units), cost = ½ Σ r², evaluations, success, message,
    correlation (p, p)."""

    names: list[str]
    x0: np.ndarray
    x: np.ndarray
    std: np.ndarray
    ci95: np.ndarray
    residuals: np.ndarray
    rmse: float
    max_abs_error: float
    cost: float
    evaluations: int
    success: bool
    message: str
    correlation: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    rmse_initial: float = float("nan")

    def as_dict(self) -> dict:
        """JSON-able summary."""
        return {
            "parameters": {n: {"start": float(a), "fitted": float(b), "std": float(s), "ci95": [float(c[0]), float(c[1])]}
                           for n, a, b, s, c in zip(self.names, self.x0, self.x, self.std, self.ci95)},
            "rmse": self.rmse, "rmse_initial": self.rmse_initial, "max_abs_error": self.max_abs_error,
            "cost": self.cost, "evaluations": self.evaluations, "success": self.success,
            "message": self.message, "n_points": int(self.residuals.size),
        }


def fit_metrics(simulated: np.ndarray, measured: np.ndarray) -> dict:
    """RMSE and maximum absolute error of simulated against measured values (same shape)."""
    r = np.asarray(simulated, float) - np.asarray(measured, float)
    return {"rmse": float(np.sqrt(np.mean(r * r))) if r.size else float("nan"),
            "max_abs_error": float(np.max(np.abs(r))) if r.size else float("nan"), "n_points": int(r.size)}


def confidence(jac: np.ndarray, residuals: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard errors (p,), half-widths (p,) of the ``level`` interval and correlation (p, p) from the
    Jacobian (n, p) and residuals (n,) at a least-squares solution. NaN when n <= p or J is singular."""
    n, p = jac.shape
    if n <= p:
        nan = np.full(p, np.nan)
        return nan, nan, np.full((p, p), np.nan)
    s2 = float(residuals @ residuals) / (n - p)
    _, sv, vt = np.linalg.svd(jac, full_matrices=False)
    if sv.size == 0 or sv[-1] <= sv[0] * 1e-12:
        nan = np.full(p, np.nan)
        return nan, nan, np.full((p, p), np.nan)
    cov = (vt.T / sv**2) @ vt * s2
    std = np.sqrt(np.diag(cov))
    half = stats.t.ppf(0.5 + level / 2, n - p) * std
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = cov / np.outer(std, std)
    return std, half, corr


def calibrate(
    simulate: Callable[[np.ndarray], np.ndarray],
    measured: np.ndarray,
    x0: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    names: list[str],
    *,
    diff_step: float = 1e-4,
    xtol: float = 1e-8,
    ftol: float = 1e-8,
    max_nfev: int = 200,
) -> CalibrationResult:
    """Bounded least squares of ``simulate(x) - measured``.

    simulate: parameters (p,) -> predicted values (n,) at the measured loads (same units);
    measured (n,); x0, lower, upper (p,); names (p,). ``diff_step`` is relative (the finite-difference
    Jacobian steps x by diff_step·|x|): it must exceed the simulator's solver noise.
    """
    measured = np.asarray(measured, float)
    x0 = np.clip(np.asarray(x0, float), lower, upper)
    count = [0]

    def residual(x: np.ndarray) -> np.ndarray:
        count[0] += 1
        return np.asarray(simulate(x), float) - measured

    r0 = residual(x0)
    sol = optimize.least_squares(residual, x0, bounds=(lower, upper), method="trf", diff_step=diff_step,
                                 x_scale="jac", xtol=xtol, ftol=ftol, gtol=1e-12, max_nfev=max_nfev)
    std, half, corr = confidence(sol.jac, sol.fun)
    metrics = fit_metrics(sol.fun + measured, measured)
    return CalibrationResult(
        names=list(names), x0=x0, x=sol.x, std=std, ci95=np.stack([sol.x - half, sol.x + half], axis=1),
        residuals=sol.fun, rmse=metrics["rmse"], max_abs_error=metrics["max_abs_error"], cost=float(sol.cost),
        evaluations=count[0], success=bool(sol.success), message=str(sol.message), correlation=corr,
        rmse_initial=fit_metrics(r0 + measured, measured)["rmse"],
    )
