"""MuJoCo as a peer on our own model: the demo elbow translated into MJCF (issue 17 item 6).

The figures are measured in the ``dynamics`` group beside ours (``dynamics.mujoco_demo_realtime_factor``);
this module only builds and runs the peer, and its :func:`run` is empty so that the harness, which runs
every module of this package as a group, does not measure it twice.

The translation takes what ``app.build.build_mechanical_system`` resolved rather than re-deriving it:

- Bodies: one MuJoCo body per mass, its frame our body frame B (centre of mass, principal axes), placed
  at the project's initial pose; a fixed mass has no joint (welded to the world), a free one a free
  joint; ``<inertial>`` at the body origin with our mass and principal inertias (nothing inferred from
  geoms: ``inertiafromgeom="false"``).
- Contact: each contact pair's surfaces (the cartilage layer, else the bone mesh, in B) as ``sdf`` geoms
  on their meshes. MuJoCo ≥ 3.3.5 builds a signed-distance octree of a mesh natively (the SdfLib plugin
  is gone) when a geom of type ``sdf`` references it, so the concave trochlear notch is the real
  surface; a ``mesh`` geom would collide through its convex hull, which fills the notch. SDF pairs are
  found by MuJoCo's gradient descent from ``sdf_initpoints`` starts (its defaults: 40 starts, 10
  iterations). The geoms collide only through an explicit ``<pair>``: frictionless (``condim`` 1) like the
  demo, else Coulomb at the pair's dynamic coefficient. MuJoCo's contact is a soft constraint, not our
  elastic foundation: ``solref`` time constant CONTACT_TIMECONST_S, critically damped.
- Ligaments: straight spatial tendons between sites at our attachment points in B (MuJoCo's spatial
  tendons wrap only over spheres and cylinders, ours wrap over the bone meshes). The spring is our
  polynomial law exactly: tension-only through the two-valued ``springlength`` (0, L0) (a dead band: no
  force below the rest length L0), ``stiffness`` our coefficients k1, k2, k3 (MuJoCo's polynomial
  a x + b x² + c x³ in the stretch x = L − L0; laws of higher degree or Blankevoort's are refused). Our
  dashpot acts only on a taut tissue; MuJoCo's tendon damping acts always, so :class:`Driver` sets each
  tendon's damping to ours when it is longer than L0 and to zero otherwise before every step (from the
  previous step's lengths). What remains different: MuJoCo does not clip a taut tendon's spring plus
  dashpot at zero when it shortens fast (ours never pushes).
- Loads and gravity: the project's gravity; each point load as ``data.xfrc_applied`` (force at the centre
  of mass and the moment of the load point's arm) at the profile's scale, set before every step.
- Integration: ``implicitfast`` (damping, here the ligaments' dashpots of up to 2.9 kN·s/m on a 1.5 kg
  forearm, is implicit; explicit Euler would need a much smaller step) at STEP_S.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

STEP_S = 5.0e-4
"""The peer's time step (issue 17: MuJoCo at a 0.5 ms step)."""

CONTACT_TIMECONST_S = 2.0 * STEP_S
"""MuJoCo contact ``solref`` time constant: twice the step, the stiffest MuJoCo advises for a stable
constraint. The valgus angle follows it (to 1 s: 2.5 ms gives −3.4°, 5 ms −5.6°), and with MuJoCo's
default of 20 ms the joint does not hold: the notch rides out of the trochlea (−50°, 133 mm)."""

HELD_TRANSLATION_M = 3.0e-3
"""The joint held when the moving bone's JCS origin stays within this distance of the fixed one's (the
demo's combined cartilage thickness): a notch riding out of the trochlea moves by more (13 mm in the
demo's equilibrium study at the published stiffness, docs/demo.md)."""

MJ_NPOLY = 3
"""Coefficients of MuJoCo's tendon stiffness polynomial (mjNPOLY + 1)."""


def mujoco_module():
    """The ``mujoco`` module, or None when the optional peer is not installed."""
    try:
        import mujoco
    except ImportError:
        return None
    return mujoco


