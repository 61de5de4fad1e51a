"""Read an OpenSim 4 model (.osim) into a project: bodies, meshes, joints, coordinates, constraints,
muscles, ligaments and wrap objects, plus an ImportReport of everything left out or approximated.

``load_osim(path, search_paths)`` returns ``(Project, ImportReport)``. Frames: a mass's L frame is
the OpenSim body frame (meshes, path points and wrap objects keep their OpenSim coordinates).
Every Euler angle this importer writes (joint frames, wrap-object frames) is OpenSim's body-fixed
X-Y-Z sequence (intrinsic "XYZ"), in degrees; masses' initial poses use euler_sequence "XYZ".
Nothing in the file is evaluated; malformed input raises OsimError naming file and line.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from jointmodeller.core.multibody.functions import eval_spec
from jointmodeller.core.multibody.model_tree import FRAME_EULER, frame_pose, mass_tree
from jointmodeller.core.spatial_math import euler_to_matrix, matrix_to_euler
from jointmodeller.io.osim_functions import (
    UnsupportedFunction,
    find_function,
    parse_function,
)
from jointmodeller.io.osim_report import CoordinateInfo, ImportReport, PathWrapInfo
from jointmodeller.io.osim_xml import Doc, OsimError, read_osim_xml
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import (
    GROUND,
    Attachment,
    ConstraintSpec,
    Frame,
    FunctionSpec,
    JointSpec,
    Mass,
    Project,
    ProjectInfo,
    SpringType,
    ViaPoint,
    WrapObject,
)
from jointmodeller.model.validation import MASS_RANGE_KG, gyration_problem, inertia_problems, project_problems

__all__ = ["load_osim", "OsimError", "ImportReport", "EULER", "frame_matrix", "CUSTOM_AXIS_KEYS"]

EULER = FRAME_EULER
"""Euler sequence (scipy notation: intrinsic X-Y-Z = OpenSim body-fixed XYZ) of imported frames."""
CUSTOM_AXIS_KEYS = tuple(f"{kind}{i}_{c}" for kind in ("rotation", "translation") for i in (1, 2, 3)
                         for c in "xyz")
"""JointSpec.parameters keys holding a custom mobilizer's axes (in F): rotation1_x ... translation3_z."""
MIN_MASS_KG = 1e-6
GROUND_GEOMETRY = "ground_geometry"
"""Name of the fixed mass that carries meshes attached to OpenSim's ground."""
JOINT_TYPES = {
    "WeldJoint": "weld", "PinJoint": "pin", "SliderJoint": "slider", "UniversalJoint": "universal",
    "BallJoint": "ball", "GimbalJoint": "ball", "EllipsoidJoint": "ellipsoid", "FreeJoint": "free",
    "PlanarJoint": "planar", "CustomJoint": "custom",
}
MESH_DIRS = ("", "Geometry", "geometry")
NO_FILE = ("", "unassigned")
"""Mesh file names that mean "no file" (OpenSim's default property value is "Unassigned")."""
OLDEST_VERSION = 20000
"""Oldest OpenSim document version read: the 2.x format (joints inside their child bodies), which
OpenSim 4 upgrades on load, as it does the 3.x format and the 4.0-beta connector format (30501)."""
METRE_UNITS = ("meters", "meter", "metres", "metre", "m", "unassigned", "")
"""length_units read as metres: OpenSim computes in the file's numbers whatever the label says, and
"Unassigned" is the label's default."""
PASSIVE_STRAIN_MAX = 0.6


frame_matrix = frame_pose
"""(R (3, 3), p (3,)) of an imported Frame (``core.multibody.model_tree.frame_pose``)."""


def _euler_deg(R: np.ndarray) -> tuple[float, float, float]:
    return tuple(float(v) for v in np.degrees(matrix_to_euler(R, EULER)))


def _frame_from(R: np.ndarray, p: np.ndarray) -> Frame:
    return Frame(tuple(float(v) for v in p), _euler_deg(R))


def _xyz_rotation(angles: Sequence[float]) -> np.ndarray:
    """R of OpenSim's body-fixed X-Y-Z angles [rad] (offset frames, OpenSim 3 joint frames)."""
    return euler_to_matrix(np.asarray(angles, float), EULER)


def socket_text(doc: Doc, el: ET.Element, *names: str) -> str:
    """What a socket of ``el`` connects to, in any format: OpenSim 4's <socket_NAME>, the 4.0-beta
    <connectors><… name="NAME"><connectee_name>, or the older plain <NAME> element ("" if none)."""
    conns = el.find("connectors")
    for name in names:
        text = doc.text(el, f"socket_{name}")
        if text:
            return text
        for c in list(conns) if conns is not None else []:
            if c.get("name") == name:
                text = doc.text(c, "connectee_name")
                if text:
                    return text
        text = doc.text(el, name)
        if text:
            return text
    return ""


# --------------------------------------------------------------------------------------------------
# Frames
# --------------------------------------------------------------------------------------------------
@dataclass
class _FrameDef:
    """A frame fixed on a body: body name (GROUND for ground), R, p of the frame in the body frame."""

    body: str
    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))


