"""The same parameter study through local processes and a Dask LocalCluster gives identical results."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.executors import run_cases
from jointmodeller.app.parameter_study import parameter_study, study_run
from jointmodeller.core.studies.laxity_examples import synthetic_laxity_case

CASES = [{"stiffness_scale": (a, b), "steps": 3} for a, b in ((1.0, 1.0), (0.6, 1.0), (1.0, 1.8), (1.5, 0.7))]


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    yield cluster
    cluster.close()


@pytest.mark.slow
def test_processes_and_dask_give_identical_results(dask_cluster):
    local = run_cases(synthetic_laxity_case, CASES, max_workers=2)
    seen = []
    remote = run_cases(synthetic_laxity_case, CASES, scheduler=dask_cluster.scheduler_address,
                       progress=lambda i, n: seen.append((i, n)))
    assert seen[-1] == (4, 4)
    assert [r["params"] for r in remote] == [r["params"] for r in local]  # case order kept
    for a, b in zip(local, remote):
        assert a["laxity"] == b["laxity"]  # bit-identical
        assert a["values"] == b["values"]
    lax = [r["laxity"] for r in local]
    assert len(set(lax)) == 4 and lax[1] > lax[0]  # the cases really differ (softer lateral side: laxer)


@pytest.mark.slow
def test_parameter_study_on_a_project_lands_in_one_run(project, dask_cluster):
    cases = [{"stiffness": {"lateral collateral": s}} for s in (0.5, 1.0, 2.0)]
    from distributed import Client

    with Client(dask_cluster) as client:
        run = parameter_study(project, "vv", cases, scheduler=client)
    assert run.study == "laxity_study" and run.parameters["executor"] == "dask"
    assert run.labels["parameters"] == ["stiffness:lateral collateral"]
    np.testing.assert_allclose(run.series["parameters"][:, 0], [0.5, 1.0, 2.0])
    lax = run.series["laxity"]
    assert lax[0] > lax[1] > lax[2]
    # the same cases in this process give the same numbers
    from jointmodeller.app.parameter_study import laxity_case
    direct = study_run([laxity_case({"project": project, "experiment": "vv", **c}) for c in cases], "inline")
    np.testing.assert_array_equal(direct.series["laxity"], lax)
    np.testing.assert_array_equal(direct.series["values"], run.series["values"])


def test_empty_study():
    assert run_cases(synthetic_laxity_case, []) == []
