"""The five input sections of a project (MJM's input window, seed 004 §5) and the feature lists.

Plain, immutable dataclasses: what the user entered, in SI units. Validation lives in
``model.validation``; building numerical systems from these lives in ``app``. Frames: L is a mass's
local (mesh file) frame; G is global. A point given in L keeps the coordinates it has in the mesh file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Iterable, Literal

from jointmodeller.model.mesh import MeshData

Vec3 = tuple[float, float, float]
Mat3 = tuple[Vec3, Vec3, Vec3]


def vec3(values: Iterable[float]) -> Vec3:
    """Three numbers (a numpy vector, a list) as the Vec3 a spec holds; ValueError unless three."""
    x, y, z = (float(v) for v in values)
    return (x, y, z)


def mat3(rows: Iterable[Iterable[float]]) -> Mat3:
    """A 3×3 matrix (numpy or nested lists) as the Mat3 a spec holds; ValueError unless 3×3."""
    a, b, c = (vec3(row) for row in rows)
    return (a, b, c)

GROUND = "ground"
"""Name that stands for the fixed global frame wherever a mass name is expected."""

SpringModel = Literal["axial", "bushing"]
SpringLaw = Literal["polynomial", "blankevoort"]
WrapKind = Literal["cylinder", "sphere", "ellipsoid", "torus"]
ProfileKind = Literal["constant", "ramp", "table"]
ContactMethod = Literal["mjm_springs", "elastic_foundation"]
FunctionKind = Literal["constant", "linear", "polynomial", "spline", "piecewise_linear"]


def now_iso() -> str:
    """Current UTC time as an ISO-8601 string with seconds (the project's time-stamp format)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------------------------------
# Section 1: project
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProjectInfo:
    """Title block and global settings. ``units_length`` is what the GUI shows, not what is stored."""

    title: str = "Untitled joint"
    description: str = ""
    author: str = ""
    units_length: Literal["mm", "m"] = "mm"
    units_angle: Literal["deg", "rad"] = "deg"
    gravity_G: Vec3 = (0.0, 0.0, -9.81)
    notes: str = ""
    created: str = field(default_factory=now_iso)
    modified: str = field(default_factory=now_iso)


# --------------------------------------------------------------------------------------------------
# Section 2: springs (tissue types)
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpringType:
    """A tissue type: polynomial force–deflection per local axis (seed 004 eq. 23) and dashpots.

    kx, ky, kz: coefficients (k1, k2, ..., kn) of f = k1·x + k2·x² + ... [N/m^i]; for an ``axial``
    spring (ligament, tendon) only kx is used, along the tissue's line of action, x = length − rest.
    cx, cy, cz: dashpot coefficients [N·s/m] (Kelvin–Voigt, on the same axes).
    tension_only: a ligament carries no force when slack.
    slack_length_m: rest length for every attachment of this type that does not set its own; None
    means "the attachment's initial length" (see Attachment.initial_length_m).
    law: "polynomial" (above) or "blankevoort" (Blankevoort 1991 ligament: toe region up to
    transition_strain, then linear with stiffness kx[0] [N per unit strain]; OpenSim's model).
    """

    name: str
    kx: tuple[float, ...] = (1.0e4,)
    ky: tuple[float, ...] = ()
    kz: tuple[float, ...] = ()
    cx: float = 0.0
    cy: float = 0.0
    cz: float = 0.0
    model: SpringModel = "axial"
    tension_only: bool = True
    slack_length_m: float | None = None
    law: SpringLaw = "polynomial"
    transition_strain: float = 0.06
    colour: str = "#d4a017"


# --------------------------------------------------------------------------------------------------
# Section 3: masses (bodies)
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FunctionSpec:
    """A user function of one or more coordinates, as data (never text to evaluate).

    constant: values=(c,); linear: values=(slope, intercept); polynomial: values=(c0, c1, ..., cn)
    ascending powers; spline / piecewise_linear: knots x and values y (natural cubic spline or linear
    interpolation through the points). ``coordinates`` names the coordinates it depends on (one for all
    kinds here; several are reserved for couplers).
    """

    kind: FunctionKind = "constant"
    values: tuple[float, ...] = (0.0,)
    x: tuple[float, ...] = ()
    coordinates: tuple[str, ...] = ()


@dataclass(frozen=True)
class Frame:
    """A frame fixed on a body: origin in L [m] and orientation as Euler angles [deg] in L."""

    origin_L: Vec3 = (0.0, 0.0, 0.0)
    euler_deg: Vec3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class JointSpec:
    """The mobilizer that connects a mass to its parent (mobilizer backend, seeds 000/003).

    type: weld, pin, slider, screw, universal, cylinder, planar, ball, ellipsoid, free, custom.
    frame_parent (P on the parent, in the parent's L) and frame_child (F on this mass, in its L).
    parameters: e.g. {"pitch": m/rad} for screw, {"a","b","c"} radii for ellipsoid.
    functions: custom mobilizer: six functions (θ1, θ2, θ3, p1, p2, p3) of its coordinates.
    coordinates: names of this mobilizer's generalised coordinates; default_q their initial values.
    locked: per coordinate, True holds it at its default value in every study (a testing rig's
    clamp, OpenSim's ``locked``); empty means all free. A coordinate prescribed as a function of time
    is a ``prescribed_motion`` constraint row instead.
    """

    type: str = "free"
    parent: str = GROUND
    frame_parent: Frame = Frame()
    frame_child: Frame = Frame()
    parameters: tuple[tuple[str, float], ...] = ()
    functions: tuple[FunctionSpec, ...] = ()
    coordinates: tuple[str, ...] = ()
    default_q: tuple[float, ...] = ()
    reversed: bool = False
    locked: tuple[bool, ...] = ()


@dataclass(frozen=True)
class Mass:
    """A rigid body (a bone).

    mesh: the bone surface in L (stored in the project). cartilage: optional cartilage surface in L.
    mass_kg and density_kg_m3: give the density to compute mass from the mesh volume, or the mass.
    com_L, inertia_L: centre of mass in L [m] and inertia about it in L axes [kg·m²], computed from the
    mesh (``properties_from_mesh``) or entered.
    position_G: initial position of the centre of mass in G [m]; euler_deg: initial orientation of L
    in G, as angles of ``euler_sequence`` (lower case = extrinsic, upper case = intrinsic, SciPy style).
    joint: None means a free 6-DOF body (MJM's case) unless ``fixed``.
    """

    name: str
    mesh: MeshData | None = None
    cartilage: MeshData | None = None
    density_kg_m3: float | None = 1900.0
    mass_kg: float = 1.0
    com_L: Vec3 = (0.0, 0.0, 0.0)
    inertia_L: Mat3 = ((1e-3, 0.0, 0.0), (0.0, 1e-3, 0.0), (0.0, 0.0, 1e-3))
    properties_from_mesh: bool = True
    position_G: Vec3 = (0.0, 0.0, 0.0)
    euler_deg: Vec3 = (0.0, 0.0, 0.0)
    euler_sequence: str = "xyz"
    fixed: bool = False
    joint: JointSpec | None = None
    colour: str = "#e8dcc4"


# --------------------------------------------------------------------------------------------------
# Section 4: attachments
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ViaPoint:
    """A point a tissue path passes through, fixed on ``body``; with a coordinate range it is
    conditional (active only while ``coordinate`` lies in [range_min, range_max], OpenSim style)."""

    body: str
    point_L: Vec3
    coordinate: str = ""
    range_min: float = 0.0
    range_max: float = 0.0
    moving: tuple[FunctionSpec, ...] = ()
    """A moving point (OpenSim's MovingPathPoint): its x, y, z in L [m] as three functions, each a
    constant or a function of one joint coordinate; point_L is then its default-pose location.
    Empty: the point is fixed at point_L."""


@dataclass(frozen=True)
class WrapObject:
    """An analytic obstacle fixed on ``body`` that tissue paths wrap over (OpenSim wrap objects).

    frame: placement in the body's L. dimensions_m: cylinder (radius, length), sphere (radius,),
    ellipsoid (a, b, c), torus (inner, outer). quadrant: "all" or a signed axis like "+x", "-y".
    """

    name: str
    body: str
    kind: WrapKind = "cylinder"
    frame: Frame = Frame()
    dimensions_m: tuple[float, ...] = (0.01, 0.1)
    quadrant: str = "all"


@dataclass(frozen=True)
class Attachment:
    """A tissue of type ``spring`` from point_a_L on body_a to point_b_L on body_b.

    initial_length_m: unloaded (rest) length; None means the spring type's slack length, or if that is
    None too, the straight distance at the initial pose. wraps: the path wraps over bone surfaces.
    via_points: intermediate points of the path, in order; wrap_objects: names of WrapObjects the
    path wraps over (OpenSim import), in order. wrap_ranges: for each wrap object, the 1-based range
    (start, end) of path points it may wrap between (OpenSim's PathWrap range; points counted from
    point_a over every via point, conditional or not, to point_b; -1 = that end of the path); empty
    means every wrap object may act on the whole path. moving_a / moving_b: the end points as
    functions of the coordinates (see ViaPoint.moving; empty = fixed at point_a_L / point_b_L).
    """

    name: str
    spring: str
    body_a: str
    body_b: str
    point_a_L: Vec3
    point_b_L: Vec3
    initial_length_m: float | None = None
    wraps: bool = False
    via_points: tuple[ViaPoint, ...] = ()
    wrap_objects: tuple[str, ...] = ()
    wrap_ranges: tuple[tuple[int, int], ...] = ()
    moving_a: tuple[FunctionSpec, ...] = ()
    moving_b: tuple[FunctionSpec, ...] = ()


# --------------------------------------------------------------------------------------------------
# Section 5: forces
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoadProfile:
    """How a load's magnitude scales in time: constant, linear ramp to 1 over ramp_time_s, or a table
    of (time_s, scale) points interpolated linearly and held at the ends."""

    kind: ProfileKind = "constant"
    ramp_time_s: float = 0.0
    table_time_s: tuple[float, ...] = ()
    table_scale: tuple[float, ...] = ()


@dataclass(frozen=True)
class Force:
    """An external force on ``body`` at point_L (local frame), direction in G, magnitude [N]."""

    name: str
    body: str
    point_L: Vec3
    direction_G: Vec3
    magnitude_N: float
    profile: LoadProfile = LoadProfile()


# --------------------------------------------------------------------------------------------------
# Feature lists: contact pairs, constraints, experiments
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ContactPair:
    """Cartilage contact between two masses (their cartilage surfaces, else their bone meshes).

    cartilage_thickness_m: both layers together. mjm_springs: the total normal stiffness is chosen
    so that the mean penetration at ``design_load_N`` is ``max_penetration_fraction`` of the
    thickness (seed 004 §3.4: ≤ 20%), shared by the current contact points; lateral stiffness is
    ``lateral_stiffness_ratio`` of normal. elastic_foundation: a bed of springs from E, ν and the
    thickness, Hunt–Crossley dissipation (s/m) and Stribeck friction.
    """

    name: str
    body_a: str
    body_b: str
    method: ContactMethod = "mjm_springs"
    cartilage_thickness_m: float = 2.0e-3
    youngs_modulus_Pa: float = 10.0e6
    poisson_ratio: float = 0.45
    hunt_crossley_s_m: float = 0.5
    friction_static: float = 0.0
    friction_dynamic: float = 0.0
    friction_viscous: float = 0.0
    transition_speed_m_s: float = 0.01
    rho: float = 5.0
    lateral_stiffness_ratio: float = 0.001
    max_penetration_fraction: float = 0.2
    design_load_N: float = 1000.0


@dataclass(frozen=True)
class ConstraintSpec:
    """A constraint of the mobilizer backend.

    kind: coordinate_coupler, point_on_plane, point_on_line, ball, weld, rod, prescribed_motion.
    bodies: the masses involved; points_L: a point on each (in its L); direction: plane normal or line
    direction (in the first body's L); length_m: for rod; function: coupler or prescribed motion;
    coordinates: dependent coordinate first, then the independent ones.
    """

    name: str
    kind: str
    bodies: tuple[str, ...] = ()
    points_L: tuple[Vec3, ...] = ()
    direction: Vec3 = (0.0, 0.0, 1.0)
    length_m: float = 0.0
    function: FunctionSpec | None = None
    coordinates: tuple[str, ...] = ()


@dataclass(frozen=True)
class MeasuredPoint:
    """One measured sample of a laxity experiment."""

    load: float
    value: float
    repeat: int = 0


@dataclass(frozen=True)
class Experiment:
    """A laxity experiment: a quasi-static load sweep on a moving body relative to a fixed one.

    load_kind: varus_valgus, anterior_posterior, internal_external, compression.
    max_load: N (forces) or N·m (torques); lever_m: for varus_valgus (the one kind whose force is
    meant as a moment), the distance from the joint down the moving long axis at which the force
    acts; the other kinds ignore it (0 is allowed). steps: load steps from 0 to ±max; sides: "both"
    (0 → +max, then 0 → −max), "positive" or "negative" (one-sided); unload: sweep back.
    flexion_deg: the held anatomical flexion, positive in flexion (app.laxity_frames docstring: how it
    poses a joint's coordinate, ``flexion_sign``). measure: which JCS quantity (e.g. "varus_valgus_deg").
    axes: named anatomical landmarks in L of the fixed/moving bodies defining the joint coordinate
    system (app.laxity_frames.AXIS_KEYS); a moving body without a joint needs at least the fixed bone's
    flexion and long axes.
    flexion_coordinate: on a project with joints, the coordinate of the moving body's joint that is
    held at flexion_deg (empty: its rotational coordinate named like "flex", else its first).
    flexion_sign: +1 when that coordinate grows in flexion (OpenSim JAM's knee_flex_r, arm26's
    r_elbow_flex), −1 when it shrinks (gait2392's knee_angle_r): coordinate = sign · flexion_deg.
    load_point_L: where the sweep's force acts, in the moving body's L [m] (JAM: 10 cm distal on the
    tibia); None: at the moving JCS origin (varus_valgus: lever_m down the long axis).
    preload_force_N, preload_moment_Nm: a constant joint load on the moving body (at the load point),
    components along the JCS axes e1, e2, e3 of the initial pose; it acts from the unloaded pose on.
    tissue_tone: (attachment name, tension N) pairs: a constant force along each tissue's path
    (muscle tone) on top of its own law.
    """

    name: str
    fixed_body: str
    moving_body: str
    load_kind: str = "varus_valgus"
    max_load: float = 100.0
    lever_m: float = 0.30
    steps: int = 21
    unload: bool = False
    flexion_deg: float = 30.0
    measure: str = "varus_valgus_deg"
    axes: tuple[tuple[str, Vec3], ...] = ()
    measured: tuple[MeasuredPoint, ...] = ()
    flexion_coordinate: str = ""
    flexion_sign: int = 1
    sides: str = "both"
    load_point_L: Vec3 | None = None
    preload_force_N: Vec3 = (0.0, 0.0, 0.0)
    preload_moment_Nm: Vec3 = (0.0, 0.0, 0.0)
    tissue_tone: tuple[tuple[str, float], ...] = ()


# --------------------------------------------------------------------------------------------------
# The whole project
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Project:
    """Everything a user enters: five MJM sections plus contact pairs, constraints and experiments."""

    info: ProjectInfo = ProjectInfo()
    springs: tuple[SpringType, ...] = ()
    masses: tuple[Mass, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    forces: tuple[Force, ...] = ()
    contacts: tuple[ContactPair, ...] = ()
    constraints: tuple[ConstraintSpec, ...] = ()
    experiments: tuple[Experiment, ...] = ()
    wrap_objects: tuple[WrapObject, ...] = ()

    SECTIONS = ("springs", "masses", "attachments", "forces", "contacts", "constraints", "experiments",
                "wrap_objects")

    def mass(self, name: str) -> Mass:
        """The mass called ``name``; KeyError naming it when there is none."""
        for m in self.masses:
            if m.name == name:
                return m
        raise KeyError(f"no mass named {name!r}")

    def spring(self, name: str) -> SpringType:
        for s in self.springs:
            if s.name == name:
                return s
        raise KeyError(f"no spring type named {name!r}")

    def mass_index(self, name: str) -> int:
        for i, m in enumerate(self.masses):
            if m.name == name:
                return i
        raise KeyError(f"no mass named {name!r}")

    def with_rows(self, section: str, rows: tuple) -> "Project":
        """A copy with one section's rows replaced (sections are immutable tuples)."""
        if section not in self.SECTIONS:
            raise KeyError(f"no section named {section!r}")
        changes: dict[str, Any] = {section: tuple(rows)}
        return replace(self, **changes)
