"""Cell grammar and display units of the project tables: :class:`Column` parses and shows one field
of a row (display units at the edge: millimetres for lengths, degrees for angles; SI inside), the
column tables of each section, header tips, and the row helpers (a section's rows, a new row's
defaults, unique names). Qt-free; the GUI's table models and the Document use it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from jointmodeller.model.specs import (
    GROUND,
    Attachment,
    ContactPair,
    Experiment,
    Force,
    JointSpec,
    LoadProfile,
    Mass,
    Project,
    ProjectInfo,
    SpringType,
)
from jointmodeller.model.validation import MOBILIZER_TYPES

INFO = "info"
"""Section key of the Project panel (a single row: the ProjectInfo)."""

SECTION_LABELS = {
    INFO: "Project", "springs": "Springs", "masses": "Masses", "attachments": "Attachments",
    "forces": "Forces", "contacts": "Contacts", "constraints": "Constraints",
    "experiments": "Experiments", "wrap_objects": "Wrap objects",
}
"""Section key -> the panel name validation problems carry."""
LABEL_TO_SECTION = {v: k for k, v in SECTION_LABELS.items()}

MM = 1000.0

ColumnKind = Literal["str", "strs", "float", "opt_float", "int", "bool", "vec3", "opt_vec3", "floats", "mat3",
                     "choice", "mass", "mass_or_ground", "spring", "mesh"]
NAMED_PREFIX = "axes:"
"""A column key ``axes:<name>`` is one entry of a row's ``axes`` tuple of (name, vector) pairs
(an experiment's anatomical landmarks); empty text removes the entry."""
NO_JOINT = "none"
"""Mobilizer type shown for a mass without a joint (a free body in the MJM backend)."""


class CellError(ValueError):
    """Text that cannot become the value of a cell; the message says what is expected."""


def parse_number(text: str) -> float:
    t = text.strip().replace(",", ".") if text.count(",") == 1 and "." not in text else text.strip()
    try:
        v = float(t)
    except ValueError:
        raise CellError(f"{text!r} is not a number") from None
    if not math.isfinite(v):
        raise CellError(f"{text!r} is not a finite number")
    return v


def _nums(text: str) -> list[float]:
    parts = [p for p in re.split(r"[\s,;()\[\]]+", text.strip()) if p]
    return [parse_number(p) for p in parts]


def format_number(v: float) -> str:
    return f"{v:.6g}"


@dataclass(frozen=True)
class Column:
    """One editable field of a section row as a table column.

    key: the dataclass field (dotted for a nested one, e.g. ``profile.kind``); scale: display value =
    scale × stored value (1000 for metres shown as millimetres); choices for ``choice`` columns.
    """

    key: str
    label: str
    kind: ColumnKind = "str"
    scale: float = 1.0
    choices: tuple[str, ...] = ()
    editable: bool = True
    tip: str = ""

    # ------------------------------------------------------------------ values
    def get(self, row: Any) -> Any:
        """The stored value (None inside an absent optional part, e.g. a mass without a joint)."""
        if self.key.startswith(NAMED_PREFIX):
            return dict(row.axes).get(self.key[len(NAMED_PREFIX):])
        obj = row
        for part in self.key.split("."):
            if obj is None:
                return None
            obj = getattr(obj, part)
        return obj

    def set(self, row: Any, value: Any) -> Any:
        """A copy of ``row`` with this column's field set to ``value`` (nested fields too; an absent
        optional part is created, and a mobilizer type of "none" removes the joint)."""
        if self.key.startswith(NAMED_PREFIX):
            name = self.key[len(NAMED_PREFIX):]
            entries = [(k, v) for k, v in row.axes if k != name]
            if value is not None:
                entries.append((name, value))
            order = {c.key[len(NAMED_PREFIX):]: i for i, c in enumerate(COLUMNS["experiments"])}
            entries.sort(key=lambda kv: order.get(kv[0], len(order)))
            return replace(row, axes=tuple(entries))
        head, _, rest = self.key.partition(".")
        if not rest:
            return replace(row, **{head: value})
        if self.key == "joint.type" and value == NO_JOINT:
            return replace(row, joint=None)
        inner_obj = getattr(row, head)
        if inner_obj is None:
            inner_obj = NESTED_DEFAULTS[head]()
        inner = Column(rest, self.label)
        return replace(row, **{head: inner.set(inner_obj, value)})

    def format(self, row: Any) -> str:
        """Display text of this cell (display units)."""
        v = self.get(row)
        s = self.scale
        if v is None and self.key == "joint.type":
            return NO_JOINT
        if v is None and self.kind != "mesh":
            return ""
        if self.kind == "strs":
            return ", ".join(v)
        if self.kind in ("float", "opt_float"):
            return "" if v is None else format_number(v * s)
        if self.kind == "int":
            return str(v)
        if self.kind == "bool":
            return "yes" if v else "no"
        if self.kind in ("vec3", "opt_vec3", "floats"):
            return ", ".join(format_number(x * s) for x in v)
        if self.kind == "mat3":
            return "; ".join(", ".join(format_number(x * s) for x in r) for r in v)
        if self.kind == "mesh":
            return "—" if v is None else f"{v.source} ({v.n_faces} faces)"
        return str(v)

    def parse(self, text: str, project: Project | None = None) -> Any:
        """The stored value for display text; CellError when it cannot be one."""
        text = "" if text is None else str(text)
        s = self.scale
        k = self.kind
        if k == "str":
            return text.strip()
        if k == "strs":
            return tuple(p for p in (x.strip() for x in re.split(r"[,;]", text)) if p)
        if k in ("choice", "mass", "mass_or_ground", "spring"):
            v = text.strip()
            allowed = self.allowed(project)
            if allowed is not None and v not in allowed:
                raise CellError(f"{v!r} is not one of {', '.join(allowed) or '(none yet)'}")
            return v
        if k == "float":
            return parse_number(text) / s
        if k == "opt_float":
            return None if not text.strip() else parse_number(text) / s
        if k == "int":
            x = parse_number(text)
            if x != int(x):
                raise CellError(f"{text!r} is not a whole number")
            return int(x)
        if k == "bool":
            t = text.strip().lower()
            if t in ("yes", "y", "true", "1", "on", "x"):
                return True
            if t in ("no", "n", "false", "0", "off", ""):
                return False
            raise CellError(f"{text!r} is not yes or no")
        if k == "vec3":
            vals = _nums(text)
            if len(vals) != 3:
                raise CellError(f"needs three numbers (x, y, z), got {len(vals)}")
            return tuple(v / s for v in vals)
        if k == "opt_vec3":
            if not text.strip():
                return None
            vals = _nums(text)
            if len(vals) != 3:
                raise CellError(f"needs three numbers (x, y, z) or nothing, got {len(vals)}")
            return tuple(v / s for v in vals)
        if k == "floats":
            return tuple(v / s for v in _nums(text))
        if k == "mat3":
            vals = _nums(text)
            if len(vals) != 9:
                raise CellError(f"needs nine numbers (a 3×3 matrix row by row), got {len(vals)}")
            return tuple(tuple(vals[3 * i + j] / s for j in range(3)) for i in range(3))
        raise CellError(f"the {self.label} column cannot be edited as text")

    def allowed(self, project: Project | None) -> tuple[str, ...] | None:
        """The values a choice or reference column accepts (None: anything)."""
        if self.kind == "choice":
            return self.choices
        if project is None:
            return None
        if self.kind == "mass":
            return tuple(m.name for m in project.masses)
        if self.kind == "mass_or_ground":
            return (GROUND,) + tuple(m.name for m in project.masses)
        if self.kind == "spring":
            return tuple(sp.name for sp in project.springs)
        return None


NESTED_DEFAULTS = {"joint": JointSpec, "profile": LoadProfile}

C = Column
COLUMNS: dict[str, tuple[Column, ...]] = {
    INFO: (
        C("title", "Title"), C("author", "Author"), C("description", "Description"),
        C("units_length", "Lengths shown in", "choice", choices=("mm", "m")),
        C("units_angle", "Angles shown in", "choice", choices=("deg", "rad")),
        C("gravity_G", "Gravity [m/s²]", "vec3"), C("notes", "Notes"),
        C("created", "Created", editable=False), C("modified", "Modified", editable=False),
    ),
    "springs": (
        C("name", "Name"), C("model", "Model", "choice", choices=("axial", "bushing")),
        C("law", "Law", "choice", choices=("polynomial", "blankevoort")),
        C("kx", "kx (k1..kn) [N/m^i]", "floats"), C("ky", "ky", "floats"), C("kz", "kz", "floats"),
        C("cx", "cx [N·s/m]", "float"), C("cy", "cy", "float"), C("cz", "cz", "float"),
        C("tension_only", "Tension only", "bool"),
        C("slack_length_m", "Slack length [mm]", "opt_float", MM),
        C("transition_strain", "Toe strain", "float"), C("colour", "Colour"),
    ),
    "masses": (
        C("name", "Name"), C("mesh", "Mesh", "mesh", editable=False),
        C("density_kg_m3", "Density [kg/m³]", "opt_float"), C("mass_kg", "Mass [kg]", "float"),
        C("properties_from_mesh", "From mesh", "bool"),
        C("com_L", "COM in L [mm]", "vec3", MM), C("inertia_L", "Inertia in L [kg·m²]", "mat3"),
        C("position_G", "Position [mm]", "vec3", MM), C("euler_deg", "Euler angles [°]", "vec3"),
        C("euler_sequence", "Sequence"), C("fixed", "Fixed", "bool"), C("colour", "Colour"),
    ),
    "attachments": (
        C("name", "Name"), C("spring", "Spring", "spring"),
        C("body_a", "Mass A", "mass_or_ground"), C("point_a_L", "Point A in L [mm]", "vec3", MM),
        C("body_b", "Mass B", "mass_or_ground"), C("point_b_L", "Point B in L [mm]", "vec3", MM),
        C("initial_length_m", "Unloaded length [mm]", "opt_float", MM), C("wraps", "Wraps", "bool"),
    ),
    "forces": (
        C("name", "Name"), C("body", "Mass", "mass"), C("point_L", "Point in L [mm]", "vec3", MM),
        C("direction_G", "Direction (G)", "vec3"), C("magnitude_N", "Magnitude [N]", "float"),
        C("profile.kind", "Profile", "choice", choices=("constant", "ramp", "table")),
        C("profile.ramp_time_s", "Ramp time [s]", "float"),
    ),
    "contacts": (
        C("name", "Name"), C("body_a", "Mass A", "mass_or_ground"), C("body_b", "Mass B", "mass_or_ground"),
        C("method", "Method", "choice", choices=("mjm_springs", "elastic_foundation")),
        C("cartilage_thickness_m", "Cartilage [mm]", "float", MM),
        C("youngs_modulus_Pa", "Young's modulus [MPa]", "float", 1e-6),
        C("poisson_ratio", "Poisson ratio", "float"),
        C("hunt_crossley_s_m", "Dissipation [s/m]", "float"),
        C("friction_static", "µ static", "float"), C("friction_dynamic", "µ dynamic", "float"),
        C("friction_viscous", "Viscous friction", "float"),
    ),
    "experiments": (
        C("name", "Name"), C("fixed_body", "Fixed mass", "mass_or_ground"),
        C("moving_body", "Moving mass", "mass"),
        C("load_kind", "Load", "choice",
          choices=("varus_valgus", "anterior_posterior", "internal_external", "compression")),
        C("max_load", "Max load [N or N·m]", "float"), C("lever_m", "Lever [mm]", "float", MM),
        C("steps", "Steps", "int"), C("unload", "Unload", "bool"),
        C("sides", "Sides", "choice", choices=("both", "positive", "negative"),
          tip="both: 0 → +max, then 0 → −max; positive or negative: one side only"),
        C("flexion_deg", "Flexion [°]", "float"), C("measure", "Measure"),
        C("flexion_coordinate", "Flexion coordinate",
          tip="On a joint: the coordinate held at the flexion (empty: the one named like 'flex')"),
        C("flexion_sign", "Flexion sign", "int",
          tip="1 when that coordinate grows in flexion, -1 when it shrinks (gait2392's knee_angle_r)"),
        C("load_point_L", "Load point (moving L) [mm]", "opt_vec3", MM,
          tip="Where the sweep's force acts, in the moving bone's mesh frame; empty: the JCS origin "
              "(varus–valgus: the lever down the long axis)"),
        C("preload_force_N", "Preload force e1, e2, e3 [N]", "vec3",
          tip="Constant force on the moving bone along the JCS axes, from the unloaded pose on"),
        C("preload_moment_Nm", "Preload moment e1, e2, e3 [N·m]", "vec3",
          tip="Constant moment on the moving bone about the JCS axes"),
        C("axes:flexion_axis_fixed", "Flexion axis (fixed L)", "opt_vec3",
          tip="Direction of the flexion axis in the fixed bone's mesh frame (needed when the moving bone "
              "has no joint)"),
        C("axes:long_axis_fixed", "Long axis (fixed L)", "opt_vec3",
          tip="Direction of the fixed bone's long axis in its mesh frame (needed when the moving bone has "
              "no joint)"),
        C("axes:origin_fixed", "JCS origin (fixed L) [mm]", "opt_vec3", MM,
          tip="Joint coordinate system origin on the fixed bone, in its mesh frame; empty: from the tissues"),
        C("axes:origin_moving", "JCS origin (moving L) [mm]", "opt_vec3", MM,
          tip="Joint coordinate system origin on the moving bone, in its mesh frame; empty: from the tissues"),
        C("axes:long_axis_moving", "Long axis (moving L)", "opt_vec3",
          tip="Direction of the moving bone's long axis in its mesh frame; empty: the fixed bone's"),
    ),
}
MOBILIZER_COLUMNS: tuple[Column, ...] = (
    C("name", "Mass", editable=False),
    C("joint.type", "Mobilizer", "choice", choices=(NO_JOINT,) + MOBILIZER_TYPES,
      tip="none: a free body (MJM backend); else the mobilizer to its parent (mobilizer backend)"),
    C("joint.parent", "Parent", "mass_or_ground"),
    C("joint.coordinates", "Coordinates", "strs"),
    C("joint.default_q", "Initial values", "floats"),
    C("joint.frame_parent.origin_L", "P origin in parent L [mm]", "vec3", MM),
    C("joint.frame_parent.euler_deg", "P angles [°]", "vec3"),
    C("joint.frame_child.origin_L", "F origin in L [mm]", "vec3", MM),
    C("joint.frame_child.euler_deg", "F angles [°]", "vec3"),
    C("joint.reversed", "Reversed", "bool"),
)
"""The Mobilizers panel: the joint of each mass row (section "masses")."""
EXTRA_COLUMNS: dict[str, tuple[Column, ...]] = {"masses": MOBILIZER_COLUMNS}
del C

HEADER_TIPS: dict[str, str] = {
    # project
    "title": "Name of the project", "author": "Who made the model", "description": "What the model is for",
    "units_length": "Unit in which the tables show lengths (stored in metres)",
    "units_angle": "Unit in which the tables show angles", "gravity_G": "Gravity in the global frame G [m/s²]",
    "notes": "Free notes", "created": "When the project was created", "modified": "When it was last saved",
    # springs
    "name": "Name of the row (unique within its table)",
    "model": "axial: a tissue along its line (ligament, tendon); bushing: a 6-DOF spring in its own frame",
    "law": "polynomial: f = k1·x + k2·x² + …; blankevoort: toe region up to the toe strain, then linear",
    "kx": "Coefficients k1, k2, … of the force–deflection polynomial along x [N/m, N/m², …]; "
          "Blankevoort: stiffness per unit strain [N]",
    "ky": "Polynomial coefficients along y (bushings) [N/m, …]",
    "kz": "Polynomial coefficients along z (bushings) [N/m, …]",
    "cx": "Dashpot along x [N·s/m]", "cy": "Dashpot along y [N·s/m]", "cz": "Dashpot along z [N·s/m]",
    "tension_only": "yes: the tissue pulls but never pushes (slack when shorter than its rest length)",
    "slack_length_m": "Rest length of every tissue of this type [mm]; empty: each tissue's unloaded length",
    "transition_strain": "Strain where the Blankevoort toe region ends (e.g. 0.03)",
    "colour": "Display colour (#rrggbb)",
    # masses
    "mesh": "Surface mesh of the bone (File › Import bone mesh…)",
    "density_kg_m3": "Density used to compute mass and inertia from the mesh [kg/m³]",
    "mass_kg": "Mass of the bone [kg]", "properties_from_mesh": "yes: mass, centre of mass and inertia follow the mesh",
    "com_L": "Centre of mass in the mesh frame L [mm]",
    "inertia_L": "Inertia about the centre of mass in L axes [kg·m²], row by row (Ixx, Ixy, Ixz; …)",
    "position_G": "Initial position of the centre of mass in G [mm]",
    "euler_deg": "Initial orientation: Euler angles of L in G [°] in the given sequence",
    "euler_sequence": "Axis order of the Euler angles (e.g. XYZ)", "fixed": "yes: the bone does not move",
    # attachments
    "spring": "Spring type (Springs table) giving the tissue's law",
    "body_a": "Mass of the first end (or ground)", "body_b": "Mass of the second end (or ground)",
    "point_a_L": "First end in its mass's mesh frame L [mm]", "point_b_L": "Second end in its mass's mesh frame L [mm]",
    "initial_length_m": "Unloaded (rest) length [mm]; empty: measured at the initial pose",
    "wraps": "yes: the tissue wraps over the bone surfaces instead of passing through them",
    # forces
    "body": "Mass the load acts on", "point_L": "Point of application in the mass's mesh frame L [mm]",
    "direction_G": "Direction of the load in G (any length; normalised)",
    "magnitude_N": "Magnitude of the load [N] (negative: opposite to the direction)",
    "profile.kind": "constant, ramp (from 0 over the ramp time) or table",
    "profile.ramp_time_s": "Time over which a ramp load rises from 0 to its magnitude [s]",
    # contacts
    "method": "mjm_springs: MJM's surface springs; elastic_foundation: cartilage layer model",
    "cartilage_thickness_m": "Cartilage thickness [mm]", "youngs_modulus_Pa": "Cartilage Young's modulus [MPa]",
    "poisson_ratio": "Cartilage Poisson ratio", "hunt_crossley_s_m": "Hunt–Crossley dissipation [s/m]",
    "friction_static": "Static friction coefficient µs", "friction_dynamic": "Dynamic friction coefficient µd",
    "friction_viscous": "Viscous friction coefficient [s/m]",
    # experiments
    "fixed_body": "Bone held still during the laxity sweep", "moving_body": "Bone the sweep's load moves",
    "load_kind": "Which load is swept: varus–valgus, anterior–posterior, internal–external, compression",
    "max_load": "Largest load of the sweep [N, or N·m for moments]",
    "lever_m": "varus–valgus: distance of the force down the moving bone's long axis [mm]",
    "steps": "Load steps from 0 to the largest load", "unload": "yes: sweep back to 0 as well",
    "flexion_deg": "Flexion held during the sweep [°]",
    "measure": "Quantity measured, e.g. varus_valgus_deg or anterior_posterior_mm",
    # mobilizers (the joint of each mass)
    "joint.parent": "The mass (or ground) this mass's joint connects it to",
    "joint.coordinates": "Names of the joint's coordinates (one per degree of freedom), comma-separated",
    "joint.default_q": "Initial values of the coordinates [rad or m]",
    "joint.frame_parent.origin_L": "Origin of the joint frame P in the parent's mesh frame L [mm]",
    "joint.frame_parent.euler_deg": "Orientation of the joint frame P in the parent's L: Euler angles [°]",
    "joint.frame_child.origin_L": "Origin of the joint frame F in this mass's mesh frame L [mm]",
    "joint.frame_child.euler_deg": "Orientation of the joint frame F in this mass's L: Euler angles [°]",
    "joint.reversed": "yes: the joint is defined from this mass to its parent (OpenSim's reversed joints)",
}
"""Header tooltips (meaning and unit) by column key; a column's own ``tip`` wins."""


def column_tip(col: Column) -> str:
    """The header tooltip of a column: its meaning and unit."""
    return col.tip or HEADER_TIPS.get(col.key, "") or col.label


def new_project() -> Project:
    """An empty project for File › New: gravity along −z (9.81 m/s²), no bodies, and one ligament
    spring type (kx 10 kN/m) so that a tissue placed with two clicks refers to a spring at once."""
    return Project(info=ProjectInfo(title="Untitled joint"), springs=(SpringType(name="ligament"),))


def section_rows(project: Project, section: str) -> tuple:
    """The rows of a section (the Project panel is the single row ``(project.info,)``)."""
    return (project.info,) if section == INFO else getattr(project, section)


def with_section_rows(project: Project, section: str, rows: tuple) -> Project:
    if section == INFO:
        (info,) = rows
        return replace(project, info=info)
    return project.with_rows(section, rows)


def column(section: str, key: str) -> Column:
    for col in COLUMNS[section] + EXTRA_COLUMNS.get(section, ()):
        if col.key == key:
            return col
    raise KeyError(f"no column {key!r} in section {section!r}")


def unique_name(existing: list[str] | tuple[str, ...], stem: str) -> str:
    """``stem``, or ``stem 2``, ``stem 3``... whichever is not taken."""
    taken = set(existing)
    if stem not in taken:
        return stem
    k = 2
    while f"{stem} {k}" in taken:
        k += 1
    return f"{stem} {k}"


def default_row(project: Project, section: str) -> Any:
    """A new row that refers to what the project already holds, so it is valid where it can be."""
    masses = [m.name for m in project.masses]
    names = [getattr(r, "name", "") for r in section_rows(project, section)]
    a = masses[0] if masses else GROUND
    b = masses[1] if len(masses) > 1 else GROUND
    if section == "springs":
        return SpringType(name=unique_name(names, "ligament"))
    if section == "masses":
        return Mass(name=unique_name(names, "bone"), properties_from_mesh=False)
    if section == "attachments":
        spring = project.springs[0].name if project.springs else ""
        return Attachment(name=unique_name(names, "tissue"), spring=spring, body_a=a, body_b=b,
                          point_a_L=(0.0, 0.0, 0.0), point_b_L=(0.0, 0.0, 0.01))
    if section == "forces":
        return Force(name=unique_name(names, "load"), body=masses[-1] if masses else "",
                     point_L=(0.0, 0.0, 0.0), direction_G=(0.0, 0.0, -1.0), magnitude_N=10.0)
    if section == "contacts":
        return ContactPair(name=unique_name(names, "contact"), body_a=a, body_b=b)
    if section == "experiments":
        return Experiment(name=unique_name(names, "laxity"), fixed_body=a, moving_body=b)
    raise KeyError(f"no new rows for section {section!r}")
