"""Same random 10-body chain in OpenSim (Simbody): same accelerations to 1e-9 (skips without it)."""

import os

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from jointmodeller.core.multibody.examples import random_chain

pytestmark = pytest.mark.peers


def _fmt(a):
    return " ".join(f"{v:.17g}" for v in np.ravel(a))


def _offset(name, parent_path, R, p):
    eul = Rotation.from_matrix(R).as_euler("XYZ")  # OpenSim: body-fixed X-Y-Z
    return (f'<PhysicalOffsetFrame name="{name}"><socket_parent>{parent_path}</socket_parent>'
            f"<translation>{_fmt(p)}</translation><orientation>{_fmt(eul)}</orientation></PhysicalOffsetFrame>")


def _osim_chain(system, path):
    tr = system.tree
    bodies, joints = [], []
    for i, b in enumerate(system.bodies):
        I = np.asarray(b.inertia_B)
        bodies.append(f'<Body name="{b.name}"><mass>{b.mass!r}</mass><mass_center>{_fmt(b.com_B)}</mass_center>'
                      f"<inertia>{_fmt([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}</inertia></Body>")
        par = int(tr.parent[i])
        ppath = "/ground" if par < 0 else f"/bodyset/{system.bodies[par].name}"
        joints.append(
            f'<PinJoint name="j{i}"><socket_parent_frame>P{i}</socket_parent_frame>'
            f"<socket_child_frame>M{i}</socket_child_frame><coordinates><Coordinate name=\"q{i}\">"
            f"<range>-100 100</range><clamped>false</clamped></Coordinate></coordinates><frames>"
            + _offset(f"P{i}", ppath, tr.R_PF[i], tr.p_PF[i])
            + _offset(f"M{i}", f"/bodyset/{b.name}", tr.R_BM[i], tr.p_BM[i])
            + "</frames></PinJoint>"
        )
    xml = (f'<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000"><Model name="chain">'
           f"<gravity>{_fmt(tr.gravity)}</gravity><Ground name=\"ground\"/>"
           f'<BodySet name="bodyset"><objects>{"".join(bodies)}</objects></BodySet>'
           f'<JointSet name="jointset"><objects>{"".join(joints)}</objects></JointSet></Model></OpenSimDocument>')
    with open(path, "w") as fh:
        fh.write(xml)


def test_same_accelerations_as_opensim(tmp_path):
    osim = pytest.importorskip("opensim")
    osim.Logger.setLevelString("error")
    system = random_chain(10, seed=42)
    path = os.path.join(tmp_path, "chain.osim")
    _osim_chain(system, path)
    model = osim.Model(path)
    state = model.initSystem()
    rng = np.random.default_rng(4)
    q, u = rng.normal(size=10), rng.normal(size=10)
    cs = model.getCoordinateSet()
    for k in range(10):
        cs.get(k).setValue(state, float(q[k]), False)
        cs.get(k).setSpeedValue(state, float(u[k]))
    model.realizeAcceleration(state)
    ref = np.array([cs.get(k).getAccelerationValue(state) for k in range(10)])
    st = system.default_state()
    st.q, st.u = q, u
    ours = system.forward_dynamics(st)
    assert np.max(np.abs(ref)) > 1.0  # a real, non-trivial motion
    np.testing.assert_allclose(ours, ref, atol=1e-9, rtol=0)
