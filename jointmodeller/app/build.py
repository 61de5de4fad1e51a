"""Build the MJM mechanical system (core arrays) from a project's specs.

Frames: each mass's mesh frame L is turned into its body frame B (centre of mass, principal axes):
``r_B = R_BL (r_L - com_L)``; its initial pose comes from ``position_G`` (the centre of mass) and
``euler_deg`` in ``euler_sequence`` (orientation of L in G), so ``R_GB = R_GL R_BLᵀ``. The name
``"ground"`` (specs.GROUND) is a fixed body at the origin whose L frame is G.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.loads import PointLoads
from jointmodeller.core.mechanics.system import Bodies, MechanicalSystem
from jointmodeller.core.mechanics.tissue_force import TissueForces
from jointmodeller.core.mechanics.tissues import AXIAL, BLANKEVOORT, BUSHING, POLYNOMIAL, make_tissue_set
from jointmodeller.core.spatial_math import euler_to_matrix, matrix_to_quat, principal_axes
from jointmodeller.core.state import State
from jointmodeller.model.errors import Problem, ValidationError
from jointmodeller.model.specs import GROUND, Project


@dataclass
class BuiltMechanics:
    """What :func:`build_mechanical_system` returns: the system, its initial state, and the maps
    back to the project (row names per body / tissue / load). Unpacks as ``system, state = built``."""

    system: MechanicalSystem
    state: State
    body_names: list[str]
    tissue_names: list[str]
    tissue_springs: list[str]
    euler_sequences: list[str]
    contacts: list = field(default_factory=list)

    def __iter__(self):
        return iter((self.system, self.state))


def _profile(force) -> tuple[np.ndarray, np.ndarray]:
    p = force.profile
    if p.kind == "ramp" and p.ramp_time_s > 0:
        return np.array([0.0, p.ramp_time_s]), np.array([0.0, 1.0])
    if p.kind == "table" and len(p.table_time_s) > 0:
        return np.asarray(p.table_time_s, float), np.asarray(p.table_scale, float)
    return np.array([0.0]), np.array([1.0])


def _pad(rows: list[np.ndarray]) -> np.ndarray:
    """Pad 1-D arrays to a common length by repeating each one's last value."""
    width = max([len(r) for r in rows] + [1])
    padded = [np.r_[r, np.full(width - len(r), r[-1] if len(r) else 0.0)] for r in rows]
    return np.array(padded).reshape(len(rows), width)


AUTO_CONTACT_GEOMETRY = "auto"
"""The studies' default contact geometry (:func:`resolve_contact_geometry`)."""


def contact_geometry_choices() -> tuple[str, ...]:
    """What a study's ``contact_geometry`` may be: "auto" and core.mechanics.contact.GEOMETRIES."""
    from jointmodeller.core.mechanics.contact import GEOMETRIES

    return (AUTO_CONTACT_GEOMETRY, *GEOMETRIES)


def check_contact_geometry(contact_geometry: str) -> str:
    """``contact_geometry`` if it is one the studies know (:func:`contact_geometry_choices`), else a
    ValidationError naming the choices (the Run section's "contact geometry")."""
    choices = contact_geometry_choices()
    if contact_geometry not in choices:
        raise ValidationError(Problem("Run", None, "contact geometry",
                                      f"{contact_geometry!r}: use one of {', '.join(choices)}"))
    return contact_geometry


def resolve_contact_geometry(contact_geometry: str, *, study: str, tree: bool) -> str:
    """The geometry a study runs on; "exact" and "field" are taken as given (a study that cannot
    honour "field" refuses it itself). "auto" is "field" for dynamics and for the laxity sweep of free
    bones, "exact" elsewhere (equilibrium, a tree's laxity sweep: their statics freeze contact sets on
    the exact meshes). On the face field (docs/sdf.md) the demo's dynamics follows the exact meshes'
    trajectory within the integrator's tolerance at about a third of the cost (real time), and its
    laxity is the exact meshes' within 0.1 %."""
    check_contact_geometry(contact_geometry)
    if contact_geometry == AUTO_CONTACT_GEOMETRY:
        return "field" if study == "dynamics" or (study == "laxity" and not tree) else "exact"
    return contact_geometry


