"""The tree equilibrium's cap on a trial step's motion (``solve_tree_equilibrium(max_move=...)``), as the
contact statics uses it so a step cannot plunge through a frozen contact set: solves that end once
the bone has moved a limit and may try steps up to twice it, restarted where each ended, evaluate no
pose farther than the cap from their start and end at the equilibrium a single uncapped solve finds."""

from __future__ import annotations

import numpy as np

from jointmodeller.app.mobilized import build_mobilized, initial_state, mech_kinematics_at
from jointmodeller.core.state import State
from jointmodeller.core.studies.tree_equilibrium import (
    generalized_forces_at_rest,
    solve_tree_equilibrium,
    tree_linear_model,
)
from tests.app.test_mobilized import two_bone_project

FORCE_TOL, MOMENT_TOL = 1e-9, 1e-11


def test_capped_solves_stay_within_the_cap_and_reach_the_same_equilibrium():
    mp = build_mobilized(two_bone_project())
    system, L = mp.model.system, mp.built.system.length_scale
    lower = mp.model.body["lower"]

    def origin(q):
        return mech_kinematics_at(mp, q).p_G[lower]

    def moved(q0, q1):  # how far the moving bone's origin went
        return float(np.linalg.norm(origin(q1) - origin(q0)))

    state = initial_state(mp)
    free = solve_tree_equilibrium(system, state, length_scale=L, force_tol=FORCE_TOL, moment_tol=MOMENT_TOL,
                                  max_iterations=400)
    assert free.converged
    limit = 2e-4  # [m] below the uncapped solve's steps (0.5–0.8 mm on this model): the cap is used
    reach: list[float] = []
    q = state.q
    for _ in range(400):
        start = origin(q)

        def forces(t, x, start=start):  # every evaluation's distance from its solve's start
            reach.append(float(np.linalg.norm(origin(x) - start)))
            return generalized_forces_at_rest(system, t, x)

        res = solve_tree_equilibrium(system, State(state.t, q, np.zeros(system.nu)), length_scale=L,
                                     force_tol=FORCE_TOL, moment_tol=MOMENT_TOL, forces=forces, move_limit=limit,
                                     moved=moved, max_move=2.0 * limit, max_iterations=400)
        q = res.state.q
        if res.converged:
            break
    assert res.converged
    # the finite-difference columns step 1e-7 model lengths past an accepted pose (inside the cap)
    assert max(reach) <= 2.0 * limit + 10 * 1e-7 * L
    # the same equilibrium: both residuals, through the compliance there, bound the distance
    lin = tree_linear_model(system, free.state, length_scale=L)
    C = float(np.linalg.norm(np.linalg.inv(0.5 * (lin.K + lin.K.T)), 2))
    bound = C * (float(np.linalg.norm(free.residual)) + float(np.linalg.norm(res.residual)))
    assert moved(free.state.q, q) <= 10.0 * bound + 1e-12
