"""Validation of a whole project: every rule, every problem located by section, row and field.

``validate_project`` raises one ValidationError listing every problem found, so a user sees all of
them at once; ``project_problems`` returns them for the GUI to mark cells.

Beyond being finite, values must make physical sense (the ranges below, each message names the row,
field and range): a 1e-12 kg bone, gravity of 1e12 m/s², a 1e15 N/m ligament or a bone 1e300 m away
are accepted by the arithmetic but make every study run away. Derived quantities are computed
without overflow (a vector's length and an inertia's principal moments are taken after scaling by
the largest entry) and checked to be finite themselves: an inertia with −1e308 on its diagonal is
not positive definite, even though its unscaled eigenvalues overflow to NaN.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

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
SWEEP_SIDES = ("both", "positive", "negative")
"""Experiment sweeps: two-sided, or one-sided towards +max or −max (core.studies.laxity.SWEEP_SIDES)."""
COLOUR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")
EULER_RE = re.compile(r"^([xyz]{3}|[XYZ]{3})$")
INERTIA_RTOL = 1e-9
MASS_RANGE_KG = (1e-7, 1e4)
"""A bone's mass [kg]: OpenSim models use 1e-6 kg for massless frames; 1e4 kg is no bone."""
GYRATION_RANGE_M = (1e-6, 1e2)
"""Radius of gyration √(I/m) of every principal moment [m]: real bones lie within 1 mm-0.5 m."""
POSITION_LIMIT_M = 1e3
"""Largest coordinate of a position, point or frame origin, and largest length [m]."""
ANGLE_LIMIT_DEG = 1e4
"""Largest Euler angle or flexion angle [deg]."""
GRAVITY_LIMIT_M_S2 = 1e3
"""Largest magnitude of gravity [m/s²] (100 g)."""
FORCE_LIMIT_N = 1e6
"""Largest load magnitude [N, or N·m for moments] of a force row, an experiment or a measured point."""
DIRECTION_NORM_RANGE = (1e-9, 1e9)
"""Length of a direction vector (it is normalised): outside, its length under- or overflows."""
STIFFNESS_LIMIT_N_M = 1e12
"""Largest stiffness [N/m] of a spring, in any unit-consistent sense: the secant stiffness f(x)/x of a
polynomial over the stretch range below, k/L0 of a Blankevoort law (L0 at least 1 mm), a contact's
Young's modulus [Pa]; and the largest dashpot coefficient [N·s/m]."""
STRETCH_RANGE_M = (1e-3, 0.1)
"""Stretches [m] over which a spring's polynomial force is checked: it must pull, not push, there
(a force below −1e-3 of the largest force in the range is a push; the slack is fit noise of
imported curves), and its secant stiffness must stay below STIFFNESS_LIMIT_N_M."""


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def safe_norm(values: Iterable[float]) -> float:
    """Euclidean length without overflow or underflow on the way: scaled by the largest entry first
    (inf only when the length itself is beyond the largest float)."""
    v = np.asarray(tuple(values), dtype=float)
    scale = float(np.abs(v).max()) if v.size else 0.0
    if scale == 0.0 or not math.isfinite(scale):
        return scale
    with np.errstate(over="ignore"):
        return float(scale * np.linalg.norm(v / scale))


def _fmt_range(lo: float, hi: float, unit: str) -> str:
    return f"[{lo:g}, {hi:g}]{' ' + unit if unit else ''}"


