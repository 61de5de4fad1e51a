"""Malformed input files for the fuzz suite, generated with hypothesis from valid files of each
kind: byte-level damage (bit flips, overwrites with tokens the format's readers care about, cut
slices, duplicated slices, truncation) and structural damage (JSON values replaced at random paths,
SQLite cells set to values of any type, CSV cells, VRML gzipped after damage).

Generation is derandomized (``derandomize=True``, no example database): the same cases every run.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import trimesh
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

COUNTS = {"project_bytes": 80, "project_cells": 140, "json_values": 140, "json_bytes": 80,
          "stl_ascii": 50, "stl_binary": 50, "ply_ascii": 30, "ply_binary": 30, "obj": 50, "vtp": 60,
          "vrml": 60, "wrz": 40, "osim": 130, "csv_cells": 90, "csv_bytes": 60, "numbers": 30,
          "osim_numbers": 80}
"""Cases per generator: 1320 in all ("numbers" for each of five text mesh formats; 1322 with the two
hand-made JSON cases), read in 15-30 s on a shared 2-core machine; the whole suite, generation
included, stays within about a minute (most time is the readers' imports, the project files' SQLite
opens and the .osim imports)."""

TOKENS = [b"0", b"-1", b"1e308", b"1e999", b"-1e999", b"nan", b"inf", b"NaN", b"99999999999999999999999",
          b"4294967295", b"2147483648", b"-0", b"0.5", b" ", b"\n", b"\r\n", b"\t", b",", b";", b"\x00", b"\xff\xfe",
          b"\xed\xa0\x80", b"\xc3", b"[", b"]", b"{", b"}", b"<", b">", b"/>", b"\"", b"'", b"&amp;", b"&#0;",
          b"DEF A", b"USE A", b"coordIndex", b"point", b"facet", b"endsolid", b"vertex", b"element vertex",
          b"end_header", b"NumberOfPoints=\"4000000000\"", b"format binary_little_endian 1.0", b"f 1 2 3",
          b"v 1 2", b"-2147483648", b"1e-320", b"..", b"../../etc/passwd", b"/etc/passwd"]


def collect(strategy, n: int) -> list:
    """n values drawn from ``strategy``, the same ones every run."""
    out: list = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(value):
        out.append(value)

    draw()
    return out[:n]


# ------------------------------------------------------------------------------------------------
# Byte-level damage
# ------------------------------------------------------------------------------------------------
def _op():
    pos = st.floats(0.0, 1.0, allow_nan=False)
    return st.one_of(
        st.tuples(st.just("flip"), pos, st.integers(0, 7)),
        st.tuples(st.just("token"), pos, st.sampled_from(TOKENS)),
        st.tuples(st.just("insert"), pos, st.sampled_from(TOKENS)),
        st.tuples(st.just("cut"), pos, st.integers(1, 400)),
        st.tuples(st.just("dup"), pos, st.integers(1, 200)),
        st.tuples(st.just("truncate"), pos, st.just(0)),
        st.tuples(st.just("bytes"), pos, st.binary(min_size=1, max_size=16)),
    )


def byte_damage():
    return st.lists(_op(), min_size=1, max_size=6)


NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
NUMBER_TOKENS = [b"nan", b"inf", b"-inf", b"-1", b"0", b"-0", b"1e308", b"-1e308", b"1e999", b"1e-320", b"0.5",
                 b"99999999999999999999", b"4294967296", b"2147483648", b"-2147483649", b"", b"x", b"1 2", b"3e",
                 b"1e+400", b"0x10", b"1_0"]


def number_damage():
    """Replace some numbers of a text file: the file stays well-formed (XML, VRML, PLY header), so
    the damage reaches the readers' checks of values, counts and indices."""
    return st.lists(st.tuples(st.floats(0.0, 1.0, allow_nan=False), st.sampled_from(NUMBER_TOKENS)),
                    min_size=1, max_size=5)


def apply_number_damage(data: bytes, edits) -> bytes:
    spans = [m.span() for m in NUMBER.finditer(data)]
    if not spans:
        return data
    chosen = {}
    for frac, token in edits:
        chosen[spans[min(int(frac * len(spans)), len(spans) - 1)]] = token
    out, last = bytearray(), 0
    for (a, b), token in sorted(chosen.items()):
        out += data[last:a] + token
        last = b
    return bytes(out + data[last:])


