"""Issue 5 acceptance: the demo elbow settles on its cartilage under its tissues and the 100 N load.

Needs the equilibrium study (core/studies/equilibrium.py) and the demo (app/demo.py, app/build.py).
Known gap (2026-11-21, measured): the equilibrium solver now works on frozen contact sets
(core.mechanics.contact_frozen; exact tangent, regenerated between solves) and settles a ball in a
socket to 1e-8 N (tests/mechanics/test_equilibrium_contact.py), but on the demo the regenerated
contact force itself is discontinuous: the cartilage meshes are closed thin shells, and bed vertices
that sink ~0.7–1.1 mm into them switch their nearest face across the shell's medial axis or through
the facing filter (side walls), so a vertex's depth jumps by up to 0.4 mm, or it pops in and out of
the set at ~1 mm depth, for pose changes of 0.2 mm (≈ K_tot/n·0.8 mm ≈ 45 N per vertex). From the
demo start the solver reaches 80–150 N residual (12–20 N with ContactPair.facing_cos = 0.5, which
drops side walls; not the default because it changes the laxity sweep). The equilibrium needs ~25°
of ulna rotation from the start pose, so the start is not "near the natural pose" either.
"""

from __future__ import annotations

import numpy as np
import pytest

build = pytest.importorskip("jointmodeller.app.build")
demo = pytest.importorskip("jointmodeller.app.demo")
equilibrium = pytest.importorskip("jointmodeller.core.studies.equilibrium")


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="regenerated contact on closed cartilage shells is discontinuous at ~1 mm depth (see module doc)")
def test_demo_elbow_settles_with_penetration_below_a_fifth_of_the_cartilage():
    from jointmodeller.core.mechanics.contact import ContactPair

    built = build.build_mechanical_system(demo.build_demo_project())
    pairs = [e for e in built.system.extra_elements if isinstance(e, ContactPair)]
    assert pairs, "the demo has a cartilage contact pair"
    result = equilibrium.solve_equilibrium(built.system, built.state, max_iterations=12, fallback=False, max_wall_s=60,
                                           force_tol=1e-6)
    kin = result.state.get_kinematics()
    assert result.residual_force_N <= 1e-6
    for pair in pairs:
        res = pair.evaluate(0.0, kin)
        assert res.n_points > 0
        assert res.max_penetration <= 0.2 * pair.thickness
        assert np.linalg.norm(res.total_force_G) > 0