@dataclass
class MujocoDemoInfo:
    """What :func:`build_mujoco_demo` translated, and what a run needs beside the MjModel.

    body_id: MuJoCo body id of each of our bodies (our row order; 0 = the world for ``ground``);
    rest_length, stiffness (k, 3), damping (k,): each tendon's law as ours; load_*: our point loads
    (body rows, points in B, full-scale forces in G, profiles); frames: the JCS of the project's first
    experiment (None without one) with its fixed and moving body rows; xml: the MJCF compiled.
    """

    body_names: list[str]
    body_id: np.ndarray
    mass: np.ndarray
    inertia_B: np.ndarray
    fixed: np.ndarray
    p0_G: np.ndarray
    q0_GB: np.ndarray
    tendon_names: list[str]
    rest_length: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    loads: Any
    frames: Any
    fixed_row: int
    moving_row: int
    measure: str
    contact_geoms: list[tuple[str, str]]
    xml: str
    compile_s: float


def _f(a) -> str:
    return " ".join(f"{float(x):.17g}" for x in np.ravel(a))


def _name(text: str) -> str:
    """An MJCF-safe name (our names carry spaces and dashes)."""
    return "".join(ch if ch.isalnum() else "_" for ch in text)


def build_mujoco_demo(project, *, timestep: float = STEP_S, contact: bool = True,
                      contact_timeconst_s: float = CONTACT_TIMECONST_S):
    """(mujoco.MjModel, MujocoDemoInfo) of ``project`` (built for the demo elbow; any project of free and
    fixed masses, axial polynomial tissues of degree ≤ 3, point loads and contact pairs translates).

    contact: add the project's contact pairs as SDF geoms. Raises ImportError without mujoco and
    ValueError naming a tissue MuJoCo's tendon cannot carry as ours (bushings, Blankevoort's law,
    polynomials of degree > 3).
    """
    import mujoco

    from jointmodeller.app.build import build_mechanical_system
    from jointmodeller.app.laxity import BuiltJoint
    from jointmodeller.core.mechanics.tissues import AXIAL, BLANKEVOORT
    from jointmodeller.model.specs import GROUND

    built = build_mechanical_system(project, contact=False, wrapping=False)
    system = built.system
    bodies, ts = system.bodies, system.tissues
    p0, q0 = system.positions(built.state)
    names = list(built.body_names)

    for k in range(ts.count):
        name = ts.names[k]
        if ts.model[k] != AXIAL:
            raise ValueError(f"tissue {name!r} is a bushing: a MuJoCo tendon carries only an axial force")
        if ts.law[k] == BLANKEVOORT:
            raise ValueError(f"tissue {name!r} follows Blankevoort's law: MuJoCo's tendon spring is a polynomial")
        if np.any(ts.coeffs[k, 0, MJ_NPOLY:] != 0.0):
            raise ValueError(f"tissue {name!r}: a polynomial of degree > {MJ_NPOLY}, MuJoCo's tendon takes {MJ_NPOLY}")
    stiffness = np.zeros((ts.count, MJ_NPOLY))
    deg = min(MJ_NPOLY, ts.coeffs.shape[2])
    stiffness[:, :deg] = ts.coeffs[:, 0, :deg]

    # ---- contact surfaces: the cartilage layer (else the bone) of each mass in a pair, in B
    masses = list(project.masses)
    surface_geom: dict[int, str] = {}
    mesh_xml: list[str] = []
    pairs: list[tuple[str, str, Any]] = []
    if contact:
        for c in project.contacts:
            rows = []
            for body in (c.body_a, c.body_b):
                i = names.index(body)
                mass = masses[i]
                surface = mass.cartilage or mass.mesh
                if surface is None:
                    raise ValueError(f"contact {c.name!r}: mass {body!r} has no mesh or cartilage surface")
                if i not in surface_geom:
                    # a closed surface: an SDF needs an inside (our contact uses this layer's articular
                    # sheet, app.build._contact_sheet; the shell's other side faces the bone, out of reach)
                    v_B = bodies.points_B(np.full(len(surface.vertices_L), i), surface.vertices_L)
                    geom = f"surface_{_name(names[i])}"
                    faces = " ".join(map(str, np.ravel(surface.faces)))
                    mesh_xml.append(f'<mesh name="{geom}" vertex="{_f(v_B)}" face="{faces}"/>')
                    surface_geom[i] = geom
                rows.append(surface_geom[i])
            pairs.append((rows[0], rows[1], c))

    # ---- bodies, sites
    site_a = [f"t{k}_a" for k in range(ts.count)]
    site_b = [f"t{k}_b" for k in range(ts.count)]
    world_items: list[str] = []
    body_xml: list[str] = []
    for i, name in enumerate(names):
        items = [f'<site name="{site_a[k]}" pos="{_f(ts.r_a_B[k])}" size="0.001"/>' for k in range(ts.count)
                 if ts.body_a[k] == i]
        items += [f'<site name="{site_b[k]}" pos="{_f(ts.r_b_B[k])}" size="0.001"/>' for k in range(ts.count)
                  if ts.body_b[k] == i]
        if i in surface_geom:
            items.append(f'<geom name="{surface_geom[i]}" type="sdf" mesh="{surface_geom[i]}" '
                         'contype="0" conaffinity="0" group="1"/>')
        if name == GROUND:
            world_items += items
            continue
        joint = "" if bodies.fixed[i] else "<freejoint/>"
        body_xml.append(
            f'<body name="{_name(name)}" pos="{_f(p0[i])}" quat="{_f(q0[i])}">{joint}'
            f'<inertial pos="0 0 0" mass="{_f(bodies.mass[i])}" diaginertia="{_f(bodies.inertia_B[i])}"/>'
            + "".join(items) + "</body>")
    pair_xml = []
    for ga, gb, c in pairs:
        friction = float(c.friction_dynamic or c.friction_static)
        condim = 3 if friction > 0 else 1
        pair_xml.append(f'<pair geom1="{ga}" geom2="{gb}" condim="{condim}" '
                        f'friction="{_f([max(friction, 1e-6)] * 2)} 0.005 0.0001 0.0001" '
                        f'solref="{_f(contact_timeconst_s)} 1"/>')
    tendon_xml = [
        f'<spatial name="t{k}" stiffness="{_f(stiffness[k])}" damping="{_f(ts.damping[k, 0])}" '
        f'springlength="0 {_f(ts.rest_length[k])}"><site site="{site_a[k]}"/><site site="{site_b[k]}"/></spatial>'
        for k in range(ts.count)]
    xml = (
        '<mujoco model="jointmodeller peer">'
        '<compiler inertiafromgeom="false" angle="radian"/>'
        f'<option timestep="{_f(timestep)}" integrator="implicitfast" gravity="{_f(system.gravity_G)}"/>'
        f'<asset>{"".join(mesh_xml)}</asset>'
        f'<worldbody>{"".join(world_items)}{"".join(body_xml)}</worldbody>'
        f'<contact>{"".join(pair_xml)}</contact>'
        f'<tendon>{"".join(tendon_xml)}</tendon>'
        '</mujoco>')
    t0 = time.perf_counter()
    model = mujoco.MjSpec.from_string(xml).compile()
    compile_s = time.perf_counter() - t0

    body_id = np.array([0 if nm == GROUND else mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, _name(nm))
                        for nm in names], np.int64)
    frames, fixed_row, moving_row, measure = None, -1, -1, ""
    experiments = [e for e in project.experiments if e.fixed_body in names and e.moving_body in names]
    if experiments:
        from jointmodeller.app.laxity_frames import joint_frames

        e = experiments[0]
        frames = joint_frames(project, e, BuiltJoint(system, p0, q0, []))
        fixed_row, moving_row, measure = names.index(e.fixed_body), names.index(e.moving_body), e.measure
    info = MujocoDemoInfo(
        body_names=names, body_id=body_id, mass=bodies.mass.copy(), inertia_B=bodies.inertia_B.copy(),
        fixed=np.asarray(bodies.fixed, bool).copy(), p0_G=p0, q0_GB=q0, tendon_names=list(ts.names),
        rest_length=ts.rest_length.copy(), stiffness=stiffness, damping=ts.damping[:, 0].copy(),
        loads=system.loads, frames=frames, fixed_row=fixed_row, moving_row=moving_row, measure=measure,
        contact_geoms=[(ga, gb) for ga, gb, _ in pairs], xml=xml, compile_s=compile_s)
    return model, info


