"""App-level laxity use cases on a synthetic project: run, store, import data, compare, calibrate,
report and the CLI entry (laxity_command)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from jointmodeller.app.calibration import calibrate_experiment
from jointmodeller.app.laxity import find_experiment, run_laxity
from jointmodeller.app.laxity_command import laxity_command
from jointmodeller.app.laxity_report import compare_with_measured, import_measured, simulated_at, write_report
from jointmodeller.io.measured_csv import write_measured_csv
from jointmodeller.model.specs import MeasuredPoint
from jointmodeller.persistence.store import ProjectStore, load_project, save_project


def measured_from(project, noise=0.0, repeats=(0,)):
    run = run_laxity(project)
    assert run.status == "completed", run.message
    rng = np.random.default_rng(1)
    return tuple(MeasuredPoint(float(lo), float(v + rng.normal(0, noise) if noise else v), r)
                 for r in repeats for lo, v in zip(run.series["load"], run.series["measure"]))


def test_run_is_a_mirrored_curve_and_round_trips_through_the_store(project, tmp_path):
    run = run_laxity(project)
    assert run.status == "completed"
    lo, va = run.series["load"], run.series["measure"]
    pos, neg = lo > 0, lo < 0
    np.testing.assert_allclose(va[pos], -va[neg], rtol=1e-6, atol=1e-9)
    assert run.summary["laxity"] == pytest.approx(np.ptp(va))
    assert run.labels["tissue_tension_N"][:2] == ["lateral collateral anterior", "lateral collateral posterior"]
    path = tmp_path / "p.jmdb"
    save_project(path, project)
    with ProjectStore(path) as store:
        rid = store.save_run(run)
        back = store.load_run(rid)
    assert back.study == "laxity"
    np.testing.assert_array_equal(back.series["measure"], va)
    assert back.summary["laxity"] == pytest.approx(run.summary["laxity"])


def test_stiffer_ligaments_give_less_laxity(make_project):
    soft = run_laxity(make_project()).summary["laxity"]
    stiff = run_laxity(make_project(lateral_k=4e5, medial_k=4e5)).summary["laxity"]
    assert stiff < 0.7 * soft


def test_progress_and_stop(project):
    seen = []
    run_laxity(project, progress=lambda i, n, lo, v: seen.append((i, n)))
    assert seen[-1] == (9, 9)
    stopped = run_laxity(project, cancel=lambda: True)
    assert stopped.status == "stopped"
    assert stopped.series["load"].size == 0


def test_unknown_experiment_is_named(project):
    with pytest.raises(KeyError, match="'vv'"):
        find_experiment(project, "nope")


def test_import_and_compare(project, tmp_path, make_project):
    truth = make_project(lateral_k=3e5)
    pts = measured_from(truth)
    write_measured_csv(tmp_path / "m.csv", pts, "varus_valgus_deg")
    with_data = import_measured(project, "vv", tmp_path / "m.csv")
    assert find_experiment(with_data, "vv").measured == pts
    assert find_experiment(project, "vv").measured == ()  # the original is untouched
    run = run_laxity(with_data)
    fit = run.summary["fit"]
    sim = simulated_at(run.series["load"], run.series["measure"], np.array([p.load for p in pts]))
    err = sim - np.array([p.value for p in pts])
    assert fit["rmse"] == pytest.approx(np.sqrt(np.mean(err**2)))
    assert fit["max_abs_error"] == pytest.approx(np.abs(err).max())
    assert fit["max_abs_error"] > 0.01
    same = compare_with_measured(run_laxity(truth), pts)
    assert same["rmse"] < 1e-9


def test_simulated_at_rejects_loads_beyond_the_sweep():
    with pytest.raises(ValueError, match="exceed the simulated range"):
        simulated_at(np.array([0.0, 10.0, -10.0]), np.array([0.0, 1.0, -1.0]), np.array([20.0]))


@pytest.mark.slow
def test_calibration_recovers_stiffness_scales_and_keeps_the_original(project, make_project):
    truth = make_project(lateral_k=2e5 * 1.3, medial_k=2e5 * 0.8)
    exp = replace(find_experiment(project, "vv"), measured=measured_from(truth))
    # the 'measured' loads include values between the sweep's steps
    data = exp.measured + (MeasuredPoint(7.0, float(run_laxity(replace(truth, experiments=(replace(
        exp, steps=21),))).series["measure"][7]), 1),)
    start = project.with_rows("experiments", (replace(exp, measured=data),))
    fitted, fit = calibrate_experiment(start, "vv", groups=["lateral collateral", "medial collateral"])
    scales = dict(zip(fit.names, fit.x))
    assert scales["stiffness scale: lateral collateral"] == pytest.approx(1.3, rel=0.02)
    assert scales["stiffness scale: medial collateral"] == pytest.approx(0.8, rel=0.02)
    lateral_scale = scales["stiffness scale: lateral collateral"]
    assert fitted.spring("lateral collateral").kx[0] == pytest.approx(2e5 * lateral_scale)
    assert start.spring("lateral collateral").kx[0] == 2e5
    assert fitted.info.title.endswith("(calibrated)")
    assert np.all(np.isfinite(fit.std))


def test_report_files(project, tmp_path):
    exp = replace(find_experiment(project, "vv"), measured=measured_from(project, noise=0.02, repeats=(1, 2)))
    project = project.with_rows("experiments", (exp,))
    run = run_laxity(project)
    summary = write_report(tmp_path, project, exp, run)
    for name in ("summary.json", "report.html", "curve.csv", "measured.csv", "curve.png", "tissue_forces.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["laxity"] == pytest.approx(summary["laxity"])
    assert on_disk["fit"]["rmse"] > 0
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64" in html and "laxity" in html
    header = (tmp_path / "curve.csv").read_text().splitlines()[0]
    assert header.startswith("load,varus_valgus_deg,flexion_deg")


@pytest.mark.slow
def test_laxity_command_end_to_end_with_calibration(tmp_path, make_project):
    truth = make_project(lateral_k=2e5 * 1.2, medial_k=2e5 * 1.2)
    write_measured_csv(tmp_path / "m.csv", measured_from(truth), "varus_valgus_deg")
    path = tmp_path / "joint.jmdb"
    save_project(path, make_project())
    stages = set()
    summary = laxity_command(path, data=tmp_path / "m.csv", calibrate=True, out_dir=tmp_path / "out",
                             groups=["lateral collateral", "medial collateral"],
                             progress=lambda stage, i, n: stages.add(stage))
    assert {"sweep", "calibrate"} <= stages
    assert summary["fit"]["rmse"] > 0.01
    fitted = summary["calibration"]["parameters"]
    assert fitted["stiffness scale: lateral collateral"]["fitted"] == pytest.approx(1.2, rel=0.02)
    assert summary["calibrated"]["laxity"] == pytest.approx(np.ptp([p.value for p in measured_from(truth)]), rel=0.01)
    original = load_project(path)
    assert original.spring("lateral collateral").kx[0] == 2e5  # original kept
    calibrated = load_project(summary["calibrated_project"])
    assert calibrated.spring("lateral collateral").kx[0] == pytest.approx(2.4e5, rel=0.02)
    with ProjectStore(path) as store:
        assert [r.study for r in store.list_runs()] == ["laxity"]
    with ProjectStore(summary["calibrated_project"]) as store:
        assert [r.study for r in store.list_runs()] == ["laxity"]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["calibration"]["success"]


@pytest.mark.slow
def test_stiffness_scale_for_a_target_laxity(project):
    from jointmodeller.app.calibration import stiffness_scale_for_laxity

    base = run_laxity(project).summary["laxity"]
    scale = stiffness_scale_for_laxity(project, base / 2, groups=["lateral collateral", "medial collateral"],
                                       bracket=(0.5, 20.0))
    assert scale > 1.5
    stiff = project.with_rows("springs", tuple(
        s.__class__(**{**s.__dict__, "kx": (s.kx[0] * scale,)}) if s.name != "strut" else s for s in project.springs))
    assert run_laxity(stiff).summary["laxity"] == pytest.approx(base / 2, rel=1e-3)


@pytest.mark.slow
def test_calibration_with_slack_lengths(project):
    """Stiffness and slack scale of one group: data from a project whose lateral bundles are 3 %
    shorter at rest and 1.25x stiffer; the fit finds both and writes the rest lengths into the new
    version. (With both groups free, four parameters fit this near-linear curve equally well: the
    reported standard errors then show the non-identifiability.)"""
    from jointmodeller.app.calibration import scaled_project
    from jointmodeller.app.laxity import build_joint

    joint = build_joint(project)
    truth = scaled_project(project, joint, ["lateral collateral"], np.array([1.25]), np.array([0.97]))
    exp = replace(find_experiment(project, "vv"), measured=measured_from(truth))
    start = project.with_rows("experiments", (exp,))
    # a long curved valley (the slack scale, 3 % against a 3 % prestrain, is strongly nonlinear):
    # Gauss–Newton first, then ~30 damped steps along it
    fitted, fit = calibrate_experiment(start, "vv", groups=["lateral collateral"], fit_slack=True, max_iterations=60)
    np.testing.assert_allclose(fit.x, [1.25, 0.97], rtol=0.02)
    assert fit.names == ["stiffness scale: lateral collateral", "slack scale: lateral collateral"]
    lat = [a for a in fitted.attachments if a.spring == "lateral collateral"]
    want = [a for a in truth.attachments if a.spring == "lateral collateral"]
    np.testing.assert_allclose([a.initial_length_m for a in lat], [a.initial_length_m for a in want], rtol=0.005)
    assert all(a.initial_length_m is None for a in start.attachments if a.spring == "lateral collateral")


def test_a_failed_sweep_keeps_the_steps_solved(project, monkeypatch):
    """When an equilibrium cannot be found the run is 'failed', names the load and keeps the curve
    solved so far (the GUI shows it)."""
    from jointmodeller.core.studies import laxity as core

    real = core.QuasiStaticSolver.solve

    def failing(self, x, J=None):
        if self.load.magnitude > 7.0:
            raise core.EquilibriumFailed("line search failed at |r| = 3 N")
        return real(self, x, J)

    monkeypatch.setattr(core.QuasiStaticSolver, "solve", failing)
    run = run_laxity(project)
    assert run.status == "failed"
    assert "load 10 N" in run.message and "line search failed" in run.message
    np.testing.assert_allclose(run.series["load"], [0.0, 5.0])


def test_laxity_command_stores_the_partial_run_and_its_report(project, tmp_path, monkeypatch):
    """Issue 15 item 5: a sweep that fails part-way is stored (its solved steps) and reported, and the
    command's one-line error says so."""
    from jointmodeller.core.studies import laxity as core

    real = core.QuasiStaticSolver.solve

    def failing(self, x, J=None):
        if self.load.magnitude > 7.0:
            raise core.EquilibriumFailed("line search failed at |r| = 3 N")
        return real(self, x, J)

    monkeypatch.setattr(core.QuasiStaticSolver, "solve", failing)
    path = tmp_path / "joint.jmdb"
    save_project(path, project)
    with pytest.raises(RuntimeError, match=r"2 solved step\(s\) are stored as run #1"):
        laxity_command(path, out_dir=tmp_path / "out")
    with ProjectStore(path) as store:
        runs = store.list_runs()
        kept = store.load_run(runs[0].id)
    assert [r.status for r in runs] == ["failed"]
    np.testing.assert_allclose(kept.series["load"], [0.0, 5.0])
    on_disk = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert on_disk["status"] == "failed" and "load 10 N" in on_disk["message"]