class _Frames:
    """Resolves OpenSim frame paths (/ground, /bodyset/B, offset frames by path or local name)."""

    def __init__(self, doc: Doc, bodies: set[str]):
        self.doc = doc
        self.bodies = bodies
        self.offsets: dict[str, tuple[ET.Element, str]] = {}  # key -> (element, owner path)
        self.owner: dict[int, str] = {}  # id(offset element) -> path of the body owning it

    def add_offset(self, key: str, el: ET.Element) -> None:
        self.offsets[key] = (el, key.rsplit("/", 1)[0])
        self.owner[id(el)] = key.rsplit("/", 1)[0]

    def resolve(self, path: str, local: dict[str, ET.Element] | None = None, depth: int = 0) -> _FrameDef:
        if depth > 20:
            raise OsimError(f"{self.doc.path}: frame {path!r} refers to itself")
        raw = (path or "").strip()
        name = raw.rstrip("/").split("/")[-1] if raw else ""
        parts = [p for p in raw.split("/") if p not in ("", "..", ".")]
        if local and name in local and (len(parts) <= 1):
            return self._offset(local[name], local, depth)
        if raw in self.offsets:
            return self._offset(self.offsets[raw][0], local, depth)
        if parts in (["ground"],) or raw in ("ground", "/ground"):
            return _FrameDef(GROUND)
        if len(parts) >= 2 and parts[-2] == "bodyset" and parts[-1] in self.bodies:
            return _FrameDef(parts[-1])
        if len(parts) == 1 and parts[0] in self.bodies:
            return _FrameDef(parts[0])
        for key, (el, _) in self.offsets.items():
            if key.endswith("/" + "/".join(parts)) and parts:
                return self._offset(el, local, depth)
        if local and name in local:
            return self._offset(local[name], local, depth)
        raise OsimError(f"{self.doc.path}: cannot find the frame {raw!r}")

    def _offset(self, el: ET.Element, local, depth) -> _FrameDef:
        parent = socket_text(self.doc, el, "parent", "parent_frame")
        if parent.strip() in ("..", "") and id(el) in self.owner:
            parent = self.owner[id(el)]
        base = self.resolve(parent, local, depth + 1)
        t = np.asarray(self.doc.floats(el, "translation", 3, (0.0, 0.0, 0.0)))
        R = _xyz_rotation(self.doc.floats(el, "orientation", 3, (0.0, 0.0, 0.0)))
        return _FrameDef(base.body, base.R @ R, base.p + base.R @ t)


# --------------------------------------------------------------------------------------------------
# Meshes
# --------------------------------------------------------------------------------------------------
def find_mesh_file(name: str, model_dir: Path, search_paths: Sequence[Path]) -> Path | None:
    """The first existing file for mesh ``name`` inside the model's folder or a search path (see
    ``locate_mesh_file``), or None."""
    return locate_mesh_file(name, model_dir, search_paths)[0]