def build_mechanical_system(
    project: Project, *, contact: bool = True, wrapping: bool = True, use_numba: bool | None = None,
    coordinate_index: dict[str, int] | None = None, q0: np.ndarray | None = None,
    contact_geometry: str = "exact", free_path_shortcut: bool = False,
) -> BuiltMechanics:
    """The MJM system and initial state of ``project``.

    contact: add the project's contact pairs (core.mechanics.contact.ContactPair); wrapping: tissues
    marked ``wraps`` follow paths over the bone meshes (else straight lines). Tissues with via points
    or wrap objects always follow their path (OpenSim's rules, core.studies.muscle_paths), in every
    study. coordinate_index: the tree coordinates (name -> q index) when these force elements act on
    a multibody tree, and q0 its coordinates at the initial pose; conditional via points need them.
    Raises ValidationError naming the row when a reference cannot be resolved or a request cannot be
    honoured. contact_geometry: "exact" (closest points on the meshes) or "field" (signed distance
    fields, read from the disk cache, io.sdf_cache, or built and cached once per mesh).
    free_path_shortcut: wrapped paths that stay free skip their iterations
    (core.geometry.wrapping.taut_path.TautOptions.free_shortcut; dynamics).
    """
    from jointmodeller.core.mechanics.contact import GEOMETRIES

    if contact_geometry not in GEOMETRIES:  # "auto" is a study's choice: resolve_contact_geometry
        raise ValueError(f"contact_geometry must be one of {GEOMETRIES}, got {contact_geometry!r}")
    problems: list[Problem] = []
    masses = list(project.masses)
    names = [m.name for m in masses]
    uses_ground = any(GROUND in (a.body_a, a.body_b) for a in project.attachments) or any(
        f.body == GROUND for f in project.forces) or any(GROUND in (c.body_a, c.body_b) for c in project.contacts)
    if not masses and not uses_ground:
        raise ValidationError(Problem("masses", None, None, "the project has no masses"))

    mass_kg, inertia, fixed, R_BL, com_L, p0_rows, R_GB_rows, seqs = [], [], [], [], [], [], [], []
    for m in masses:
        w, R = principal_axes(np.asarray(m.inertia_L, float))
        if not (m.mass_kg > 0 and np.all(w > 0)):
            problems.append(Problem("masses", m.name, "inertia_L", "mass and principal inertias must be positive"))
            w = np.maximum(w, 1e-12)
        R_GL = euler_to_matrix(np.radians(np.asarray(m.euler_deg, float))[None], m.euler_sequence)[0]
        mass_kg.append(m.mass_kg)
        inertia.append(w)
        fixed.append(m.fixed)
        R_BL.append(R)
        com_L.append(m.com_L)
        p0_rows.append(m.position_G)
        R_GB_rows.append(R_GL @ R.T)
        seqs.append(m.euler_sequence)
    if uses_ground and GROUND not in names:
        names.append(GROUND)
        mass_kg.append(1.0)
        inertia.append(np.ones(3))
        fixed.append(True)
        R_BL.append(np.eye(3))
        com_L.append((0.0, 0.0, 0.0))
        p0_rows.append((0.0, 0.0, 0.0))
        R_GB_rows.append(np.eye(3))
        seqs.append("xyz")
    bodies = Bodies.make(mass_kg, np.array(inertia), fixed, names, np.array(R_BL), np.array(com_L, float))
    p0 = np.asarray(p0_rows, float)
    R_GB = np.asarray(R_GB_rows, float)
    index = {n: i for i, n in enumerate(names)}

    def body_of(section: str, row: str, fieldname: str, name: str) -> int:
        if name not in index:
            problems.append(Problem(section, row, fieldname, f"no mass named {name!r}"))
            return 0
        return index[name]

    # ---- tissues
    springs = {s.name: s for s in project.springs}
    rows = []
    for a in project.attachments:
        s = springs.get(a.spring)
        if s is None:
            problems.append(Problem("attachments", a.name, "spring", f"no spring type named {a.spring!r}"))
            continue
        ia = body_of("attachments", a.name, "body_a", a.body_a)
        ib = body_of("attachments", a.name, "body_b", a.body_b)
        if ia == ib:
            problems.append(Problem("attachments", a.name, "body_b", "both ends are on the same mass"))
        ra = bodies.points_B(np.array([ia]), np.array([a.point_a_L], float))[0]
        rb = bodies.points_B(np.array([ib]), np.array([a.point_b_L], float))[0]
        pa, pb = p0[ia] + R_GB[ia] @ ra, p0[ib] + R_GB[ib] @ rb
        model = BUSHING if s.model == "bushing" else AXIAL
        law = BLANKEVOORT if (s.law == "blankevoort" and model == AXIAL) else POLYNOMIAL
        kx = tuple(s.kx) or (0.0,)
        ky = tuple(s.ky) if model == BUSHING else ()
        kz = tuple(s.kz) if model == BUSHING else ()
        rest = a.initial_length_m if a.initial_length_m is not None else s.slack_length_m
        R_AS = R_BL[ia] if model == BUSHING else np.eye(3)  # spring frame S = body A's mesh frame L
        rest_S = (R_AS.T @ R_GB[ia].T @ (pb - pa)) if model == BUSHING else np.zeros(3)
        routed = bool(a.via_points or a.wrap_objects or a.moving_a or a.moving_b)
        if routed and model == BUSHING:
            problems.append(Problem("attachments", a.name, "spring",
                                    f"spring type {s.name!r} is a bushing, which cannot follow via points or "
                                    "wrap objects"))
        if routed and a.wraps:
            problems.append(Problem("attachments", a.name, "wraps",
                                    "a path through via points or over wrap objects cannot also wrap over the bone "
                                    "meshes; clear 'wraps' or remove the via points and wrap objects"))
        rows.append(dict(routed=routed and model == AXIAL, a=ia, b=ib, ra=ra, rb=rb,
                         k=(kx, ky or (0.0,), kz or (0.0,)), c=(s.cx, s.cy, s.cz),
                         only=bool(s.tension_only) and model == AXIAL, rest=rest,
                         straight=float(np.linalg.norm(pb - pa)),
                         model=model, R_AS=R_AS, rest_S=rest_S,
                         mesh_wrapped=bool(a.wraps) and wrapping and model == AXIAL and not routed,
                         name=a.name, spring=s.name, law=law, eps_l=s.transition_strain))
    deg = max([len(k) for r in rows for k in r["k"]] + [1])
    n_rows = len(rows)
    coeffs = np.zeros((n_rows, 3, deg))
    for i, r in enumerate(rows):
        for ax in range(3):
            coeffs[i, ax, : len(r["k"][ax])] = r["k"][ax]
    rest_lengths = np.array([r["rest"] if r["rest"] is not None else np.nan for r in rows], float)
    tissues = make_tissue_set(
        [r["a"] for r in rows], [r["b"] for r in rows], np.array([r["ra"] for r in rows]).reshape(n_rows, 3),
        np.array([r["rb"] for r in rows]).reshape(n_rows, 3), coeffs,
        np.array([r["c"] for r in rows], float).reshape(n_rows, 3),
        tension_only=[r["only"] for r in rows], rest_length=np.nan_to_num(rest_lengths, nan=0.0),
        model=[r["model"] for r in rows], R_AS=np.array([r["R_AS"] for r in rows]).reshape(n_rows, 3, 3),
        rest_S=np.array([r["rest_S"] for r in rows]).reshape(n_rows, 3),
        wrapped=[r["mesh_wrapped"] or r["routed"] for r in rows],
        names=[r["name"] for r in rows], law=[r["law"] for r in rows],
        transition_strain=[r["eps_l"] for r in rows],
    )

    # ---- loads
    fb, fr, ff, ft, fs, fn = [], [], [], [], [], []
    for f in project.forces:
        i = body_of("forces", f.name, "body", f.body)
        d = np.asarray(f.direction_G, float)
        norm = float(np.linalg.norm(d))
        if not norm > 0:
            problems.append(Problem("forces", f.name, "direction_G", "direction must not be zero"))
            norm = 1.0
        fb.append(i)
        fr.append(bodies.points_B(np.array([i]), np.array([f.point_L], float))[0])
        ff.append(d / norm * f.magnitude_N)
        profile_t, profile_scale = _profile(f)
        ft.append(profile_t)
        fs.append(profile_scale)
        fn.append(f.name)
    if problems:
        raise ValidationError(problems)
    k = len(fb)
    loads = PointLoads(np.asarray(fb, np.int64), np.asarray(fr, float).reshape(k, 3),
                       np.asarray(ff, float).reshape(k, 3),
                       _pad(ft) if k else np.zeros((0, 1)), _pad(fs) if k else np.ones((0, 1)), fn)

    # ---- geometry-dependent parts: length scale, wrapping provider, contact
    extent = [float(np.ptp(p0, axis=0).max())] if len(p0) > 1 else []
    for mm in masses:
        if mm.mesh is not None:
            extent.append(float(np.ptp(mm.mesh.vertices_L, axis=0).max()))
    length_scale = max([e for e in extent if e > 0] + [0.01]) if extent else 0.1

    def mesh_B(i: int, mesh) -> np.ndarray:
        return bodies.points_B(np.full(len(mesh.vertices_L), i), mesh.vertices_L)

    parts: list[tuple[np.ndarray, Any]] = []
    routed_rows = np.array([i for i, r in enumerate(rows) if r["routed"]], np.int64)
    if routed_rows.size:
        from jointmodeller.core.studies.muscle_paths import AnalyticPathProvider, mjm_path_specs

        try:
            specs = mjm_path_specs(project, [r["name"] for r in rows], index, bodies.R_BL, bodies.com_L,
                                   coordinate_index=coordinate_index)
        except (KeyError, ValueError) as exc:
            bad = next((r["name"] for r in rows if r["routed"]), None)
            raise ValidationError(Problem("attachments", bad, "via_points", str(exc).strip("'\""))) from None
        link = None
        if coordinate_index is not None and any(sp.moving for sp in specs.values()):
            from jointmodeller.core.studies.muscle_paths import build_multibody, moving_point_link

            link = moving_point_link(project, build_multibody(project), index)  # moving points' own share
        parts.append((routed_rows, AnalyticPathProvider(specs, link)))
    mesh_rows = np.array([i for i, r in enumerate(rows) if r["mesh_wrapped"]], np.int64)
    if mesh_rows.size:
        from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle
        from jointmodeller.core.mechanics.wrapped_tissue import WrappingPathProvider
        from jointmodeller.io.sdf_cache import cached_field

        obstacles = [MeshObstacle(mesh_B(i, mm.mesh), mm.mesh.faces, i, mm.name)
                     for i, mm in enumerate(masses) if mm.mesh is not None]
        for ob in obstacles:  # fields bound the exact queries' work (same paths): from the disk cache
            if ob.is_closed:
                ob.use_field(cached_field(ob.vertices_B, ob.faces).field)
        if not obstacles:
            raise ValidationError(Problem("attachments", rows[int(mesh_rows[0])]["name"], "wraps",
                                          "wraps over the bone meshes, but no mass has a mesh"))
        from jointmodeller.core.geometry.wrapping.taut_path import TautOptions

        parts.append((mesh_rows, WrappingPathProvider(tissues, obstacles, rows=mesh_rows,
                                                      options=TautOptions(free_shortcut=free_path_shortcut))))
    provider: Any = None
    if len(parts) == 1:
        provider = parts[0][1]
    elif parts:
        from jointmodeller.core.mechanics.tissues import CombinedPathProvider

        provider = CombinedPathProvider(parts)

    extra = []
    if contact and project.contacts:
        from jointmodeller.core.mechanics.contact import ContactPair as CorePair
        from jointmodeller.core.mechanics.contact_laws import StribeckFriction

        for c in project.contacts:
            ja, jb = index.get(c.body_a), index.get(c.body_b)
            ma = masses[ja] if ja is not None and ja < len(masses) else None
            mb = masses[jb] if jb is not None and jb < len(masses) else None
            sa = (ma.cartilage or ma.mesh) if ma else None
            sb = (mb.cartilage or mb.mesh) if mb else None
            if ja is None or jb is None or sa is None or sb is None:
                raise ValidationError(Problem("contacts", c.name, None,
                                              "both masses need a mesh or a cartilage surface"))
            friction = None
            if c.friction_static or c.friction_dynamic or c.friction_viscous:
                friction = StribeckFriction(c.friction_static, c.friction_dynamic, c.friction_viscous,
                                            c.transition_speed_m_s)
            # a closed cartilage shell contacts only through its articular sheet (core.geometry.articular)
            verts_a, faces_a = _contact_sheet(ja, ma, mesh_B)
            verts_b, faces_b = _contact_sheet(jb, mb, mesh_B)
            extra.append(CorePair(
                ja, jb, verts_a, faces_a, verts_b, faces_b, c.cartilage_thickness_m,
                youngs_modulus=c.youngs_modulus_Pa, poisson=c.poisson_ratio,
                method="mjm" if c.method == "mjm_springs" else "foundation", rho=c.rho,
                lateral_ratio=c.lateral_stiffness_ratio, max_penetration_fraction=c.max_penetration_fraction,
                design_load=c.design_load_N,
                dissipation=c.hunt_crossley_s_m, friction=friction,
            ))
            if contact_geometry == "field":
                extra[-1] = _with_cached_fields(extra[-1])

    # rest lengths left open: the length at the initial pose (routed or wrapped: along the path),
    # settled before the system is built (a built system is never changed)
    open_rest = np.isnan(rest_lengths) & (tissues.model == AXIAL)
    if open_rest.any():
        zero = np.zeros_like(p0)
        kin0 = BodyKinematics(p0, R_GB, zero, zero, None if q0 is None else np.asarray(q0, float))
        lengths = TissueForces(tissues, provider, use_numba).evaluate(0.0, kin0).length
        tissues = replace(tissues, rest_length=np.where(open_rest, lengths, tissues.rest_length))
    system = MechanicalSystem(bodies, tissues, loads, gravity_G=np.asarray(project.info.gravity_G, float),
                              extra_elements=extra, path_provider=provider, length_scale=length_scale,
                              use_numba=use_numba)
    state = system.make_state(p0, matrix_to_quat(R_GB))
    return BuiltMechanics(system, state, names, list(tissues.names), [r["spring"] for r in rows], seqs, extra)


