"""Issue 15 item 7: a calibration that finishes and says how far it is — recovery within a bound from
the sweep's own tolerance, identifiability by name, a time budget with the best point so far,
progress in iterations and cost, sensitivity sweeps on other executors, and the CLI's lines."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from jointmodeller.core.studies.calibration import (
    CalibrationProgress,
    calibrate,
    data_resolution,
)
from jointmodeller.core.studies.laxity import run_sweep
from jointmodeller.core.studies.laxity_examples import synthetic_protocol, two_condyle_joint

TRUE = np.array([1.3, 0.8])


@pytest.fixture(scope="module")
def synthetic():
    """The two-condyle joint with its lateral bundles ×1.3 and medial ×0.8: 'measured' curve and the
    bound on its error that the sweep's tolerance allows (SweepStarts.measure_error)."""
    system, p0, q0, frames = two_condyle_joint(stiffness_scale=tuple(TRUE))
    protocol = synthetic_protocol(frames, steps=4)
    truth = run_sweep(system, protocol, p0, q0)
    return protocol, truth.measure, truth.starts.measure_error(protocol.measure, truth.loads)


def simulator(protocol, map_scales=lambda x: x):
    """simulate(x) on the synthetic joint, and the error bound of the last sweep."""
    last = {}

    def simulate(x):
        s, p, q, _ = two_condyle_joint(stiffness_scale=tuple(map_scales(np.asarray(x))))
        res = run_sweep(s, protocol, p, q)
        last["error"] = res.starts.measure_error(protocol.measure, res.loads)
        return res.measure

    return simulate, (lambda: last["error"])


@pytest.mark.slow
def test_recovers_known_scales_within_the_bound_from_the_sweep_tolerance(synthetic):
    protocol, measured, truth_error = synthetic
    simulate, error = simulator(protocol)
    seen: list[CalibrationProgress] = []
    fit = calibrate(simulate, measured, np.ones(2), np.full(2, 0.2), np.full(2, 5.0), ["lateral", "medial"],
                    simulation_error=error, data_resolution=float(truth_error.max()), progress=seen.append)
    assert fit.status == "converged" and fit.success, fit.message
    assert fit.rmse_initial > 0.05  # the start really is off
    # accuracy: |A⁺| (ε_sim + ε_data)/σ + the step not taken — the sweep tolerance through the fit
    assert np.all(fit.accuracy < 1e-3)  # a bound that means something (the sweeps solve to 1e-6 N)
    assert np.all(np.abs(fit.x - TRUE) <= fit.accuracy), (fit.x - TRUE, fit.accuracy)
    # progress: iteration 0 at the start, then one report per iteration with a falling cost
    assert [s.iteration for s in seen] == list(range(fit.iterations + 1))
    assert all(b.cost < a.cost for a, b in zip(seen, seen[1:]))
    assert seen[-1].evaluations <= fit.evaluations and "iteration" in seen[-1].line()


@pytest.mark.slow
def test_a_parameter_without_effect_is_fixed_and_named(synthetic):
    protocol, measured, truth_error = synthetic
    simulate, error = simulator(protocol, lambda x: x[:2])  # the third scale reaches no tissue
    fit = calibrate(simulate, measured, np.ones(3), np.full(3, 0.2), np.full(3, 5.0),
                    ["lateral", "medial", "unused bundle"], simulation_error=error,
                    data_resolution=float(truth_error.max()))
    assert set(fit.identifiability.fixed) == {"unused bundle"}
    assert "no measurable effect" in fit.identifiability.fixed["unused bundle"]
    assert "unused bundle" in fit.message
    assert fit.x[2] == 1.0 and np.isnan(fit.std[2])  # left where it was, not wandering
    np.testing.assert_allclose(fit.x[:2], TRUE, atol=1e-3)
    assert fit.as_dict()["parameters"]["unused bundle"]["fixed"]


