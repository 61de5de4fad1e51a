"""A small synthetic joint for laxity tests and examples: a fixed bone and a free bone joined by four
collateral ligament bundles, resting on two spherical 'condyles' against a plane.

The model is mirror-symmetric about the x = 0 plane (x is the flexion axis), so a varus and a
valgus load of equal size give mirrored curves. It builds in microseconds and needs no meshes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.mechanics.loads import PointLoads
from jointmodeller.core.mechanics.system import Bodies, MechanicalSystem
from jointmodeller.core.mechanics.tissues import make_tissue_set
from jointmodeller.core.studies.jcs import JointFrames
from jointmodeller.core.studies.laxity import LaxityProtocol, load_sequence, run_sweep

LIGAMENT_NAMES = ["lateral anterior", "lateral posterior", "medial anterior", "medial posterior"]
LIGAMENT_GROUPS = np.array([0, 0, 1, 1])
"""Group of each ligament: 0 lateral collateral, 1 medial collateral."""


@dataclass
class SphereOnPlane:
    """ForceElement: spheres fixed on ``body_b`` pressing on a plane fixed on ``body_a``.

    centre_B (s, 3) sphere centres in body b's frame, radius (s,) [m]; plane point_A (3,) and unit
    normal_A (3,) (pointing from body a towards body b) in body a's frame; force ``k δ^1.5`` along the
    normal for penetration δ > 0 (Hertz-like, smooth at first touch), frictionless.
    """

    body_a: int
    body_b: int
    centre_B: np.ndarray
    radius: np.ndarray
    point_A: np.ndarray
    normal_A: np.ndarray
    k: float = 2.0e7
    smooth = True  # analytic surfaces: the laxity solver may use tight tolerances

    def accumulate(self, t: float, kin: BodyKinematics, force_G: np.ndarray, torque_G: np.ndarray) -> None:
        n_G = kin.R_GB[self.body_a] @ self.normal_A
        p0_G = kin.p_G[self.body_a] + kin.R_GB[self.body_a] @ self.point_A
        c_G = kin.p_G[self.body_b] + self.centre_B @ kin.R_GB[self.body_b].T
        depth = self.radius - (c_G - p0_G) @ n_G
        mag = self.k * np.clip(depth, 0.0, None) ** 1.5
        f_G = mag[:, None] * n_G[None, :]  # pushes body b away from the plane
        touch_G = c_G - self.radius[:, None] * n_G[None, :]
        force_G[self.body_b] += f_G.sum(axis=0)
        torque_G[self.body_b] += np.cross(touch_G - kin.p_G[self.body_b], f_G).sum(axis=0)
        force_G[self.body_a] -= f_G.sum(axis=0)
        torque_G[self.body_a] -= np.cross(touch_G - kin.p_G[self.body_a], f_G).sum(axis=0)


def two_condyle_joint(stiffness_scale=(1.0, 1.0), slack_scale=(1.0, 1.0), k_N_per_m: float = 2.0e5,
                      k2_N_per_m2: float = 2.0e7, prestrain: float = 0.03, asymmetry: float = 0.0,
                      contact: bool = True) -> tuple[MechanicalSystem, np.ndarray, np.ndarray, JointFrames]:
    """The synthetic joint: (system, p0_G (2, 3), q0_GB (2, 4), joint frames).

    stiffness_scale, slack_scale: factors per ligament group (lateral, medial) on the spring
    coefficients and the rest lengths. ``asymmetry`` moves the lateral attachments outwards by that
    fraction (0 keeps the mirror symmetry). The joint centre is the origin of G; the bones' long axes
    are +z (proximal), the flexion axis is +x.
    """
    bodies = Bodies.make([2.0, 0.6], [[1e-2, 1e-2, 2e-3], [4e-3, 4.2e-3, 3e-4]], fixed=[True, False],
                         names=["upper", "lower"])
    p0 = np.array([[0.0, 0.0, 0.15], [0.0, 0.0, -0.10]])
    side = np.array([1.0, 1.0, -1.0, -1.0])  # +x lateral, -x medial
    front = np.array([1.0, -1.0, 1.0, -1.0])
    widen = np.where(side > 0, 1.0 + asymmetry, 1.0)
    a_G = np.stack([0.020 * side * widen, 0.006 * front, np.full(4, 0.012)], axis=1)
    b_G = np.stack([0.022 * side * widen, -0.006 * front, np.full(4, -0.025)], axis=1)
    length = np.linalg.norm(b_G - a_G, axis=1)
    s_k = np.asarray(stiffness_scale, float)[LIGAMENT_GROUPS]
    s_l = np.asarray(slack_scale, float)[LIGAMENT_GROUPS]
    coeffs = np.stack([k_N_per_m * s_k, np.zeros(4), k2_N_per_m2 * s_k], axis=1)
    tissues = make_tissue_set([0] * 4, [1] * 4, a_G - p0[0], b_G - p0[1], coeffs, np.zeros(4),
                              tension_only=[True] * 4, rest_length=length / (1.0 + prestrain) * s_l,
                              names=LIGAMENT_NAMES)
    extra = []
    if contact:
        centres_G = np.array([[0.015, 0.0, -0.010], [-0.015, 0.0, -0.010]])
        extra.append(SphereOnPlane(0, 1, centres_G - p0[1], np.array([0.010, 0.010]),
                                   np.array([0.0, 0.0, 0.0]) - p0[0], np.array([0.0, 0.0, -1.0])))
    loads = PointLoads.constant(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)))
    system = MechanicalSystem(bodies, tissues, loads, gravity_G=np.zeros(3), extra_elements=extra,
                              length_scale=0.05)
    q0 = np.tile([1.0, 0.0, 0.0, 0.0], (2, 1))
    frames = JointFrames(R_B1A=np.eye(3), o1_B=-p0[0], R_B2A=np.eye(3), o2_B=-p0[1])
    return system, p0, q0, frames


def synthetic_protocol(frames: JointFrames, max_load: float = 100.0, steps: int = 11, unload: bool = False,
                       load_kind: str = "varus_valgus", measure: str = "varus_valgus_deg") -> LaxityProtocol:
    """Varus–valgus sweep of the synthetic joint's lower bone at 0.3 m, two-sided."""
    return LaxityProtocol(0, 1, frames, load_kind, tuple(load_sequence(max_load, steps, unload)), 0.30, measure)


def synthetic_laxity_case(params: dict) -> dict:
    """One case of a parameter study on the synthetic joint (a picklable, module-level function).

    params: {"stiffness_scale": (lat, med), "slack_scale": (lat, med), "steps": int}. Returns laxity
    [deg], the curve and the parameters.
    """
    system, p0, q0, frames = two_condyle_joint(tuple(params.get("stiffness_scale", (1.0, 1.0))),
                                               tuple(params.get("slack_scale", (1.0, 1.0))))
    res = run_sweep(system, synthetic_protocol(frames, steps=int(params.get("steps", 6))), p0, q0)
    return {"params": dict(params), "laxity": res.laxity, "loads": res.loads.tolist(), "values": res.measure.tolist()}
