"""A CustomJoint whose translations are SimmSplines of the joint angle imports as a custom mobilizer
and, simulated on the mobilizer backend, follows OpenSim's own trajectory."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicSpline

from jointmodeller.core.state import State
from jointmodeller.core.studies.muscle_paths import build_multibody
from jointmodeller.io.osim import load_osim
from jointmodeller.io.osim_functions import fmm_spline

KNOTS = np.linspace(-1.2, 1.2, 7)
TX = 0.02 * np.sin(KNOTS)
TY = -0.01 * KNOTS ** 2 + 0.002 * KNOTS ** 3
Q0 = 0.6
T_END = 1.0
TIMES = np.linspace(0.0, T_END, 11)
ACCURACY = 1e-10
TRAJ_TOL = 1e-6  # rad: both integrators at 1e-10, SimmSpline resampled to ~1e-9 m


def build_opensim_model(path):
    """A shank on a knee-like CustomJoint: flexion about z, x and y translations SimmSplines of it."""
    osim = pytest.importorskip("opensim")
    model = osim.Model()
    model.setName("spline_knee")
    model.setGravity(osim.Vec3(0, -9.80665, 0))
    body = osim.Body("shank", 3.0, osim.Vec3(0.01, -0.2, 0.0), osim.Inertia(0.04, 0.006, 0.04, 0.001, 0, 0))
    model.addBody(body)
    st = osim.SpatialTransform()
    names = osim.ArrayStr()
    names.append("knee_flex")
    for k, axis in enumerate(((0, 0, 1), (1, 0, 0), (0, 1, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1))):
        st.updTransformAxis(k).setAxis(osim.Vec3(*axis))
    ax = st.updTransformAxis(0)
    ax.setCoordinateNames(names)
    ax.setAxis(osim.Vec3(0, 0, 1))
    ax.set_function(osim.LinearFunction(1.0, 0.0))
    for k, values in ((3, TX), (4, TY)):
        spline = osim.SimmSpline()
        for x, y in zip(KNOTS, values):
            spline.addPoint(float(x), float(y))
        ta = st.updTransformAxis(k)
        ta.setCoordinateNames(names)
        ta.set_function(spline)
    joint = osim.CustomJoint("knee", model.getGround(), osim.Vec3(0, 1.0, 0), osim.Vec3(0, 0, 0.1),
                             body, osim.Vec3(0, 0.02, 0), osim.Vec3(0, 0, 0), st)
    model.addJoint(joint)
    joint.upd_coordinates(0).set_default_value(Q0)
    model.finalizeConnections()
    model.printToXML(str(path))
    return model


def opensim_trajectory(model) -> np.ndarray:
    import opensim as osim

    state = model.initSystem()
    coord = model.getCoordinateSet().get("knee_flex")
    coord.setValue(state, Q0)
    manager = osim.Manager(model)
    manager.setIntegratorAccuracy(ACCURACY)
    manager.initialize(state)
    out = [coord.getValue(state)]
    for t in TIMES[1:]:
        state = manager.integrate(float(t))
        out.append(coord.getValue(state))
    return np.array(out)


def test_simmspline_customjoint_imports_as_custom_and_follows_opensim(tmp_path):
    path = tmp_path / "spline_knee.osim"
    model = build_opensim_model(path)
    project, report = load_osim(path, load_meshes=False)
    joint = project.mass("shank").joint
    assert joint.type == "custom" and joint.coordinates == ("knee_flex",)
    assert [f.kind for f in joint.functions] == ["linear", "constant", "constant", "spline", "spline", "constant"]
    assert any("SimmSpline" in i.type for i in report.approximated)
    # the resampled spline reproduces OpenSim's SimmSpline (as written to the file), also beyond its knots
    import opensim as osim

    reread = osim.Model(str(path))
    reread.finalizeFromProperties()
    written = osim.CustomJoint.safeDownCast(reread.getJointSet().get("knee")).getSpatialTransform()
    xs = np.linspace(-1.5, 1.5, 301)
    for k in (3, 4):
        fn = written.getTransformAxis(k).get_function()
        theirs = np.array([fn.calcValue(osim.Vector(1, float(v))) for v in xs])
        ours = CubicSpline(joint.functions[k].x, joint.functions[k].values, bc_type="natural")(xs)
        assert ours == pytest.approx(theirs, abs=1e-9)

    mb = build_multibody(project)
    assert mb.q0 == pytest.approx([Q0])
    system = mb.system

    def rhs(t, y):
        q, u = y[:1], y[1:]
        return np.concatenate([system.qdot(q, u), system.forward_dynamics(State(t, q, u))])

    sol = solve_ivp(rhs, (0.0, T_END), [Q0, 0.0], method="DOP853", rtol=ACCURACY, atol=ACCURACY,
                    t_eval=TIMES)
    ours = sol.y[0]
    theirs = opensim_trajectory(model)
    assert np.ptp(theirs) > 0.5  # it really swings
    assert np.abs(ours - theirs).max() < TRAJ_TOL


def test_fmm_spline_reproduces_cubics_and_opensim():
    """FMM end conditions make the spline exact for cubic data; and it equals OpenSim's SimmSpline."""
    x = np.array([0.0, 0.3, 0.7, 1.0, 1.6, 2.0])
    y = 1.0 - 2.0 * x + 0.5 * x ** 2 - 0.3 * x ** 3
    xs = np.linspace(0.0, 2.0, 41)
    assert fmm_spline(x, y, xs) == pytest.approx(1.0 - 2.0 * xs + 0.5 * xs ** 2 - 0.3 * xs ** 3, abs=1e-12)
    osim = pytest.importorskip("opensim")
    spline = osim.SimmSpline()
    y2 = np.sin(3 * x)
    for a, b in zip(x, y2):
        spline.addPoint(float(a), float(b))
    xq = np.linspace(-0.5, 2.5, 61)
    theirs = np.array([spline.calcValue(osim.Vector(1, float(v))) for v in xq])
    assert fmm_spline(x, y2, xq) == pytest.approx(theirs, abs=1e-12)
