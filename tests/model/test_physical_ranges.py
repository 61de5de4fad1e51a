"""Validation refuses values outside physical sense, naming row, field and range, and computes what
it derives without overflow (issue 19, items 4 and 6). Real projects stay valid."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from jointmodeller.model import SpringType
from jointmodeller.model.validation import (
    inertia_problems,
    project_problems,
    safe_norm,
    validate_project,
)
from tests.model.factories import small_project


def _messages(project) -> list[str]:
    return [str(p) for p in project_problems(project)]


def _with_mass(project, index=1, **changes):
    masses = list(project.masses)
    masses[index] = replace(masses[index], **changes)
    return replace(project, masses=tuple(masses))


def _with_spring(project, index=0, **changes):
    springs = list(project.springs)
    springs[index] = replace(springs[index], **changes)
    return replace(project, springs=tuple(springs))


def test_inertia_with_minus_1e308_on_the_diagonal_is_not_positive_definite():
    """Its unscaled eigenvalues overflow to NaN, and NaN <= 0 is false: it used to pass."""
    I = ((-1e308, 0.0, 0.0), (0.0, 1e308, 0.0), (0.0, 0.0, 1e308))
    assert inertia_problems(np.array(I)) and "positive definite" in inertia_problems(np.array(I))[0]
    msgs = _messages(_with_mass(small_project(with_mesh=False), inertia_L=I))
    assert any(m.startswith("Masses › ulna › inertia_L: must be positive definite") for m in msgs), msgs


def test_inertia_of_1e308_is_refused_as_absurd_without_overflow():
    I = ((1e308, 0.0, 0.0), (0.0, 1e308, 0.0), (0.0, 0.0, 1e308))
    assert inertia_problems(np.array(I)) == []  # a valid tensor, just absurd for any mass
    with np.errstate(all="raise"):  # nothing on the way overflows
        msgs = _messages(_with_mass(small_project(with_mesh=False), inertia_L=I))
    assert any("Masses › ulna › inertia_L: principal moments" in m and "radii of gyration" in m
               and "outside the physical range [1e-06, 100] m" in m for m in msgs), msgs


@pytest.mark.parametrize("mass", [1e-12, 0.0, -1.0, 2e4, 1e308])
def test_mass_outside_the_physical_range_names_row_field_and_range(mass):
    msgs = _messages(_with_mass(small_project(with_mesh=False), mass_kg=mass))
    assert any(m.startswith("Masses › ulna › mass_kg:") and ("[1e-07, 10000] kg" in m or "positive" in m)
               for m in msgs), msgs


@pytest.mark.parametrize("kx, what", [
    ((-1.0e4,), "must pull when stretched"),
    ((1e308,), "outside the physical range [0, 1e+12] N/m"),
    ((1e15,), "outside the physical range [0, 1e+12] N/m"),
    ((0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1e308), "outside the physical range [0, 1e+12] N/m"),
    ((1e308, 1e308, 1e308), "outside the physical range [0, 1e+12] N/m"),
])
def test_negative_or_absurd_polynomial_stiffness_is_refused(kx, what):
    with np.errstate(all="raise"):
        msgs = _messages(_with_spring(small_project(with_mesh=False), kx=kx))
    assert any(m.startswith("Springs › MCL › kx:") and what in m for m in msgs), msgs


def test_blankevoort_stiffness_negative_or_absurd_is_refused():
    base = _with_spring(small_project(with_mesh=False), law="blankevoort", kx=(500.0,), slack_length_m=0.03)
    assert not _messages(base)
    neg = _messages(_with_spring(base, kx=(-500.0,)))
    assert any(m.startswith("Springs › MCL › kx:") and "must not be negative" in m for m in neg), neg
    huge = _messages(_with_spring(base, kx=(1e308,)))
    assert any(m.startswith("Springs › MCL › kx:") and "[0, 1e+12] N/m" in m for m in huge), huge


def test_imported_muscle_fit_with_negative_leading_coefficient_stays_valid():
    """OpenSim's passive muscle curves are fitted by quartics whose k1 is negative but whose force
    pulls over the stretch range (a fit noise of −3e-4 N at 1 mm is not a push)."""
    fit = (-0.0474, 2.35e3, -1.07e5, 2.35e8)
    assert not _messages(_with_spring(small_project(with_mesh=False), kx=fit))


def test_gravity_beyond_1e3_is_refused():
    p = small_project(with_mesh=False)
    msgs = _messages(replace(p, info=replace(p.info, gravity_G=(0.0, 0.0, -1e12))))
    assert any(m.startswith("Project › gravity_G: magnitude 1e+12 m/s² is outside") for m in msgs), msgs
    msgs = _messages(replace(p, info=replace(p.info, gravity_G=(1e308, 1e308, 0.0))))
    assert any(m.startswith("Project › gravity_G:") for m in msgs), msgs


def test_positions_beyond_1e3_m_are_refused():
    p = small_project(with_mesh=False)
    msgs = _messages(_with_mass(p, position_G=(0.0, 1e300, 0.0)))
    assert any(m == "Masses › ulna › position_G: component 1e+300 m is outside the physical range [-1000, 1000] m"
               for m in msgs), msgs
    a = replace(p.attachments[1], point_b_L=(0.0, 0.0, 2e3))
    msgs = _messages(replace(p, attachments=(p.attachments[0], a)))
    assert any(m.startswith("Attachments › bush › point_b_L: component 2000 m") for m in msgs), msgs


@pytest.mark.parametrize("direction, what", [
    ((1e308, 1e308, 0.0), "its length 1.41421e+308 is outside [1e-09, 1e+09]"),
    ((1e-300, 0.0, 0.0), "its length 1e-300 is outside"),
    ((0.0, 0.0, 0.0), "must not be the zero vector"),
])
def test_force_direction_whose_length_overflows_or_vanishes_is_refused(direction, what):
    p = small_project(with_mesh=False)
    f = replace(p.forces[0], direction_G=direction)
    with np.errstate(all="raise"):
        msgs = _messages(replace(p, forces=(f, p.forces[1])))
    assert any(m.startswith("Forces › varus › direction_G:") and what in m for m in msgs), msgs


def test_force_magnitude_and_contact_modulus_beyond_their_ranges_are_refused():
    p = small_project(with_mesh=False)
    f = replace(p.forces[0], magnitude_N=1e300)
    c = replace(p.contacts[0], youngs_modulus_Pa=1e15)
    msgs = _messages(replace(p, forces=(f, p.forces[1]), contacts=(c,)))
    assert any(m.startswith("Forces › varus › magnitude_N: 1e+300 N is outside") for m in msgs), msgs
    assert any(m.startswith("Contacts › elbow › youngs_modulus_Pa: 1e+15 Pa is outside") for m in msgs), msgs


def test_safe_norm_neither_overflows_nor_underflows():
    assert safe_norm((1e308, 1e308, 0.0)) == pytest.approx(math.sqrt(2) * 1e308)
    assert safe_norm((3e-200, 4e-200, 0.0)) == pytest.approx(5e-200)
    assert safe_norm((0.0, 0.0, 0.0)) == 0.0


def test_the_demo_and_the_small_project_stay_valid():
    from jointmodeller.app.demo import build_demo_project

    validate_project(build_demo_project())
    validate_project(small_project())


def test_imported_opensim_models_stay_valid(shared_models):
    from jointmodeller.io.osim import load_osim

    paths = [shared_models / "arm26" / "arm26.osim", shared_models / "lenhart2015" / "lenhart2015.osim"]
    for path in [p for p in paths if p.is_file()] or pytest.skip("no OpenSim models in ../shared/models"):
        project, _ = load_osim(path, load_meshes=False)
        assert project_problems(project) == [], path.name


def test_json_with_negative_stiffness_is_one_message(tmp_path, capsys):
    import json

    from jointmodeller.cli import main
    from jointmodeller.model.codec import project_to_data

    data = project_to_data(small_project(with_mesh=False))
    data["project"]["springs"][0]["kx"] = [-1e4]
    path = tmp_path / "neg.json"
    path.write_text(json.dumps(data))
    assert main(["import", str(path), str(tmp_path / "p.jmdb")]) == 2
    err = capsys.readouterr().err
    assert "Springs › MCL › kx:" in err and "must pull when stretched" in err and "Traceback" not in err
    assert not (tmp_path / "p.jmdb").exists()


def test_spring_type_default_is_valid():
    p = small_project(with_mesh=False)
    assert not _messages(replace(p, springs=(SpringType("MCL"), p.springs[1])))
