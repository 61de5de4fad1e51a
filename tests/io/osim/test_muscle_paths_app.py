"""The muscle-path use case: run record, CSV export, plot, stored run."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from jointmodeller.app.muscle_paths import (
    list_coordinates,
    muscle_paths_command,
    muscle_paths_run,
    plot_muscle_paths,
    write_muscle_paths_csv,
)
from jointmodeller.app.osim_import import wrap_ranges
from tests.io.osim.test_arm26 import reference_csv


def test_run_csv_and_plot(arm26, tmp_path, artifacts_dir):
    project, report = arm26
    run = muscle_paths_run(project, "r_elbow_flex", 0, 130, 5, wrap_ranges=wrap_ranges(report))
    assert run.status == "completed" and run.parameters["unit"] == "deg"
    assert run.series["r_elbow_flex_deg"] == pytest.approx(np.arange(0, 131, 5))
    assert run.series["length_m"].shape == (27, 6)
    ref = reference_csv()
    j = run.labels["length_m"].index("BRA")
    assert run.series["length_m"][:, j] == pytest.approx(ref["BRA"][:, 1], abs=0.5e-3)
    assert run.summary["BRA"]["moment_arm_peak_m"] > 0  # a flexor
    assert run.summary["TRIlong"]["moment_arm_peak_m"] < 0  # an extensor
    out = write_muscle_paths_csv(run, tmp_path / "arm.csv")
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 27 * 6
    first = next(r for r in rows if r["attachment"] == "TRIlat" and r["r_elbow_flex_deg"] == "0")
    assert float(first["length_mm"]) == pytest.approx(ref["TRIlat"][0, 1] * 1e3, abs=0.5)
    png = plot_muscle_paths(run, artifacts_dir / "arm26_muscle_paths.png", reference=ref)
    assert png.stat().st_size > 10_000


def test_failed_runs_say_why(arm26):
    project, _ = arm26
    bad = muscle_paths_run(project, "no_such_coordinate")
    assert bad.status == "failed" and "no_such_coordinate" in bad.message
    assert muscle_paths_run(project, "r_elbow_flex", 10, 0, 5).status == "failed"


def test_command_stores_the_run(arm26, tmp_path):
    from jointmodeller.persistence.store import ProjectStore, save_project

    project, _ = arm26
    path = tmp_path / "arm.jmdb"
    save_project(path, project)
    run = muscle_paths_command(path, "r_elbow_flex", tmp_path / "out", 0, 90, 30)
    assert run.status == "completed" and run.id is not None
    assert (tmp_path / "out" / "muscle_paths_r_elbow_flex.csv").is_file()
    assert (tmp_path / "out" / "muscle_paths_r_elbow_flex.png").is_file()
    with ProjectStore(path) as store:
        back = store.load_run(run.id)
    assert back.series["moment_arm_m"].shape == (4, 6)


def test_coordinates_and_fixed_pose(arm26):
    project, report = arm26
    assert list_coordinates(project) == [("r_shoulder_elev", "deg"), ("r_elbow_flex", "deg")]
    low = muscle_paths_run(project, "r_elbow_flex", 0, 90, 45, wrap_ranges=wrap_ranges(report))
    high = muscle_paths_run(project, "r_elbow_flex", 0, 90, 45, wrap_ranges=wrap_ranges(report),
                            fixed={"r_shoulder_elev": 60.0}, opensim_compatible=True)
    assert high.parameters["opensim_compatible"] is True
    assert high.parameters["fixed"] == {"r_shoulder_elev": 60.0}
    j = high.labels["length_m"].index("BRA")  # one-joint muscle: the shoulder does not matter
    assert high.series["length_m"][:, j] == pytest.approx(low.series["length_m"][:, j], abs=1e-12)
    k = high.labels["length_m"].index("BIClong")  # two-joint muscle: it does
    assert np.abs(high.series["length_m"][:, k] - low.series["length_m"][:, k]).min() > 1e-3
