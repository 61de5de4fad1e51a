"""Small synthetic systems with known answers, for tests, benchmarks and as usage examples."""

from __future__ import annotations

import numpy as np

from jointmodeller.core.mechanics.loads import PointLoads
from jointmodeller.core.mechanics.system import Bodies, MechanicalSystem
from jointmodeller.core.mechanics.tissues import AXIAL, BUSHING, make_tissue_set, polynomial_force
from jointmodeller.core.spatial_math import euler_to_quat
from jointmodeller.core.state import State


def no_loads() -> PointLoads:
    return PointLoads.constant(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3)))


def mass_on_spring(
    mass: float = 2.0,
    coeffs=(800.0,),
    damping: float = 0.0,
    rest_length: float = 0.1,
    x0: float = 0.01,
    use_numba: bool | None = None,
) -> tuple[MechanicalSystem, State]:
    """A point-like body on an axial spring along x from a fixed anchor, displaced by x0 [m]."""
    bodies = Bodies.make([1.0, mass], [[1, 1, 1], [1e-3, 1e-3, 1e-3]], fixed=[True, False],
                         names=["anchor", "mass"])
    tissues = make_tissue_set([0], [1], [[0, 0, 0]], [[0, 0, 0]], [list(coeffs)], [damping],
                              tension_only=[False], rest_length=[rest_length], names=["spring"])
    system = MechanicalSystem(bodies, tissues, no_loads(), length_scale=rest_length, use_numba=use_numba)
    q = np.tile([1.0, 0, 0, 0], (2, 1))
    state = system.make_state([[0, 0, 0], [rest_length + x0, 0, 0]], q)
    return system, state


def free_body(inertia=(1.0, 2.0, 3.0), w_B=(0.01, 1.0, 0.01), euler_deg=(0, 90, 0), sequence="ZYX"):
    """One torque-free body, spinning near its intermediate axis from a gimbal-lock orientation."""
    bodies = Bodies.make([1.5], [inertia], names=["tumbler"])
    system = MechanicalSystem(bodies, make_tissue_set([], [], np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 1))),
                              no_loads(), length_scale=0.1)
    q = euler_to_quat(np.radians([euler_deg]), sequence)
    state = system.make_state([[0, 0, 0]], q, [[0.0, 0, 0]], [w_B])
    return system, state


