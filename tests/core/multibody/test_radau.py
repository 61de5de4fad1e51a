"""The Radau IIA with RADAU5's carried Newton factor (core.multibody.radau) against exact solutions and
scipy's own Radau: the same method, so the same accuracy, with fewer Newton iterations."""

import numpy as np
import pytest
from scipy.integrate import Radau, solve_ivp
from scipy.linalg import expm

from jointmodeller.core.multibody.radau import NEWTON_TOLERANCE, CarriedRateRadau


def _run(solver_cls, fun, t_end, y0, rtol, atol, jac=None):
    solver = solver_cls(fun, 0.0, np.asarray(y0, float), t_end, rtol=rtol, atol=atol, jac=jac)
    while solver.status == "running":
        solver.step()
    assert solver.status == "finished"
    return solver


def _stiff_linear():
    """y' = A y: a decay at 1/s, a stiff decay at 1e4/s and a 160 Hz oscillation damped at 1 %."""
    w = 1000.0
    A = np.zeros((4, 4))
    A[0, 0] = -1.0
    A[1, 1] = -1e4
    A[1, 0] = 1e4  # the stiff component follows the slow one
    A[2, 3] = 1.0
    A[3, 2] = -w * w
    A[3, 3] = -2 * 0.01 * w
    return A


def test_a_stiff_linear_system_is_solved_to_its_tolerance_in_one_newton_iteration_a_step():
    A = _stiff_linear()
    y0 = np.array([1.0, 0.0, 0.0, 1.0])
    t_end = 0.2
    rtol, atol = 1e-6, 1e-9
    ours = _run(CarriedRateRadau, lambda t, y: A @ y, t_end, y0, rtol, atol, jac=lambda t, y: A)
    exact = expm(A * t_end) @ y0
    theirs = _run(Radau, lambda t, y: A @ y, t_end, y0, rtol, atol, jac=lambda t, y: A)
    # local error control, each step's error within the tolerance, in a system whose errors decay
    # or keep their size (no growing mode): a global error of a few tolerances at most (0.2 here)
    scale = atol + rtol * np.abs(exact).max()
    assert np.abs(ours.y - exact).max() < 10 * scale
    assert np.abs(theirs.y - exact).max() < 10 * scale  # the same bound holds for scipy's
    # with the exact Jacobian of a linear system one Newton iteration solves the stages exactly: the
    # carried factor lets every step after the first few stop there, where scipy's iterates twice
    assert ours.newton_iterations < 1.5 * _steps(ours), (ours.newton_iterations, _steps(ours))


def _steps(solver) -> int:
    return solver.steps_taken


@pytest.fixture(autouse=True)
def _count_steps(monkeypatch):
    """Count each solver's accepted steps (OdeSolver keeps none)."""
    for cls in (CarriedRateRadau, Radau):
        original = cls.step

        def step(self, original=original):
            out = original(self)
            self.steps_taken = getattr(self, "steps_taken", 0) + (self.status != "failed")
            return out

        monkeypatch.setattr(cls, "step", step)


def _robertson(t, y):
    """Robertson's chemical kinetics (Hairer & Wanner II, §IV.1): stiff and nonlinear."""
    y1, y2, y3 = y
    return np.array([-0.04 * y1 + 1e4 * y2 * y3, 0.04 * y1 - 1e4 * y2 * y3 - 3e7 * y2 * y2, 3e7 * y2 * y2])


def test_robertsons_kinetics_match_a_tight_reference_and_conserve_mass():
    y0 = [1.0, 0.0, 0.0]
    t_end = 40.0
    reference = solve_ivp(_robertson, (0.0, t_end), y0, method="Radau", rtol=1e-12, atol=1e-16).y[:, -1]
    rtol, atol = np.array(1e-6), np.array([1e-8, 1e-12, 1e-8])
    ours = _run(CarriedRateRadau, _robertson, t_end, y0, rtol, atol)
    theirs = _run(Radau, _robertson, t_end, y0, rtol, atol)
    err_ours = np.abs(ours.y - reference) / (atol + rtol * np.abs(reference))
    err_theirs = np.abs(theirs.y - reference) / (atol + rtol * np.abs(reference))
    # within the tolerance of the global solution to a few steps' local errors (~90 steps; 0.04 here)
    assert err_ours.max() < 10
    assert err_theirs.max() < 10  # the same bound holds for scipy's
    # the conservation law y1 + y2 + y3 = 1 holds to the tolerance (each stage conserves it exactly)
    assert abs(ours.y.sum() - 1.0) < 10 * rtol


def test_the_transformation_matrices_are_inverses_and_diagonalise_the_radau_iia_matrix():
    """T and TI (typed from RADAU5) against the Butcher matrix of Radau IIA order 5 (Hairer & Wanner
    II, Table IV.5.6): T⁻¹ = TI, and TI A⁻¹ T has the real eigenvalue MU_REAL and the pair MU_COMPLEX."""
    from jointmodeller.core.multibody.radau import MU_COMPLEX, MU_REAL, TI, T

    s6 = np.sqrt(6.0)
    A = np.array([[(88 - 7 * s6) / 360, (296 - 169 * s6) / 1800, (-2 + 3 * s6) / 225],
                  [(296 + 169 * s6) / 1800, (88 + 7 * s6) / 360, (-2 - 3 * s6) / 225],
                  [(16 - s6) / 36, (16 + s6) / 36, 1 / 9]])
    np.testing.assert_allclose(T @ TI, np.eye(3), atol=1e-14)
    L = TI @ np.linalg.inv(A) @ T
    np.testing.assert_allclose(L[0], [MU_REAL, 0, 0], atol=1e-12)
    block = L[1:, 1:]  # [[α, −β], [β, α]] for the pair α ± iβ
    np.testing.assert_allclose(sorted(np.linalg.eigvals(block), key=np.imag),
                               sorted([MU_COMPLEX, np.conj(MU_COMPLEX)], key=np.imag), atol=1e-12)


def test_the_newton_tolerance_is_the_documented_fraction_of_the_error_allowance():
    solver = CarriedRateRadau(lambda t, y: -y, 0.0, np.ones(2), 1.0, rtol=1e-4, atol=1e-6)
    assert solver.newton_tol == NEWTON_TOLERANCE
    assert 0.01 <= NEWTON_TOLERANCE <= 0.1  # Hairer & Wanner's range for κ (§IV.8)