def test_measured_points_beyond_the_sweep_are_left_out_in_one_line(project):
    """run --study laxity with measured loads beyond max_load: the sweep's run is completed and the
    comparison covers the swept range, saying how many points it left out."""
    pts = measured_from(project) + (MeasuredPoint(35.0, 1.0, 0), MeasuredPoint(-40.0, -1.0, 0))
    run = run_laxity(project.with_rows("experiments", (replace(find_experiment(project), measured=pts),)))
    assert run.status == "completed"
    assert run.summary["fit"]["points_compared"] == len(pts) - 2
    assert run.summary["fit"]["rmse"] < 1e-9
    assert run.message == (f"2 of {len(pts)} measured points lie outside the swept loads -20..20 "
                           "and were left out of the comparison")


def test_free_bones_without_axes_are_refused_naming_what_to_set(project):
    """No joint and no anatomical axes: refused (global axes are never assumed)."""
    bare = project.with_rows("experiments", (replace(find_experiment(project), axes=()),))
    run = run_laxity(bare)
    assert run.status == "failed"
    assert "set flexion_axis_fixed and long_axis_fixed" in run.message and "'lower' has no joint" in run.message
    half = (("flexion_axis_fixed", (1.0, 0.0, 0.0)),)
    run = run_laxity(project.with_rows("experiments", (replace(find_experiment(project), axes=half),)))
    assert run.status == "failed" and "set long_axis_fixed " in run.message