class Driver:
    """What is set before each ``mj_step``: the point loads at their profile's scale (``xfrc_applied``)
    and each tendon's damping, ours when taut (longer than its rest length) and zero when slack."""

    def __init__(self, model, info: MujocoDemoInfo):
        self.model, self.info = model, info
        loads = info.loads
        self.load_body = info.body_id[np.asarray(loads.body, np.int64)]
        self.r_B = np.asarray(loads.r_B, float)

    def apply(self, data) -> None:
        info = self.info
        self.model.tendon_damping[:] = np.where(data.ten_length > info.rest_length, info.damping, 0.0)
        loads = info.loads
        if loads.count == 0:
            return
        data.xfrc_applied[:] = 0.0
        forces = loads.forces_at(data.time)
        for j in range(loads.count):
            b = self.load_body[j]
            R = data.xmat[b].reshape(3, 3)
            arm = data.xpos[b] + R @ self.r_B[j] - data.xipos[b]
            data.xfrc_applied[b, :3] += forces[j]
            data.xfrc_applied[b, 3:] += np.cross(arm, forces[j])


def joint_coordinates(data, info: MujocoDemoInfo) -> np.ndarray:
    """JCS coordinates (α, β, γ [rad], q1, q2, q3 [m]) of the experiment's moving bone relative to its
    fixed one at the MuJoCo pose: our frames (app.laxity_frames) on MuJoCo's body poses, which are our
    body frames B."""
    b1, b2 = info.body_id[info.fixed_row], info.body_id[info.moving_row]
    return info.frames.coordinates(data.xpos[b1], data.xmat[b1].reshape(3, 3),
                                   data.xpos[b2], data.xmat[b2].reshape(3, 3))


