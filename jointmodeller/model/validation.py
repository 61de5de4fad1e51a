"""Validation of a whole project: every rule, every problem located by section, row and field.

``validate_project`` raises one ValidationError listing every problem found, so a user sees all of
them at once; ``project_problems`` returns them for the GUI to mark cells.
"""

from __future__ import annotations

import math
import re
from typing import Iterable

import numpy as np

from jointmodeller.model.errors import Problem, ValidationError
from jointmodeller.model.specs import (
    GROUND,
    Attachment,
    ConstraintSpec,
    ContactPair,
    Experiment,
    Force,
    FunctionSpec,
    JointSpec,
    LoadProfile,
    Mass,
    Project,
    ProjectInfo,
    SpringType,
    WrapObject,
)

MOBILIZER_TYPES = (
    "weld", "pin", "slider", "screw", "universal", "cylinder", "planar",
    "ball", "ball_quaternion", "ellipsoid", "free", "custom",
)
CONSTRAINT_KINDS = (
    "coordinate_coupler", "point_on_plane", "point_on_line", "ball", "weld", "rod", "prescribed_motion",
)
LOAD_KINDS = ("varus_valgus", "anterior_posterior", "internal_external", "compression")
COLOUR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")
EULER_RE = re.compile(r"^([xyz]{3}|[XYZ]{3})$")
INERTIA_RTOL = 1e-9


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class _Collector:
    """Collects problems for one section and row."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, section: str, row: str | None, field: str | None, message: str) -> None:
        self.problems.append(Problem(section, row, field, message))

    def finite(self, section: str, row: str, field: str, value: object) -> bool:
        if not _finite(value):
            self.add(section, row, field, f"must be a finite number, got {value!r}")
            return False
        return True

    def vector(self, section: str, row: str, field: str, value: Iterable) -> bool:
        vals = tuple(value)
        if len(vals) != 3 or not all(_finite(v) for v in vals):
            self.add(section, row, field, f"must be three finite numbers, got {vals!r}")
            return False
        return True

    def positive(self, section: str, row: str, field: str, value: object, allow_zero: bool = False) -> bool:
        if not self.finite(section, row, field, value):
            return False
        if value < 0 or (value == 0 and not allow_zero):
            self.add(section, row, field, f"must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
            return False
        return True


def _row_name(obj: object, index: int) -> str:
    name = getattr(obj, "name", "")
    return f"{name}" if isinstance(name, str) and name.strip() else f"row {index + 1}"


def _unique_names(c: _Collector, section: str, rows: tuple) -> None:
    seen: set[str] = set()
    for i, row in enumerate(rows):
        name = row.name
        if not isinstance(name, str) or not name.strip():
            c.add(section, f"row {i + 1}", "name", "must not be empty")
        elif name in seen:
            c.add(section, name, "name", "is used by another row; names must be unique")
        seen.add(name)


def inertia_problems(inertia: np.ndarray) -> list[str]:
    """What is wrong with an inertia tensor (symmetric, positive definite, triangle inequality)."""
    I = np.asarray(inertia, dtype=float)
    if I.shape != (3, 3) or not np.isfinite(I).all():
        return ["must be a 3×3 matrix of finite numbers"]
    scale = max(np.abs(I).max(), 1e-300)
    if not np.allclose(I, I.T, rtol=0, atol=INERTIA_RTOL * scale):
        return ["must be symmetric"]
    moments = np.linalg.eigvalsh(0.5 * (I + I.T))
    if moments.min() <= 0:
        return [f"must be positive definite (principal moments {moments.tolist()})"]
    a, b, c = np.sort(moments)
    if a + b < c * (1 - 1e-9):
        return [f"principal moments {moments.tolist()} break the triangle inequality (I1 + I2 ≥ I3)"]
    return []


def _check_function(c: _Collector, section: str, row: str, field: str, fn: FunctionSpec) -> None:
    if fn.kind not in ("constant", "linear", "polynomial", "spline", "piecewise_linear"):
        c.add(section, row, field, f"unknown function kind {fn.kind!r}")
        return
    if not fn.values or not all(_finite(v) for v in fn.values):
        c.add(section, row, field, "values must be finite numbers")
        return
    if fn.kind == "constant" and len(fn.values) != 1:
        c.add(section, row, field, "a constant has one value")
    if fn.kind == "linear" and len(fn.values) != 2:
        c.add(section, row, field, "a linear function has two values (slope, intercept)")
    if fn.kind in ("spline", "piecewise_linear"):
        if len(fn.x) != len(fn.values) or len(fn.x) < 2:
            c.add(section, row, field, "needs at least two points, as many x as values")
        elif not all(_finite(v) for v in fn.x) or not np.all(np.diff(fn.x) > 0):
            c.add(section, row, field, "x must be finite and strictly increasing")


def _check_info(c: _Collector, info: ProjectInfo) -> None:
    s = "Project"
    if not isinstance(info.title, str) or not info.title.strip():
        c.add(s, None, "title", "must not be empty")
    if info.units_length not in ("mm", "m"):
        c.add(s, None, "units_length", f"must be 'mm' or 'm', got {info.units_length!r}")
    if info.units_angle not in ("deg", "rad"):
        c.add(s, None, "units_angle", f"must be 'deg' or 'rad', got {info.units_angle!r}")
    c.vector(s, None, "gravity_G", info.gravity_G)


def _check_spring(c: _Collector, i: int, sp: SpringType) -> None:
    s, r = "Springs", _row_name(sp, i)
    for axis in ("kx", "ky", "kz"):
        coeffs = getattr(sp, axis)
        if not all(_finite(k) for k in coeffs):
            c.add(s, r, axis, f"coefficients must be finite numbers, got {coeffs!r}")
        elif len(coeffs) > 9:
            c.add(s, r, axis, "at most 9 polynomial coefficients (k1..k9)")
    if not sp.kx or all(k == 0 for k in sp.kx if _finite(k)):
        c.add(s, r, "kx", "an axial spring needs at least one non-zero coefficient k1..kn")
    for axis in ("cx", "cy", "cz"):
        c.positive(s, r, axis, getattr(sp, axis), allow_zero=True)
    if sp.model not in ("axial", "bushing"):
        c.add(s, r, "model", f"must be 'axial' or 'bushing', got {sp.model!r}")
    if sp.slack_length_m is not None:
        c.positive(s, r, "slack_length_m", sp.slack_length_m)
    if not isinstance(sp.colour, str) or not COLOUR_RE.match(sp.colour):
        c.add(s, r, "colour", f"must be a colour like '#d4a017', got {sp.colour!r}")
    if sp.law not in ("polynomial", "blankevoort"):
        c.add(s, r, "law", f"must be 'polynomial' or 'blankevoort', got {sp.law!r}")
    if c.positive(s, r, "transition_strain", sp.transition_strain) and sp.transition_strain >= 1:
        c.add(s, r, "transition_strain", "must be below 1 (it is a strain)")


def _check_joint(c: _Collector, r: str, joint: JointSpec, mass_names: set[str]) -> None:
    s = "Masses"
    if joint.type not in MOBILIZER_TYPES:
        c.add(s, r, "joint.type", f"unknown mobilizer {joint.type!r}; one of {', '.join(MOBILIZER_TYPES)}")
    if joint.parent != GROUND and joint.parent not in mass_names:
        c.add(s, r, "joint.parent", f"no mass named {joint.parent!r}")
    if joint.parent == r:
        c.add(s, r, "joint.parent", "a mass cannot be its own parent")
    for fname, frame in (("joint.frame_parent", joint.frame_parent), ("joint.frame_child", joint.frame_child)):
        c.vector(s, r, fname + ".origin_L", frame.origin_L)
        c.vector(s, r, fname + ".euler_deg", frame.euler_deg)
    for key, value in joint.parameters:
        c.finite(s, r, f"joint.parameters.{key}", value)
    if joint.default_q and len(joint.default_q) != len(joint.coordinates):
        c.add(s, r, "joint.default_q", "needs one value per coordinate")
    if not all(_finite(q) for q in joint.default_q):
        c.add(s, r, "joint.default_q", "must be finite numbers")
    if joint.locked and len(joint.locked) != len(joint.coordinates):
        c.add(s, r, "joint.locked", f"needs one true/false per coordinate ({len(joint.coordinates)}), "
                                   f"got {len(joint.locked)}")
    if joint.type == "custom" and len(joint.functions) != 6:
        c.add(s, r, "joint.functions", "a custom mobilizer needs six functions (θ1, θ2, θ3, p1, p2, p3)")
    for k, fn in enumerate(joint.functions):
        _check_function(c, s, r, f"joint.functions[{k}]", fn)


def _check_mass(c: _Collector, i: int, m: Mass, mass_names: set[str]) -> None:
    s, r = "Masses", _row_name(m, i)
    if m.name == GROUND:
        c.add(s, r, "name", f"{GROUND!r} is reserved for the fixed global frame")
    if c.positive(s, r, "mass_kg", m.mass_kg) and m.mass_kg > 1e4:
        c.add(s, r, "mass_kg", f"{m.mass_kg} kg is not a bone; check the units")
    if m.density_kg_m3 is not None:
        c.positive(s, r, "density_kg_m3", m.density_kg_m3)
    if m.properties_from_mesh and m.mesh is None:
        c.add(s, r, "properties_from_mesh", "needs a mesh; enter mass, centre of mass and inertia instead")
    c.vector(s, r, "com_L", m.com_L)
    inertia_msgs = (inertia_problems(np.array(m.inertia_L, dtype=float)) if _all_finite_matrix(m.inertia_L)
                    else ["must be a 3×3 matrix of finite numbers"])
    for msg in inertia_msgs:
        c.add(s, r, "inertia_L", msg)
    c.vector(s, r, "position_G", m.position_G)
    c.vector(s, r, "euler_deg", m.euler_deg)
    if not isinstance(m.euler_sequence, str) or not EULER_RE.match(m.euler_sequence):
        c.add(s, r, "euler_sequence", f"must be three axes like 'xyz' or 'ZXY', got {m.euler_sequence!r}")
    if m.joint is not None:
        if m.fixed:
            c.add(s, r, "joint", "a fixed mass has no mobilizer; clear 'fixed' or the joint")
        _check_joint(c, r, m.joint, mass_names)
    if not isinstance(m.colour, str) or not COLOUR_RE.match(m.colour):
        c.add(s, r, "colour", f"must be a colour like '#e8dcc4', got {m.colour!r}")


def _all_finite_matrix(rows: object) -> bool:
    try:
        return len(rows) == 3 and all(len(row) == 3 and all(_finite(v) for v in row) for row in rows)
    except TypeError:
        return False


def _check_body_ref(c: _Collector, s: str, r: str, field: str, name: str, names: set[str]) -> None:
    if name != GROUND and name not in names:
        c.add(s, r, field, f"no mass named {name!r}")


def _check_attachment(c: _Collector, i: int, a: Attachment, springs: set[str], masses: set[str],
                      wrap_names: set[str]) -> None:
    s, r = "Attachments", _row_name(a, i)
    if a.spring not in springs:
        c.add(s, r, "spring", f"no spring type named {a.spring!r}")
    _check_body_ref(c, s, r, "body_a", a.body_a, masses)
    _check_body_ref(c, s, r, "body_b", a.body_b, masses)
    if a.body_a == a.body_b:
        c.add(s, r, "body_b", "a tissue must connect two different masses")
    c.vector(s, r, "point_a_L", a.point_a_L)
    c.vector(s, r, "point_b_L", a.point_b_L)
    if a.initial_length_m is not None:
        c.positive(s, r, "initial_length_m", a.initial_length_m)
    for j, via in enumerate(a.via_points):
        _check_body_ref(c, s, r, f"via_points[{j}].body", via.body, masses)
        c.vector(s, r, f"via_points[{j}].point_L", via.point_L)
        if c.finite(s, r, f"via_points[{j}].range_min", via.range_min) and c.finite(
                s, r, f"via_points[{j}].range_max", via.range_max) and via.range_min > via.range_max:
            c.add(s, r, f"via_points[{j}]", "range_min must not exceed range_max")
    for j, name in enumerate(a.wrap_objects):
        if name not in wrap_names:
            c.add(s, r, f"wrap_objects[{j}]", f"no wrap object named {name!r}")


def _check_profile(c: _Collector, s: str, r: str, p: LoadProfile) -> None:
    if p.kind not in ("constant", "ramp", "table"):
        c.add(s, r, "profile.kind", f"must be constant, ramp or table, got {p.kind!r}")
    c.positive(s, r, "profile.ramp_time_s", p.ramp_time_s, allow_zero=True)
    if p.kind == "table":
        t, v = p.table_time_s, p.table_scale
        if len(t) < 1 or len(t) != len(v):
            c.add(s, r, "profile.table", "needs as many times as scales, at least one")
        elif not all(_finite(x) for x in t + v):
            c.add(s, r, "profile.table", "must be finite numbers")
        elif not np.all(np.diff(t) > 0):
            c.add(s, r, "profile.table", "times must be strictly increasing")


def _check_force(c: _Collector, i: int, f: Force, masses: set[str]) -> None:
    s, r = "Forces", _row_name(f, i)
    if f.body not in masses:
        c.add(s, r, "body", f"no mass named {f.body!r}")
    c.vector(s, r, "point_L", f.point_L)
    if c.vector(s, r, "direction_G", f.direction_G) and np.linalg.norm(f.direction_G) == 0:
        c.add(s, r, "direction_G", "must not be the zero vector")
    c.finite(s, r, "magnitude_N", f.magnitude_N)
    _check_profile(c, s, r, f.profile)


def _check_contact(c: _Collector, i: int, p: ContactPair, masses: set[str]) -> None:
    s, r = "Contacts", _row_name(p, i)
    _check_body_ref(c, s, r, "body_a", p.body_a, masses)
    _check_body_ref(c, s, r, "body_b", p.body_b, masses)
    if p.body_a == p.body_b:
        c.add(s, r, "body_b", "contact needs two different masses")
    if p.method not in ("mjm_springs", "elastic_foundation"):
        c.add(s, r, "method", f"must be mjm_springs or elastic_foundation, got {p.method!r}")
    for name in ("cartilage_thickness_m", "youngs_modulus_Pa", "rho", "transition_speed_m_s", "design_load_N"):
        c.positive(s, r, name, getattr(p, name))
    for name in ("hunt_crossley_s_m", "friction_static", "friction_dynamic", "friction_viscous",
                 "lateral_stiffness_ratio"):
        c.positive(s, r, name, getattr(p, name), allow_zero=True)
    if c.finite(s, r, "poisson_ratio", p.poisson_ratio) and not 0 <= p.poisson_ratio < 0.5:
        c.add(s, r, "poisson_ratio", f"must be in [0, 0.5), got {p.poisson_ratio}")
    if c.finite(s, r, "max_penetration_fraction", p.max_penetration_fraction) and not 0 < p.max_penetration_fraction <= 1:
        c.add(s, r, "max_penetration_fraction", "must be in (0, 1]")


def _check_constraint(c: _Collector, i: int, k: ConstraintSpec, masses: set[str]) -> None:
    s, r = "Constraints", _row_name(k, i)
    if k.kind not in CONSTRAINT_KINDS:
        c.add(s, r, "kind", f"unknown constraint {k.kind!r}; one of {', '.join(CONSTRAINT_KINDS)}")
    for j, b in enumerate(k.bodies):
        _check_body_ref(c, s, r, f"bodies[{j}]", b, masses)
    for j, p in enumerate(k.points_L):
        c.vector(s, r, f"points_L[{j}]", p)
    c.vector(s, r, "direction", k.direction)
    c.positive(s, r, "length_m", k.length_m, allow_zero=True)
    if k.function is not None:
        _check_function(c, s, r, "function", k.function)


def _check_experiment(c: _Collector, i: int, e: Experiment, masses: set[str]) -> None:
    s, r = "Experiments", _row_name(e, i)
    _check_body_ref(c, s, r, "fixed_body", e.fixed_body, masses)
    _check_body_ref(c, s, r, "moving_body", e.moving_body, masses)
    if e.fixed_body == e.moving_body:
        c.add(s, r, "moving_body", "must differ from the fixed body")
    if e.load_kind not in LOAD_KINDS:
        c.add(s, r, "load_kind", f"must be one of {', '.join(LOAD_KINDS)}, got {e.load_kind!r}")
    c.positive(s, r, "max_load", e.max_load)
    c.positive(s, r, "lever_m", e.lever_m)
    if not isinstance(e.steps, int) or isinstance(e.steps, bool) or not 2 <= e.steps <= 1000:
        c.add(s, r, "steps", f"must be a whole number from 2 to 1000, got {e.steps!r}")
    c.finite(s, r, "flexion_deg", e.flexion_deg)
    for name, vec in e.axes:
        c.vector(s, r, f"axes.{name}", vec)
    for j, pt in enumerate(e.measured):
        if not (_finite(pt.load) and _finite(pt.value)):
            c.add(s, r, f"measured[{j}]", "load and value must be finite numbers")


def _check_wrap_object(c: _Collector, i: int, w: WrapObject, masses: set[str]) -> None:
    s, r = "Wrap objects", _row_name(w, i)
    _check_body_ref(c, s, r, "body", w.body, masses)
    if w.kind not in ("cylinder", "sphere", "ellipsoid", "torus"):
        c.add(s, r, "kind", f"must be cylinder, sphere, ellipsoid or torus, got {w.kind!r}")
    c.vector(s, r, "frame.origin_L", w.frame.origin_L)
    c.vector(s, r, "frame.euler_deg", w.frame.euler_deg)
    need = {"cylinder": 2, "sphere": 1, "ellipsoid": 3, "torus": 2}.get(w.kind, 0)
    if len(w.dimensions_m) != need or not all(_finite(d) and d > 0 for d in w.dimensions_m):
        c.add(s, r, "dimensions_m", f"a {w.kind} needs {need} positive dimensions, got {w.dimensions_m!r}")
    if w.quadrant not in ("all", "+x", "-x", "+y", "-y", "+z", "-z", "x", "y", "z"):
        c.add(s, r, "quadrant", f"must be all, +x, -x, +y, -y, +z or -z, got {w.quadrant!r}")


def project_problems(project: Project) -> list[Problem]:
    """Every problem in the project, in panel order."""
    c = _Collector()
    _check_info(c, project.info)
    for section, rows in (("Springs", project.springs), ("Masses", project.masses),
                          ("Attachments", project.attachments), ("Forces", project.forces),
                          ("Contacts", project.contacts), ("Constraints", project.constraints),
                          ("Experiments", project.experiments), ("Wrap objects", project.wrap_objects)):
        _unique_names(c, section, rows)
    springs = {sp.name for sp in project.springs}
    masses = {m.name for m in project.masses}
    wraps = {w.name for w in project.wrap_objects}
    for i, w in enumerate(project.wrap_objects):
        _check_wrap_object(c, i, w, masses)
    for i, sp in enumerate(project.springs):
        _check_spring(c, i, sp)
    for i, m in enumerate(project.masses):
        _check_mass(c, i, m, masses)
    for i, a in enumerate(project.attachments):
        _check_attachment(c, i, a, springs, masses, wraps)
    for i, f in enumerate(project.forces):
        _check_force(c, i, f, masses)
    for i, p in enumerate(project.contacts):
        _check_contact(c, i, p, masses)
    for i, k in enumerate(project.constraints):
        _check_constraint(c, i, k, masses)
    for i, e in enumerate(project.experiments):
        _check_experiment(c, i, e, masses)
    _check_joint_tree(c, project)
    return c.problems


def _check_joint_tree(c: _Collector, project: Project) -> None:
    """Mobilizer parents must form a tree rooted at ground (no cycles)."""
    parent = {m.name: m.joint.parent for m in project.masses if m.joint is not None}
    for start in parent:
        seen, node = {start}, parent.get(start)
        while node is not None and node != GROUND:
            if node in seen:
                c.add("Masses", start, "joint.parent", "mobilizer parents form a loop; use a constraint to close it")
                break
            seen.add(node)
            node = parent.get(node)


def validate_project(project: Project) -> Project:
    """Return the project unchanged when valid; raise ValidationError listing every problem."""
    problems = project_problems(project)
    if problems:
        raise ValidationError(problems)
    return project
