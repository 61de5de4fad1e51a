"""Open articular sheets in a contact pair: no facing filter needed, same contact as the closed shell."""

from __future__ import annotations

import numpy as np
import trimesh

from jointmodeller.core.geometry.articular import submesh
from jointmodeller.core.mechanics.contact import ContactPair, ContactSurface, is_closed
from jointmodeller.core.mechanics.forces import BodyKinematics


def test_is_closed():
    ball = trimesh.creation.icosphere(3, radius=0.01)
    assert is_closed(ball.faces)
    top = ball.vertices[ball.faces].mean(axis=1)[:, 2] > 0
    v, f = submesh(np.asarray(ball.vertices), np.asarray(ball.faces), top)
    assert not is_closed(f)
    assert ContactSurface.from_mesh(v, f).needs_facing is False


def test_ball_on_the_upper_cap_of_a_ball_matches_the_whole_ball():
    """A small ball pressed on a big ball: contact with the big ball's upper half (an open sheet,
    searched without the facing filter) gives the same points and forces as with the closed ball."""
    big = trimesh.creation.icosphere(4, radius=0.02)
    small = trimesh.creation.icosphere(4, radius=0.008)
    vb, fb = np.asarray(big.vertices), np.asarray(big.faces)
    cap_v, cap_f = submesh(vb, fb, vb[fb].mean(axis=1)[:, 2] > 0.0)
    vs, fs = np.asarray(small.vertices), np.asarray(small.faces)
    p = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.028 - 0.0004]])  # 0.4 mm overlap
    kin = BodyKinematics(p, np.stack([np.eye(3)] * 2), np.zeros((2, 3)), np.zeros((2, 3)))
    results = []
    for v, f in ((vb, fb), (cap_v, cap_f)):
        pair = ContactPair(1, 0, vs, fs, v, f, thickness=0.002, method="mjm", design_load=500.0)
        results.append(pair.evaluate(0.0, kin))
    closed, sheet = results
    assert closed.n_points > 5
    assert sheet.n_points == closed.n_points
    np.testing.assert_allclose(sheet.total_force_G, closed.total_force_G, rtol=1e-9, atol=1e-9)
    assert sheet.total_force_G[2] > 0  # pushes the small ball up
