"""Paths over every analytic wrap type (cylinder with a quadrant, sphere, ellipsoid, and two objects
on one path) against OpenSim's own lengths and moment arms, built with the opensim package."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.app.osim_import import wrap_ranges
from jointmodeller.core.studies.muscle_paths import muscle_paths
from jointmodeller.io.osim import load_osim

ANGLES = np.linspace(-1.2, 1.2, 25)
P_GROUND = (-0.12, 0.012, 0.006)
P_ARM = (0.12, 0.004, -0.005)
WRAPS = {  # name: (OpenSim class, quadrant, rotation, translation, dimensions)
    "cyl": ("WrapCylinder", "+y", (0.2, 0.1, 0.0), (0.0, 0.002, 0.0), (0.02, 0.1)),
    "sph": ("WrapSphere", "all", (0.0, 0.0, 0.0), (0.003, -0.002, 0.001), (0.02,)),
    "ell": ("WrapEllipsoid", "-y", (0.3, -0.2, 0.5), (0.0, 0.0, 0.002), (0.03, 0.018, 0.022)),
    "ell2": ("WrapEllipsoid", "all", (0.1, 0.2, -0.3), (-0.235, 0.011, 0.004), (0.03, 0.018, 0.022)),
}
PATHS = {"s_cyl": ["cyl"], "s_sph": ["sph"], "s_ell": ["ell"], "s_two": ["ell2", "cyl"]}
P_START_TWO = (-0.35, 0.015, 0.004)  # s_two starts further out: ell2 wraps its first (fixed) segment
# (Two objects wrapping the same straight segment are left out: OpenSim's bookkeeping of the
# inserted wrap points then gives paths that are not reproduced here.)


def build(path):
    osim = pytest.importorskip("opensim")
    model = osim.Model()
    model.setName("wraps")
    ground = model.getGround()
    arm = osim.Body("arm", 1.0, osim.Vec3(0.06, 0, 0), osim.Inertia(0.001, 0.001, 0.001))
    model.addBody(arm)
    model.addJoint(osim.PinJoint("pin", ground, osim.Vec3(0), osim.Vec3(0), arm, osim.Vec3(0), osim.Vec3(0)))
    objs = {}
    for name, (cls, quadrant, rot, trans, dims) in WRAPS.items():
        w = getattr(osim, cls)()
        w.setName(name)
        w.set_quadrant(quadrant)
        w.set_xyz_body_rotation(osim.Vec3(*rot))
        w.set_translation(osim.Vec3(*trans))
        if cls == "WrapCylinder":
            w.set_radius(dims[0])
            w.set_length(dims[1])
        elif cls == "WrapSphere":
            w.set_radius(dims[0])
        else:
            w.set_dimensions(osim.Vec3(*dims))
        ground.addWrapObject(w)
        objs[name] = w
    for pname, wraps in PATHS.items():
        spring = osim.PathSpring(pname, 0.2, 100.0, 0.0)
        gp = spring.updGeometryPath()
        if pname == "s_two":
            gp.appendNewPathPoint(pname + "_0", ground, osim.Vec3(*P_START_TWO))
        gp.appendNewPathPoint(pname + "_1", ground, osim.Vec3(*P_GROUND))
        gp.appendNewPathPoint(pname + "_2", arm, osim.Vec3(*P_ARM))
        for w in wraps:
            gp.addPathWrap(objs[w])
        model.addForce(spring)
    model.finalizeConnections()
    model.printToXML(str(path))
    state = model.initSystem()
    pin = model.getCoordinateSet().get(0)
    L = np.zeros((len(ANGLES), len(PATHS)))
    MA = np.zeros_like(L)
    for i, q in enumerate(ANGLES):
        pin.setValue(state, float(q))
        model.realizePosition(state)
        for j, pname in enumerate(PATHS):
            gp = osim.PathSpring.safeDownCast(model.getForceSet().get(pname)).getGeometryPath()
            L[i, j] = gp.getLength(state)
            MA[i, j] = gp.computeMomentArm(state, pin)
    return pin.getName(), L, MA


def test_every_wrap_type_matches_opensim(tmp_path):
    path = tmp_path / "wraps.osim"
    coord, L_ref, MA_ref = build(path)
    project, report = load_osim(path, load_meshes=False)
    res = muscle_paths(project, coord, ANGLES, wrap_ranges=wrap_ranges(report))
    order = [res.names.index(p) for p in PATHS]
    assert res.wrapped[:, order].any(axis=0).all() and not res.wrapped[:, order].all()  # on and off
    dL = np.abs(res.length[:, order] - L_ref)
    dMA = np.abs(res.moment_arm[:, order] - MA_ref)
    assert dL.max() < 1e-5, dict(zip(PATHS, dL.max(axis=0)))
    assert dMA.max() < 1e-4, dict(zip(PATHS, dMA.max(axis=0)))
