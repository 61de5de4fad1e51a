"""VRML (.wrl) triangle surfaces: a small reader and writer for MJM's mesh format (seed 004 §4).

VTK's VRML importer needs a render window and ignores Transform nodes when read through pyvista, so
this module parses the scene graph itself: VRML 2.0 (Transform, Group, Shape, IndexedFaceSet with
Coordinate, DEF/USE) and, minimally, VRML 1.0 (Separator, Coordinate3, IndexedFaceSet). Polygons are
split into triangle fans. Everything else (appearance, normals, PROTO bodies, ROUTEs) is skipped.

The file is untrusted, so every size is bounded before memory is spent on it: the text (a gzipped
``.wrz`` is unpacked as a stream and stopped past ``MAX_TEXT_BYTES``), the nesting depth of the scene
graph (``MAX_DEPTH``) and what DEF/USE reuse expands to (``MAX_SHAPES`` face sets, ``MAX_VERTICES``
vertices, ``MAX_FACES`` polygon corners, ``MAX_NODE_VISITS`` nodes), counted on the shared graph before any
geometry is built: ten USEs of the level below over nine levels (10⁹ shapes from 1 KB) is refused at
once. Indices must be whole numbers; a bad one is reported with its line.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jointmodeller.core.spatial_math import axis_angle_matrix

_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*|[\[\]{}]|[^\s,\[\]{}"#]+')
_GROUPS = {"Transform", "Group", "Anchor", "Collision", "Billboard", "Separator", "TransformSeparator",
           "Switch", "LOD", "Shape"}


MAX_TEXT_BYTES = 200 * 1024 * 1024
"""Largest VRML text read (after unpacking a .wrz), as the .osim reader's limit."""
MAX_DEPTH = 100
"""Deepest nesting of nodes (parsed, and after DEF/USE expansion); bone scenes use a handful."""
MAX_SHAPES = 10_000
"""Most IndexedFaceSet instances after DEF/USE expansion."""
MAX_VERTICES = 20_000_000
"""Most vertices after DEF/USE expansion (20 M: 480 MB of coordinates; a CT bone has ~10⁵-10⁶)."""
MAX_FACES = 40_000_000
"""Most polygon corners listed (coordIndex entries) after DEF/USE expansion."""
MAX_NODE_VISITS = 1_000_000
"""Most nodes visited when the DEF/USE graph is expanded (groups without geometry count too)."""


class VrmlError(ValueError):
    """The file is not a VRML scene this reader understands."""


@dataclass(eq=False)
class _Node:
    type: str
    fields: dict[str, list] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    """Token index where each field's values begin (for error lines)."""


def _tokens(text: str) -> list[str]:
    """Strings, brackets and words; comments (# to the end of the line, outside strings) dropped."""
    return [t for t in _TOKEN_RE.findall(text) if not t.startswith("#")]


def _line_of_token(text: str, index: int, first_line: int = 1) -> int:
    """Line (1-based, counting from ``first_line``) of token ``index`` of ``_tokens(text)``: found again
    only when an error is reported, so no position is kept per token."""
    k = 0
    for m in _TOKEN_RE.finditer(text):
        if m.group().startswith("#"):
            continue
        if k == index:
            return first_line + text.count("\n", 0, m.start())
        k += 1
    return first_line + text.count("\n")