def two_bone_ligaments(
    gravity=(0.0, 0.0, -9.81),
    prestrain: float = 0.04,
    n_ligaments: int = 6,
    tension_only: bool = True,
    coeffs=(2.0e4, 0.0, 5.0e7),
    damping: float = 5.0,
    load_N=(0.0, 0.0, 0.0),
    bushing_k: float = 0.0,
    bushing_preload: bool = False,
    use_numba: bool | None = None,
) -> tuple[MechanicalSystem, State]:
    """A fixed 'humerus' and a free 'ulna' 30 mm below it, held by a ring of pre-strained ligaments.

    The ligaments run from a circle of radius 12 mm on the lower face of the fixed bone to a circle
    of radius 15 mm on the top of the free bone, twisted by 20°, so they resist all six motions.
    ``load_N`` is a force at a point 0.2 m down the free bone; ``bushing_k`` adds a 3-axis spring
    at the gap centre (a joint capsule), unstressed unless ``bushing_preload``: then pre-compressed
    to push the bones apart with the ligaments' initial pull (a crude stand-in for cartilage
    contact; beware, a compressed spring can buckle sideways).
    """
    bodies = Bodies.make([2.0, 0.6], [[1e-2, 1e-2, 2e-3], [4e-3, 4.2e-3, 3e-4]], fixed=[True, False],
                         names=["humerus", "ulna"])
    p_G = np.array([[0.0, 0.0, 0.15], [0.0, 0.0, -0.1]])
    ang = np.linspace(0, 2 * np.pi, n_ligaments, endpoint=False)
    ra = np.stack([0.012 * np.cos(ang), 0.012 * np.sin(ang), np.full_like(ang, -0.135)], axis=1)  # humerus B
    twist = ang + np.radians(20.0)
    rb = np.stack([0.015 * np.cos(twist), 0.015 * np.sin(twist), np.full_like(ang, 0.085)], axis=1)  # ulna B
    L = np.linalg.norm((p_G[1] + rb) - (p_G[0] + ra), axis=1)
    k = np.tile(np.asarray(coeffs, float), (n_ligaments, 1))
    body_a = [0] * n_ligaments
    body_b = [1] * n_ligaments
    r_a, r_b = list(ra), list(rb)
    coeff3 = [np.stack([kk, np.zeros_like(kk), np.zeros_like(kk)]) for kk in k]
    damp = [[damping, 0, 0]] * n_ligaments
    models = [AXIAL] * n_ligaments
    rest = list(L / (1.0 + prestrain))
    tonly = [tension_only] * n_ligaments
    names = [f"ligament {i + 1}" for i in range(n_ligaments)]
    rest_S = [np.zeros(3)] * n_ligaments
    if bushing_k > 0:
        body_a.append(0)
        body_b.append(1)
        r_a.append(np.array([0.0, 0.0, -0.15]))  # the gap centre, 15 mm below the humerus
        r_b.append(np.array([0.0, 0.0, 0.1]))
        coeff3.append(np.tile(np.r_[bushing_k, np.zeros(k.shape[1] - 1)], (3, 1)))
        damp.append([damping] * 3)
        models.append(BUSHING)
        rest.append(0.0)
        tonly.append(False)
        names.append("capsule")
        dz = (p_G[0, 2] + ra[:, 2]) - (p_G[1, 2] + rb[:, 2])  # ligament rise from ulna to humerus end
        pull_z = float(np.sum(polynomial_force(L - L / (1.0 + prestrain), k) * dz / L)) if bushing_preload else 0.0
        rest_S.append((p_G[1] + r_b[-1]) - (p_G[0] + r_a[-1]) - np.array([0.0, 0.0, pull_z / bushing_k]))
    tissues = make_tissue_set(body_a, body_b, np.array(r_a), np.array(r_b), np.array(coeff3), np.array(damp),
                              tension_only=tonly, rest_length=rest, model=models, rest_S=np.array(rest_S),
                              names=names)
    loads = PointLoads.constant([1], [[0.0, 0.0, -0.2]], [load_N], names=["hand load"])
    system = MechanicalSystem(bodies, tissues, loads, gravity_G=gravity, length_scale=0.05, use_numba=use_numba)
    state = system.make_state(p_G, np.tile([1.0, 0, 0, 0], (2, 1)))
    return system, state


def random_tissue_system(n_tissues: int = 20, seed: int = 0, use_numba: bool | None = None):
    """Two free bodies with ``n_tissues`` random tissues (axial and bushing mixed), random state."""
    rng = np.random.default_rng(seed)
    m = n_tissues
    bodies = Bodies.make([1.0, 0.5], [[1e-3, 2e-3, 3e-3], [1e-3, 1e-3, 5e-4]], names=["a", "b"])
    model = np.where(np.arange(m) % 4 == 3, BUSHING, AXIAL)
    tissues = make_tissue_set(
        np.zeros(m, int), np.ones(m, int), rng.normal(size=(m, 3)) * 0.02, rng.normal(size=(m, 3)) * 0.02,
        rng.uniform(0, 1e3, size=(m, 3, 3)) * np.array([1.0, 1e2, 1e4]), rng.uniform(0, 2, (m, 3)),
        rng.uniform(size=m) < 0.5, rng.uniform(0.05, 0.12, m), model=model,
        R_AS=np.tile(np.eye(3), (m, 1, 1)), rest_S=rng.normal(size=(m, 3)) * 0.01,
    )
    system = MechanicalSystem(bodies, tissues, no_loads(), length_scale=0.1, use_numba=use_numba)
    q = rng.normal(size=(2, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    y = system.pack([[0, 0, 0], [0.02, 0.01, 0.1]], q, rng.normal(size=(2, 3)) * 0.1, rng.normal(size=(2, 3)))
    return system, system.state_at(0.0, y)
