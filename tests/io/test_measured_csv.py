"""Measured-data CSV import: formats, unit conversion, and errors naming file, line and column."""

from __future__ import annotations

import pytest

from jointmodeller.io.measured_csv import MeasuredDataError, parse_measured_csv, read_measured_csv, write_measured_csv
from jointmodeller.model.specs import MeasuredPoint


def test_basic_with_repeats_and_comments():
    text = "# cadaver 3\nload,angle_deg,repeat\n0,0,1\n50,1.5,1\n\n100,2.9,2\n"
    pts = parse_measured_csv(text, "a.csv")
    assert pts == (MeasuredPoint(0, 0, 1), MeasuredPoint(50, 1.5, 1), MeasuredPoint(100, 2.9, 2))


def test_semicolon_bracket_units_and_conversion():
    pts = parse_measured_csv("Force [N];Varus valgus [rad]\n10;0.01\n", value_unit="deg")
    assert pts[0].value == pytest.approx(0.5729578, rel=1e-6)
    assert pts[0].repeat == 0
    pts = parse_measured_csv("load_N\ttranslation_m\n5\t0.002\n", value_unit="mm")
    assert pts[0].value == pytest.approx(2.0)


@pytest.mark.parametrize("text,expect", [
    ("load,angle\n0,0\n10,abc\n", r"b\.csv:3: column 'angle': 'abc' is not a number"),
    ("load,angle,repeat\n0,0,x\n", r"b\.csv:2: column 'repeat': 'x' is not an integer"),
    ("load,angle\n0,0\n10\n", r"b\.csv:3: 1 fields, the header has 2"),
    ("weight,angle\n0,0\n", r"b\.csv:1: no load column"),
    ("load,colour\n0,0\n", r"b\.csv:1: no value column"),
    ("load,angle\n", r"b\.csv: header only"),
    ("", r"b\.csv: no data"),
    ("load,angle\n1,nan\n", r"b\.csv:2: column 'angle': 'nan' is not a finite number"),
    ("load,angle_mm\n1,2\n", r"b\.csv:1: column 'angle_mm': mm is not a unit of angle"),
    ("load,angle,value\n1,2,3\n", r"b\.csv:1: column 'value': a second value column"),
])
def test_errors_name_file_line_and_column(text, expect):
    with pytest.raises(MeasuredDataError, match=expect):
        parse_measured_csv(text, "b.csv", value_unit="deg")


def test_file_round_trip_and_missing_file(tmp_path):
    pts = (MeasuredPoint(-100.0, 2.5, 0), MeasuredPoint(100.0, -2.25, 3))
    write_measured_csv(tmp_path / "m.csv", pts, "varus_valgus_deg")
    assert read_measured_csv(tmp_path / "m.csv", "deg") == pts
    with pytest.raises(MeasuredDataError, match="no such file"):
        read_measured_csv(tmp_path / "missing.csv")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00load")
    with pytest.raises(MeasuredDataError, match="not a UTF-8"):
        read_measured_csv(tmp_path / "bin.csv")