def apply_damage(data: bytes, ops, keep_head: int = 0) -> bytes:
    """Apply damage ops; positions are fractions of the current length, past ``keep_head`` bytes."""
    b = bytearray(data)
    for kind, frac, arg in ops:
        lo = min(keep_head, len(b))
        i = lo + int(frac * max(len(b) - lo - 1, 0))
        if kind == "flip" and i < len(b):
            b[i] ^= 1 << arg
        elif kind == "token":
            b[i:i + len(arg)] = arg
        elif kind == "insert":
            b[i:i] = arg
        elif kind == "cut":
            del b[i:i + arg]
        elif kind == "dup":
            b[i:i] = b[i:i + arg]
        elif kind == "truncate":
            del b[max(i, 1):]
        elif kind == "bytes":
            b[i:i + len(arg)] = arg
    return bytes(b)


# ------------------------------------------------------------------------------------------------
# Valid files to start from
# ------------------------------------------------------------------------------------------------
def _sphere() -> trimesh.Trimesh:
    return trimesh.creation.icosphere(subdivisions=1, radius=20.0)  # mm


def base_meshes() -> dict[str, bytes]:
    s = _sphere()

    def raw(data) -> bytes:
        return data.encode() if isinstance(data, str) else bytes(data)

    out = {
        "stl_ascii": raw(s.export(file_type="stl_ascii")),
        "stl_binary": raw(s.export(file_type="stl")),
        "ply_ascii": raw(s.export(file_type="ply", encoding="ascii")),
        "ply_binary": raw(s.export(file_type="ply", encoding="binary")),
        "obj": raw(s.export(file_type="obj")),
    }
    points = ", ".join(f"{x:.6g} {y:.6g} {z:.6g}" for x, y, z in s.vertices)
    index = ", ".join(f"{a}, {b}, {c}, -1" for a, b, c in s.faces)
    out["vrml"] = (f"#VRML V2.0 utf8\nDEF Bone Transform {{ children [ Shape {{ geometry IndexedFaceSet {{\n"
                   f"  coord Coordinate {{ point [ {points} ] }}\n  coordIndex [ {index} ]\n}} }} ] }}\n"
                   "Transform { translation 0 0 50 children [ USE Bone ] }\n").encode()
    out["vtp"] = _vtp_bytes(s)
    return out


def _vtp_bytes(s: trimesh.Trimesh) -> bytes:
    pts = " ".join(f"{v:.6g}" for v in np.asarray(s.vertices).ravel())
    conn = " ".join(str(int(i)) for i in np.asarray(s.faces).ravel())
    offs = " ".join(str(3 * (k + 1)) for k in range(len(s.faces)))
    return (f'<?xml version="1.0"?>\n<VTKFile type="PolyData" version="0.1" byte_order="LittleEndian">\n'
            f'<PolyData><Piece NumberOfPoints="{len(s.vertices)}" NumberOfVerts="0" NumberOfLines="0" '
            f'NumberOfStrips="0" NumberOfPolys="{len(s.faces)}">\n'
            f'<Points><DataArray type="Float32" NumberOfComponents="3" format="ascii">{pts}</DataArray></Points>\n'
            f'<Polys><DataArray type="Int64" Name="connectivity" format="ascii">{conn}</DataArray>\n'
            f'<DataArray type="Int64" Name="offsets" format="ascii">{offs}</DataArray></Polys>\n'
            f'</Piece></PolyData></VTKFile>\n').encode()


STAMP = "2026-01-01T00:00:00+00:00"


def _project():
    """The tests' small project with fixed time stamps (the same bytes every run)."""
    import dataclasses

    from tests.model.factories import small_project

    p = small_project()
    return dataclasses.replace(p, info=dataclasses.replace(p.info, created=STAMP, modified=STAMP))


def base_project(path: Path) -> None:
    from jointmodeller.model.results import RunRecord
    from jointmodeller.persistence import ProjectStore, save_project
    from tests.model.run_factories import turning_poses

    save_project(path, _project(), touch=False)
    t = np.linspace(0.0, 0.1, 3)
    run = RunRecord(study="dynamics", parameters={"t_end": 0.1}, status="completed",
                    series={"time": t, "tissue_force_N": np.zeros((3, 2))},
                    labels={"tissue_force_N": ["MCL", "LCL"]}, summary={"steps": 3}, created=STAMP,
                    poses=turning_poses(t))
    with ProjectStore(path) as store:
        store.save_run(run)


