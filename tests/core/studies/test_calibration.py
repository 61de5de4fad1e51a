"""Calibration recovers known stiffness scales from synthetic 'measured' curves."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.studies.calibration import calibrate, confidence, fit_metrics
from jointmodeller.core.studies.laxity import run_sweep
from jointmodeller.core.studies.laxity_examples import synthetic_protocol, two_condyle_joint


def test_fit_metrics():
    m = fit_metrics(np.array([1.0, 2.0, 4.0]), np.array([1.0, 1.0, 1.0]))
    assert m["rmse"] == pytest.approx(np.sqrt((0 + 1 + 9) / 3))
    assert m["max_abs_error"] == pytest.approx(3.0)


def test_confidence_matches_linear_regression_formula():
    """For a linear model y = a + b t the Jacobian route gives the textbook standard errors."""
    rng = np.random.default_rng(3)
    t = np.linspace(0, 1, 30)
    y = 2.0 + 3.0 * t + rng.normal(0, 0.1, t.size)
    X = np.column_stack([np.ones_like(t), t])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    r = X @ beta - y
    std, half, corr = confidence(X, r)
    s2 = r @ r / (t.size - 2)
    np.testing.assert_allclose(std, np.sqrt(np.diag(s2 * np.linalg.inv(X.T @ X))), rtol=1e-10)
    assert np.all(half > std)


@pytest.mark.slow
def test_calibration_recovers_stiffness_scales_within_two_percent():
    true = np.array([1.4, 0.75])
    system, p0, q0, frames = two_condyle_joint(stiffness_scale=tuple(true))
    protocol = synthetic_protocol(frames, steps=6)
    measured = run_sweep(system, protocol, p0, q0, tol_N=1e-10)

    def simulate(scales: np.ndarray) -> np.ndarray:
        s, p, q, f = two_condyle_joint(stiffness_scale=tuple(scales))
        return run_sweep(s, protocol, p, q, tol_N=1e-10).measure

    fit = calibrate(simulate, measured.measure, x0=np.ones(2), lower=np.full(2, 0.2), upper=np.full(2, 5.0),
                    names=["lateral", "medial"])
    assert fit.rmse_initial > 0.05  # the start really is off
    np.testing.assert_allclose(fit.x, true, rtol=0.02)
    assert fit.rmse < 1e-4
    assert fit.success
    assert fit.as_dict()["parameters"]["lateral"]["fitted"] == pytest.approx(fit.x[0])


def test_calibration_respects_bounds():
    system, p0, q0, frames = two_condyle_joint(stiffness_scale=(2.0, 2.0))
    protocol = synthetic_protocol(frames, steps=3)
    measured = run_sweep(system, protocol, p0, q0).measure

    def simulate(x):
        s, p, q, f = two_condyle_joint(stiffness_scale=(x[0], x[0]))
        return run_sweep(s, protocol, p, q).measure

    fit = calibrate(simulate, measured, np.array([1.0]), np.array([0.5]), np.array([1.5]), ["both"])
    assert fit.x[0] == pytest.approx(1.5, abs=1e-6)
