"""Issue 15, ``laxity.calibrate_s``: the calibration's Jacobian by the implicit-function theorem at each
sweep's own equilibria (core.studies.laxity.equilibrium_sensitivity), checked against its oracle —
central-difference sensitivity sweeps — and used by the fit instead of them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from jointmodeller.core.studies.calibration import calibrate
from jointmodeller.core.studies.laxity import run_sweep, tissue_parameter_wrench
from jointmodeller.core.studies.laxity_examples import LIGAMENT_GROUPS, synthetic_protocol, two_condyle_joint


def fd_columns(sweep, x: np.ndarray, h: float) -> np.ndarray:
    """Central-difference sensitivity columns (k, p): (m(x_j(1 + h)) − m(x_j(1 − h))) / (2 h x_j)."""
    cols = []
    for j in range(x.size):
        plus, minus = x.copy(), x.copy()
        plus[j] *= 1.0 + h
        minus[j] *= 1.0 - h
        cols.append((sweep(plus) - sweep(minus)) / (2.0 * h * x[j]))
    return np.array(cols).T


def oracle_tolerance(error: np.ndarray, x: np.ndarray, h: float, f_h: np.ndarray, f_2h: np.ndarray) -> np.ndarray:
    """What the finite-difference oracle can be trusted to (k, p): the noise of two sweeps each within
    ``error`` (k,) of their equilibria (the sweep's tolerance through the inverse Newton Jacobian,
    SweepStarts.measure_error) over the step 2·h·x_j, plus the truncation at h, which the column at 2h
    shows (4× the truncation at h, so |F_h − F_2h| ≈ 3× it bounds it)."""
    return 2.0 * error[:, None] / (2.0 * h * x[None, :]) + np.abs(f_h - f_2h)


@pytest.mark.slow
def test_implicit_sensitivities_match_sensitivity_sweeps_on_the_synthetic_joint():
    """Stiffness and slack scales of both ligament groups, on the two-condyle joint with its analytic
    contact: dm/dp from the sweep's own solutions equals the difference quotient of warm-started
    sweeps at p(1 ± h) within what those can resolve."""
    stiffness, slack = np.array([1.1, 0.9]), np.array([1.0, 1.01])
    base, p0, q0, frames = two_condyle_joint()
    protocol = synthetic_protocol(frames, steps=4)
    rows = [np.flatnonzero(LIGAMENT_GROUPS == g) for g in range(2)]
    system, *_ = two_condyle_joint(stiffness_scale=tuple(stiffness), slack_scale=tuple(slack))
    wrench = tissue_parameter_wrench(base.tissues, None, rows, base.n_bodies, stiffness, slack)
    res = run_sweep(system, protocol, p0, q0, parameter_wrench=wrench)
    assert res.sensitivity is not None and res.sensitivity.shape == (res.loads.size, 4)
    error = res.starts.measure_error(protocol.measure, res.loads)
    x = np.concatenate([stiffness, slack])

    def sweep(z: np.ndarray) -> np.ndarray:
        s, *_ = two_condyle_joint(stiffness_scale=tuple(z[:2]), slack_scale=tuple(z[2:]))
        return run_sweep(s, protocol, p0, q0, warm_from=res.starts).measure

    h = 1e-3
    f_h, f_2h = fd_columns(sweep, x, h), fd_columns(sweep, x, 2 * h)
    tol = oracle_tolerance(error, x, h, f_h, f_2h)
    assert np.all(np.abs(res.sensitivity - f_h) <= tol), (res.sensitivity - f_h, tol)
    assert np.all(res.sensitivity_error <= 1e-3 * np.abs(res.sensitivity).max(axis=0))  # smooth: tight
    assert np.all(np.abs(f_h[1:]) > 10 * tol[1:])  # the columns are far above what the check allows
    # stiffer ligaments, smaller laxity: each stiffness column opposes the curve away from zero load
    loaded = res.loads != 0
    assert np.all(res.sensitivity[loaded, :2] * res.measure[loaded, None] < 0)


def test_without_a_parameter_wrench_a_sweep_carries_no_sensitivity():
    system, p0, q0, frames = two_condyle_joint()
    assert run_sweep(system, synthetic_protocol(frames, steps=2), p0, q0).sensitivity is None


@pytest.mark.slow
def test_the_fit_takes_the_simulators_own_jacobian_instead_of_difference_columns():
    """calibrate(jacobian=...): no sensitivity simulations at all (simulate_many never runs), the
    scales recovered as with columns; where the simulator has no derivative (None), columns again."""
    true = np.array([1.3, 0.8])
    base, p0, q0, frames = two_condyle_joint()
    protocol = synthetic_protocol(frames, steps=4)
    rows = [np.flatnonzero(LIGAMENT_GROUPS == g) for g in range(2)]
    system, *_ = two_condyle_joint(stiffness_scale=tuple(true))
    measured = run_sweep(system, protocol, p0, q0).measure
    own: dict[bytes, np.ndarray] = {}
    column_sims = []

    def simulate(x):
        s, *_ = two_condyle_joint(stiffness_scale=tuple(x))
        res = run_sweep(s, protocol, p0, q0,
                        parameter_wrench=tissue_parameter_wrench(base.tissues, None, rows, base.n_bodies, x))
        own[np.asarray(x, float).tobytes()] = res.sensitivity
        return res.measure

    def simulate_many(base_x, points):
        column_sims.extend(points)
        return [simulate(q) for q in points]

    fit = calibrate(simulate, measured, np.ones(2), np.full(2, 0.2), np.full(2, 5.0), ["lateral", "medial"],
                    simulate_many=simulate_many, jacobian=lambda x: own.get(np.asarray(x, float).tobytes()))
    assert fit.success, fit.message
    np.testing.assert_allclose(fit.x, true, rtol=1e-4)
    assert column_sims == []
    assert fit.evaluations <= 2 * fit.iterations + 1  # a trial (and at most one line point) per iteration

    fallback = calibrate(simulate, measured, np.ones(2), np.full(2, 0.2), np.full(2, 5.0), ["lateral", "medial"],
                         simulate_many=simulate_many, jacobian=lambda x: None)
    assert fallback.success and len(column_sims) >= 4  # two columns, two sweeps each
    np.testing.assert_allclose(fallback.x, true, rtol=1e-4)


@pytest.fixture(scope="module")
def measured_project():
    from jointmodeller.app.laxity import find_experiment, run_laxity
    from jointmodeller.model.specs import MeasuredPoint
    from tests.app.laxity.conftest import synthetic_project
    from tests.app.laxity.test_calibration_issue15 import with_slack_bundle

    truth = with_slack_bundle(synthetic_project(lateral_k=2e5 * 1.3, medial_k=2e5 * 0.8, steps=3))
    run = run_laxity(truth)
    pts = tuple(MeasuredPoint(float(lo), float(v), 0) for lo, v in zip(run.series["load"], run.series["measure"]))
    start = with_slack_bundle(synthetic_project(steps=3))
    return start.with_rows("experiments", (replace(find_experiment(start, "vv"), measured=pts),))


@pytest.mark.slow
def test_app_calibration_by_implicit_sensitivities_needs_no_sensitivity_sweeps(measured_project):
    """The app's default: the same scales as with sensitivity sweeps, the same decision on the bundle
    the data cannot see, in a fraction of the simulations (on this case 15 against 53)."""
    from jointmodeller.app.calibration import calibrate_experiment

    _, implicit = calibrate_experiment(measured_project, "vv")
    _, sweeps = calibrate_experiment(measured_project, "vv", sensitivities="sweeps")
    assert implicit.success and sweeps.success, (implicit.message, sweeps.message)
    np.testing.assert_allclose(implicit.x, sweeps.x, rtol=0, atol=np.nanmax(implicit.accuracy) + 1e-9)
    assert implicit.identifiability.fixed.keys() == sweeps.identifiability.fixed.keys() == {
        "stiffness scale: loose capsule"}
    assert implicit.evaluations <= 2 * implicit.iterations + 1 < sweeps.evaluations
    with pytest.raises(ValueError, match="sensitivities"):
        calibrate_experiment(measured_project, "vv", sensitivities="adjoint")


@pytest.mark.slow
def test_implicit_sensitivities_match_sensitivity_sweeps_on_the_demo():
    """The demo elbow (mesh contact, wrapped paths) at the benchmark's measured loads: the implicit
    columns against central-difference sweeps at the calibration's own step, within what those
    resolve (their error bound from the sweep tolerance, and their truncation). With contact the
    contact points active at each solution are those the finite-difference Newton Jacobian saw."""
    from jointmodeller.app.calibration import LaxitySimulator, SimulatorSpec
    from jointmodeller.app.demo import build_demo_project
    from jointmodeller.app.laxity import build_joint, find_experiment
    from jointmodeller.model.specs import MeasuredPoint

    project = build_demo_project()
    experiment = find_experiment(project)
    loads = np.arange(-100.0, 100.0 + 1e-9, 20.0)
    project = project.with_rows("experiments", (replace(experiment, measured=tuple(
        MeasuredPoint(float(lo), 0.0, 0) for lo in loads)),))
    groups = ["MCL anterior bundle", "radial collateral ligament", "MCL posterior bundle"]
    sim = LaxitySimulator(SimulatorSpec(project, experiment.name, groups, False, loads), build_joint(project))
    x = np.array([1.1, 0.9, 1.0])
    res = sim.sweep(x)
    own = sim.sensitivity(x, res)
    _, starts, error = sim.values(res)
    h = 0.024  # the calibration's step on this case (docs/laxity.md)

    def sweep(z):
        return sim.run(z, starts)[0]

    f_h, f_2h = fd_columns(sweep, x, h), fd_columns(sweep, x, 2 * h)
    # and the implicit columns' own bound: the error of the Newton Jacobians (central differences on
    # the contact's noise) through J⁻¹ — a forward-difference Jacobian was off by 40 % at 100 N here
    tol = oracle_tolerance(error, x, h, f_h, f_2h) + res.sensitivity_error[sim.index]
    assert np.all(np.abs(own - f_h) <= tol), (own - f_h, tol)
    # that bound is a worst case (absolute values through J⁻¹): where the contact stiffens it grows to
    # the size of a column. Over the whole curve the two agree far closer than it
    gap = float(np.linalg.norm(own - f_h) / np.linalg.norm(f_h))
    assert gap < 0.1
