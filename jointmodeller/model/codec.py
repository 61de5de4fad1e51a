"""Plain-data form of a project (dicts, lists, numbers, strings): the JSON export and the store's
row payloads both go through here.

Decoding is strict and total: any malformed input (wrong type, unknown key, duplicate key, missing
field, bad value, a number too large for a float, text that is not Unicode) ends in a ValidationError
naming where it is, never in another exception. Decoding never evaluates anything; meshes travel as
plain number lists.

A file lists every field (export writes them all). A field left out of a row takes its dataclass
default (older files lack fields added since, which is why), except the physical properties in
``REQUIRED_IN_FILE``: their defaults (1 kg, 1e-3 kg·m², 1e4 N/m) are placeholders for a new row in
the GUI, not values anyone measured, so a file without them (a mass row without ``mass_kg``) is
refused instead of silently getting 1 kg.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from functools import lru_cache
from typing import Any, Literal, Union

import numpy as np

from jointmodeller.model.errors import JointModellerError, Problem, ValidationError
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import Mass, Project, SpringType
from jointmodeller.model.validation import validate_project

FORMAT_NAME = "jointmodeller-project"
FORMAT_VERSION = 1

REQUIRED_IN_FILE: dict[type, tuple[str, ...]] = {
    Mass: ("mass_kg", "inertia_L"),
    SpringType: ("kx",),
}
"""Fields with a default in the dataclass that a row in a file must still give."""

SECTION_TITLES = {
    "info": "Project", "springs": "Springs", "masses": "Masses", "attachments": "Attachments",
    "forces": "Forces", "contacts": "Contacts", "constraints": "Constraints", "experiments": "Experiments",
    "wrap_objects": "Wrap objects",
}


# ------------------------------------------------------------------------------------------------
# Encoding
# ------------------------------------------------------------------------------------------------
def mesh_to_data(mesh: MeshData) -> dict:
    return {
        "source": mesh.source,
        "warnings": list(mesh.warnings),
        "vertices_L": mesh.vertices_L.tolist(),
        "faces": mesh.faces.tolist(),
    }


def to_data(obj: Any, tp: Any = None) -> Any:
    """Dataclasses, tuples and meshes to JSON-able dicts and lists.

    Numbers are written as their declared type (an int entered for a float field is written as a
    float) so that export → import → export is byte-identical; floats are kept exactly.
    """
    if isinstance(obj, MeshData):
        return mesh_to_data(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        hints = _hints(type(obj))
        return {f.name: to_data(getattr(obj, f.name), hints.get(f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (tuple, list)):
        args = typing.get_args(tp) if typing.get_origin(tp) is tuple else ()
        if len(args) == 2 and args[1] is Ellipsis:
            return [to_data(v, args[0]) for v in obj]
        if len(args) == len(obj):
            return [to_data(v, a) for v, a in zip(obj, args)]
        return [to_data(v) for v in obj]
    if isinstance(obj, (np.floating, np.integer)):
        obj = obj.item()
    if isinstance(obj, int) and not isinstance(obj, bool) and _declares_float(tp):
        return float(obj)
    return obj


def _declares_float(tp: Any) -> bool:
    return tp is float or (typing.get_origin(tp) in (Union, types.UnionType) and float in typing.get_args(tp))


def project_to_data(project: Project) -> dict:
    """The whole project as one versioned plain-data document."""
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "project": to_data(project)}


def project_to_json(project: Project) -> str:
    """Readable, deterministic JSON (sorted keys, exact floats): export → import → export is identical."""
    return json.dumps(project_to_data(project), indent=1, sort_keys=True, allow_nan=False) + "\n"


# ------------------------------------------------------------------------------------------------
# Decoding
# ------------------------------------------------------------------------------------------------
class _DecodeError(Exception):
    def __init__(self, path: list[str], message: str):
        self.path = path
        self.message = message


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _decode(tp: Any, value: Any, path: list[str]) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return _decode(non_none[0], value, path)
        raise _DecodeError(path, "unsupported union")  # pragma: no cover - not used by the specs
    if origin is Literal:
        if value not in args or type(value) is not type(args[0]):
            raise _DecodeError(path, f"must be one of {', '.join(map(repr, args))}, got {value!r}")
        return value
    if tp is MeshData:
        return _decode_mesh(value, path)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, value, path)
    if origin is tuple:
        if not isinstance(value, list):
            raise _DecodeError(path, f"must be a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, path + [f"[{i}]"]) for i, v in enumerate(value))
        if len(value) != len(args):
            raise _DecodeError(path, f"must have {len(args)} items, got {len(value)}")
        return tuple(_decode(a, v, path + [f"[{i}]"]) for i, (a, v) in enumerate(zip(args, value)))
    if tp is float:
        if not _is_number(value):
            raise _DecodeError(path, f"must be a number, got {_short(value)}")
        try:
            number = float(value)
        except OverflowError:
            raise _DecodeError(path, f"the whole number {_short(value)} is too large for a number "
                                     "(largest about 1.8e308)") from None
        if not math.isfinite(number):
            raise _DecodeError(path, f"must be finite, got {value!r}")
        return number
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _DecodeError(path, f"must be a whole number, got {_short(value)}")
        if abs(value) > 2**63 - 1:
            raise _DecodeError(path, f"the whole number {_short(value)} is too large")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _DecodeError(path, f"must be true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise _DecodeError(path, f"must be text, got {_short(value)}")
        _check_text(value, path)
        return value
    raise _DecodeError(path, f"cannot decode type {tp!r}")  # pragma: no cover


def _short(value: Any, limit: int = 60) -> str:
    """repr of a value, cut to ``limit`` characters (a 400-digit number or a long text in a message)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        text = str(value)  # str of a huge int is fine; int digits limits apply only above 4300 digits
        return f"{text[:20]}…({len(text)} digits)"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _check_text(value: str, path: list[str]) -> None:
    """Text must be valid Unicode: a lone UTF-16 surrogate ("\\ud800" in JSON) cannot be stored."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start:exc.end]
        raise _DecodeError(path, f"holds a lone UTF-16 surrogate '{bad.encode('unicode_escape').decode()}' at "
                                 f"character {exc.start + 1}, which is not text") from None


def _decode_dataclass(cls: type, value: Any, path: list[str]) -> Any:
    if not isinstance(value, dict):
        raise _DecodeError(path, f"must be an object, got {type(value).__name__}")
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(value) - set(fields), key=str)
    if unknown:
        raise _DecodeError(path + [str(unknown[0])], "unknown field")
    kwargs = {}
    required = REQUIRED_IN_FILE.get(cls, ())
    for name, f in fields.items():
        if name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise _DecodeError(path + [name], "is missing")
            if name in required:
                raise _DecodeError(path + [name], "is missing (a row in a file must give it; there is no default)")
            continue
        kwargs[name] = _decode(hints[name], value[name], path + [name])
    try:
        return cls(**kwargs)
    except JointModellerError as exc:
        raise _DecodeError(path, str(exc)) from None


def _decode_mesh(value: Any, path: list[str]) -> MeshData:
    if not isinstance(value, dict) or set(value) - {"source", "warnings", "vertices_L", "faces"}:
        raise _DecodeError(path, "a mesh is an object with source, warnings, vertices_L and faces")
    source = value.get("source", "")
    warnings = value.get("warnings", [])
    if not isinstance(source, str) or not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise _DecodeError(path, "mesh source and warnings must be text")
    for k, text in enumerate([source] + warnings):
        _check_text(text, path + (["source"] if k == 0 else ["warnings", f"[{k - 1}]"]))
    try:
        vertices = _number_array(value.get("vertices_L"), np.float64, path + ["vertices_L"])
        faces = _number_array(value.get("faces"), np.int64, path + ["faces"])
        return MeshData(vertices, faces, source=source, warnings=tuple(warnings))
    except JointModellerError as exc:
        raise _DecodeError(path, str(exc)) from None


def _number_array(value: Any, dtype: type, path: list[str]) -> np.ndarray:
    if not isinstance(value, list) or not all(isinstance(row, list) and len(row) == 3 for row in value):
        raise _DecodeError(path, "must be a list of [a, b, c] triples")
    flat = [v for row in value for v in row]
    want_int = dtype is np.int64
    for v in flat:
        if want_int and (not isinstance(v, int) or isinstance(v, bool)):
            raise _DecodeError(path, f"must hold whole numbers, got {v!r}")
        if not want_int and not _is_number(v):
            raise _DecodeError(path, f"must hold numbers, got {v!r}")
    try:
        return np.array(flat, dtype=dtype).reshape(-1, 3)
    except OverflowError:
        raise _DecodeError(path, "holds a number too large for a number") from None


def _problem_from_path(path: list[str], message: str) -> Problem:
    """Turn a decode path like ['project', 'masses', '[2]', 'mass_kg'] into section/row/field."""
    parts = [p for p in path if p != "project"]
    if not parts:
        return Problem("Project file", None, None, message)
    section = SECTION_TITLES.get(parts[0], parts[0])
    rest = parts[1:]
    row = None
    if parts[0] != "info" and rest and rest[0].startswith("["):
        row = f"row {int(rest[0][1:-1]) + 1}"
        rest = rest[1:]
    field = ".".join(rest).replace(".[", "[") or None
    return Problem(section, row, field, message)


def project_from_data(data: Any) -> Project:
    """Decode and validate a project document; ValidationError on anything wrong."""
    if not isinstance(data, dict):
        raise ValidationError(Problem("Project file", None, None, "must be a JSON object"))
    if data.get("format") != FORMAT_NAME:
        raise ValidationError(Problem("Project file", None, "format",
                                      f"is not a JointModeller project (format {data.get('format')!r})"))
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValidationError(Problem("Project file", None, "version",
                                      f"must be a positive whole number, got {version!r}"))
    if version > FORMAT_VERSION:
        raise ValidationError(Problem("Project file", None, "version",
                                      f"was written by a newer JointModeller (format {version}; "
                                      f"this one reads up to {FORMAT_VERSION})"))
    unknown = set(data) - {"format", "version", "project"}
    if unknown:
        raise ValidationError(Problem("Project file", None, None, f"unknown keys {sorted(unknown)}"))
    try:
        project = _decode(Project, data.get("project"), ["project"])
    except _DecodeError as exc:
        raise ValidationError(_problem_from_path(exc.path, exc.message)) from None
    except RecursionError:
        raise ValidationError(Problem("Project file", None, None, "is nested too deeply")) from None
    return validate_project(project)


def project_from_json(text: str | bytes) -> Project:
    """Parse JSON text into a validated project; ValidationError for anything malformed."""
    return project_from_data(parse_json(text, "Project file"))


def parse_json(text: str | bytes, where: str = "Project file") -> Any:
    """Strict JSON: NaN/Infinity and duplicate keys refused; ValidationError located at ``where``."""
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys)
    except _DecodeError as exc:
        raise ValidationError(Problem(where, None, None, exc.message)) from None
    except RecursionError:
        raise ValidationError(Problem(where, None, None, "is nested too deeply to be a project")) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError(Problem(where, None, None, f"is not valid JSON: {exc}")) from None


def _reject_constant(name: str) -> Any:
    raise _DecodeError([], f"{name} is not a number a project may hold")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DecodeError([], f"the key {_short(key)} appears twice in one object (JSON keeps only the last, "
                                   "so the file is ambiguous)")
        out[key] = value
    return out


def row_to_data(row: Any) -> dict:
    """One section row as plain data (the store keeps feature rows in this form)."""
    return to_data(row)


def row_from_data(cls: type, data: Any, section: str, index: int) -> Any:
    """Decode one row of ``cls``; ValidationError naming the section and row."""
    try:
        return _decode(cls, data, [section, f"[{index}]"])
    except _DecodeError as exc:
        raise ValidationError(_problem_from_path(exc.path, exc.message)) from None
    except RecursionError:
        raise ValidationError(_problem_from_path([section, f"[{index}]"], "is nested too deeply")) from None