def test_free_bones_hold_the_experiment_flexion(project):
    """On free bones the JCS flexion is held at flexion_deg (the initial pose reads 0°): the report
    states it, and every loaded pose keeps it."""
    exp = replace(find_experiment(project), flexion_deg=12.0, steps=3)
    run = run_laxity(project.with_rows("experiments", (exp,)))
    assert run.status == "completed", run.message
    assert run.summary["flexion_deg_held"] == 12.0
    assert run.summary["flexion_deg_unloaded"] == pytest.approx(12.0, abs=1e-12)
    np.testing.assert_allclose(run.series["jcs"][:, 0], 0.0, atol=1e-12)
    level = run_laxity(project.with_rows("experiments", (replace(exp, flexion_deg=0.0),)))
    assert level.summary["flexion_deg_unloaded"] == pytest.approx(0.0, abs=1e-12)
    assert abs(run.summary["laxity"] - level.summary["laxity"]) > 1e-3  # the pose really changed


def test_a_wall_time_limit_stops_the_sweep_and_keeps_its_steps(project, monkeypatch, tmp_path):
    """run_laxity(max_wall_s=...) (CLI: laxity/run --max-wall-s): the sweep stops between steps once
    the time is up, as "stopped", with the solved steps; the clock here is a counter (one second per
    look), so the test needs no real time."""
    import itertools

    import jointmodeller.app.laxity as lax

    ticks = itertools.count()

    class Clock:
        @staticmethod
        def perf_counter():
            return float(next(ticks))

    monkeypatch.setattr(lax, "time", Clock)
    run = run_laxity(project, max_wall_s=3.5)  # deadline at 0 + 3.5; polled before each step: 1, 2, 3, 4
    assert run.status == "stopped"
    assert run.message == "stopped at the wall-time limit of 3.5 s with 3 step(s) solved"
    np.testing.assert_allclose(run.series["load"], [0.0, 5.0, 10.0])