def base_json() -> bytes:
    from jointmodeller.model.codec import project_to_json

    return project_to_json(_project()).encode()


def base_osim() -> bytes:
    from tests.io.osim.test_robustness import SYNTHETIC

    return SYNTHETIC.encode()


BASE_CSV = ("load [N],angle [deg],repeat\n# measured\n0,0.0,1\n25,1.5,1\n50,2.9,1\n75,4.0,1\n100,4.8,1\n"
            "0,0.1,2\n100,5.0,2\n")


# ------------------------------------------------------------------------------------------------
# Structural damage
# ------------------------------------------------------------------------------------------------
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10 ** 30), 10 ** 30), st.floats(allow_nan=True),
              st.text(max_size=12), st.sampled_from(["\ud800", "fixed", "maybe", "", "ground", "1e999", "humerus"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=8,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def replace_at(doc, path, value):
    doc = copy.deepcopy(doc)
    if not path:
        return value
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


_DELETE = object()
sql_values = st.one_of(st.none(), st.integers(-(2 ** 63), 2 ** 63 - 1), st.floats(allow_nan=True),
                       st.text(max_size=20).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)),
                       st.binary(max_size=40),
                       st.sampled_from(["maybe", "{", "[[[[", "1e999", "NaN", '{"a": 1}', "[]", "null", "0000",
                                        "[" * 5000 + "]" * 5000, "float64", "<f8", "[1, 2]", "[-1]",
                                        "[4000000000, 4000000000]", "zzz"]))


def project_cells(base: Path) -> list[tuple[str, str, int, object]]:
    conn = sqlite3.connect(base)
    try:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
        cells = []
        for t in tables:
            cols = [r[1] for r in conn.execute(f'pragma table_info("{t}")')]
            n = conn.execute(f'select count(*) from "{t}"').fetchone()[0]
            for c in cols:
                if n:
                    cells.append((t, c, n))
        return cells
    finally:
        conn.close()


def _set_cell(path: Path, table: str, column: str, row: int, value) -> bool:
    conn = sqlite3.connect(path)
    try:
        rowid = conn.execute(f'select rowid from "{table}" limit 1 offset ?', (row,)).fetchone()
        if rowid is None:
            return False
        conn.execute(f'update "{table}" set "{column}" = ? where rowid = ?', (value, rowid[0]))
        conn.commit()
        return True
    except (sqlite3.Error, OverflowError):
        return False
    finally:
        conn.close()


