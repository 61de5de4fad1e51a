"""The lean kernels (lean.py) against the reference kernels (packed/coupled) on random states.

The lean path is what System.forward_dynamics and the compiled DOPRI5 driver of integrate.simulate
run; the reference path is the plainly written ABA that test_dynamics checks against M·u̇ = f.
Equality to 1e-12 (relative to the size of u̇) on random trees of every mobilizer type, reversed
ones included, proves the two compute the same thing.
"""

import numpy as np
import pytest

from jointmodeller.core.multibody.constraints import CoordinateCoupler
from jointmodeller.core.multibody.coupled import coupled_udot_p, pack_couplers
from jointmodeller.core.multibody.examples import (
    knee_custom,
    knee_planar_coupled,
    knee_planar_state,
    random_chain,
    random_inertia,
    random_rotation,
)
from jointmodeller.core.multibody.functions import Constant, Linear, Polynomial, Spline
from jointmodeller.core.multibody.lean import (
    coupled_udot_lean,
    forward_dynamics_lean,
    state_derivative_lean,
)
from jointmodeller.core.multibody.packed import forward_dynamics_p, state_derivative_p
from jointmodeller.core.multibody.spatial import transform
from jointmodeller.core.multibody.system import BodySpec, MobilizerSpec, MultibodySystem

ALL = ("pin", "slider", "screw", "universal", "cylinder", "planar", "ball", "ball_quaternion",
       "ellipsoid", "free", "custom", "weld")


def _close(a, b, tol=1e-12):
    scale = max(1.0, float(np.max(np.abs(b))))
    assert np.max(np.abs(a - b)) <= tol * scale, (np.max(np.abs(a - b)), scale)


def _random_load(system, rng):
    st = system.default_state()
    st.q = system.normalize(st.q + rng.normal(size=system.nq))
    st.u = rng.normal(size=system.nu) * 2.0
    return st, rng.normal(size=system.nu), rng.normal(size=(system.n_bodies, 6))


def _tree(rng, n):
    """Random branching tree (parents drawn among earlier bodies), every mobilizer type, every
    fifth reversed (a custom one among them), custom mobilizers with 1 and 3 coordinates and all
    six functions."""
    bodies = []
    for i in range(n):
        typ = ALL[i % len(ALL)]
        params = {"pitch": 0.07, "radii": (0.2, 0.3, 0.4)}
        fns = {}
        if typ == "custom":
            nc = 1 + 2 * (i // len(ALL))  # 1, then 3 coordinates
            params.update(coordinates=nc, rotation_axes=random_rotation(rng),
                          translation_axes=random_rotation(rng))
            fns = {"theta1": Linear(rng.normal(size=nc)), "theta2": Polynomial([0.1, 0.3, -0.2], arg=nc - 1),
                   "theta3": Spline([-3, -1, 0, 2, 4], rng.normal(size=5) * 0.3),
                   "p1": Spline([-3, -1, 0, 1, 3], rng.normal(size=5) * 0.02, arg=nc - 1),
                   "p2": Polynomial([0.0, 0.05, 0.02]),
                   "p3": Constant(0.01) if nc == 1 else Linear(rng.normal(size=nc) * 0.01, 0.02)}
        parent = -1 if i == 0 else int(rng.integers(-1, i))
        bodies.append(BodySpec(
            f"b{i}", 0.5 + rng.random(), rng.normal(size=3) * 0.1, random_inertia(rng),
            MobilizerSpec(typ, parent, transform(random_rotation(rng), rng.normal(size=3) * 0.3),
                          transform(random_rotation(rng), rng.normal(size=3) * 0.2), params, fns,
                          reversed=bool(i > 0 and i % 5 == 0)),
        ))
    return MultibodySystem(bodies, gravity_G=rng.normal(size=3) * 5)


@pytest.mark.parametrize("seed", range(4))
def test_forward_dynamics_equals_reference_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    system = _tree(rng, 24)
    for _ in range(5):
        st, tau, f = _random_load(system, rng)
        ref = forward_dynamics_p(system._ib, system._fb, st.q, st.u, tau, f)
        _close(forward_dynamics_lean(system._ib, system._fb, st.q, st.u, tau, f), ref)
        _close(state_derivative_lean(system._ib, system._fb, st.q, st.u, tau, f),
               state_derivative_p(system._ib, system._fb, st.q, st.u, tau, f))


@pytest.mark.parametrize("types", [("pin",), ("custom",), ("slider", "screw")])
def test_one_mobility_chains_equal_reference(types):
    """Serial chains of one-mobility joints: the n == 1 branches of the lean passes."""
    rng = np.random.default_rng(7)
    system = random_chain(9, seed=3, types=types, params={"pitch": 0.05, "coordinates": 1})
    for _ in range(5):
        st, tau, f = _random_load(system, rng)
        _close(forward_dynamics_lean(system._ib, system._fb, st.q, st.u, tau, f),
               forward_dynamics_p(system._ib, system._fb, st.q, st.u, tau, f))


def test_knee_models_equal_reference_on_random_states():
    rng = np.random.default_rng(11)
    custom, planar = knee_custom(), knee_planar_coupled()
    cb, (cft, cfa, cfo, cfd) = planar._couplers
    for _ in range(20):
        q, u = rng.uniform(-2.0, 0.5), rng.normal() * 5
        z1, f1 = np.zeros(1), rng.normal(size=(1, 6))
        qc, uc = np.array([q]), np.array([u])
        _close(forward_dynamics_lean(custom._ib, custom._fb, qc, uc, z1, f1),
               forward_dynamics_p(custom._ib, custom._fb, qc, uc, z1, f1))
        st = knee_planar_state(planar, q, u)
        st.q = st.q + rng.normal(size=3) * 1e-3  # off the manifold too: same formula either way
        tau = rng.normal(size=3)
        _close(coupled_udot_lean(planar._ib, planar._fb, cb, cft, cfa, cfo, cfd, st.q, st.u, tau, f1),
               coupled_udot_p(planar._ib, planar._fb, cb, cft, cfa, cfo, cfd, st.q, st.u, tau, f1))


def test_coupled_kernel_handles_multi_argument_and_redundant_couplers():
    """Couplers on a 4-body tree (one reading two coordinates), then the same coupler twice
    (Y singular: the least-squares branch); both equal the reference and keep G u̇ + k = 0."""
    base = random_chain(4, seed=5, types=("pin", "slider", "pin", "cylinder"))
    cons = [CoordinateCoupler(1, [0], Polynomial([0.0, 0.3, 0.1])),
            CoordinateCoupler(3, [0, 2], Linear([0.5, -0.2], 0.1))]
    rng = np.random.default_rng(2)
    for extra in ([], [CoordinateCoupler(1, [0], Polynomial([0.0, 0.3, 0.1]))]):
        system = MultibodySystem(base.bodies, constraints=cons + extra)
        cb, (cft, cfa, cfo, cfd) = pack_couplers(system)
        st, tau, f = _random_load(system, rng)
        lean = coupled_udot_lean(system._ib, system._fb, cb, cft, cfa, cfo, cfd, st.q, st.u, tau, f)
        _close(lean, coupled_udot_p(system._ib, system._fb, cb, cft, cfa, cfo, cfd, st.q, st.u, tau, f))
        from jointmodeller.core.multibody.constraints import constraint_rows

        _, G, k, _ = constraint_rows(system, st)
        assert np.max(np.abs(G @ lean + k)) < 1e-10