@pytest.mark.slow
def test_collinear_parameters_are_grouped_by_name(synthetic):
    """Two scales that act only through their product cannot be told apart: one common scale."""
    protocol, measured, truth_error = synthetic
    simulate, error = simulator(protocol, lambda x: np.array([x[0] * x[2], x[1]]))
    fit = calibrate(simulate, measured, np.ones(3), np.full(3, 0.2), np.full(3, 5.0),
                    ["lateral", "medial", "lateral twin"], simulation_error=error,
                    data_resolution=float(truth_error.max()))
    assert fit.identifiability.groups == [["lateral", "lateral twin"]]
    assert not fit.identifiability.fixed
    assert fit.x[0] == pytest.approx(fit.x[2])  # moved together from their common start
    assert fit.x[0] * fit.x[2] == pytest.approx(TRUE[0], rel=1e-3)
    assert fit.as_dict()["parameters"]["lateral twin"]["grouped_with"] == ["lateral"]


def test_time_budget_ends_with_the_best_point_so_far(synthetic):
    protocol, measured, _ = synthetic
    simulate, error = simulator(protocol)
    calls = []

    def slow(x):
        calls.append(x)
        time.sleep(0.05)
        return simulate(x)

    fit = calibrate(slow, measured, np.ones(2), np.full(2, 0.2), np.full(2, 5.0), ["lateral", "medial"],
                    simulation_error=error, max_wall_s=0.3)
    assert fit.status == "budget" and not fit.success
    assert "wall-time budget of 0.3 s" in fit.message
    start_cost = 0.5 * float(np.sum((simulate(np.ones(2)) - measured) ** 2))
    assert fit.cost <= start_cost  # the best point simulated, never worse than the start
    np.testing.assert_allclose(fit.residuals, simulate(fit.x) - measured, atol=1e-9)
    assert 1 <= fit.evaluations <= len(calls)


def test_a_user_stop_is_its_own_status(synthetic):
    protocol, measured, _ = synthetic
    simulate, error = simulator(protocol)
    fit = calibrate(simulate, measured, np.ones(2), np.full(2, 0.2), np.full(2, 5.0), ["lateral", "medial"],
                    simulation_error=error, cancel=lambda: True)
    assert fit.status == "stopped" and fit.evaluations == 0
    np.testing.assert_array_equal(fit.x, np.ones(2))


def test_data_resolution_from_rounding_and_repeats():
    assert data_resolution([0.12, -1.5, 2.25]) == pytest.approx(0.01 / np.sqrt(12))
    assert data_resolution([1.0, 2.0, 3.0]) == pytest.approx(1.0 / np.sqrt(12))
    scatter = data_resolution([1.0, 1.2, 2.0, 2.2], loads=[10.0, 10.0, 20.0, 20.0])
    assert scatter == pytest.approx(np.sqrt((2 * 0.01 + 2 * 0.01) / 2))
    assert data_resolution(np.array([np.pi, np.e])) < 1e-12


# ------------------------------------------------------------------------------------------------
# the app: a synthetic project (tests/app/laxity/conftest.py) with a bundle that never tightens
# ------------------------------------------------------------------------------------------------
def with_slack_bundle(project):
    """The synthetic project plus a tension-only bundle far longer than its span (never taut)."""
    from jointmodeller.model.specs import Attachment, SpringType

    loose = SpringType("loose capsule", kx=(5.0e4,), tension_only=True)
    att = Attachment("loose capsule", "loose capsule", "upper", "lower", (0.0, 0.03, -0.14), (0.0, 0.03, 0.09),
                     initial_length_m=0.2)
    return replace(project, springs=(*project.springs, loose), attachments=(*project.attachments, att))


@pytest.fixture(scope="module")
def measured_project():
    from jointmodeller.app.laxity import find_experiment, run_laxity
    from jointmodeller.model.specs import MeasuredPoint
    from tests.app.laxity.conftest import synthetic_project

    truth = with_slack_bundle(synthetic_project(lateral_k=2e5 * 1.3, medial_k=2e5 * 0.8, steps=3))
    run = run_laxity(truth)
    assert run.status == "completed", run.message
    pts = tuple(MeasuredPoint(float(lo), float(v), 0) for lo, v in zip(run.series["load"], run.series["measure"]))
    start = with_slack_bundle(synthetic_project(steps=3))
    return start.with_rows("experiments", (replace(find_experiment(start, "vv"), measured=pts),))


