"""Issue 5 acceptance: the demo elbow settles on its cartilage under its tissues and the 100 N load.

Needs the equilibrium study (core/studies/equilibrium.py) and the demo (app/demo.py, app/build.py).
Known gap at the time of writing: Newton from the demo's start pose stalls with the ulna pressed
about 1 mm into the 3 mm cartilage and a ~100 N residual, so the test is marked xfail (not strict):
it reports XPASS as soon as the solver and the contact element together meet the acceptance.
Diagnosis (2026-11-21): at the stall the contact force changes smoothly (~2.6 N for a ±1e-4
Newton step) while the tissue forces reach ~2 kN and jump by several hundred newtons for the same
±1e-4 step, so the merit function is not descending along any Newton direction there.
"""

from __future__ import annotations

import numpy as np
import pytest

build = pytest.importorskip("jointmodeller.app.build")
demo = pytest.importorskip("jointmodeller.app.demo")
equilibrium = pytest.importorskip("jointmodeller.core.studies.equilibrium")


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="Newton stalls at ~100 N residual with ~1 mm penetration (see module doc)")
def test_demo_elbow_settles_with_penetration_below_a_fifth_of_the_cartilage():
    from jointmodeller.core.mechanics.contact import ContactPair

    built = build.build_mechanical_system(demo.build_demo_project())
    pairs = [e for e in built.system.extra_elements if isinstance(e, ContactPair)]
    assert pairs, "the demo has a cartilage contact pair"
    result = equilibrium.solve_equilibrium(built.system, built.state, max_iterations=12, fallback=False,
                                           force_tol=1e-6)
    kin = result.state.get_kinematics()
    assert result.residual_force_N <= 1e-6
    for pair in pairs:
        res = pair.evaluate(0.0, kin)
        assert res.n_points > 0
        assert res.max_penetration <= 0.2 * pair.thickness
        assert np.linalg.norm(res.total_force_G) > 0
