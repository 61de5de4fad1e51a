"""The tree equilibrium's dogleg step (core.studies.tree_equilibrium.dogleg_step) against its
definition: the Newton step when it fits the trust region, steepest descent in the region's metric
when even the Cauchy point does not, and in between a step on the boundary that lowers the model at
least as much as the Cauchy point (Nocedal & Wright, Lemma 4.2 / Theorem 4.4)."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.studies.tree_equilibrium import dogleg_step


def _problem(seed: int, d: int = 6, weak: float = 1.0):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.normal(size=(d, d)))[0]
    s = np.geomspace(1.0, 1e3, d)
    s[0] *= weak  # a nearly slack direction when weak is small
    J = -(U * s) @ U.T  # a stiffness K = -J, symmetric positive definite
    r = rng.normal(size=d)
    W = np.diag(rng.uniform(0.5, 2.0, d))
    B = rng.normal(size=(d, d))
    G = B @ B.T + d * np.eye(d)
    return J, r, W, G


def _size(z, G):
    return float(np.sqrt(z @ G @ z))


def _model(J, r, W, z):
    m = W @ (r + J @ z)
    return float(m @ m)


@pytest.mark.parametrize("seed", range(5))
def test_newton_step_when_it_fits(seed):
    J, r, W, G = _problem(seed)
    z_n = np.linalg.solve(J, -r)
    z, predicted = dogleg_step(J, r, W, G, radius=2.0 * _size(z_n, G))
    np.testing.assert_allclose(z, z_n, rtol=1e-12, atol=1e-15)
    b = W @ r
    assert predicted == pytest.approx(float(b @ b), rel=1e-9)  # the model's residual is zero there


@pytest.mark.parametrize("seed", range(5))
def test_steepest_descent_in_the_metric_when_the_region_is_small(seed):
    J, r, W, G = _problem(seed)
    g = (W @ J).T @ (W @ r)
    p = -np.linalg.solve(G, g)
    radius = 1e-6 * _size(p, G)
    z, predicted = dogleg_step(J, r, W, G, radius)
    assert _size(z, G) == pytest.approx(radius, rel=1e-12)
    cos = float(z @ G @ p) / (_size(z, G) * _size(p, G))
    assert cos == pytest.approx(1.0, abs=1e-12)
    assert predicted > 0.0


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weak", [1.0, 1e-9])
def test_boundary_step_beats_the_cauchy_point(seed, weak):
    J, r, W, G = _problem(seed, weak=weak)
    b = W @ r
    A = W @ J
    g = A.T @ b
    p = -np.linalg.solve(G, g)
    z_n = np.linalg.solve(J, -r)
    for fraction in (0.1, 0.5, 0.9):
        radius = fraction * _size(z_n, G)
        z, predicted = dogleg_step(J, r, W, G, radius)
        assert _size(z, G) <= radius * (1.0 + 1e-12)
        # the Cauchy point: the model's minimum along p within the region
        Ap = A @ p
        tau = min(-float(g @ p) / float(Ap @ Ap), radius / _size(p, G))
        cauchy = _model(J, r, W, tau * p)
        assert _model(J, r, W, z) <= cauchy * (1.0 + 1e-12) + 1e-15
        # both sides round z's components, as large as cond(J)·|r|: relative error ~ cond(J)·eps
        rel = max(1e-9, 10.0 * np.linalg.cond(J) * np.finfo(float).eps)
        assert predicted == pytest.approx(float(b @ b) - _model(J, r, W, z), rel=rel)
        assert predicted > 0.0


def test_singular_stiffness_still_gives_a_descent_step():
    J, r, W, G = _problem(0)
    J[:, 0] = 0.0  # a slack direction: the stiffness is singular
    J[0, :] = 0.0
    z, predicted = dogleg_step(J, r, W, G, radius=1.0)
    assert z is not None and np.all(np.isfinite(z))
    assert _size(z, G) <= 1.0 + 1e-12
    assert predicted > 0.0
