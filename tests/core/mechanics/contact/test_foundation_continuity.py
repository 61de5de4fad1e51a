"""The elastic foundation's force is continuous in the pose where a spring leaves contact beside an
open sheet's rim (cartilage from segmentation is an open sheet): a bed vertex beyond the rim has its
closest point on the rim edge, the offset nearly in the sheet's plane, and it leaves contact as it
passes that plane. Depth measured along the smooth normal goes to zero there; measured along the
offset (k·distance, the law before) the force dropped by k·distance, and Newton's line searches
stalled on such jumps (the ACL-deficient lenhart2015 drawer at 10 N, stuck at 1 N).

Bound: over a translation Δz each spring's force changes by at most about k_i·Δz (the normal depth
is 1-Lipschitz in the pose and the normal is constant on a plane), so the pair's by Σk_i·Δz over the
springs in contact at either end (×2 for the ones that enter or leave); a spring leaving with
k_i·distance exceeds it by orders of magnitude."""

from __future__ import annotations

import numpy as np
import trimesh

from jointmodeller.core.mechanics.contact import ContactPair
from tests.core.mechanics.contact.helpers import kinematics, plane_mesh

E, NU, H = 10e6, 0.45, 0.002
R1, HALF = 0.02, 0.03


def test_springs_beside_a_sheet_rim_leave_contact_without_a_jump():
    sphere = trimesh.creation.icosphere(4, R1)
    pv, pf = plane_mesh(2 * HALF, 121)  # a 60 mm open square sheet at z = 0, its rim at x = 30 mm
    pair = ContactPair(0, 1, sphere.vertices, sphere.faces, pv, pf, H, E, NU, method="foundation")
    x = HALF + 0.1 * R1  # the sphere's centre beyond the rim: part of it under the sheet, part beside it
    dz = 2e-7
    z = np.sqrt(R1**2 - (x - HALF) ** 2) + 2e-5 - dz * np.arange(2000)  # from just touching at the rim, 0.4 mm down
    Fz, k_touching = [], []
    for zc in z:
        res = pair.evaluate(0.0, kinematics([[x, 0.0, zc], [0.0, 0.0, 0.0]]))
        Fz.append(res.total_force_G)
        k_touching.append(pair.modulus_per_area * float(np.sum(pair.surface_a.area[res.bed_vertex]))
                          if len(res.bed_vertex) else 0.0)
    Fz, k_touching = np.array(Fz), np.array(k_touching)
    step = np.linalg.norm(np.diff(Fz, axis=0), axis=1)
    bound = 2.0 * np.maximum(k_touching[1:], k_touching[:-1]) * dz
    assert np.all(step <= bound), (step / bound).max()
    assert np.linalg.norm(Fz[-1]) > 10 * np.linalg.norm(Fz[0])  # it pressed in
    assert np.abs(Fz[:, :2]).max() <= 1e-9 * np.abs(Fz[:, 2]).max()  # along the sheet's normal only