# ------------------------------------------------------------------------------------------------
# All cases
# ------------------------------------------------------------------------------------------------
def generate(folder: Path) -> list[dict]:
    """Write every case into ``folder``; returns [{"kind", "name", "path"}] (kind: the reader)."""
    folder.mkdir(parents=True, exist_ok=True)
    cases: list[dict] = []

    def add(kind: str, name: str, data: bytes, suffix: str) -> None:
        path = folder / f"{name}{suffix}"
        path.write_bytes(data)
        cases.append({"kind": kind, "name": name, "path": str(path)})

    # projects: damaged bytes, and damaged cells
    base = folder / "base.jmdb"
    base_project(base)
    raw = base.read_bytes()
    for k, ops in enumerate(collect(byte_damage(), COUNTS["project_bytes"])):
        add("project", f"project_bytes_{k:03d}", apply_damage(raw, ops, keep_head=16), ".jmdb")
    cells = project_cells(base)
    picks = st.tuples(st.integers(0, len(cells) - 1), st.integers(0, 50), sql_values)
    for k, (ci, row, value) in enumerate(collect(picks, COUNTS["project_cells"])):
        table, column, n = cells[ci]
        path = folder / f"project_cell_{k:03d}.jmdb"
        path.write_bytes(raw)
        _set_cell(path, table, column, row % n, value)
        cases.append({"kind": "project", "name": f"project_cell_{k:03d} ({table}.{column})", "path": str(path)})
    base.unlink()

    # JSON: values replaced or removed at random paths, and damaged bytes
    jtext = base_json()
    doc = json.loads(jtext)
    paths = list(_paths(doc))
    picks = st.tuples(st.integers(0, len(paths) - 1), st.one_of(json_values, st.just(_DELETE)))
    for k, (pi, value) in enumerate(collect(picks, COUNTS["json_values"])):
        path = paths[pi]
        if value is _DELETE and not path:
            value = None
        text = json.dumps(replace_at(doc, path, value), ensure_ascii=True, allow_nan=True)
        add("json", f"json_value_{k:03d}", text.encode(), ".json")
    for k, ops in enumerate(collect(byte_damage(), COUNTS["json_bytes"])):
        add("json", f"json_bytes_{k:03d}", apply_damage(jtext, ops), ".json")
    add("json", "json_deep_nesting", b'{"format": "jointmodeller-project", "version": 1, "project": '
        + b"[" * 100000 + b"]" * 100000 + b"}", ".json")
    add("json", "json_huge_integer", jtext.replace(b'"mass_kg": 0.2', b'"mass_kg": 1' + b"0" * 400), ".json")

    # meshes
    meshes = base_meshes()
    suffix = {"stl_ascii": ".stl", "stl_binary": ".stl", "ply_ascii": ".ply", "ply_binary": ".ply", "obj": ".obj",
              "vtp": ".vtp", "vrml": ".wrl"}
    for key, sfx in suffix.items():
        for k, ops in enumerate(collect(byte_damage(), COUNTS[key])):
            add("mesh", f"{key}_{k:03d}", apply_damage(meshes[key], ops), sfx)
    wrz = st.tuples(byte_damage(), st.booleans(), byte_damage())
    for k, (text_ops, damage_gzip, gz_ops) in enumerate(collect(wrz, COUNTS["wrz"])):
        data = gzip.compress(apply_damage(meshes["vrml"], text_ops), mtime=0)
        if damage_gzip:
            data = apply_damage(data, gz_ops)
        add("mesh", f"wrz_{k:03d}", data, ".wrz")

    # numbers replaced in well-formed files
    for key, sfx in (("stl_ascii", ".stl"), ("ply_ascii", ".ply"), ("obj", ".obj"), ("vtp", ".vtp"),
                     ("vrml", ".wrl")):
        for k, edits in enumerate(collect(number_damage(), COUNTS["numbers"])):
            add("mesh", f"{key}_numbers_{k:03d}", apply_number_damage(meshes[key], edits), sfx)

    # OpenSim models
    for k, ops in enumerate(collect(byte_damage(), COUNTS["osim"])):
        add("osim", f"osim_{k:03d}", apply_damage(base_osim(), ops), ".osim")
    for k, edits in enumerate(collect(number_damage(), COUNTS["osim_numbers"])):
        add("osim", f"osim_numbers_{k:03d}", apply_number_damage(base_osim(), edits), ".osim")

    # measured laxity data (CSV)
    rows = BASE_CSV.splitlines()
    cell_text = st.one_of(st.sampled_from(["", "x", "nan", "inf", "-inf", "1e999", "1e308", "-1e308", "1.5.2",
                                           "0x10", "1_000", " 5 ", "\ufeff1", "1,5", "9" * 400, "\"", "3e", "--1",
                                           "2.5", "-3", "1e-320"]),
                          st.text(max_size=10))
    picks = st.lists(st.tuples(st.integers(0, len(rows) - 1), st.integers(0, 3), cell_text), min_size=1, max_size=5)
    for k, edits in enumerate(collect(picks, COUNTS["csv_cells"])):
        table = [r.split(",") for r in rows]
        for r, c, v in edits:
            if c < len(table[r]):
                table[r][c] = v
            else:
                table[r].append(v)
        add("csv", f"csv_cell_{k:03d}", "\n".join(",".join(r) for r in table).encode("utf-8", "surrogatepass"), ".csv")
    for k, ops in enumerate(collect(byte_damage(), COUNTS["csv_bytes"])):
        add("csv", f"csv_bytes_{k:03d}", apply_damage(BASE_CSV.encode(), ops), ".csv")
    return cases


__all__ = ["COUNTS", "generate", "collect", "apply_damage"]


if __name__ == "__main__":  # python -m tests.fuzz.cases FOLDER: write the cases to look at them
    import sys

    print(len(generate(Path(sys.argv[1]))), "cases")