def test_laxity_on_distance_fields_is_refused_for_a_project_with_joints(project):
    """A project with joints sweeps on the tree, whose statics freeze contact sets of mesh faces: asking
    for distance fields gets a ValidationError naming the option (nothing runs); an unknown geometry too;
    "auto" (the default) resolves to the exact meshes there and to distance fields on free bones, where
    the option is taken and recorded (here no contact pair: the same curve)."""
    import dataclasses

    from jointmodeller.app.build import build_mechanical_system, resolve_contact_geometry
    from jointmodeller.model.errors import ValidationError
    from jointmodeller.model.specs import JointSpec

    on_joint = dataclasses.replace(project, masses=tuple(
        dataclasses.replace(m, joint=JointSpec(type="free", parent="ground")) if not m.fixed else m
        for m in project.masses))
    with pytest.raises(ValidationError, match="contact geometry.*joints"):
        run_laxity(on_joint, contact_geometry="field")
    with pytest.raises(ValidationError, match="contact geometry.*'mesh'"):
        run_laxity(project, contact_geometry="mesh")
    assert resolve_contact_geometry("auto", study="laxity", tree=True) == "exact"
    assert resolve_contact_geometry("auto", study="laxity", tree=False) == "field"
    assert resolve_contact_geometry("auto", study="dynamics", tree=False) == "field"
    assert resolve_contact_geometry("auto", study="dynamics", tree=True) == "field"
    assert resolve_contact_geometry("auto", study="equilibrium", tree=False) == "exact"
    assert resolve_contact_geometry("exact", study="laxity", tree=False) == "exact"
    assert resolve_contact_geometry("field", study="dynamics", tree=True) == "field"
    with pytest.raises(ValueError, match="'auto'"):  # a builder takes a resolved geometry only
        build_mechanical_system(project, contact_geometry="auto")
    exact, field = run_laxity(project, contact_geometry="exact"), run_laxity(project)
    assert exact.parameters["contact_geometry"] == "exact"
    assert field.status == "completed" and field.parameters["contact_geometry"] == "field"
    assert field.parameters["contact_geometry_requested"] == "auto"
    np.testing.assert_array_equal(field.series["measure"], exact.series["measure"])