def _within(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def locate_mesh_file(name: str, model_dir: Path, search_paths: Sequence[Path]) -> tuple[Path | None, list[str]]:
    """(file, refused) for mesh ``name``: the first existing file beside the model, in its Geometry
    folder, or on a search path (and its Geometry folder), by the name as given and by its last part.

    A file is used only when its real path (symlinks followed, ``..`` resolved) lies inside the
    model's folder or one of the search paths: a name with ``..`` leaving them, an absolute path
    outside them, or a symlink pointing out of them is refused — not read — and described in
    ``refused`` (what it resolves to) so the import report can say why."""
    rel = Path(name.replace("\\", "/"))
    bases = [Path(b) for b in (model_dir, *search_paths)]
    roots = []
    for b in bases:
        try:
            roots.append(b.resolve())
        except (OSError, RuntimeError):
            continue
    refused: list[str] = []
    candidates = [rel] if rel.is_absolute() else []
    for base in bases:
        for sub in MESH_DIRS:
            if not rel.is_absolute():
                candidates.append(base / sub / rel)
            candidates.append(base / sub / rel.name)
    for cand in candidates:
        try:
            if not cand.is_file():
                continue
            real = cand.resolve(strict=True)
        except (OSError, RuntimeError, ValueError):
            continue
        if _within(real, roots):
            return cand, refused
        why = f"{cand} resolves to {real}"
        if why not in refused:
            refused.append(why)
    return None, refused


def _merge_meshes(parts: list[tuple[np.ndarray, np.ndarray]], source: str, warnings: list[str]) -> MeshData:
    verts, faces, off = [], [], 0
    for v, f in parts:
        verts.append(v)
        faces.append(f + off)
        off += len(v)
    return MeshData(np.concatenate(verts), np.concatenate(faces), source=source, warnings=tuple(warnings))


# --------------------------------------------------------------------------------------------------
# The reader
# --------------------------------------------------------------------------------------------------
@dataclass
class _Joint:
    name: str
    tag: str
    parent: _FrameDef
    child: _FrameDef
    coords: list[tuple[str, float]]
    spec: JointSpec | None = None


class _Reader:
    def __init__(self, path: Path, search_paths: Sequence[str | Path], read_mesh, load_meshes: bool):
        self.doc = read_osim_xml(path)
        self.path = Path(path)
        self.search = [Path(p) for p in search_paths]
        self.read_mesh = read_mesh
        self.load_meshes = load_meshes
        model = self.doc.root.find("Model")
        if model is None:
            raise OsimError(f"{self.path}, line {self.doc.line(self.doc.root)}: no <Model> in the document")
        self.model = model
        self.report = ImportReport(str(self.path), model.get("name", self.path.stem))
        self.coord_values: dict[str, float] = {}
        self.coord_joint: dict[str, str] = {}
        self.coord_locked: dict[str, bool] = {}
        self.wrap_names: dict[tuple[str, str], str] = {}

    # ---- helpers -----------------------------------------------------------------------------
    def objects(self, set_tag: str) -> list[ET.Element]:
        s = self.model.find(set_tag)
        if s is None:
            return []
        objs = s.find("objects")
        return list(objs) if objs is not None else []

    def socket(self, el: ET.Element, *names: str) -> str:
        return socket_text(self.doc, el, *names)

    def count(self, kind: str, n: int = 1) -> None:
        self.report.counts[kind] = self.report.counts.get(kind, 0) + n

    # ---- top level ---------------------------------------------------------------------------
    def run(self) -> tuple[Project, ImportReport]:
        doc, model, rep = self.doc, self.model, self.report
        version = self.doc.root.get("Version", "")
        if version.isdigit() and int(version) < OLDEST_VERSION:
            raise OsimError(f"{self.path}: OpenSim document version {version} is older than OpenSim 2.0 (the "
                            "oldest format OpenSim 4 upgrades); re-save the model in OpenSim 4")
        units = (doc.text(model, "length_units") or "meters").strip().lower()
        if units not in METRE_UNITS:
            raise OsimError(f"{self.path}: length units {units!r} are not supported (only meters)")
        for line in self.doc.recovered:
            rep.approx("XML", "document", line)
        gravity = doc.floats(model, "gravity", 3, (0.0, -9.80665, 0.0))
        body_els = self.objects("BodySet")
        if not body_els and model.find("BodySet") is None:
            raise OsimError(f"{self.path}, line {doc.line(model)}: the model has no <BodySet>")
        names = {b.get("name", "") for b in body_els}
        self.frames = _Frames(doc, names)
        for b in body_els:
            comps = b.find("components")
            for c in list(comps) if comps is not None else []:
                if c.tag == "PhysicalOffsetFrame":
                    self.frames.add_offset(f"/bodyset/{b.get('name')}/{c.get('name')}", c)
        joints = self.read_joints()
        masses, wraps = self.read_bodies(body_els, joints)
        ground = model.find("Ground")
        if ground is not None:
            wraps += self.read_wraps(ground, GROUND)
            gmass = self.ground_mass(ground)
            if gmass is not None:
                masses = list(masses) + [gmass]
        springs, attachments = self.read_forces({w.name for w in wraps})
        constraints = self.read_constraints()
        from jointmodeller.io.osim_contact import import_contact  # Smith2018 cartilage contact

        masses, contacts = import_contact(self, list(masses))
        for tag, why in (("MarkerSet", "markers are not part of the project"),
                         ("ControllerSet", "controllers are out of scope"),
                         ("ProbeSet", "probes are out of scope"),
                         ("ComponentSet", "generic components are not imported")):
            for el in self.objects(tag):
                rep.skip(el.get("name", "?"), el.tag, why)
        info = ProjectInfo(
            title=model.get("name", self.path.stem),
            description=(doc.text(model, "credits") or "")[:2000],
            gravity_G=tuple(float(g) for g in gravity),
        )
        project = Project(info=info, springs=tuple(springs), masses=tuple(masses),
                          attachments=tuple(attachments), constraints=tuple(constraints),
                          wrap_objects=tuple(wraps), contacts=tuple(contacts))
        project = _drop_invalid(project, rep)
        project = _with_notes(project, rep.to_text())
        return project, rep

    # ---- joints ------------------------------------------------------------------------------
    def read_joints(self) -> dict[str, _Joint]:
        """Child body name -> joint (OpenSim 4: the JointSet; OpenSim 3: each body's <Joint>)."""
        doc, rep = self.doc, self.report
        out: dict[str, _Joint] = {}
        items: list[tuple[ET.Element, str | None]] = [(el, None) for el in self.objects("JointSet")]
        for body in self.objects("BodySet"):
            holder = body.find("Joint")
            if holder is not None:
                items += [(el, body.get("name", "?")) for el in holder]
        for el, owner in items:
            name = el.get("name", "?")
            if el.tag not in JOINT_TYPES:
                rep.skip(name, el.tag, "joint type not supported; its child body is imported as a free body")
                continue
            try:
                if owner is None:
                    local = {}
                    frames = el.find("frames")
                    for f in list(frames) if frames is not None else []:
                        local[f.get("name", "")] = f
                        self.frames.offsets.setdefault(f"/jointset/{name}/{f.get('name', '')}",
                                                       (f, f"/jointset/{name}"))
                    parent = self.frames.resolve(self.socket(el, "parent_frame", "parent_body"), local)
                    child = self.frames.resolve(self.socket(el, "child_frame", "child_body"), local)
                    # the 4.0-beta format (30501): joint frames as offsets in the parent and child bodies
                    parent = self._offset_by(el, parent, "location_in_parent", "orientation_in_parent")
                    child = self._offset_by(el, child, "location_in_child", "orientation_in_child")
                else:  # OpenSim 3: the joint lives in its child body, frames as location/orientation
                    pbody = self.frames.resolve(doc.text(el, "parent_body") or "")
                    parent = _FrameDef(pbody.body,
                                       _xyz_rotation(doc.floats(el, "orientation_in_parent", 3, (0.0,) * 3)),
                                       np.asarray(doc.floats(el, "location_in_parent", 3, (0.0,) * 3)))
                    child = _FrameDef(owner, _xyz_rotation(doc.floats(el, "orientation", 3, (0.0,) * 3)),
                                      np.asarray(doc.floats(el, "location", 3, (0.0,) * 3)))
            except OsimError as exc:
                rep.skip(name, el.tag, str(exc))
                continue
            if child.body == GROUND:
                rep.skip(name, el.tag, "ground as a joint's child is not supported")
                continue
            if child.body in out:
                rep.skip(name, el.tag, f"{child.body} already has a joint ({out[child.body].name}); a second "
                                       "joint would close a loop — use a constraint")
                continue
            coords = []
            cset = el.find("coordinates")
            if cset is None and el.find("CoordinateSet") is not None:
                cset = el.find("CoordinateSet").find("objects")
            for c in list(cset) if cset is not None else []:
                if c.tag != "Coordinate":
                    continue
                cname = c.get("name", "?")
                default = doc.float(c, "default_value", 0.0)
                rng = doc.floats(c, "range", 2, (-math.inf, math.inf))
                locked = doc.bool(c, "locked") or doc.bool(c, "default_locked")
                clamped = doc.bool(c, "clamped") or doc.bool(c, "default_clamped")
                self.report.coordinates.append(CoordinateInfo(cname, name, default, rng[0], rng[1], locked, clamped,
                                                              doc.text(c, "motion_type") or ""))
                self.coord_locked[cname] = locked
                if c.find("prescribed_function") is not None and len(c.find("prescribed_function")) and \
                        doc.bool(c, "prescribed"):
                    rep.approx(cname, "Coordinate", "prescribed motion not imported")
                coords.append((cname, default))
                self.coord_values[cname] = default
                self.coord_joint[cname] = name
            j = _Joint(name, el.tag, parent, child, coords)
            try:
                self.joint_spec(el, j)
            except (UnsupportedFunction, OsimError) as exc:
                rep.skip(name, el.tag, f"{exc}; its child body is imported as a free body")
                continue
            if doc.bool(el, "reverse"):
                rep.approx(name, el.tag, "reversed joint: imported with reversed=True; check its coordinates")
            out[child.body] = j
            self.count("joints")
        return out

    def _offset_by(self, el: ET.Element, base: _FrameDef, loc_tag: str, rot_tag: str) -> _FrameDef:
        """``base`` moved by the joint's own <loc_tag>/<rot_tag> (body-fixed XYZ radians), if it has them."""
        if el.find(loc_tag) is None and el.find(rot_tag) is None:
            return base
        t = np.asarray(self.doc.floats(el, loc_tag, 3, (0.0, 0.0, 0.0)))
        R = _xyz_rotation(self.doc.floats(el, rot_tag, 3, (0.0, 0.0, 0.0)))
        return _FrameDef(base.body, base.R @ R, base.p + base.R @ t)

    def joint_spec(self, el: ET.Element, j: _Joint) -> None:
        doc = self.doc
        kind = JOINT_TYPES[el.tag]
        names = tuple(c for c, _ in j.coords)
        q0 = tuple(float(v) for _, v in j.coords)
        need = {"weld": 0, "pin": 1, "slider": 1, "universal": 2, "ball": 3, "ellipsoid": 3, "free": 6,
                "planar": 3}
        if kind in need and len(names) != need[kind]:
            raise OsimError(f"{doc.where(el)}: {el.tag} needs {need[kind]} coordinates, has {len(names)}")
        params: tuple = ()
        Rpf, ppf, Rcm, pcm = j.parent.R, j.parent.p, j.child.R, j.child.p
        if kind == "custom":
            kind, params, functions, Ralign = self.custom(el, j)
            if kind == "pin":
                Rpf, Rcm = Rpf @ Ralign, Rcm @ Ralign
                functions = ()
        else:
            functions = ()
            if kind == "ellipsoid":
                radii = doc.floats(el, "radii_x_y_z", 3)
                params = (("a", radii[0]), ("b", radii[1]), ("c", radii[2]))
        j.spec = JointSpec(
            type=kind, parent=j.parent.body, frame_parent=_frame_from(Rpf, ppf), frame_child=_frame_from(Rcm, pcm),
            parameters=params, functions=functions, coordinates=names, default_q=q0,
            reversed=doc.bool(el, "reverse"),
            locked=tuple(self.coord_locked.get(c, False) for c in names) if any(
                self.coord_locked.get(c, False) for c in names) else (),
        )

    def custom(self, el: ET.Element, j: _Joint):
        """CustomJoint -> ("pin", (), (), R_align) when it is a plain hinge, else ("custom", axis
        parameters, six FunctionSpecs, I)."""
        doc, rep = self.doc, self.report
        st = el.find("SpatialTransform")
        if st is None:
            raise OsimError(f"{doc.where(el)}: CustomJoint without a SpatialTransform")
        axes_el = {ta.get("name", ""): ta for ta in st.findall("TransformAxis")}
        order = ("rotation1", "rotation2", "rotation3", "translation1", "translation2", "translation3")
        defaults = ((1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1))
        axes, fns = [], []
        names = [c for c, _ in j.coords]
        for key, dflt in zip(order, defaults):
            ta = axes_el.get(key)
            if ta is None:
                axes.append(np.array(dflt, float))
                fns.append(FunctionSpec("constant", (0.0,)))
                continue
            ax = np.asarray(doc.floats(ta, "axis", 3, dflt), float)
            n = np.linalg.norm(ax)
            if n == 0:
                raise OsimError(f"{doc.where(ta)}: TransformAxis {key} has a zero axis")
            axes.append(ax / n)
            coords = (doc.text(ta, "coordinates") or "").split()
            fel = find_function(ta)
            if len(coords) > 1:
                raise UnsupportedFunction(f"{doc.where(ta)}: TransformAxis {key} depends on {len(coords)} "
                                          "coordinates (one is supported)")
            if coords and coords[0] not in names:
                raise OsimError(f"{doc.where(ta)}: TransformAxis {key} uses coordinate {coords[0]!r} of another joint")
            if fel is None:
                if coords:  # OpenSim's default is the identity (linear, slope 1)
                    fns.append(FunctionSpec("linear", (1.0, 0.0), (), (coords[0],)))
                else:
                    fns.append(FunctionSpec("constant", (0.0,)))
                continue
            notes: list[str] = []
            fn = parse_function(doc, fel, coords[0] if coords else "", 1.0, notes)
            if not coords and fn.kind != "constant":
                fn = FunctionSpec("constant", (float(eval_spec(fn, 0.0)[0]),))
            for note in notes:
                rep.approx(f"{j.name}/{key}", fel.tag, note)
            fns.append(fn)
        # a plain hinge: one rotation = the coordinate itself, everything else zero
        lin = [k for k in range(6) if fns[k].kind != "constant"]
        zero_const = all(fns[k].kind == "constant" and fns[k].values[0] == 0.0 for k in range(6) if k not in lin)
        if (len(names) == 1 and len(lin) == 1 and lin[0] < 3 and zero_const
                and fns[lin[0]].kind == "linear" and fns[lin[0]].values == (1.0, 0.0)):
            z = axes[lin[0]]
            Ralign = _align_z(z)
            return "pin", (), (), Ralign
        params = tuple((f"{kind}{i}_{c}", float(axes[3 * (kind == 'translation') + i - 1]["xyz".index(c)]))
                       for kind in ("rotation", "translation") for i in (1, 2, 3) for c in "xyz")
        return "custom", params, tuple(fns), np.eye(3)

    # ---- bodies ------------------------------------------------------------------------------
    def read_bodies(self, body_els: list[ET.Element], joints: dict[str, _Joint]):
        doc, rep = self.doc, self.report
        masses, wraps = [], []
        for el in body_els:
            name = el.get("name", "?")
            if name == GROUND:  # OpenSim 3 lists ground as a body
                wraps += self.read_wraps(el, GROUND)
                gmass = self.ground_mass(el)
                if gmass is not None:
                    masses.append(gmass)
                continue
            mass = doc.float(el, "mass", 0.0)
            com = doc.floats(el, "mass_center", 3, (0.0, 0.0, 0.0))
            if el.find("inertia") is not None:
                iv = doc.floats(el, "inertia", 6, (0.0,) * 6)
            else:  # OpenSim 3
                iv = tuple(doc.float(el, f"inertia_{k}", 0.0) for k in ("xx", "yy", "zz", "xy", "xz", "yz"))
            I = np.array([[iv[0], iv[3], iv[4]], [iv[3], iv[1], iv[5]], [iv[4], iv[5], iv[2]]])
            if mass <= 0:
                rep.approx(name, "Body", f"mass {mass:g} kg replaced by {MIN_MASS_KG:g} kg (the project needs a "
                                         "positive mass)")
                mass = MIN_MASS_KG
            if mass > MASS_RANGE_KG[1]:
                raise OsimError(f"{doc.where(el)}: body {name} has a mass of {mass:g} kg, beyond "
                                f"{MASS_RANGE_KG[1]:g} kg; check the model's units")
            problems = inertia_problems(I)
            if not problems:
                problems = [p for p in (gyration_problem(I, mass),) if p]
            if problems:
                rep.approx(name, "Body", f"inertia {problems[0]}; replaced by a small sphere's")
                I = np.eye(3) * mass * 1e-4
            mesh = self.body_mesh(el, name) if self.load_meshes else None
            j = joints.get(name)
            if j is None:
                rep.approx(name, "Body", "no joint imported for this body: it is a free body")
            masses.append(Mass(
                name=name, mesh=mesh, density_kg_m3=None, mass_kg=float(mass), com_L=tuple(float(c) for c in com),
                inertia_L=tuple(tuple(float(v) for v in row) for row in I), properties_from_mesh=False,
                position_G=tuple(float(c) for c in com), euler_deg=(0.0, 0.0, 0.0),  # placed below
                euler_sequence=EULER, joint=j.spec if j else None,
            ))
            self.count("bodies")
            wraps += self.read_wraps(el, name)
        return _order_masses(self.placed_at_defaults(masses)), wraps

    def ground_mass(self, el: ET.Element) -> Mass | None:
        """Meshes attached to ground, as a fixed mass of negligible mass at the origin (or None)."""
        mesh = self.body_mesh(el, GROUND) if self.load_meshes else None
        if mesh is None:
            return None
        self.report.approx(GROUND_GEOMETRY, "Ground", "meshes on ground imported as a fixed mass of negligible "
                                                      "mass at the origin")
        return Mass(GROUND_GEOMETRY, mesh=mesh, density_kg_m3=None, mass_kg=MIN_MASS_KG,
                    inertia_L=((1e-9, 0, 0), (0, 1e-9, 0), (0, 0, 1e-9)), properties_from_mesh=False,
                    fixed=True, euler_sequence=EULER)

    def placed_at_defaults(self, masses: list[Mass]) -> list[Mass]:
        """The masses posed at the default coordinate values by the System's own kinematics (the
        mobilizer tree of ``core.multibody.model_tree``); a mass without a joint stays where it is."""
        try:
            tree = mass_tree(masses)
        except ValueError as exc:
            raise OsimError(f"{self.path}: cannot assemble the joints into a tree: {exc}") from exc
        with np.errstate(all="ignore"):  # overflowing frames are reported below, by body
            kin = tree.system.kinematics(tree.q0)
        out = []
        for m in masses:
            i = tree.body[m.name]
            R, p = kin.R_GB[i], kin.p_GB[i]
            try:
                if not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
                    raise ValueError("not finite")
                euler = _euler_deg(R)
            except (ValueError, np.linalg.LinAlgError) as exc:
                raise OsimError(f"{self.path}: body {m.name!r} has no valid pose at the default coordinates "
                                f"({exc}; a joint frame, offset or default value may overflow)") from None
            out.append(replace(m, position_G=tuple(float(v) for v in (p + R @ np.asarray(m.com_L, float))),
                               euler_deg=euler))
        return out

    def geometry_entries(self, el: ET.Element, body: str) -> list[tuple[str, str, np.ndarray, _FrameDef]]:
        """(component name, mesh file, scale (3,), frame on the body) of every mesh attached to a
        body: OpenSim 4 attached_geometry (on the body or its offset frames), OpenSim 3 VisibleObject."""
        doc, rep = self.doc, self.report
        out = []
        holders = [(el.find("attached_geometry"), _FrameDef(body), body)]
        comps = el.find("components")
        for c in list(comps) if comps is not None else []:
            if c.tag == "PhysicalOffsetFrame" and c.find("attached_geometry") is not None:
                try:
                    holders.append((c.find("attached_geometry"), self.frames.resolve(
                        f"/bodyset/{body}/{c.get('name')}"), f"{body}/{c.get('name')}"))
                except OsimError as exc:
                    rep.skip(f"{body}/{c.get('name')}", c.tag, str(exc))
        for geo, frame, owner in holders:
            for g in list(geo) if geo is not None else []:
                gname = g.get("name", "?")
                if g.tag != "Mesh":
                    rep.skip(f"{owner}/{gname}", g.tag, "display primitives are not imported (only mesh files)")
                    continue
                fname = doc.text(g, "mesh_file") or ""
                scale = np.asarray(doc.floats(g, "scale_factors", 3, (1.0, 1.0, 1.0)))
                sock = self.socket(g, "frame") or ".."
                fr = frame
                if sock not in ("..", "", f"/bodyset/{body}"):
                    try:
                        fr = self.frames.resolve(sock)
                    except OsimError as exc:
                        rep.skip(f"{owner}/{gname}", "Mesh", str(exc))
                        continue
                if fr.body != body:
                    rep.skip(f"{owner}/{gname}", "Mesh", f"attached to a frame of another body ({fr.body})")
                    continue
                out.append((f"{owner}/{gname}", fname, scale, fr))
        vis = el.find("VisibleObject")
        if vis is not None:  # OpenSim 3
            vscale = np.asarray(doc.floats(vis, "scale_factors", 3, (1.0, 1.0, 1.0)))
            gset = vis.find("GeometrySet")
            objs = gset.find("objects") if gset is not None else None
            for g in list(objs) if objs is not None else []:
                fname = doc.text(g, "geometry_file") or ""
                scale = vscale * np.asarray(doc.floats(g, "scale_factors", 3, (1.0, 1.0, 1.0)))
                tr = doc.floats(g, "transform", 6, (0.0,) * 6)
                out.append((f"{body}/{g.get('name') or fname}", fname, scale,
                            _FrameDef(body, _xyz_rotation(tr[:3]), np.asarray(tr[3:]))))
            for fname in (doc.text(vis, "geometry_files") or "").split():
                out.append((f"{body}/{fname}", fname, vscale, _FrameDef(body)))
        return out

    def body_mesh(self, el: ET.Element, body: str) -> MeshData | None:
        rep = self.report
        parts, used, warns = [], [], []
        for comp, fname, scale, fr in self.geometry_entries(el, body):
            if fname.strip().lower() in NO_FILE:  # OpenSim's "no file"
                continue
            found, refused = locate_mesh_file(fname, self.path.parent, self.search)
            if found is None and refused:
                rep.skip(comp, "Mesh", f"mesh file {fname!r} refused: it lies outside the model's folder and the "
                                       f"search paths ({'; '.join(refused[:3])}); not read")
                continue
            if found is None:
                rep.skip(comp, "Mesh", f"mesh file {fname!r} not found beside the model, in Geometry/ or on the "
                                       "search paths")
                continue
            try:
                md = self.read_mesh(found, "m")
            except Exception as exc:  # noqa: BLE001 — any reader failure is reported, not raised
                rep.skip(comp, "Mesh", f"cannot read {found.name}: {exc}")
                continue
            v = (np.asarray(md.vertices_L) * scale) @ fr.R.T + fr.p
            parts.append((v, np.asarray(md.faces)))
            used.append(found.name)
            warns += [f"{found.name}: {w}" for w in md.warnings]
            self.count("meshes")
        if not parts:
            return None
        return _merge_meshes(parts, "+".join(used), warns)

    def read_wraps(self, el: ET.Element, body: str) -> list[WrapObject]:
        doc, rep = self.doc, self.report
        ws = el.find("WrapObjectSet")
        objs = ws.find("objects") if ws is not None else None
        out = []
        for w in list(objs) if objs is not None else []:
            name = w.get("name", "?")
            kinds = {"WrapCylinder": "cylinder", "WrapSphere": "sphere", "WrapEllipsoid": "ellipsoid",
                     "WrapTorus": "torus"}
            if w.tag not in kinds:
                rep.skip(f"{body}/{name}", w.tag, "wrap object type not supported")
                continue
            if not doc.bool(w, "active", True):
                rep.skip(f"{body}/{name}", w.tag, "inactive in OpenSim")
                continue
            kind = kinds[w.tag]
            if kind == "cylinder":
                dims = (doc.float(w, "radius"), doc.float(w, "length", 1.0))
            elif kind == "sphere":
                dims = (doc.float(w, "radius"),)
            elif kind == "ellipsoid":
                dims = doc.floats(w, "dimensions", 3)
            else:
                dims = (doc.float(w, "inner_radius"), doc.float(w, "outer_radius"))
                rep.approx(f"{body}/{name}", w.tag, "imported for display; the muscle-path study does not "
                                                    "wrap over tori")
            rot = doc.floats(w, "xyz_body_rotation", 3, (0.0, 0.0, 0.0))
            trans = doc.floats(w, "translation", 3, (0.0, 0.0, 0.0))
            quadrant = (doc.text(w, "quadrant") or "all").strip()
            ql = quadrant.lower()
            quadrant = "all" if ql in ("all", "unassigned", "") else ql if ql.startswith(("+", "-")) else "+" + ql
            uname = name if name not in {v for v in self.wrap_names.values()} else f"{body}/{name}"
            self.wrap_names[(body, name)] = uname
            out.append(WrapObject(uname, body, kind, Frame(tuple(trans), tuple(math.degrees(a) for a in rot)),
                                  tuple(float(d) for d in dims), quadrant))
            self.count("wrap objects")
        return out

    # ---- forces ------------------------------------------------------------------------------
    def read_forces(self, wrap_set: set[str]):
        rep = self.report
        springs, attachments = [], []
        for el in self.objects("ForceSet"):
            name = el.get("name", "?")
            path = next((c for c in el if c.tag == "GeometryPath"), None)
            if path is None:
                other = next((c for c in el if c.tag.endswith("Path") and c.tag != "GeometryPath"), None)
                why = (f"path type {other.tag} is not supported" if other is not None
                       else "force without a geometry path (not a tissue)")
                rep.skip(name, el.tag, why)
                continue
            try:
                spring = self.passive_law(el, name)
                att = self.attachment(el, path, name, spring.name, wrap_set)
            except (OsimError, UnsupportedFunction) as exc:
                rep.skip(name, el.tag, str(exc))
                continue
            if att is None:
                continue
            springs.append(spring)
            attachments.append(att)
            self.count("muscles" if "Muscle" in el.tag else "path elements")
        return springs, attachments

    def passive_law(self, el: ET.Element, name: str) -> SpringType:
        doc, rep = self.doc, self.report
        tag = el.tag
        if tag == "Blankevoort1991Ligament":
            k = doc.float(el, "linear_stiffness")
            slack = doc.float(el, "slack_length")
            eps_t = doc.float(el, "transition_strain", 0.06)
            damp = doc.float(el, "damping_coefficient", 0.003)
            if damp:
                rep.approx(name, tag, "damping F = c·(strain rate) imported as a dashpot c/slack_length "
                                      "[N·s/m] acting in both directions (OpenSim: only while lengthening)")
            return SpringType(name, kx=(k,), law="blankevoort", transition_strain=eps_t, slack_length_m=slack,
                              cx=damp / slack if slack > 0 else 0.0)
        if tag == "PathSpring":
            k = doc.float(el, "stiffness")
            rest = doc.float(el, "resting_length")
            if doc.float(el, "dissipation", 0.0):
                rep.approx(name, tag, "dissipation (force-proportional damping) not imported")
            return SpringType(name, kx=(k,), slack_length_m=rest, tension_only=True)
        if "Muscle" in tag:
            fmax = doc.float(el, "max_isometric_force", 1000.0)
            lopt = doc.float(el, "optimal_fiber_length", 0.1)
            lts = doc.float(el, "tendon_slack_length", 0.2)
            alpha = doc.float(el, "pennation_angle_at_optimal", 0.0)
            kpe = doc.float(el, "KshapePassive", 4.0)
            e0 = doc.float(el, "FmaxMuscleStrain", 0.6)
            strain = np.linspace(0.0, PASSIVE_STRAIN_MAX, 61)
            force = fmax * (np.exp(kpe * strain / e0) - 1.0) / (np.exp(kpe) - 1.0)
            x = strain * lopt * math.cos(alpha)
            V = np.stack([x ** p for p in (1, 2, 3, 4)], axis=1)
            coef = np.linalg.lstsq(V, force, rcond=None)[0]
            rep.approx(name, tag, "imported as a passive element: the fibre's passive force–length curve "
                                  "(Thelen 2003 shape) fitted by a quartic in path lengthening beyond "
                                  "tendon slack + optimal fibre length (rigid tendon); activation dynamics "
                                  "are out of scope")
            return SpringType(name, kx=tuple(float(c) for c in coef),
                              slack_length_m=lts + lopt * math.cos(alpha), colour="#c0392b")
        rep.approx(name, tag, "no passive force law: imported for its geometry with a negligible stiffness")
        return SpringType(name, kx=(1e-6,), colour="#7f8c8d")

    def attachment(self, el, path_el, name, spring, wrap_set) -> Attachment | None:
        doc, rep = self.doc, self.report
        pps = path_el.find("PathPointSet")
        objs = pps.find("objects") if pps is not None else None
        points: list[ViaPoint] = []
        dropped_points = 0
        for p in list(objs) if objs is not None else []:
            pname = p.get("name", "?")
            frame = self.socket(p, "parent_frame", "body")
            fr = self.frames.resolve(frame)
            moving: tuple[FunctionSpec, ...] = ()
            if p.tag == "MovingPathPoint":
                loc, moving = self.moving_point(p, name, fr)
            else:
                loc = fr.R @ np.asarray(doc.floats(p, "location", 3)) + fr.p
            coord, lo, hi = "", 0.0, 0.0
            if p.tag == "ConditionalPathPoint":
                coord = self.socket(p, "coordinate").split("/")[-1]
                lo, hi = doc.floats(p, "range", 2)
                if coord not in self.coord_values:
                    rep.skip(f"{name}/{pname}", p.tag, f"coordinate {coord!r} not found; point left out")
                    dropped_points += 1
                    continue
            elif p.tag not in ("PathPoint", "MovingPathPoint"):
                rep.skip(f"{name}/{pname}", p.tag, "path point type not supported; left out")
                dropped_points += 1
                continue
            points.append(ViaPoint(fr.body, tuple(float(v) for v in loc), coord, float(lo), float(hi), moving))
        if len(points) < 2:
            raise OsimError(f"{doc.where(path_el)}: path of {name} has fewer than two points")
        first, last = points[0], points[-1]
        if first.coordinate or last.coordinate:
            rep.approx(name, el.tag, "a conditional first/last point is imported as always active")
        if first.body == last.body:
            rep.skip(name, el.tag, f"both ends on {first.body}: a tissue must connect two different masses")
            return None
        wraps, infos = [], []
        pws = path_el.find("PathWrapSet")
        wobjs = pws.find("objects") if pws is not None else None
        for w in list(wobjs) if wobjs is not None else []:
            wname = doc.text(w, "wrap_object") or ""
            resolved = next((v for (b, n), v in self.wrap_names.items() if n == wname), None)
            if resolved is None or resolved not in wrap_set:
                rep.skip(f"{name}/{w.get('name', '?')}", "PathWrap", f"wrap object {wname!r} not imported")
                continue
            rng = doc.floats(w, "range", 2, (-1.0, -1.0))
            infos.append(PathWrapInfo(resolved, int(rng[0]), int(rng[1]), (doc.text(w, "method") or "hybrid")))
            wraps.append(resolved)
            if (doc.text(w, "method") or "hybrid").lower() != "hybrid":
                rep.approx(f"{name}/{w.get('name', '?')}", "PathWrap",
                           f"method {doc.text(w, 'method')} computed with the hybrid method")
        ranges: tuple[tuple[int, int], ...] = ()
        if infos:
            self.report.path_wraps[name] = tuple(infos)
            if any(i.start > 0 or i.end > 0 for i in infos):
                ranges = tuple(self.wrap_range(name, i, len(points), dropped_points) for i in infos)
        return Attachment(name=name, spring=spring, body_a=first.body, body_b=last.body, point_a_L=first.point_L,
                          point_b_L=last.point_L, via_points=tuple(points[1:-1]), wrap_objects=tuple(wraps),
                          wrap_ranges=ranges, moving_a=first.moving, moving_b=last.moving)

    def wrap_range(self, name: str, info: PathWrapInfo, n: int, dropped: int) -> tuple[int, int]:
        """A PathWrap's point range as the project keeps it: -1 for OpenSim's "path end" (< 1), a
        number past the last point clamped to it (as OpenSim does)."""
        s = -1 if info.start < 1 else min(info.start, n)
        e = -1 if info.end < 1 else min(info.end, n)
        if (s, e) != (-1 if info.start < 1 else info.start, -1 if info.end < 1 else info.end):
            self.report.approx(f"{name}/{info.wrap_object}", "PathWrap",
                               f"point range [{info.start}, {info.end}] clamped to the path's {n} points")
        if s >= 1 and e >= 1 and s > e:
            self.report.approx(f"{name}/{info.wrap_object}", "PathWrap",
                               f"point range [{info.start}, {info.end}] is empty; the whole path is used")
            s, e = -1, -1
        if dropped:
            self.report.approx(f"{name}/{info.wrap_object}", "PathWrap",
                               f"{dropped} path point(s) left out: the point range [{info.start}, {info.end}] "
                               "counts the remaining points")
        return s, e

    def moving_point(self, p: ET.Element, muscle: str, fr: _FrameDef) -> tuple[np.ndarray, tuple[FunctionSpec, ...]]:
        """(location in the body frame at the default coordinates, its x, y, z FunctionSpecs in the
        body frame) of a MovingPathPoint; the functions are () when it has to be kept fixed (reported)."""
        doc = self.doc
        where = f"{muscle}/{p.get('name', '?')}"
        fns: list[FunctionSpec] = []
        why = ""
        for axis in "xyz":
            holder = p.find(f"{axis}_location")
            coord = self.socket(p, f"{axis}_coordinate").split("/")[-1]
            fel = next(iter(holder), None) if holder is not None and len(holder) else None
            if fel is None:
                fns.append(FunctionSpec("constant", (0.0,)))
                continue
            notes: list[str] = []
            try:
                fn = parse_function(doc, fel, coord if coord in self.coord_values else "", 1.0, notes)
            except UnsupportedFunction as exc:
                why = str(exc)
                fn = FunctionSpec("constant", (0.0,))
            if coord and coord not in self.coord_values:
                why = why or f"coordinate {coord!r} not imported"
            for note in notes:
                self.report.approx(f"{where}/{axis}_location", fel.tag, note)
            fns.append(fn)
        loc = np.array([float(eval_spec(fn, self.coord_values.get(fn.coordinates[0], 0.0)
                                        if fn.coordinates else 0.0)[0])
                        for fn in fns])
        if not np.allclose(fr.R, np.eye(3), rtol=0, atol=1e-12):
            why = why or "its frame is rotated relative to the body"
        if why:
            self.report.approx(where, "MovingPathPoint", f"imported as a fixed point at its location for the default "
                                                         f"coordinate values ({why})")
            return fr.R @ loc + fr.p, ()
        if all(fn.kind == "constant" for fn in fns):
            return loc + fr.p, ()
        self.count("moving path points")
        return loc + fr.p, tuple(_shifted(fn, float(d)) for fn, d in zip(fns, fr.p))

    # ---- constraints -------------------------------------------------------------------------
    def read_constraints(self) -> list[ConstraintSpec]:
        doc, rep = self.doc, self.report
        out = []
        for el in self.objects("ConstraintSet"):
            name = el.get("name", "?")
            if el.tag != "CoordinateCouplerConstraint":
                rep.skip(name, el.tag, "constraint type not supported by the importer")
                continue
            indep = (doc.text(el, "independent_coordinate_names") or "").split()
            dep = (doc.text(el, "dependent_coordinate_name") or "").strip()
            fel = find_function(el)
            if not dep or len(indep) != 1 or fel is None:
                rep.skip(name, el.tag, "needs one independent coordinate, a dependent one and a function")
                continue
            unknown = [c for c in (dep, *indep) if c not in self.coord_values]
            if unknown:
                rep.skip(name, el.tag, f"coordinates {unknown} not imported")
                continue
            notes: list[str] = []
            try:
                fn = parse_function(doc, fel, indep[0], doc.float(el, "scale_factor", 1.0), notes)
            except UnsupportedFunction as exc:
                rep.skip(name, el.tag, str(exc))
                continue
            for note in notes:
                rep.approx(name, fel.tag, note)
            out.append(ConstraintSpec(name, "coordinate_coupler", coordinates=(dep, *indep), function=fn))
            self.count("constraints")
        return out


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------
def _shifted(fn: FunctionSpec, d: float) -> FunctionSpec:
    """fn + d (a moving point's coordinate moved by its frame's offset)."""
    if d == 0.0:
        return fn
    vals = list(fn.values)
    if fn.kind == "linear":
        vals[1] += d
    elif fn.kind in ("constant", "polynomial"):
        vals[0] += d
    else:  # spline, piecewise_linear: through shifted values
        vals = [v + d for v in vals]
    return replace(fn, values=tuple(vals))


def _align_z(z: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit vector z (x, y completed deterministically)."""
    z = z / np.linalg.norm(z)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return np.column_stack([x, y, z])


def _order_masses(masses: list[Mass]) -> list[Mass]:
    """Parents before children (the mobilizer tree's order), otherwise file order."""
    done: set[str] = {GROUND}
    out: list[Mass] = []
    rest = list(masses)
    names = {m.name for m in masses}
    while rest:
        progressed = False
        for m in list(rest):
            par = m.joint.parent if m.joint else GROUND
            if par in done or par not in names:
                out.append(m)
                done.add(m.name)
                rest.remove(m)
                progressed = True
        if not progressed:
            out += rest
            break
    return out


def _drop_invalid(project: Project, report: ImportReport) -> Project:
    """Leave out (and report) springs, attachments, wrap objects and constraints that break the
    project's rules (a damaged file's negative radius, zero stiffness, ...), with what used them."""
    for _ in range(10):
        bad: dict[str, dict[str, str]] = {}
        for prob in project_problems(project):
            if prob.section in ("Springs", "Attachments", "Wrap objects", "Constraints") and prob.row:
                bad.setdefault(prob.section, {}).setdefault(prob.row, f"{prob.field}: {prob.message}")
        if not bad:
            return project
        for section, rows in bad.items():
            for row, why in rows.items():
                report.skip(row, section.rstrip("s").replace("Wrap object", "WrapObject"),
                            f"invalid after import ({why}); left out")
        springs = tuple(sp for sp in project.springs if sp.name not in bad.get("Springs", {}))
        wraps = tuple(w for w in project.wrap_objects if w.name not in bad.get("Wrap objects", {}))
        names = {sp.name for sp in springs}
        wnames = {w.name for w in wraps}
        atts = []
        for a in project.attachments:
            if a.name in bad.get("Attachments", {}):
                continue
            if a.spring not in names:
                report.skip(a.name, "Attachment", f"its force law {a.spring!r} was left out")
                continue
            kept = tuple(w for w in a.wrap_objects if w in wnames)
            if kept != a.wrap_objects:
                report.path_wraps[a.name] = tuple(i for i in report.path_wraps.get(a.name, ())
                                                  if i.wrap_object in wnames)
                a = replace(a, wrap_objects=kept)
            atts.append(a)
        cons = tuple(c for c in project.constraints if c.name not in bad.get("Constraints", {}))
        project = replace(project, springs=springs, wrap_objects=wraps, attachments=tuple(atts), constraints=cons)
    return project


def _with_notes(project: Project, notes: str) -> Project:
    return replace(project, info=replace(project.info, notes=notes[:20000]))


def load_osim(path: str | Path, search_paths: Sequence[str | Path] = (), *, read_mesh=None,
              load_meshes: bool = True) -> tuple[Project, ImportReport]:
    """Read an .osim model: (Project, ImportReport). OsimError for a file that cannot be read.

    search_paths: extra folders for mesh files. read_mesh(path, units) -> MeshData defaults to
    jointmodeller.io.meshes.read_mesh; load_meshes=False skips reading mesh files.
    """
    if read_mesh is None and load_meshes:
        from jointmodeller.io.meshes import read_mesh as _rm

        read_mesh = _rm
    return _Reader(Path(path), search_paths, read_mesh, load_meshes).run()
