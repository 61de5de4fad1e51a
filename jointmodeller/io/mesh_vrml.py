"""VRML (.wrl) triangle surfaces: a small reader and writer for MJM's mesh format (seed 004 §4).

VTK's VRML importer needs a render window and ignores Transform nodes when read through pyvista, so
this module parses the scene graph itself: VRML 2.0 (Transform, Group, Shape, IndexedFaceSet with
Coordinate, DEF/USE) and, minimally, VRML 1.0 (Separator, Coordinate3, IndexedFaceSet). Polygons are
split into triangle fans. Everything else (appearance, normals, PROTO bodies, ROUTEs) is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jointmodeller.core.spatial_math import axis_angle_matrix

_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*|[\[\]{}]|[^\s,\[\]{}"#]+')
_GROUPS = {"Transform", "Group", "Anchor", "Collision", "Billboard", "Separator", "TransformSeparator",
           "Switch", "LOD", "Shape"}


class VrmlError(ValueError):
    """The file is not a VRML scene this reader understands."""


@dataclass
class _Node:
    type: str
    fields: dict[str, list] = field(default_factory=dict)


def _tokens(text: str) -> list[str]:
    """Strings, brackets and words; comments (# to the end of the line, outside strings) dropped."""
    return [t for t in _TOKEN_RE.findall(text) if not t.startswith("#")]


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


class _Parser:
    def __init__(self, tokens: list[str]):
        self.t = tokens
        self.i = 0
        self.defs: dict[str, _Node] = {}

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def take(self) -> str:
        if self.i >= len(self.t):
            raise VrmlError("unexpected end of file")
        tok = self.t[self.i]
        self.i += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.take()
        if got != tok:
            raise VrmlError(f"expected {tok!r}, found {got!r}")

    def skip_balanced(self, open_tok: str, close_tok: str) -> None:
        self.expect(open_tok)
        depth = 1
        while depth:
            tok = self.take()
            depth += (tok == open_tok) - (tok == close_tok)

    def starts_node(self) -> bool:
        tok = self.peek()
        return tok in ("DEF", "USE") or (tok is not None and self.peek(1) == "{")

    def statements(self) -> list[_Node]:
        out = []
        while self.peek() is not None:
            tok = self.peek()
            if tok in ("PROTO",):
                self.take(), self.take()
                self.skip_balanced("[", "]")
                self.skip_balanced("{", "}")
            elif tok == "EXTERNPROTO":
                self.take(), self.take()
                self.skip_balanced("[", "]")
                while self.peek() is not None and self.peek().startswith('"'):
                    self.take()
            elif tok == "ROUTE":
                for _ in range(4):
                    self.take()
            elif self.starts_node():
                out.append(self.node())
            else:
                raise VrmlError(f"unexpected {tok!r} at token {self.i}")
        return out

    def node(self) -> _Node:
        tok = self.take()
        if tok == "USE":
            name = self.take()
            if name not in self.defs:
                raise VrmlError(f"USE of undefined node {name!r}")
            return self.defs[name]
        def_name = None
        if tok == "DEF":
            def_name = self.take()
            tok = self.take()
        node = _Node(tok)
        self.expect("{")
        while self.peek() != "}":
            if self.peek() is None:
                raise VrmlError(f"node {node.type} is not closed")
            if self.starts_node():  # VRML 1: child nodes sit directly inside their parent
                node.fields.setdefault("children", []).append(self.node())
                continue
            name = self.take()
            if name in ("ROUTE",):
                for _ in range(3):
                    self.take()
                continue
            node.fields[name] = self.value()
        self.expect("}")
        if def_name:
            self.defs[def_name] = node
        return node

    def value(self) -> list:
        tok = self.peek()
        if tok == "[":
            self.take()
            items: list = []
            while self.peek() != "]":
                if self.peek() is None:
                    raise VrmlError("a list is not closed")
                items.append(self.node() if self.starts_node() else self.take())
            self.take()
            return items
        if self.starts_node():
            return [self.node()]
        if tok is not None and _is_number(tok):
            items = []
            while self.peek() is not None and _is_number(self.peek()):
                items.append(self.take())
            return items
        return [self.take()]


def _floats(values: list, name: str) -> np.ndarray:
    try:
        return np.array([float(x) for x in values], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise VrmlError(f"field {name} holds something that is not a number") from exc


def _transform_matrix(node: _Node) -> np.ndarray:
    """4x4 of a VRML 2 Transform: T·C·R·SR·S·SR⁻¹·C⁻¹."""
    def vec(name: str, default: list[float]) -> np.ndarray:
        return _floats(node.fields[name], name) if name in node.fields else np.array(default, float)

    T, C = vec("translation", [0, 0, 0]), vec("center", [0, 0, 0])
    r, so = vec("rotation", [0, 0, 1, 0]), vec("scaleOrientation", [0, 0, 1, 0])
    R, S = axis_angle_matrix(r[:3], r[3]), vec("scale", [1, 1, 1])
    SR = axis_angle_matrix(so[:3], so[3])
    M = np.eye(4)
    M[:3, :3] = R @ SR @ np.diag(S) @ SR.T
    M[:3, 3] = T + C - M[:3, :3] @ C
    return M


def _faces_from_index(index: np.ndarray, n_points: int) -> np.ndarray:
    """Triangle fans (k, 3) of polygons in a -1 separated coordIndex."""
    idx = index.astype(np.int64)
    if len(idx) % 4 == 0 and len(idx) and (idx[3::4] < 0).all() and (np.delete(idx, np.s_[3::4]) >= 0).all():
        tri = idx.reshape(-1, 4)[:, :3]  # the usual case, all triangles: vectorised
        if tri.max() >= n_points:
            raise VrmlError(f"coordIndex {int(tri.max())} refers to a point that does not exist ({n_points} points)")
        return tri
    tris = []
    poly: list[int] = []
    for k in list(index.astype(np.int64)) + [-1]:
        if k < 0:
            if len(poly) >= 3:
                for j in range(1, len(poly) - 1):
                    tris.append((poly[0], poly[j], poly[j + 1]))
            poly = []
        else:
            if k >= n_points:
                raise VrmlError(f"coordIndex {k} refers to a point that does not exist ({n_points} points)")
            poly.append(int(k))
    return np.array(tris, dtype=np.int64).reshape(-1, 3)


def read_vrml(path: str | Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Vertices (n, 3), triangles (m, 3) and notes of every IndexedFaceSet in a VRML file."""
    raw = Path(path).read_bytes()
    if raw[:1] == b"\x1f":
        import gzip

        raw = gzip.decompress(raw)
    text = raw.decode("utf-8", errors="replace")
    if not text.lstrip().startswith("#VRML"):
        raise VrmlError("no '#VRML' header")
    notes: list[str] = []
    nodes = _Parser(_tokens(text.split("\n", 1)[1] if "\n" in text else "")).statements()
    verts: list[np.ndarray] = []
    faces: list[np.ndarray] = []
    count = 0

    def add(points: np.ndarray, index: np.ndarray, M: np.ndarray, ccw: bool) -> None:
        nonlocal count
        f = _faces_from_index(index, len(points))
        if not ccw:
            f = f[:, ::-1]
        verts.append(points @ M[:3, :3].T + M[:3, 3])
        faces.append(f + count)
        count += len(points)

    def walk(node_list: list, M: np.ndarray, state: dict) -> None:
        for node in node_list:
            if not isinstance(node, _Node):
                continue
            if node.type == "Coordinate3":  # VRML 1
                state["points"] = _floats(node.fields.get("point", []), "point").reshape(-1, 3)
            elif node.type == "IndexedFaceSet":
                coord = node.fields.get("coord")
                if coord and isinstance(coord[0], _Node):
                    pts = _floats(coord[0].fields.get("point", []), "point")
                else:
                    pts = state.get("points", np.zeros((0, 3))).ravel()
                if pts.size % 3:
                    raise VrmlError("the number of point coordinates is not a multiple of 3")
                idx = _floats(node.fields.get("coordIndex", []), "coordIndex")
                ccw = node.fields.get("ccw", ["TRUE"])[0] != "FALSE"
                add(pts.reshape(-1, 3), idx, M, ccw)
            elif node.type in _GROUPS:
                M_child = M @ _transform_matrix(node) if node.type == "Transform" else M
                children = node.fields.get("children", [])
                if node.type == "Shape":
                    children = node.fields.get("geometry", [])
                elif node.type == "Switch":
                    children = node.fields.get("choice", [])
                elif node.type == "LOD":
                    children = node.fields.get("level", [])[:1]
                walk(children, M_child, dict(state) if node.type.endswith("Separator") else state)
            elif node.type in ("MatrixTransform", "Rotation", "Translation", "Scale"):
                note = "VRML 1.0 transform nodes are ignored"
                if note not in notes:
                    notes.append(note)

    walk(nodes, np.eye(4), {})
    if not faces:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64), notes
    return np.vstack(verts), np.vstack(faces), notes


def write_vrml(path: str | Path, vertices: np.ndarray, faces: np.ndarray, name: str = "mesh") -> None:
    """Write one IndexedFaceSet (VRML 2.0, utf8) with the given vertices (n, 3) and triangles (m, 3)."""
    pts = ",\n".join(" ".join(f"{x:.9g}" for x in row) for row in np.asarray(vertices, float))
    idx = ",\n".join(f"{a} {b} {c} -1" for a, b, c in np.asarray(faces, np.int64))
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name) or "mesh"
    if safe[0].isdigit():
        safe = "_" + safe
    Path(path).write_text(
        "#VRML V2.0 utf8\n"
        f"DEF {safe} Shape {{\n  geometry IndexedFaceSet {{\n    solid TRUE\n"
        f"    coord Coordinate {{ point [\n{pts}\n    ] }}\n"
        f"    coordIndex [\n{idx}\n    ]\n  }}\n}}\n",
        encoding="utf-8",
    )
