"""Muscle tone (Experiment.tissue_tone): a constant tension along a tissue's current path, applied
exactly as the tissue's own force element applies its tension (same path geometry, wrap objects and
the bones they press on)."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.core.mechanics.forces import BodyKinematics, apply_point_forces
from jointmodeller.core.mechanics.tissue_force import _ReindexedProvider, _subset, evaluate_tissues
from jointmodeller.core.spatial_math import quat_to_matrix
from jointmodeller.core.studies.laxity import TissueTone


def test_tone_on_wrapped_paths_acts_as_the_tissue_force_at_that_tension(shared_models):
    path = shared_models / "arm26" / "arm26.osim"
    if not path.is_file():
        pytest.skip("arm26.osim is absent")
    from jointmodeller.app.build import build_mechanical_system
    from jointmodeller.app.osim_import import import_osim

    project, _ = import_osim(path)
    built = build_mechanical_system(project)
    system, ts = built.system, built.system.tissues
    p, q = (np.asarray(a, float) for a in system.positions(built.state))
    z = np.zeros_like(p)
    kin = BodyKinematics(p, quat_to_matrix(q), z, z.copy())
    rows = np.flatnonzero(ts.wrapped)
    assert rows.size >= 4  # triceps and biceps heads over their wrap objects
    checked = 0
    for row in rows:
        own = evaluate_tissues(0.0, kin, _subset(ts, np.array([row])),
                               _ReindexedProvider(system.path_provider, np.array([row])))
        T = float(own.tension[0])
        if T <= 1e-6:
            continue
        f_own, m_own = np.zeros_like(p), np.zeros_like(p)
        apply_point_forces(kin, own.body, own.point_G, own.force_G, f_own, m_own)
        tone = TissueTone()
        tone.bind(ts, system.path_provider, [row], [T])
        f, m = np.zeros_like(p), np.zeros_like(p)
        tone.accumulate(0.0, kin, f, m)
        # the same arithmetic on the same geometry: equal to rounding
        scale = max(np.abs(f_own).max(), 1.0)
        np.testing.assert_allclose(f, f_own, atol=1e-12 * scale)
        np.testing.assert_allclose(m, m_own, atol=1e-12 * scale)
        checked += 1
    assert checked >= 3  # arm26 at its default pose: four wrapped heads in tension
