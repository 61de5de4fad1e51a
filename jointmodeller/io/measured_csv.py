"""Measured laxity data from CSV: load, angle or translation, optional repeat id.

The file has a header row. Recognised columns (case-insensitive, units after an underscore or in
brackets): load — ``load``, ``force``, ``moment``, ``torque`` (any unit suffix; the number is taken
as is, in the experiment's load unit); value — ``value``, ``angle``, ``translation``, ``displacement``
or a JCS measure name such as ``varus_valgus`` with a unit ``deg``/``rad``/``mm``/``m``; repeat —
``repeat``, ``trial``, ``specimen`` (integers). Comma, semicolon or tab separated; ``#`` starts a
comment line. Every problem is reported as ``file:line: column 'name': what is wrong``.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from pathlib import Path

from jointmodeller.model.errors import JointModellerError
from jointmodeller.model.specs import MeasuredPoint

LOAD_NAMES = ("load", "force", "moment", "torque")
VALUE_NAMES = ("value", "angle", "translation", "displacement", "flexion", "varus_valgus", "internal_external",
               "medial_lateral", "anterior_posterior", "distraction", "laxity")
REPEAT_NAMES = ("repeat", "trial", "specimen", "cycle")
UNIT_FACTORS = {"deg": ("angle", 1.0), "rad": ("angle", 180.0 / math.pi), "mm": ("length", 1.0),
                "m": ("length", 1000.0)}
"""Factor from a column's unit to the canonical display unit (deg for angles, mm for lengths)."""


class MeasuredDataError(JointModellerError, ValueError):
    """A measured-data file could not be read; the message names file, line and column."""


def _split_header(name: str) -> tuple[str, str]:
    """'Angle [deg]' / 'angle_deg' / 'Load (N)' -> ('angle', 'deg'), ('load', 'n')."""
    s = name.strip().lower()
    m = re.match(r"^(.*?)\s*[\[(]\s*([^\])]*)\s*[\])]\s*$", s)
    if m:
        return m.group(1).strip().replace(" ", "_"), m.group(2).strip()
    s = s.replace(" ", "_")
    for unit in ("deg", "rad", "mm", "m", "nm", "n"):
        if s.endswith("_" + unit):
            return s[: -len(unit) - 1], unit
    return s, ""


def _role(base: str) -> str | None:
    if base in LOAD_NAMES or any(base.startswith(n + "_") for n in LOAD_NAMES):
        return "load"
    if base in REPEAT_NAMES or base.endswith("_id") and base[:-3] in REPEAT_NAMES:
        return "repeat"
    if base in VALUE_NAMES or any(base.startswith(n) for n in VALUE_NAMES):
        return "value"
    return None


def parse_measured_csv(text: str, source: str = "<text>", value_unit: str | None = None) -> tuple[MeasuredPoint, ...]:
    """Parse CSV text into measured points. ``value_unit`` ('deg' or 'mm'): convert a value column
    given in rad or m into it (a column with no unit is taken as already in it)."""
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines())]
    body = [(n, ln) for n, ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not body:
        raise MeasuredDataError(f"{source}: no data (expected a header row and at least one row)")
    head_line, head = body[0]
    try:
        dialect = csv.Sniffer().sniff(head, delimiters=",;\t")
        delim = dialect.delimiter
    except csv.Error:
        delim = ","
    rows = list(csv.reader(io.StringIO("\n".join(ln for _, ln in body)), delimiter=delim))
    header = [h.strip() for h in rows[0]]
    roles: dict[str, int] = {}
    factor = 1.0
    for j, h in enumerate(header):
        base, unit = _split_header(h)
        role = _role(base)
        if role is None:
            continue
        if role in roles:
            raise MeasuredDataError(f"{source}:{head_line}: column {h!r}: a second {role} column "
                                    f"(already have {header[roles[role]]!r})")
        roles[role] = j
        if role == "value" and unit and value_unit:
            if unit not in UNIT_FACTORS:
                raise MeasuredDataError(f"{source}:{head_line}: column {h!r}: unknown unit {unit!r} (deg, rad, mm, m)")
            kind, f = UNIT_FACTORS[unit]
            want = UNIT_FACTORS[value_unit][0]
            if kind != want:
                raise MeasuredDataError(f"{source}:{head_line}: column {h!r}: {unit} is not a unit of "
                                        f"{'angle' if want == 'angle' else 'length'} ({value_unit} expected)")
            factor = f / UNIT_FACTORS[value_unit][1]
    for role in ("load", "value"):
        if role not in roles:
            names = LOAD_NAMES if role == "load" else VALUE_NAMES
            raise MeasuredDataError(f"{source}:{head_line}: no {role} column in header {header!r} "
                                    f"(expected one of: {', '.join(names)})")
    points = []
    for (line_no, _), row in zip(body[1:], rows[1:]):
        if len(row) != len(header):
            raise MeasuredDataError(f"{source}:{line_no}: {len(row)} fields, the header has {len(header)}")
        vals = {}
        for role, j in roles.items():
            cell = row[j].strip()
            try:
                v = float(cell) if role != "repeat" else int(cell) if cell else 0
            except ValueError:
                kind = "an integer" if role == "repeat" else "a number"
                raise MeasuredDataError(f"{source}:{line_no}: column {header[j]!r}: {cell!r} is not {kind}") from None
            if role != "repeat" and not math.isfinite(v):
                raise MeasuredDataError(f"{source}:{line_no}: column {header[j]!r}: {cell!r} is not a finite number")
            vals[role] = v
        points.append(MeasuredPoint(load=vals["load"], value=vals["value"] * factor, repeat=int(vals.get("repeat", 0))))
    if not points:
        raise MeasuredDataError(f"{source}: header only, no data rows")
    return tuple(points)


def read_measured_csv(path: str | os.PathLike, value_unit: str | None = None) -> tuple[MeasuredPoint, ...]:
    """Read a measured-data CSV file (see the module docstring)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise MeasuredDataError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise MeasuredDataError(f"{p}: is a folder, not a CSV file") from None
    except OSError as exc:
        raise MeasuredDataError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise MeasuredDataError(f"{p}: not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    return parse_measured_csv(text, str(p), value_unit)


def write_measured_csv(path: str | os.PathLike, points, value_name: str = "value") -> None:
    """Write points as ``load,<value_name>,repeat`` (the format read above)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["load", value_name, "repeat"])
        for pt in points:
            w.writerow([repr(float(pt.load)), repr(float(pt.value)), int(pt.repeat)])
