"""Runs that never stopped (issue 19 item 4): `jointmodeller run` has a wall-time and a step limit,
and a run that reaches one — or diverges — ends with a message and is stored as a failed run with
every sample it computed; the runs stored before it are untouched.

The four runaway projects of the issue, at the extreme values validation accepts today
(model.validation: MASS_RANGE_KG, GRAVITY_LIMIT_M_S2, STIFFNESS_LIMIT_N_M, POSITION_LIMIT_M): a
1e-7 kg bone, gravity of 1e3 m/s², a ligament with a 0.99e12 N/m secant and a bone 1 km away. Each
runs on free bodies (scipy's integrators) and on the multibody tree (its own Runge–Kutta, where a
runaway used to hang inside one report interval, past any limit).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from jointmodeller.app.studies import RunBudget, run_dynamics
from jointmodeller.cli import main
from jointmodeller.core.multibody.integrate import simulate as tree_simulate
from jointmodeller.model import validation
from jointmodeller.model.specs import Attachment, JointSpec, Mass, Project, ProjectInfo, SpringType
from jointmodeller.model.validation import validate_project
from jointmodeller.persistence import ProjectStore, save_project

LIMIT_S = 2.0
STEP_LIMIT = 1000
OVERRUN_S = 3.0
"""What a limited run may take beyond its limit: building the system, the last chunk of steps
between two checks, and writing the report (not the solver's own work)."""


def knee(tree: bool) -> Project:
    """A fixed femur and a tibia hanging 0.2 m below it on four ligaments, stretched 10 mm; on the
    tree the tibia rides a free mobilizer (same physics, other integrator)."""
    angles = np.linspace(0.0, 2.0 * np.pi, 4, endpoint=False)
    joint = JointSpec(type="free", parent="ground") if tree else None
    masses = (Mass("femur", mass_kg=2.0, properties_from_mesh=False, position_G=(0.0, 0.0, 0.2), fixed=True),
              Mass("tibia", mass_kg=0.5, properties_from_mesh=False, position_G=(0.0, 0.0, 0.0), joint=joint,
                   inertia_L=((2e-3, 0.0, 0.0), (0.0, 2e-3, 0.0), (0.0, 0.0, 5e-4))))
    atts = tuple(Attachment(f"lig {i}", "ligament", "femur", "tibia", (0.02 * np.cos(a), 0.02 * np.sin(a), -0.1),
                            (0.02 * np.cos(a), 0.02 * np.sin(a), -0.1), initial_length_m=0.19)
                 for i, a in enumerate(angles))
    return Project(info=ProjectInfo(gravity_G=(0.0, 0.0, -9.81)),
                   springs=(SpringType("ligament", kx=(2.0e4,), cx=1.0),), masses=masses, attachments=atts)


def runaway(kind: str, tree: bool) -> Project:
    p = knee(tree)
    tibia = p.masses[1]
    if kind == "light_mass":
        m = validation.MASS_RANGE_KG[0]
        tibia = replace(tibia, mass_kg=m, inertia_L=((m * 1e-4, 0.0, 0.0), (0.0, m * 1e-4, 0.0), (0.0, 0.0, m * 1e-4)))
    elif kind == "strong_gravity":
        p = replace(p, info=replace(p.info, gravity_G=(0.0, 0.0, -validation.GRAVITY_LIMIT_M_S2)))
    elif kind == "stiff_ligament":
        p = replace(p, springs=(replace(p.springs[0], kx=(0.99 * validation.STIFFNESS_LIMIT_N_M,)),))
    elif kind == "far_position":
        tibia = replace(tibia, position_G=(validation.POSITION_LIMIT_M, 0.0, 0.0))
    p = replace(p, masses=(p.masses[0], tibia))
    validate_project(p)  # accepted: the limits, not validation, must stop it
    return p


def _run_limited(tmp_path, capsys, project: Project):
    path = tmp_path / "runaway.jmdb"
    save_project(path, project)
    with ProjectStore(path) as store:  # an earlier run, which must stay as it was
        earlier = run_dynamics(project, t_end=0.001, report_dt=0.001, max_wall_s=LIMIT_S)
        earlier_id = store.save_run(earlier)
        earlier = store.load_run(earlier_id)
    code = main(["run", str(path), "--study", "dynamics", "--max-wall-s", str(LIMIT_S),
                 "--max-steps", str(STEP_LIMIT)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert main(["runs", str(path)]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert len(listing) == 2 and " failed " in listing[1], listing
    with ProjectStore(path) as store:
        runs = store.list_runs()
        assert store.load_run(earlier_id) == earlier
        run = store.load_run(runs[-1].id)
    assert run.status == "failed" and run.message, run.message
    assert ("wall-time limit" in run.message or "step limit" in run.message or "diverged" in run.message), run.message
    assert run.summary["wall_time_s"] <= LIMIT_S + OVERRUN_S
    assert run.series["time"].size >= 1 and run.poses.p_G.shape[0] == run.series["time"].size
    assert np.all(np.isfinite(run.poses.p_G))
    assert run.parameters["max_wall_s"] == LIMIT_S and run.parameters["max_steps"] == STEP_LIMIT
    return run


@pytest.mark.parametrize("tree", [False, True], ids=["free", "tree"])
def test_runaway_light_mass_stops_at_its_limit_as_a_stored_failed_run(tmp_path, capsys, tree):
    _run_limited(tmp_path, capsys, runaway("light_mass", tree))


@pytest.mark.parametrize("tree", [False, True], ids=["free", "tree"])
def test_runaway_strong_gravity_stops_at_its_limit_as_a_stored_failed_run(tmp_path, capsys, tree):
    _run_limited(tmp_path, capsys, runaway("strong_gravity", tree))


@pytest.mark.slow
@pytest.mark.parametrize("tree", [False, True], ids=["free", "tree"])
def test_runaway_stiff_ligament_stops_at_its_limit_as_a_stored_failed_run(tmp_path, capsys, tree):
    _run_limited(tmp_path, capsys, runaway("stiff_ligament", tree))


@pytest.mark.parametrize("tree", [False, True], ids=["free", "tree"])
def test_runaway_far_position_stops_at_its_limit_as_a_stored_failed_run(tmp_path, capsys, tree):
    _run_limited(tmp_path, capsys, runaway("far_position", tree))


def test_run_limits_are_checked_and_refused_with_one_line(tmp_path, capsys):
    path = tmp_path / "k.jmdb"
    save_project(path, knee(False))
    assert main(["run", str(path), "--study", "dynamics", "--max-wall-s", "0"]) == 2
    assert main(["run", str(path), "--study", "dynamics", "--max-steps", "0"]) == 2
    err = capsys.readouterr().err
    assert "--max-wall-s 0: must be a positive" in err and "--max-steps 0: must be at least 1" in err
    with ProjectStore(path) as store:
        assert store.list_runs() == []


def test_a_run_within_its_limits_completes_and_records_them():
    run = run_dynamics(knee(False), t_end=0.05, report_dt=0.01)
    assert run.status == "completed", run.message
    assert run.parameters["max_wall_s"] == 3600.0 and run.parameters["max_steps"] == 1_000_000


def test_time_spent_in_progress_is_not_charged_to_the_wall_time_limit():
    """A paused GUI study waits inside its progress callback: that time is not computing time."""
    import time

    budget = RunBudget(0.2, progress=lambda f: time.sleep(0.3))
    budget.progress(0.5)
    assert budget.stop_reason() is None and budget.elapsed() < 0.2
    time.sleep(0.25)
    assert budget.stop_reason() == "wall-time limit of 0.2 s reached" and budget.limit_hit


def test_tree_integrator_reports_a_collapsed_step_instead_of_looping():
    """A force that turns the state non-finite: every trial step is rejected and shortened; the
    integrator used to loop for ever (rejections were not counted), now it fails with a message."""
    from jointmodeller.app.mobilized import build_mobilized, initial_state

    mp = build_mobilized(knee(True))
    state = initial_state(mp, tol=1e-10)
    system = mp.model.system

    class Blowup:
        def accumulate(self, t, kin, force_G, torque_G):
            force_G += np.inf if t > 0.01 else 0.0

    system.forces.append(Blowup())
    traj = tree_simulate(system, state, 1.0, accuracy=1e-6, out_times=np.linspace(0.0, 1.0, 11))
    assert traj.status == "failed" and "step size collapsed" in traj.message, traj.message
    assert traj.t.size >= 1 and np.all(np.isfinite(traj.q))


def test_free_body_integrator_stops_on_a_collapsed_step_size():
    """STEP_COLLAPSE_COUNT steps in a row shorter than ``min_step`` end the run as diverged, with the
    state reached kept (a runaway at 1e-10 of the span per step would need 1e10 steps)."""
    from jointmodeller.app.build import build_mechanical_system
    from jointmodeller.core.multibody.integrate import STEP_COLLAPSE_COUNT, report_times, simulate

    built = build_mechanical_system(knee(False))
    traj = simulate(built.system, built.state, 1.0, 1e-6, report_times(0.0, 1.0, 0.01), method="DOP853",
                    min_step=1.0)  # every step counts as collapsed
    assert traj.status == "failed" and "step size collapsed" in traj.message, traj.message
    assert traj.n_steps == STEP_COLLAPSE_COUNT and np.all(np.isfinite(traj.y))
    assert traj.t[-1] > 0.0  # the state reached is kept
