"""The joint coordinate system (Grood & Suntay) of a laxity experiment, from its axes or its joint.

JCS axes of an experiment (``Experiment.axes``, points and directions in each bone's mesh frame L):
``origin_fixed``, ``flexion_axis_fixed``, ``long_axis_fixed`` on the fixed bone; ``origin_moving``,
``long_axis_moving`` on the moving bone. Long axes point proximally. Missing entries default to:
origins = the mid-point of the attachments joining the two bones at the initial pose; moving long
axis = from the moving bone's centre of mass to the joint centre, made perpendicular to the flexion
axis (so varus–valgus starts at zero). Global axes are never assumed: a moving bone without a joint
needs ``flexion_axis_fixed`` and ``long_axis_fixed`` (the experiment is refused, naming them).

Where the moving bone rides a joint (a project with joints), the JCS comes from that joint: the
flexion axis e1 is the axis about which the held flexion coordinate turns the moving bone (times
``Experiment.flexion_sign``); the long axes are the joint's last rotational coordinate's axis (the
axial rotation of a Grood & Suntay sequence such as OpenSim's knee: flexion, ab/adduction,
rotation) in the moving bone and, with the joint's rotations at zero, in the fixed bone; a joint
with fewer rotations (a pin) takes the centre-of-mass lines above.

Signs (one convention for every joint and side): e1 is oriented so that positive α is flexion (the
right-hand rule about e1); e3 (moving long axis) points proximally; e2 = e3 × e1. The experiment's
``flexion_deg`` is positive flexion: on a joint the flexion coordinate is set to
``flexion_sign · flexion_deg`` before the unloaded pose is solved (OpenSim JAM's ``knee_flex_r`` is a
rotation about −z, medial on the right, and grows in flexion: sign +1; gait2392's ``knee_angle_r``
shrinks in flexion: −1); on free bones the JCS flexion is held at ``flexion_deg``. Because flexion
swings the distal bone posteriorly at the knee and anteriorly at the elbow, e2 points posteriorly at
the knee (an anterior drawer is the negative side of an ``anterior_posterior`` sweep) and anteriorly
at the elbow. A mirrored (left) joint has the same e1 and e3 in G as its right twin, so it gives the
mirror image: flexion, anterior–posterior and distraction equal; varus–valgus, internal–external and
medial–lateral with the opposite sign for the mirrored load (tests/app/laxity/test_tree_sweep.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from jointmodeller.core.spatial_math import quat_to_matrix
from jointmodeller.core.studies.jcs import JointFrames, anatomical_frame
from jointmodeller.model.specs import Experiment, Project

if TYPE_CHECKING:
    from jointmodeller.app.laxity import BuiltJoint

AXIS_KEYS = ("origin_fixed", "flexion_axis_fixed", "long_axis_fixed", "origin_moving", "long_axis_moving")


MIN_LONG_AXIS_M = 1e-3
"""A centre-of-mass line shorter than this (a body whose centre of mass sits at the joint, as the
distal femur and proximal tibia of OpenSim JAM's knee) cannot serve as a long axis."""


def joint_frames(project: Project, experiment: Experiment, joint: BuiltJoint,
                 flexion_axis_G: np.ndarray | None = None,
                 long_axes_G: tuple[np.ndarray, np.ndarray] | None = None) -> JointFrames:
    """The experiment's JCS frames on the two bodies (see the module docstring for the defaults).

    flexion_axis_G: the flexion axis when the experiment gives none (on a joint: its flexion
    coordinate's axis); then the fixed bone's long axis defaults to ``long_axes_G[0]`` (from the
    joint) or, like the moving bone's, to the line from the joint centre to its centre of mass
    (pointing proximally). long_axes_G: (fixed, moving) long axes in G from the joint, or None.
    Without flexion_axis_G the experiment must give the fixed bone's flexion and long axes
    (ValueError naming them)."""
    sys_ = joint.system
    names = list(sys_.bodies.names)
    i1, i2 = names.index(experiment.fixed_body), names.index(experiment.moving_body)
    axes = dict(experiment.axes)
    unknown = set(axes) - set(AXIS_KEYS)
    if unknown:
        raise ValueError(f"experiment {experiment.name!r}: unknown axes {sorted(unknown)}; "
                         f"known: {', '.join(AXIS_KEYS)}")
    R = quat_to_matrix(joint.q0_GB)
    p = joint.p0_G
    R_BL, com_L = sys_.bodies.R_BL, sys_.bodies.com_L

    def point_G(body: int, r_L) -> np.ndarray:
        return p[body] + R[body] @ (R_BL[body] @ (np.asarray(r_L, float) - com_L[body]))

    def dir_G(body: int, d_L) -> np.ndarray:
        return R[body] @ (R_BL[body] @ np.asarray(d_L, float))

    ts = sys_.tissues
    between = [(i, a, b) for i, (a, b) in enumerate(zip(ts.body_a, ts.body_b)) if {int(a), int(b)} == {i1, i2}]
    if between:
        ends = [p[int(a)] + R[int(a)] @ ts.r_a_B[i] for i, a, _ in between]
        ends += [p[int(b)] + R[int(b)] @ ts.r_b_B[i] for i, _, b in between]
        centre = np.mean(ends, axis=0)
    else:
        centre = 0.5 * (p[i1] + p[i2])
    if flexion_axis_G is None:
        missing = [k for k in ("flexion_axis_fixed", "long_axis_fixed") if k not in axes]
        if missing:
            raise ValueError(
                f"experiment {experiment.name!r}: the moving body {experiment.moving_body!r} has no joint, so its "
                f"joint coordinate system needs anatomical axes; set {' and '.join(missing)} (directions in "
                f"{experiment.fixed_body!r}'s mesh frame, the flexion axis oriented so that flexion is positive, "
                "the long axis pointing proximally) in the experiment's axes, or give the moving body a joint")
    o1 = point_G(i1, axes["origin_fixed"]) if "origin_fixed" in axes else centre
    o2 = point_G(i2, axes["origin_moving"]) if "origin_moving" in axes else centre
    if "flexion_axis_fixed" in axes:
        I_G = dir_G(i1, axes["flexion_axis_fixed"])
    else:
        I_G = np.asarray(flexion_axis_G, float)

    def across(v: np.ndarray) -> np.ndarray:
        return v - (v @ I_G) / (I_G @ I_G) * I_G

    def com_line(v: np.ndarray, which: str) -> np.ndarray:
        if np.linalg.norm(v) < MIN_LONG_AXIS_M:
            raise ValueError(
                f"experiment {experiment.name!r}: the {which} bone's centre of mass lies at the joint centre, so it "
                f"gives no long axis; set long_axis_{which} in the experiment's axes")
        return v

    if "long_axis_fixed" in axes:
        K_G = dir_G(i1, axes["long_axis_fixed"])
    elif long_axes_G is not None:
        K_G = across(np.asarray(long_axes_G[0], float))
    else:
        K_G = com_line(across(p[i1] - centre), "fixed")
    if "long_axis_moving" in axes:
        k_G = dir_G(i2, axes["long_axis_moving"])
    elif long_axes_G is not None:
        k_G = np.asarray(long_axes_G[1], float)
    else:
        k_G = across(centre - p[i2])
        if np.linalg.norm(k_G) < MIN_LONG_AXIS_M:
            k_G = K_G
    R_GI = anatomical_frame(K_G, I_G)
    R_GM = anatomical_frame(k_G, R_GI[:, 0])
    R_G1, R_G2 = R[i1] , R[i2]
    return JointFrames(R_G1.T @ R_GI, R_G1.T @ (o1 - p[i1]), R_G2.T @ R_GM, R_G2.T @ (o2 - p[i2]))


def joint_long_axes(mp, state_q: np.ndarray, moving: str, coordinates: tuple[str, ...], flexion: str
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """(fixed, moving) long axes in G from the moving body's joint: the axis of its last rotational
    coordinate (of ``coordinates``, its joint's) other than ``flexion`` (Grood & Suntay's axial
    rotation) at ``state_q`` for the moving
    bone, and with the joint's own coordinates at zero for the fixed bone. None when the joint has
    no such coordinate (a pin) or its axis lies along the flexion axis."""
    tree = mp.model.system
    names = [n for n in coordinates if n in mp.model.uindex]
    rot = tree.rotational_u
    others = [n for n in names if n != flexion and rot[mp.model.uindex[n]]]
    if not others:
        return None
    last = others[-1]
    b = mp.model.body[moving]
    k_flex = mp.model.uindex[flexion]
    k_long = mp.model.uindex[last]
    Jw, _ = tree.jacobians(tree.kinematics(state_q))
    k_G, e1 = Jw[b, :, k_long], Jw[b, :, k_flex]
    q_zero = np.array(state_q, float)
    for n in names:
        if n in mp.model.qindex:
            q_zero[mp.model.qindex[n]] = 0.0
    Jw0, _ = tree.jacobians(tree.kinematics(q_zero))
    K_G = Jw0[b, :, k_long]
    for v in (k_G, K_G):
        if np.linalg.norm(np.cross(v, e1)) < 0.5 * np.linalg.norm(v) * np.linalg.norm(e1):
            return None  # within 30° of the flexion axis: not a long axis
    return K_G / np.linalg.norm(K_G), k_G / np.linalg.norm(k_G)


def carried_masses(project: Project, body: str) -> list[str]:
    """``body`` and every mass whose joint chain leads to it (the limb it carries)."""
    parent = {m.name: (m.joint.parent if m.joint is not None else None) for m in project.masses}
    out = []
    for name in parent:
        n: str | None = name
        seen = set()
        while n is not None and n not in seen:
            if n == body:
                out.append(name)
                break
            seen.add(n)
            n = parent.get(n)
    return out


def joint_child_origin_B(joint: BuiltJoint, body: int, spec) -> np.ndarray:
    """The moving body's joint frame origin (its frame_child) in the body frame B."""
    sys_ = joint.system
    r_L = np.zeros(3) if spec is None else np.asarray(spec.frame_child.origin_L, float)
    return sys_.bodies.R_BL[body] @ (r_L - sys_.bodies.com_L[body])