@pytest.mark.slow
def test_app_calibration_names_the_bundle_the_data_cannot_see(measured_project):
    from jointmodeller.app.calibration import calibrate_experiment

    seen = []
    fitted, fit = calibrate_experiment(measured_project, "vv", progress=seen.append)
    scales = dict(zip(fit.names, fit.x))
    assert "stiffness scale: loose capsule" in fit.identifiability.fixed
    assert scales["stiffness scale: loose capsule"] == 1.0
    assert scales["stiffness scale: lateral collateral"] == pytest.approx(1.3, rel=0.02)
    assert scales["stiffness scale: medial collateral"] == pytest.approx(0.8, rel=0.02)
    assert fit.success, fit.message
    assert seen[0].iteration == 0 and seen[-1].iteration == fit.iterations and seen[-1].unit == "deg"
    lateral = scales["stiffness scale: lateral collateral"]
    assert fitted.spring("lateral collateral").kx[0] == pytest.approx(2e5 * lateral)


@pytest.mark.slow
def test_app_calibration_on_dask_gives_the_sequential_numbers(measured_project):
    """The columns' sweeps on a Dask cluster (in-process workers here, to stay fast) are the same
    sweeps from the same warm starts: the same fit."""
    distributed = pytest.importorskip("dask.distributed")
    from jointmodeller.app.calibration import calibrate_experiment

    groups = ["lateral collateral", "medial collateral"]
    _, here = calibrate_experiment(measured_project, "vv", groups=groups)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        _, there = calibrate_experiment(measured_project, "vv", groups=groups, scheduler=client)
    assert there.executor.startswith("dask (2 workers)")
    np.testing.assert_allclose(there.x, here.x, rtol=0, atol=1e-12)
    assert there.evaluations == here.evaluations


@pytest.mark.slow
def test_app_calibration_on_local_processes_gives_the_sequential_numbers(measured_project):
    """--workers 2: spawned processes that get the project once (pool initializer) and build the
    joint once each."""
    from jointmodeller.app.calibration import calibrate_experiment

    groups = ["lateral collateral", "medial collateral"]
    _, here = calibrate_experiment(measured_project, "vv", groups=groups)
    _, there = calibrate_experiment(measured_project, "vv", groups=groups, workers=2)
    assert there.executor == "processes (2 workers)"
    np.testing.assert_allclose(there.x, here.x, rtol=0, atol=1e-12)


def test_app_calibration_budget_keeps_the_best_scales(measured_project):
    from jointmodeller.app.calibration import calibrate_experiment

    fitted, fit = calibrate_experiment(measured_project, "vv", groups=["lateral collateral", "medial collateral"],
                                       max_wall_s=1e-3)
    assert fit.status == "budget" and "wall-time budget" in fit.message
    np.testing.assert_array_equal(fit.x, np.ones(2))  # nothing better was found in a millisecond
    assert fitted.spring("lateral collateral").kx == measured_project.spring("lateral collateral").kx


@pytest.mark.slow
def test_cli_prints_iterations_and_names_what_it_fixed(measured_project, tmp_path, capsys):
    from jointmodeller.cli import main
    from jointmodeller.persistence.store import save_project

    path = tmp_path / "p.jmdb"
    save_project(path, measured_project)
    assert main(["laxity", str(path), "--calibrate", "--out", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert "calibrate: iteration 0: cost" in err and "calibrate: iteration 1: cost" in err
    assert "%" not in err.split("calibrate:", 1)[1]  # iterations and cost, no percentage
    assert "calibration converged after" in out
    assert "stiffness scale: loose capsule: fixed at 1, no measurable effect" in out
    assert "stiffness scale: lateral collateral: 1 -> 1.3" in out


def test_cli_refuses_workers_with_a_scheduler(measured_project, tmp_path, capsys):
    from jointmodeller.cli import main
    from jointmodeller.persistence.store import save_project

    path = tmp_path / "p.jmdb"
    save_project(path, measured_project)
    assert main(["laxity", str(path), "--calibrate", "--workers", "2", "--scheduler", "local",
                 "--out", str(tmp_path / "out")]) == 2
    assert "give one" in capsys.readouterr().err
