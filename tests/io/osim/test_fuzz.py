"""Damaged .osim files (slices cut out, tags and numbers mangled): the importer either reads them
or raises OsimError — never any other exception."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jointmodeller.app.osim_import import import_osim
from jointmodeller.io.osim import OsimError
from tests.io.osim.test_robustness import SYNTHETIC

TMP = Path(tempfile.mkdtemp(prefix="osim_fuzz_"))


def _load(text: str) -> None:
    path = TMP / "fuzz.osim"
    path.write_text(text, encoding="utf-8", errors="replace")
    try:
        project, report = import_osim(path)  # validated: the importer never writes a bad project
    except OsimError as exc:
        assert str(path) in str(exc)
        return
    assert report.model_path == str(path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SYNTHETIC) - 1), st.integers(1, 400))
def test_cut_out_slices(start, length):
    _load(SYNTHETIC[:start] + SYNTHETIC[start + length:])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(SYNTHETIC) - 1),
                          st.sampled_from(["", "x", "-", "nan", "1e999", "<", ">", "/", " ", "0", "\"", "&"])),
                min_size=1, max_size=6))
def test_mangled_characters(edits):
    text = list(SYNTHETIC)
    for pos, rep in edits:
        text[pos] = rep
    _load("".join(text))


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["0 0", "a b c", "", "1 2 3 4 5 6 7", "-0 0 0", "1e-300 0 0", "0 0 0"]),
       st.sampled_from(["mass_center", "inertia", "axis", "location", "translation", "range", "radius",
                        "coefficients", "x", "y", "default_value", "linear_stiffness", "slack_length"]))
def test_wrong_number_counts(value, tag):
    import re

    text = re.sub(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{value}</{tag}>", SYNTHETIC)
    _load(text)