def measure_value(data, info: MujocoDemoInfo) -> float:
    """The experiment's measure (e.g. ``varus_valgus_deg``) at the MuJoCo pose, in its unit."""
    from jointmodeller.core.studies.laxity import parse_measure

    idx, factor, _ = parse_measure(info.measure)
    return float(joint_coordinates(data, info)[idx] * factor)


def mujoco_realtime(project, t_end: float = 8.0, budget_s: float = 8.0) -> dict:
    """Simulated seconds per wall second of ``project`` in MuJoCo from rest, time-boxed like
    ``bench.dynamics._realtime``: steps until ``t_end`` or until ``budget_s`` of wall time has passed.

    Returns realtime_factor (simulated time / wall time of ``mj_step`` alone), loop_factor (the same over
    the whole loop: the driver's Python between steps included), t_reached, steps, status
    ("completed" / "stopped" by the budget / "diverged"), load_scale at the end, measure (the experiment's
    measure, e.g. varus_valgus_deg) sampled every 10 ms once the loads are at full scale and averaged
    over the last tenth of that stretch, with its range there, held (finite state, contact at the end,
    JCS translation within HELD_TRANSLATION_M throughout), max_translation_m, contacts at the end,
    compile_s and the MuJoCo version.
    """
    import mujoco

    model, info = build_mujoco_demo(project)
    data = mujoco.MjData(model)
    driver = Driver(model, info)
    mujoco.mj_forward(model, data)
    full_after = float(np.max(info.loads.profile_t)) if info.loads.count else 0.0  # the loads' last knot
    step = mujoco.mj_step
    clock = time.perf_counter
    wall_step = 0.0
    steps = 0
    status = "completed"
    times, values, max_translation = [], [], 0.0
    has_jcs = info.frames is not None
    start = clock()
    deadline = start + budget_s
    while data.time < t_end - 0.5 * model.opt.timestep:
        if clock() > deadline:
            status = "stopped"
            break
        driver.apply(data)
        t0 = clock()
        step(model, data)
        wall_step += clock() - t0
        steps += 1
        if steps % 20 == 0:  # every 10 ms: finite state and the joint's pose
            if not np.all(np.isfinite(data.qpos)):
                status = "diverged"
                break
            if has_jcs:
                coords = joint_coordinates(data, info)
                max_translation = max(max_translation, float(np.linalg.norm(coords[3:])))
                if data.time >= full_after:
                    times.append(data.time)
                    values.append(measure_value(data, info))
    wall = clock() - start
    simulated = float(data.time)
    times_a, values_a = np.array(times), np.array(values)
    last = values_a[times_a >= times_a[-1] - 0.1 * (times_a[-1] - full_after)] if len(values_a) else values_a
    held = bool(status != "diverged" and np.all(np.isfinite(data.qpos)) and data.ncon > 0
                and max_translation < HELD_TRANSLATION_M)
    return {
        "realtime_factor": simulated / wall_step if wall_step > 0 else float("nan"),
        "loop_factor": simulated / wall if wall > 0 else float("nan"),
        "t_reached": simulated,
        "steps": steps,
        "status": status,
        "load_scale": float(info.loads.scale(simulated).max()) if info.loads.count else 0.0,
        "measure_name": info.measure,
        "measure": float(last.mean()) if len(last) else float("nan"),
        "measure_range": (float(last.min()), float(last.max())) if len(last) else (float("nan"),) * 2,
        "held": held,
        "max_translation_m": max_translation,
        "contacts": int(data.ncon),
        "compile_s": info.compile_s,
        "version": mujoco.__version__,
        "timestep": float(model.opt.timestep),
    }