class _TokenError(VrmlError):
    """A VrmlError about token ``index``; read_vrml adds its line."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index
        self.message = message


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
        self.depth = 0
        self.defs: dict[str, _Node] = {}
        self.all_nodes: list[_Node] = []

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
                raise _TokenError(self.i, f"unexpected {tok[:40]!r}")
        return out

    def node(self) -> _Node:
        if self.depth >= MAX_DEPTH:
            raise _TokenError(self.i, f"nodes are nested more than {MAX_DEPTH} deep")
        self.depth += 1
        try:
            return self._node()
        finally:
            self.depth -= 1

    def _node(self) -> _Node:
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
        self.all_nodes.append(node)
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
            node.starts[name] = self.i + (self.peek() == "[")
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


def _floats(values: list, name: str, start: int = -1) -> np.ndarray:
    """Numbers of a field; start: token index of its first value (for the error's line)."""
    out = np.empty(len(values), dtype=np.float64)
    for k, x in enumerate(values):
        try:
            out[k] = float(x)
        except (TypeError, ValueError):
            what = repr(x) if isinstance(x, str) else "a node"
            raise _TokenError(start + k if start >= 0 else -1,
                              f"field {name} holds {what[:40]}, which is not a number") from None
    return out


INDEX_LIMIT = 2**31 - 1
"""VRML indices are SFInt32."""


def _indices(values: list, name: str, start: int = -1) -> np.ndarray:
    """Whole-number indices of a field (coordIndex); 0.5, 1e300 or text are refused with the line."""
    out = np.empty(len(values), dtype=np.int64)
    for k, x in enumerate(values):
        v = None
        if isinstance(x, str):
            try:
                v = int(x, 16) if x[:2].lower() == "0x" else int(x)
            except ValueError:
                pass
        if v is None or not -INDEX_LIMIT - 1 <= v <= INDEX_LIMIT:
            what = repr(x)[:40] if isinstance(x, str) else "a node"
            raise _TokenError(start + k if start >= 0 else -1,
                              f"field {name} holds {what}, which is not a whole number index")
        out[k] = v
    return out


def _transform_matrix(node: _Node) -> np.ndarray:
    """4x4 of a VRML 2 Transform: T·C·R·SR·S·SR⁻¹·C⁻¹."""
    def vec(name: str, default: list[float]) -> np.ndarray:
        if name not in node.fields:
            return np.array(default, float)
        vals = _floats(node.fields[name], name, node.starts.get(name, -1))
        if len(vals) != len(default):
            raise _TokenError(node.starts.get(name, -1), f"field {name} needs {len(default)} numbers, "
                                                           f"got {len(vals)}")
        return vals

    T, C = vec("translation", [0, 0, 0]), vec("center", [0, 0, 0])
    r, so = vec("rotation", [0, 0, 1, 0]), vec("scaleOrientation", [0, 0, 1, 0])
    R, S = axis_angle_matrix(r[:3], r[3]), vec("scale", [1, 1, 1])
    SR = axis_angle_matrix(so[:3], so[3])
    M = np.eye(4)
    M[:3, :3] = R @ SR @ np.diag(S) @ SR.T
    M[:3, 3] = T + C - M[:3, :3] @ C
    return M


def _faces_from_index(index: np.ndarray, n_points: int) -> np.ndarray:
    """Triangle fans (k, 3) of polygons in a -1 separated coordIndex (whole numbers)."""
    idx = np.asarray(index, dtype=np.int64)
    if len(idx) % 4 == 0 and len(idx) and (idx[3::4] < 0).all() and (np.delete(idx, np.s_[3::4]) >= 0).all():
        tri = idx.reshape(-1, 4)[:, :3]  # the usual case, all triangles: vectorised
        if tri.max() >= n_points:
            raise VrmlError(f"coordIndex {int(tri.max())} refers to a point that does not exist ({n_points} points)")
        return tri
    tris = []
    poly: list[int] = []
    for k in idx.tolist() + [-1]:
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


def read_vrml_text(path: str | Path) -> str:
    """The text of a .wrl file, or of a gzipped one (.wrz, or any file starting with the gzip magic),
    unpacked as a stream and refused past MAX_TEXT_BYTES; VrmlError for a damaged or truncated one."""
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(2)
        fh.seek(0)
        if head != b"\x1f\x8b":
            raw = fh.read(MAX_TEXT_BYTES + 1)
            if len(raw) > MAX_TEXT_BYTES:
                raise VrmlError(f"the file is larger than {MAX_TEXT_BYTES // 2**20} MB, the limit for a VRML mesh")
        else:
            raw = _gunzip_capped(fh)
    return raw.decode("utf-8", errors="replace")


def _gunzip_capped(fh) -> bytes:
    """Unpack a gzip stream (several members allowed) chunk by chunk, stopping past MAX_TEXT_BYTES."""
    out = bytearray()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            while chunk:
                out += d.decompress(chunk, MAX_TEXT_BYTES + 1 - len(out))
                if len(out) > MAX_TEXT_BYTES:
                    raise VrmlError(f"the gzipped file unpacks to more than {MAX_TEXT_BYTES // 2**20} MB, the "
                                    "limit for a VRML mesh")
                if d.eof:  # end of one gzip member; another may follow
                    chunk = d.unused_data
                    if chunk.strip(b"\x00"):
                        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    else:
                        chunk = b""
                else:
                    chunk = d.unconsumed_tail
    except zlib.error as exc:
        raise VrmlError(f"the gzipped file is damaged ({exc})") from None
    if not d.eof:
        raise VrmlError(f"the gzipped file is truncated (it ends after {len(out)} unpacked bytes)")
    return bytes(out)


def _children(node: _Node) -> list:
    """The nodes ``walk`` descends into from a grouping node."""
    if node.type == "Shape":
        return node.fields.get("geometry", [])
    if node.type == "Switch":
        return node.fields.get("choice", [])
    if node.type == "LOD":
        return node.fields.get("level", [])[:1]
    return node.fields.get("children", [])


def _check_expansion(nodes: list, v1_points: int) -> None:
    """Count, on the shared DEF/USE graph, what walking it would build, and refuse a scene past the
    limits before anything is built. Each distinct node is counted once (memoised), so a graph that
    expands to 10⁹ shapes costs as much to check as its size in the file.

    v1_points: the most points of any VRML 1 Coordinate3 (an upper bound of what each VRML 1
    IndexedFaceSet adds, since it takes the points current where it stands).
    """
    memo: dict[int, tuple[int, int, int, int, int]] = {}  # id -> shapes, vertices, corners, visits, height

    def measure(node: _Node, depth: int) -> tuple[int, int, int, int, int]:
        got = memo.get(id(node))
        if got is None:
            if depth > MAX_DEPTH:
                raise VrmlError(f"DEF/USE reuse nests nodes more than {MAX_DEPTH} deep")
            if node.type == "IndexedFaceSet":
                coord = node.fields.get("coord")
                n_pts = (len(coord[0].fields.get("point", [])) // 3 if coord and isinstance(coord[0], _Node)
                         else v1_points)
                got = (1, n_pts, len(node.fields.get("coordIndex", [])), 1, 1)
            elif node.type in _GROUPS:
                shapes = verts = corners = visits = height = 0
                for child in _children(node):
                    if isinstance(child, _Node):
                        a, b, c, d, h = measure(child, depth + 1)
                        shapes, verts, corners, visits, height = (shapes + a, verts + b, corners + c,
                                                                  visits + d, max(height, h))
                got = (shapes, verts, corners, visits + 1, height + 1)
            else:
                got = (0, 0, 0, 1, 1)
            memo[id(node)] = got
        if depth + got[4] > MAX_DEPTH + 1:
            raise VrmlError(f"DEF/USE reuse nests nodes more than {MAX_DEPTH} deep")
        return got

    total = [0, 0, 0, 0]
    for node in nodes:
        if isinstance(node, _Node):
            for k, x in enumerate(measure(node, 1)[:4]):
                total[k] += x
    shapes, verts, corners, visits = total
    for value, limit, what in ((shapes, MAX_SHAPES, "face sets"), (verts, MAX_VERTICES, "vertices"),
                               (corners, MAX_FACES, "polygon corners"), (visits, MAX_NODE_VISITS, "nodes")):
        if value > limit:
            raise VrmlError(f"DEF/USE reuse expands the scene to {value:.3g} {what}, more than the limit of "
                            f"{limit:,}; the file is not a bone mesh this reader accepts")


def read_vrml(path: str | Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Vertices (n, 3), triangles (m, 3) and notes of every IndexedFaceSet in a VRML file.

    VrmlError (with the line where it applies) for anything malformed or past the module's limits.
    """
    text = read_vrml_text(path)
    if not text.lstrip().startswith("#VRML"):
        raise VrmlError("no '#VRML' header")
    body = text.split("\n", 1)[1] if "\n" in text else ""  # starts on line 2
    try:
        return _read_scene(body)
    except _TokenError as exc:
        if exc.index < 0:
            raise VrmlError(exc.message) from None
        raise VrmlError(f"line {_line_of_token(body, exc.index, 2)}: {exc.message}") from None


def _read_scene(body: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    notes: list[str] = []
    parser = _Parser(_tokens(body))
    try:
        nodes = parser.statements()
    except VrmlError as exc:
        if isinstance(exc, _TokenError):
            raise
        raise _TokenError(min(parser.i, len(parser.t)) - 1, str(exc)) from None
    v1_points = max((len(n.fields.get("point", [])) // 3 for n in parser.all_nodes if n.type == "Coordinate3"),
                    default=0)
    _check_expansion(nodes, v1_points)
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
                state["points"] = _points(node)
            elif node.type == "IndexedFaceSet":
                coord = node.fields.get("coord")
                if coord and isinstance(coord[0], _Node):
                    pts = _points(coord[0])
                else:
                    pts = state.get("points", np.zeros((0, 3)))
                idx = _indices(node.fields.get("coordIndex", []), "coordIndex", node.starts.get("coordIndex", -1))
                ccw = (node.fields.get("ccw") or ["TRUE"])[0] != "FALSE"
                try:
                    add(pts, idx, M, ccw)
                except VrmlError as exc:
                    if isinstance(exc, _TokenError):
                        raise
                    raise _TokenError(node.starts.get("coordIndex", -1), str(exc)) from None
            elif node.type in _GROUPS:
                M_child = M @ _transform_matrix(node) if node.type == "Transform" else M
                walk(_children(node), M_child, dict(state) if node.type.endswith("Separator") else state)
            elif node.type in ("MatrixTransform", "Rotation", "Translation", "Scale"):
                note = "VRML 1.0 transform nodes are ignored"
                if note not in notes:
                    notes.append(note)

    walk(nodes, np.eye(4), {})
    if not faces:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64), notes
    return np.vstack(verts), np.vstack(faces), notes


def _points(node: _Node) -> np.ndarray:
    """The (n, 3) ``point`` field of a Coordinate or Coordinate3 node."""
    start = node.starts.get("point", -1)
    pts = _floats(node.fields.get("point", []), "point", start)
    if pts.size % 3:
        raise _TokenError(start, f"the number of point coordinates ({pts.size}) is not a multiple of 3")
    return pts.reshape(-1, 3)


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
