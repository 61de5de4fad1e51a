"""Issue 5 acceptance: the demo elbow settles on its cartilage under its tissues and the 100 N load.

The contact acts between the articular sheets of the two cartilage layers (core.geometry.articular);
the equilibrium study solves on frozen contact sets regenerated between solves (seed 004 §3.4).
"""

from __future__ import annotations

import numpy as np
import pytest

build = pytest.importorskip("jointmodeller.app.build")
demo = pytest.importorskip("jointmodeller.app.demo")
equilibrium = pytest.importorskip("jointmodeller.core.studies.equilibrium")


@pytest.fixture(scope="module")
def settled():
    built = build.build_mechanical_system(demo.build_demo_project())
    # issue 3 asks 1e-8 N and 1e-9 N·m of the demo's equilibrium, issue 5 1e-6 N: solve to the tighter
    result = equilibrium.solve_equilibrium(built.system, built.state, max_iterations=12, fallback=False, max_wall_s=90,
                                           force_tol=1e-8, moment_tol=1e-9)
    return built, result


@pytest.mark.slow
def test_demo_elbow_settles_with_penetration_below_a_fifth_of_the_cartilage(settled):
    from jointmodeller.core.mechanics.contact import ContactPair

    built, result = settled
    pairs = [e for e in built.system.extra_elements if isinstance(e, ContactPair)]
    assert pairs, "the demo has a cartilage contact pair"
    kin = built.system.kinematics(result.state.y)
    assert result.converged, result.message
    assert result.residual_force_N <= 1e-8 and result.residual_moment_Nm <= 1e-9
    for pair in pairs:
        res = pair.evaluate(0.0, kin)
        assert res.n_points > 0
        assert res.max_penetration <= 0.2 * pair.thickness
        assert np.linalg.norm(res.total_force_G) > 0