def _with_cached_fields(pair):
    """A core contact pair on the "field" geometry, its fields read from the disk cache (or built and
    cached) with the parameters core.mechanics.contact.contact_field uses."""
    from jointmodeller.core.mechanics.contact import contact_field_band_cells, contact_field_spacing
    from jointmodeller.io.sdf_cache import cached_field

    def field_of(surface):
        v, f = surface.vertices_B, surface.surface.faces
        h = contact_field_spacing(v, f)
        return cached_field(v, f, spacing=h, band_cells=contact_field_band_cells(h, pair.field_depth),
                            keep_faces=True).field

    sdf_a = field_of(pair.surface_a) if pair.bed in ("b", "both") else None
    sdf_b = field_of(pair.surface_b) if pair.bed in ("a", "both") else None
    return pair.with_geometry("field", sdf_a, sdf_b)


def _contact_sheet(i: int, mass, mesh_B) -> tuple[np.ndarray, np.ndarray]:
    """Contact surface of mass i in its body frame: the articular sheet of its cartilage layer on its
    bone, else its bone mesh."""
    from jointmodeller.core.geometry.articular import articular_surface
    from jointmodeller.io.articular_cache import cached_articular_face_mask

    if mass.cartilage is None:
        return mesh_B(i, mass.mesh), mass.mesh.faces
    bone = mass.mesh
    return articular_surface(mesh_B(i, mass.cartilage), mass.cartilage.faces,
                             None if bone is None else mesh_B(i, bone), None if bone is None else bone.faces,
                             face_mask=cached_articular_face_mask)
