"""JSON form of a project: lossless round trip, strict decoding, and located errors."""

from __future__ import annotations

import json

import pytest

from jointmodeller.model import Project, ValidationError
from jointmodeller.model.codec import project_from_json, project_to_json
from tests.model.factories import small_project


def test_json_round_trip_is_lossless_and_stable():
    project = small_project()
    text = project_to_json(project)
    again = project_from_json(text)
    assert again == project
    assert project_to_json(again) == text


def test_ints_for_floats_still_round_trip_identically():
    text = project_to_json(Project(info=small_project().info))
    assert project_to_json(project_from_json(text)) == text


@pytest.mark.parametrize(
    "mutate, where",
    [
        (lambda d: d["project"]["masses"][1].__setitem__("mass_kg", -2.0), "Masses › ulna › mass_kg"),
        (lambda d: d["project"]["masses"][1].__setitem__("mass_kg", "heavy"), "Masses › row 2 › mass_kg"),
        (lambda d: d["project"]["attachments"][0].__setitem__("spring", "nope"), "Attachments › MCL anterior › spring"),
        (lambda d: d["project"]["masses"][1].__setitem__(
            "inertia_L", [[1e-4, 0, 0], [0, 1e-4, 0], [0, 0, 5e-4]]), "triangle inequality"),
        (lambda d: d["project"]["masses"][1].__setitem__(
            "inertia_L", [[1e-4, 2e-5, 0], [0, 1e-4, 0], [0, 0, 1e-4]]), "must be symmetric"),
        (lambda d: d["project"]["forces"][0].__setitem__("direction_G", [0, 0, 0]), "Forces › varus › direction_G"),
        (lambda d: d["project"]["springs"][0].__setitem__("extra", 1), "Springs › row 1 › extra: unknown field"),
        (lambda d: d["project"]["masses"][0]["mesh"]["faces"].__setitem__(0, [0, 1, 10**6]), "Masses › row 1 › mesh"),
        (lambda d: d.__setitem__("version", 99), "newer JointModeller"),
        (lambda d: d["project"]["masses"].append(dict(d["project"]["masses"][0])), "names must be unique"),
    ],
)
def test_bad_values_are_named_by_section_row_and_field(mutate, where):
    data = json.loads(project_to_json(small_project()))
    mutate(data)
    with pytest.raises(ValidationError) as info:
        project_from_json(json.dumps(data))
    assert where in str(info.value)


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '{"format": "x"}', "NaN", '{"a": NaN}', "\xff\xfe"])
def test_not_a_project_is_a_validation_error(text):
    with pytest.raises(ValidationError):
        project_from_json(text)


def test_nan_in_json_is_rejected_with_its_place():
    data = project_to_json(small_project()).replace('"magnitude_N": 100.0', '"magnitude_N": NaN')
    with pytest.raises(ValidationError, match="NaN"):
        project_from_json(data)