class _Collector:
    """Collects problems for one section and row."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, section: str, row: str | None, field: str | None, message: str) -> None:
        self.problems.append(Problem(section, row, field, message))

    def finite(self, section: str, row: str | None, field: str, value: object) -> bool:
        if not _finite(value):
            self.add(section, row, field, f"must be a finite number, got {value!r}")
            return False
        return True

    def vector(self, section: str, row: str | None, field: str, value: Iterable) -> bool:
        vals = tuple(value)
        if len(vals) != 3 or not all(_finite(v) for v in vals):
            self.add(section, row, field, f"must be three finite numbers, got {vals!r}")
            return False
        return True

    def positive(self, section: str, row: str, field: str, value: object, allow_zero: bool = False,
                 limit: float | None = None, unit: str = "") -> bool:
        if not self.finite(section, row, field, value):
            return False
        assert isinstance(value, (int, float))  # finite() checked it
        if value < 0 or (value == 0 and not allow_zero):
            self.add(section, row, field, f"must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
            return False
        if limit is not None and value > limit:
            self.add(section, row, field, f"{value:g}{' ' + unit if unit else ''} is outside the physical range "
                                          f"{'[' if allow_zero else '('}0, {limit:g}]{' ' + unit if unit else ''}")
            return False
        return True

    def within(self, section: str, row: str | None, field: str, value: object, limit: float, unit: str) -> bool:
        """A finite number with |value| ≤ limit."""
        if not self.finite(section, row, field, value):
            return False
        assert isinstance(value, (int, float))  # finite() checked it
        if abs(value) > limit:
            self.add(section, row, field,
                     f"{value:g} {unit} is outside the physical range {_fmt_range(-limit, limit, unit)}")
            return False
        return True

    def position(self, section: str, row: str | None, field: str, value: Iterable,
                 limit: float = POSITION_LIMIT_M, unit: str = "m") -> bool:
        """Three finite numbers, each within ±limit (a position, point or frame origin)."""
        if not self.vector(section, row, field, value):
            return False
        worst = max(tuple(value), key=abs)
        if abs(worst) > limit:
            self.add(section, row, field, f"component {worst:g} {unit} is outside the physical range "
                                          f"{_fmt_range(-limit, limit, unit)}")
            return False
        return True

    def direction(self, section: str, row: str | None, field: str, value: Iterable) -> bool:
        """Three finite numbers whose length (computed without overflow) is in DIRECTION_NORM_RANGE."""
        if not self.vector(section, row, field, value):
            return False
        norm = safe_norm(value)
        lo, hi = DIRECTION_NORM_RANGE
        if norm == 0.0:
            self.add(section, row, field, "must not be the zero vector")
            return False
        if not lo <= norm <= hi:
            self.add(section, row, field, f"its length {norm:g} is outside {_fmt_range(lo, hi, '')}: "
                                          "give a direction of ordinary size, such as (1, 0, 0)")
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


def principal_moments(inertia: np.ndarray) -> tuple[np.ndarray, float]:
    """Principal moments of a finite symmetric 3×3 inertia, ascending, as (moments / scale, scale):
    the tensor is divided by its largest entry before the eigenvalues are taken, so nothing overflows
    (the moments of a tensor with 1e308 entries are beyond the largest float; scaled, they are not)."""
    I = np.asarray(inertia, dtype=float)
    scale = float(np.abs(I).max())
    if scale == 0.0:
        return np.zeros(3), 0.0
    J = I / scale
    return np.linalg.eigvalsh(0.5 * (J + J.T)), scale


def _moments_text(scaled: np.ndarray, scale: float) -> str:
    with np.errstate(over="ignore"):
        return "[" + ", ".join(f"{m:.6g}" for m in (scaled * scale).tolist()) + "]"


def inertia_problems(inertia: np.ndarray) -> list[str]:
    """What is wrong with an inertia tensor (symmetric, positive definite, triangle inequality).

    Overflow-safe: the tests run on the tensor divided by its largest entry."""
    I = np.asarray(inertia, dtype=float)
    if I.shape != (3, 3) or not np.isfinite(I).all():
        return ["must be a 3×3 matrix of finite numbers"]
    scale = float(np.abs(I).max())
    if scale == 0.0:
        return ["must be positive definite (it is all zero)"]
    J = I / scale
    if not np.allclose(J, J.T, rtol=0, atol=INERTIA_RTOL):
        return ["must be symmetric"]
    moments, scale = principal_moments(I)
    if not np.isfinite(moments).all():
        return ["its principal moments cannot be computed (not finite)"]
    if moments.min() <= 0:
        return [f"must be positive definite (principal moments {_moments_text(moments, scale)} kg·m²)"]
    a, b, c = np.sort(moments)
    if a + b < c * (1 - 1e-9):
        return [f"principal moments {_moments_text(moments, scale)} kg·m² break the triangle inequality "
                "(I1 + I2 ≥ I3)"]
    return []


def _gyration_problem(inertia: object, mass_kg: float) -> str | None:
    """A message when a valid inertia is absurd for its mass: some principal moment's radius of
    gyration √(I/m) outside GYRATION_RANGE_M. Computed as √(I/scale)·(√scale/√m): no step overflows
    (√scale ≤ 1.4e154 and m ≥ MASS_RANGE_KG[0])."""
    moments, scale = principal_moments(np.asarray(inertia, dtype=float))
    lo, hi = GYRATION_RANGE_M
    r = np.sqrt(np.clip(moments, 0.0, None)) * (math.sqrt(scale) / math.sqrt(mass_kg))
    if not np.isfinite(r).all() or r.min() < lo or r.max() > hi:
        return (f"principal moments {_moments_text(moments, scale)} kg·m² give radii of gyration "
                f"{', '.join(f'{x:.3g}' for x in r.tolist())} m for {mass_kg:g} kg, outside the physical range "
                f"{_fmt_range(lo, hi, 'm')}; check the units")
    return None


gyration_problem = _gyration_problem
"""Public name for importers that replace an absurd inertia instead of refusing the file."""


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
    if c.vector(s, None, "gravity_G", info.gravity_G) and safe_norm(info.gravity_G) > GRAVITY_LIMIT_M_S2:
        c.add(s, None, "gravity_G", f"magnitude {safe_norm(info.gravity_G):g} m/s² is outside the physical range "
                                    f"{_fmt_range(0, GRAVITY_LIMIT_M_S2, 'm/s²')}")


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
    else:
        _check_stiffness(c, s, r, sp)
    for axis in ("cx", "cy", "cz"):
        c.positive(s, r, axis, getattr(sp, axis), allow_zero=True, limit=STIFFNESS_LIMIT_N_M, unit="N·s/m")
    if sp.model not in ("axial", "bushing"):
        c.add(s, r, "model", f"must be 'axial' or 'bushing', got {sp.model!r}")
    if sp.slack_length_m is not None:
        c.positive(s, r, "slack_length_m", sp.slack_length_m, limit=POSITION_LIMIT_M, unit="m")
    if not isinstance(sp.colour, str) or not COLOUR_RE.match(sp.colour):
        c.add(s, r, "colour", f"must be a colour like '#d4a017', got {sp.colour!r}")
    if sp.law not in ("polynomial", "blankevoort"):
        c.add(s, r, "law", f"must be 'polynomial' or 'blankevoort', got {sp.law!r}")
    if c.positive(s, r, "transition_strain", sp.transition_strain) and sp.transition_strain >= 1:
        c.add(s, r, "transition_strain", "must be below 1 (it is a strain)")


def _check_stiffness(c: _Collector, s: str, r: str, sp: SpringType) -> None:
    """Negative or absurd stiffness, in a unit-consistent sense (STIFFNESS_LIMIT_N_M, STRETCH_RANGE_M)."""
    lo, hi = STRETCH_RANGE_M
    if sp.law == "blankevoort":
        k = sp.kx[0] if sp.kx and _finite(sp.kx[0]) else None
        if k is None:
            return
        if k < 0:
            c.add(s, r, "kx", f"stiffness {k:g} N (per unit strain) must not be negative")
            return
        l0 = max(sp.slack_length_m if sp.slack_length_m is not None and _finite(sp.slack_length_m) else lo, lo)
        if k / l0 > STIFFNESS_LIMIT_N_M:
            c.add(s, r, "kx", f"stiffness {k:g} N per unit strain over a slack length of {l0:g} m is {k / l0:g} N/m, "
                              f"outside the physical range {_fmt_range(0, STIFFNESS_LIMIT_N_M, 'N/m')}")
        return
    x = np.geomspace(lo, hi, 200)
    for axis in ("kx", "ky", "kz") if sp.model == "bushing" else ("kx",):
        coeffs = getattr(sp, axis)
        if not coeffs or not all(_finite(k) for k in coeffs) or len(coeffs) > 9:
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            force = sum(k * x ** (i + 1) for i, k in enumerate(coeffs))
            secant = np.abs(force) / x
        if not np.isfinite(force).all() or secant.max() > STIFFNESS_LIMIT_N_M:
            at = int(np.argmax(np.where(np.isfinite(secant), secant, np.inf)))
            c.add(s, r, axis, f"stiffness f(x)/x reaches {secant[at]:g} N/m at a stretch of {x[at] * 1e3:.3g} mm, "
                              f"outside the physical range {_fmt_range(0, STIFFNESS_LIMIT_N_M, 'N/m')}")
        elif force.min() < -1e-3 * np.abs(force).max():
            at = int(np.argmin(force))
            c.add(s, r, axis, f"the force is {force[at]:g} N at a stretch of {x[at] * 1e3:.3g} mm: a spring must "
                              f"pull when stretched (negative stiffness) between {lo * 1e3:g} and {hi * 1e3:g} mm")


def _check_joint(c: _Collector, r: str, joint: JointSpec, mass_names: set[str]) -> None:
    s = "Masses"
    if joint.type not in MOBILIZER_TYPES:
        c.add(s, r, "joint.type", f"unknown mobilizer {joint.type!r}; one of {', '.join(MOBILIZER_TYPES)}")
    if joint.parent != GROUND and joint.parent not in mass_names:
        c.add(s, r, "joint.parent", f"no mass named {joint.parent!r}")
    if joint.parent == r:
        c.add(s, r, "joint.parent", "a mass cannot be its own parent")
    for fname, frame in (("joint.frame_parent", joint.frame_parent), ("joint.frame_child", joint.frame_child)):
        c.position(s, r, fname + ".origin_L", frame.origin_L)
        c.position(s, r, fname + ".euler_deg", frame.euler_deg, ANGLE_LIMIT_DEG, "deg")
    for key, value in joint.parameters:
        c.within(s, r, f"joint.parameters.{key}", value, POSITION_LIMIT_M, "(m or m/rad)")
    if joint.default_q and len(joint.default_q) != len(joint.coordinates):
        c.add(s, r, "joint.default_q", "needs one value per coordinate")
    if not all(_finite(q) for q in joint.default_q):
        c.add(s, r, "joint.default_q", "must be finite numbers")
    elif any(abs(q) > POSITION_LIMIT_M for q in joint.default_q):
        c.add(s, r, "joint.default_q", f"{max(joint.default_q, key=abs):g} (rad or m) is outside the physical range "
                                       f"{_fmt_range(-POSITION_LIMIT_M, POSITION_LIMIT_M, '')}")
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
    mass_ok = c.positive(s, r, "mass_kg", m.mass_kg)
    if mass_ok and not MASS_RANGE_KG[0] <= m.mass_kg <= MASS_RANGE_KG[1]:
        c.add(s, r, "mass_kg", f"{m.mass_kg:g} kg is outside the physical range {_fmt_range(*MASS_RANGE_KG, 'kg')} "
                               "of a bone; check the units")
        mass_ok = False
    if m.density_kg_m3 is not None:
        c.positive(s, r, "density_kg_m3", m.density_kg_m3, limit=1e5, unit="kg/m³")
    if m.properties_from_mesh and m.mesh is None:
        c.add(s, r, "properties_from_mesh", "needs a mesh; enter mass, centre of mass and inertia instead")
    c.position(s, r, "com_L", m.com_L)
    inertia_msgs = (inertia_problems(np.array(m.inertia_L, dtype=float)) if _all_finite_matrix(m.inertia_L)
                    else ["must be a 3×3 matrix of finite numbers"])
    if not inertia_msgs and mass_ok:
        inertia_msgs = [msg for msg in (_gyration_problem(m.inertia_L, m.mass_kg),) if msg]
    for msg in inertia_msgs:
        c.add(s, r, "inertia_L", msg)
    c.position(s, r, "position_G", m.position_G)
    c.position(s, r, "euler_deg", m.euler_deg, ANGLE_LIMIT_DEG, "deg")
    if not isinstance(m.euler_sequence, str) or not EULER_RE.match(m.euler_sequence):
        c.add(s, r, "euler_sequence", f"must be three axes like 'xyz' or 'ZXY', got {m.euler_sequence!r}")
    if m.joint is not None:
        if m.fixed:
            c.add(s, r, "joint", "a fixed mass has no mobilizer; clear 'fixed' or the joint")
        _check_joint(c, r, m.joint, mass_names)
    if not isinstance(m.colour, str) or not COLOUR_RE.match(m.colour):
        c.add(s, r, "colour", f"must be a colour like '#e8dcc4', got {m.colour!r}")


def _all_finite_matrix(rows: Any) -> bool:
    try:
        return len(rows) == 3 and all(len(row) == 3 and all(_finite(v) for v in row) for row in rows)
    except TypeError:
        return False


def _check_body_ref(c: _Collector, s: str, r: str, field: str, name: str, names: set[str]) -> None:
    if name != GROUND and name not in names:
        c.add(s, r, field, f"no mass named {name!r}")


def _check_moving(c: _Collector, s: str, r: str, field: str, moving: tuple, coordinates: set[str] | None) -> None:
    """A moving path point: none, or three functions (x, y, z), each constant or of one joint coordinate."""
    if not moving:
        return
    if len(moving) != 3:
        c.add(s, r, field, f"needs three functions (x, y, z), got {len(moving)}")
        return
    for k, fn in enumerate(moving):
        _check_function(c, s, r, f"{field}[{k}]", fn)
        if fn.kind != "constant" and len(fn.coordinates) != 1:
            c.add(s, r, f"{field}[{k}]", "a moving point's function depends on one coordinate")
        elif coordinates is not None and fn.kind != "constant" and fn.coordinates[0] not in coordinates:
            c.add(s, r, f"{field}[{k}]", f"no joint has a coordinate named {fn.coordinates[0]!r}")


def _check_attachment(c: _Collector, i: int, a: Attachment, springs: set[str], masses: set[str],
                      wrap_names: set[str], coordinates: set[str] | None = None) -> None:
    s, r = "Attachments", _row_name(a, i)
    if a.spring not in springs:
        c.add(s, r, "spring", f"no spring type named {a.spring!r}")
    _check_body_ref(c, s, r, "body_a", a.body_a, masses)
    _check_body_ref(c, s, r, "body_b", a.body_b, masses)
    if a.body_a == a.body_b:
        c.add(s, r, "body_b", "a tissue must connect two different masses")
    c.position(s, r, "point_a_L", a.point_a_L)
    c.position(s, r, "point_b_L", a.point_b_L)
    if a.initial_length_m is not None:
        c.positive(s, r, "initial_length_m", a.initial_length_m, limit=POSITION_LIMIT_M, unit="m")
    for field, moving in (("moving_a", a.moving_a), ("moving_b", a.moving_b)):
        _check_moving(c, s, r, field, moving, coordinates)
    for j, via in enumerate(a.via_points):
        _check_moving(c, s, r, f"via_points[{j}].moving", via.moving, coordinates)
        _check_body_ref(c, s, r, f"via_points[{j}].body", via.body, masses)
        c.position(s, r, f"via_points[{j}].point_L", via.point_L)
        if c.finite(s, r, f"via_points[{j}].range_min", via.range_min) and c.finite(
                s, r, f"via_points[{j}].range_max", via.range_max) and via.range_min > via.range_max:
            c.add(s, r, f"via_points[{j}]", "range_min must not exceed range_max")
    for j, name in enumerate(a.wrap_objects):
        if name not in wrap_names:
            c.add(s, r, f"wrap_objects[{j}]", f"no wrap object named {name!r}")
    if a.wrap_ranges:
        n = len(a.via_points) + 2
        if len(a.wrap_ranges) != len(a.wrap_objects):
            c.add(s, r, "wrap_ranges", f"needs one (start, end) per wrap object ({len(a.wrap_objects)}), got "
                                       f"{len(a.wrap_ranges)}")
        for j, rng in enumerate(a.wrap_ranges):
            if len(rng) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in rng):
                c.add(s, r, f"wrap_ranges[{j}]", "must be two whole numbers (start, end)")
                continue
            if not all(v == -1 or 1 <= v <= n for v in rng):
                c.add(s, r, f"wrap_ranges[{j}]", f"path point numbers must be -1 (path end) or in [1, {n}], got "
                                                 f"{tuple(rng)}")
            elif rng[0] >= 1 and rng[1] >= 1 and rng[0] > rng[1]:
                c.add(s, r, f"wrap_ranges[{j}]", f"start must not exceed end, got {tuple(rng)}")


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
        elif max(abs(x) for x in v) > FORCE_LIMIT_N:
            c.add(s, r, "profile.table", f"scale {max(v, key=abs):g} is outside the physical range "
                                         f"{_fmt_range(-FORCE_LIMIT_N, FORCE_LIMIT_N, '')}")


def _check_force(c: _Collector, i: int, f: Force, masses: set[str]) -> None:
    s, r = "Forces", _row_name(f, i)
    if f.body not in masses:
        c.add(s, r, "body", f"no mass named {f.body!r}")
    c.position(s, r, "point_L", f.point_L)
    c.direction(s, r, "direction_G", f.direction_G)
    c.within(s, r, "magnitude_N", f.magnitude_N, FORCE_LIMIT_N, "N")
    _check_profile(c, s, r, f.profile)


def _check_contact(c: _Collector, i: int, p: ContactPair, masses: set[str]) -> None:
    s, r = "Contacts", _row_name(p, i)
    _check_body_ref(c, s, r, "body_a", p.body_a, masses)
    _check_body_ref(c, s, r, "body_b", p.body_b, masses)
    if p.body_a == p.body_b:
        c.add(s, r, "body_b", "contact needs two different masses")
    if p.method not in ("mjm_springs", "elastic_foundation"):
        c.add(s, r, "method", f"must be mjm_springs or elastic_foundation, got {p.method!r}")
    for name in ("cartilage_thickness_m", "rho", "transition_speed_m_s"):
        c.positive(s, r, name, getattr(p, name))
    c.positive(s, r, "youngs_modulus_Pa", p.youngs_modulus_Pa, limit=STIFFNESS_LIMIT_N_M, unit="Pa")
    c.positive(s, r, "design_load_N", p.design_load_N, limit=FORCE_LIMIT_N, unit="N")
    for name in ("hunt_crossley_s_m", "friction_static", "friction_dynamic", "friction_viscous",
                 "lateral_stiffness_ratio"):
        c.positive(s, r, name, getattr(p, name), allow_zero=True)
    if c.finite(s, r, "poisson_ratio", p.poisson_ratio) and not 0 <= p.poisson_ratio < 0.5:
        c.add(s, r, "poisson_ratio", f"must be in [0, 0.5), got {p.poisson_ratio}")
    if (c.finite(s, r, "max_penetration_fraction", p.max_penetration_fraction)
            and not 0 < p.max_penetration_fraction <= 1):
        c.add(s, r, "max_penetration_fraction", "must be in (0, 1]")


def _check_constraint(c: _Collector, i: int, k: ConstraintSpec, masses: set[str]) -> None:
    s, r = "Constraints", _row_name(k, i)
    if k.kind not in CONSTRAINT_KINDS:
        c.add(s, r, "kind", f"unknown constraint {k.kind!r}; one of {', '.join(CONSTRAINT_KINDS)}")
    for j, b in enumerate(k.bodies):
        _check_body_ref(c, s, r, f"bodies[{j}]", b, masses)
    for j, p in enumerate(k.points_L):
        c.position(s, r, f"points_L[{j}]", p)
    c.direction(s, r, "direction", k.direction)
    c.positive(s, r, "length_m", k.length_m, allow_zero=True, limit=POSITION_LIMIT_M, unit="m")
    if k.function is not None:
        _check_function(c, s, r, "function", k.function)


def _check_experiment(c: _Collector, i: int, e: Experiment, masses: set[str], attachments: set[str]) -> None:
    s, r = "Experiments", _row_name(e, i)
    _check_body_ref(c, s, r, "fixed_body", e.fixed_body, masses)
    _check_body_ref(c, s, r, "moving_body", e.moving_body, masses)
    if e.fixed_body == e.moving_body:
        c.add(s, r, "moving_body", "must differ from the fixed body")
    if e.load_kind not in LOAD_KINDS:
        c.add(s, r, "load_kind", f"must be one of {', '.join(LOAD_KINDS)}, got {e.load_kind!r}")
    c.positive(s, r, "max_load", e.max_load, limit=FORCE_LIMIT_N, unit="(N or N·m)")
    moment_meant = e.load_kind == "varus_valgus" and e.load_point_L is None
    c.positive(s, r, "lever_m", e.lever_m, allow_zero=not moment_meant, limit=POSITION_LIMIT_M, unit="m")
    if e.sides not in SWEEP_SIDES:
        c.add(s, r, "sides", f"must be one of {', '.join(SWEEP_SIDES)}, got {e.sides!r}")
    if e.flexion_sign not in (1, -1) or isinstance(e.flexion_sign, bool):
        c.add(s, r, "flexion_sign", f"must be 1 (the coordinate grows in flexion) or -1, got {e.flexion_sign!r}")
    if e.load_point_L is not None:
        c.position(s, r, "load_point_L", e.load_point_L)
    if c.vector(s, r, "preload_force_N", e.preload_force_N):
        for j, v in enumerate(e.preload_force_N):
            c.within(s, r, f"preload_force_N[{j}]", v, FORCE_LIMIT_N, "N")
    if c.vector(s, r, "preload_moment_Nm", e.preload_moment_Nm):
        for j, v in enumerate(e.preload_moment_Nm):
            c.within(s, r, f"preload_moment_Nm[{j}]", v, FORCE_LIMIT_N, "N·m")
    seen_tone: set[str] = set()
    for j, item in enumerate(e.tissue_tone):
        if len(item) != 2 or not isinstance(item[0], str):
            c.add(s, r, f"tissue_tone[{j}]", "must be (attachment name, tension in N)")
            continue
        name, tension = item
        if name in seen_tone:
            c.add(s, r, f"tissue_tone[{j}]", f"{name!r} is listed twice")
        seen_tone.add(name)
        if name not in attachments:
            c.add(s, r, f"tissue_tone[{j}]", f"no attachment named {name!r}")
        c.within(s, r, f"tissue_tone[{j}]", tension, FORCE_LIMIT_N, "N")
    if not isinstance(e.steps, int) or isinstance(e.steps, bool) or not 2 <= e.steps <= 1000:
        c.add(s, r, "steps", f"must be a whole number from 2 to 1000, got {e.steps!r}")
    c.within(s, r, "flexion_deg", e.flexion_deg, ANGLE_LIMIT_DEG, "deg")
    for name, vec in e.axes:
        c.position(s, r, f"axes.{name}", vec)
    for j, pt in enumerate(e.measured):
        if not (_finite(pt.load) and _finite(pt.value)):
            c.add(s, r, f"measured[{j}]", "load and value must be finite numbers")
        elif max(abs(pt.load), abs(pt.value)) > FORCE_LIMIT_N:
            c.add(s, r, f"measured[{j}]", f"load {pt.load:g} or value {pt.value:g} is outside the physical range "
                                          f"{_fmt_range(-FORCE_LIMIT_N, FORCE_LIMIT_N, '')}")


def _check_wrap_object(c: _Collector, i: int, w: WrapObject, masses: set[str]) -> None:
    s, r = "Wrap objects", _row_name(w, i)
    _check_body_ref(c, s, r, "body", w.body, masses)
    if w.kind not in ("cylinder", "sphere", "ellipsoid", "torus"):
        c.add(s, r, "kind", f"must be cylinder, sphere, ellipsoid or torus, got {w.kind!r}")
    c.position(s, r, "frame.origin_L", w.frame.origin_L)
    c.position(s, r, "frame.euler_deg", w.frame.euler_deg, ANGLE_LIMIT_DEG, "deg")
    need = {"cylinder": 2, "sphere": 1, "ellipsoid": 3, "torus": 2}.get(w.kind, 0)
    if len(w.dimensions_m) != need or not all(_finite(d) and 0 < d <= POSITION_LIMIT_M for d in w.dimensions_m):
        c.add(s, r, "dimensions_m", f"a {w.kind} needs {need} positive dimensions of at most {POSITION_LIMIT_M:g} m, "
                                    f"got {w.dimensions_m!r}")
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
    coordinates = {name for m in project.masses if m.joint is not None for name in m.joint.coordinates}
    for i, a in enumerate(project.attachments):
        _check_attachment(c, i, a, springs, masses, wraps, coordinates)
    for i, f in enumerate(project.forces):
        _check_force(c, i, f, masses)
    for i, p in enumerate(project.contacts):
        _check_contact(c, i, p, masses)
    for i, k in enumerate(project.constraints):
        _check_constraint(c, i, k, masses)
    for i, e in enumerate(project.experiments):
        _check_experiment(c, i, e, masses, {a.name for a in project.attachments})
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
