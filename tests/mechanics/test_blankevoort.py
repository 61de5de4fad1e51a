"""Blankevoort (1991) ligament law as OpenSim defines it: toe to ε_t, then linear, C¹ at ε_t."""

import numpy as np

from jointmodeller.core.mechanics.tissues import blankevoort_force


def test_toe_linear_and_continuity_at_the_transition_strain():
    L0, k, et = 0.03, 2000.0, 0.06
    eps = np.array([-0.01, 0.0, 0.03, et, 0.1, 0.2])
    f = blankevoort_force(eps * L0, np.full(6, L0), np.full(6, k), np.full(6, et))
    expected = [0.0, 0.0, 0.5 * k * 0.03**2 / et, 0.5 * k * et, k * (0.1 - et / 2), k * (0.2 - et / 2)]
    np.testing.assert_allclose(f, expected, rtol=1e-12, atol=1e-12)
    h = 1e-7
    below = blankevoort_force(np.array([(et - h) * L0]), [L0], [k], [et])
    above = blankevoort_force(np.array([(et + h) * L0]), [L0], [k], [et])
    np.testing.assert_allclose((above - below) / (2 * h), k, rtol=1e-5)  # slope k on both sides
