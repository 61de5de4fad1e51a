"""Reference models used by the tests and benchmarks: random chains and the Delp knee.

The knee (seed 000 §4): the femur is ground, the tibia rotates about the femur's z axis by the knee
angle q and translates in the x–y plane by spline functions of q. Built three ways: a custom
mobilizer (1 coordinate), a planar mobilizer + two coordinate couplers (3 coordinates, 2
constraints), and a plain pin (the normalisation of seed 000 Table 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .constraints import CoordinateCoupler
from .functions import Linear, Polynomial, Spline
from .spatial import transform
from .system import BodySpec, MobilizerSpec, MultibodySystem


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    if np.linalg.det(R) < 0:
        R[:, 0] *= -1
    return R


def random_inertia(rng: np.random.Generator) -> np.ndarray:
    """A physically valid inertia tensor (3, 3) about the COM, randomly oriented."""
    R = random_rotation(rng)
    d = rng.random(3) * 0.2 + 0.05
    d[2] = min(d[2], d[0] + d[1] - 1e-3)
    return R @ np.diag(d) @ R.T


def random_chain(n: int, seed: int = 0, types=("pin",), gravity=(0.0, -9.81, 0.0), params=None):
    """Serial chain of n bodies with random frames, masses and inertias."""
    rng = np.random.default_rng(seed)
    params = params or {"pitch": 0.05, "radii": (0.2, 0.3, 0.4)}
    bodies = []
    for i in range(n):
        typ = types[i % len(types)]
        fns = {}
        prm = dict(params)
        if typ == "custom":  # one coordinate: coupled rotation about two axes and translation
            prm["coordinates"] = 1
            fns = {"theta1": Linear([1.0]), "theta2": Polynomial([0.1, 0.3, -0.1]),
                   "p1": Spline([-3, -1, 0, 1, 3], [0.02, -0.01, 0.0, 0.03, 0.01]),
                   "p2": Polynomial([0.0, 0.05, 0.02])}
        bodies.append(
            BodySpec(
                f"b{i}", 0.5 + rng.random(), rng.normal(size=3) * 0.1, random_inertia(rng),
                MobilizerSpec(
                    typ, i - 1,
                    transform(random_rotation(rng), rng.normal(size=3) * 0.3),
                    transform(random_rotation(rng), rng.normal(size=3) * 0.2), prm, fns,
                ),
            )
        )
    return MultibodySystem(bodies, gravity_G=gravity)


# Delp et al. (1990) knee: tibia translation in the femur frame [m] vs knee angle [rad] — the
# spline points of OpenSim's gait models (flexion negative).
KNEE_X = (
    np.array([-2.0944, -1.74533, -1.39626, -1.0472, -0.698132, -0.349066, -0.174533, 0.197344,
              0.337395, 0.490178, 1.52146, 2.0944]),
    np.array([-0.0032, 0.00179, 0.00411, 0.0041, 0.00212, -0.001, -0.0031, -0.005227, -0.005435,
              -0.005574, -0.005435, -0.00525]),
)
KNEE_Y = (
    np.array([-2.0944, -1.22173, -0.523599, -0.349066, -0.174533, 0.159149, 2.0944]),
    np.array([-0.4226, -0.4082, -0.399, -0.3976, -0.3966, -0.395264, -0.396]),
)
TIBIA: dict[str, Any] = dict(mass=3.7075, com_B=np.array([0.0, -0.1867, 0.0]),
                             inertia_B=np.diag([0.0504, 0.0051, 0.0511]))


def knee_functions():
    return Spline(*KNEE_X), Spline(*KNEE_Y)


def knee_custom(forces=()) -> MultibodySystem:
    fx, fy = knee_functions()
    mob = MobilizerSpec(
        "custom", -1, params={"coordinates": 1, "rotation_axes": np.eye(3)[[2, 0, 1]]},
        functions={"theta1": Linear([1.0]), "p1": fx, "p2": fy},
    )
    return MultibodySystem([BodySpec("tibia", mobilizer=mob, **TIBIA)], forces=forces)


def knee_planar_coupled(forces=()) -> MultibodySystem:
    """Planar tibia (q = [angle, x, y]) with x = fx(angle), y = fy(angle) as couplers."""
    fx, fy = knee_functions()
    mob = MobilizerSpec("planar", -1)
    cons = [CoordinateCoupler(1, [0], fx), CoordinateCoupler(2, [0], fy)]
    return MultibodySystem([BodySpec("tibia", mobilizer=mob, **TIBIA)], constraints=cons, forces=forces)


def knee_pin() -> MultibodySystem:
    mob = MobilizerSpec("pin", -1, X_PF=transform(None, np.array([0.0, -0.4, 0.0])))
    return MultibodySystem([BodySpec("tibia", mobilizer=mob, **TIBIA)])


def knee_planar_state(system: MultibodySystem, angle: float, rate: float = 0.0):
    """Consistent planar-knee state for a knee angle and rate."""
    fx, fy = knee_functions()
    st = system.default_state()
    st.q = np.array([angle, fx(angle)[0], fy(angle)[0]])
    st.u = rate * np.array([1.0, fx.calc(angle, 1)[0], fy.calc(angle, 1)[0]])
    return st
