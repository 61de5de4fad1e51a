"""Imported muscle paths as a PathProvider for the free-body (MJM) backend: same lengths as the
study, length rate = −(power of unit tension), and the rate is the time derivative of the length."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.osim_import import wrap_ranges
from jointmodeller.core.mechanics.forces import BodyKinematics
from jointmodeller.core.studies.muscle_paths import (
    AnalyticPathProvider,
    build_multibody,
    calc_path,
    mjm_path_specs,
    path_spec,
)
from jointmodeller.model.specs import GROUND


def free_body_view(model, q, u):
    """BodyKinematics of the mobilizer model at (q, u) in free-body form — B frames at the centres
    of mass with the L axes (R_BL = I), ground appended as a fixed body — with the L -> B maps."""
    kin = model.system.kinematics(q, u)
    com_L = np.asarray(model.system.com_B, float)
    n = len(com_L)
    arm = np.einsum("nij,nj->ni", kin.R_GB, com_L)
    p = np.vstack([kin.p_GB + arm, np.zeros(3)])
    R = np.concatenate([kin.R_GB, np.eye(3)[None]])
    v = np.vstack([kin.vo_G + np.cross(kin.w_G, arm), np.zeros(3)])
    w = np.vstack([kin.w_G, np.zeros(3)])
    R_BL = np.tile(np.eye(3), (n + 1, 1, 1))
    com = np.vstack([com_L, np.zeros(3)])
    index = {name: (i if i >= 0 else n) for name, i in model.body.items()}
    index[GROUND] = n
    return BodyKinematics(p, R, v, w), index, R_BL, com


@pytest.mark.parametrize("deg", [0.0, 40.0, 95.0])
def test_provider_length_power_and_rate(arm26, deg):
    project, report = arm26
    model = build_multibody(project)
    k = model.qindex["r_elbow_flex"]
    q = model.q0.copy()
    q[k] = np.radians(deg)
    u = np.zeros(model.system.nu)
    u[model.uindex["r_elbow_flex"]] = 1.3
    u[model.uindex["r_shoulder_elev"]] = -0.4
    bk, index, R_BL, com_L = free_body_view(model, q, u)
    names = [a.name for a in project.attachments]
    specs = mjm_path_specs(project, names, index, R_BL, com_L, wrap_ranges(report))
    assert set(specs) == set(range(6))  # every arm26 muscle has via points or a wrap object
    provider = AnalyticPathProvider(specs)
    rows = np.arange(len(names))
    out = provider.wrapped_paths(0.0, bk, rows)
    geo = out.geometry
    for j, a in enumerate(project.attachments):
        ref = calc_path(model, path_spec(model, a, project.wrap_objects, wrap_ranges(report).get(a.name)), q)
        assert geo.length[j] == pytest.approx(ref.length, abs=1e-12)
    # power of unit tension on the bodies = −(length rate)
    body_a = np.array([index[a.body_a] for a in project.attachments])
    body_b = np.array([index[a.body_b] for a in project.attachments])

    def vel(bodies, x):
        arm = x - bk.p_G[bodies]
        return bk.v_G[bodies] + np.cross(bk.w_G[bodies], arm)

    power = np.einsum("mi,mi->m", geo.dir_a_G, vel(body_a, geo.point_a_G))
    power += np.einsum("mi,mi->m", geo.dir_b_G, vel(body_b, geo.point_b_G))
    np.add.at(power, out.extra_tissue, np.einsum("mi,mi->m", out.extra_dir_G, vel(out.extra_body, out.extra_point_G)))
    assert power == pytest.approx(-geo.length_rate, abs=1e-12)
    # and the rate is dL/dt along q̇ = u (pin coordinates: q̇ = u); OpenSim's single-wrap tangent
    # points are not exactly tangent (BRA near 0°), so the two differ there by ~0.15 mm per radian
    h = 1e-6
    lp = [provider.wrapped_paths(0.0, free_body_view(model, q + h * u, u)[0], rows).geometry.length]
    lm = [provider.wrapped_paths(0.0, free_body_view(model, q - h * u, u)[0], rows).geometry.length]
    assert geo.length_rate == pytest.approx((lp[0] - lm[0]) / (2 * h), abs=3e-4)
