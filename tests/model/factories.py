"""Small valid projects for tests (no file I/O; meshes made procedurally)."""

from __future__ import annotations

import numpy as np
import trimesh

from jointmodeller.model import (
    Attachment,
    ConstraintSpec,
    ContactPair,
    Experiment,
    Force,
    Frame,
    FunctionSpec,
    JointSpec,
    LoadProfile,
    Mass,
    MeasuredPoint,
    MeshData,
    Project,
    ProjectInfo,
    SpringType,
    ViaPoint,
    WrapObject,
)


def box_mesh(extents, source: str) -> MeshData:
    tm = trimesh.creation.box(extents=extents)
    return MeshData(np.asarray(tm.vertices), np.asarray(tm.faces), source=source)


def two_box_project() -> Project:
    """Two 40×40×100 mm boxes stacked along z with one ligament between them and a push (valid)."""
    lower = Mass(name="lower", mesh=box_mesh((0.04, 0.04, 0.1), "lower.stl"), mass_kg=0.3, fixed=True,
                 properties_from_mesh=False, position_G=(0.0, 0.0, 0.0),
                 inertia_L=((3e-4, 0, 0), (0, 3e-4, 0), (0, 0, 1e-4)))
    upper = Mass(name="upper", mesh=box_mesh((0.04, 0.04, 0.1), "upper.stl"), mass_kg=0.3,
                 properties_from_mesh=False, position_G=(0.0, 0.0, 0.11), euler_deg=(0.0, 0.0, 30.0),
                 inertia_L=((3e-4, 0, 0), (0, 3e-4, 0), (0, 0, 1e-4)), colour="#c8b89a")
    spring = SpringType(name="ligament", kx=(2.0e4,))
    att = Attachment(name="MCL", spring="ligament", body_a="lower", body_b="upper",
                     point_a_L=(0.02, 0.0, 0.04), point_b_L=(0.02, 0.0, -0.04))
    load = Force(name="push", body="upper", point_L=(0.0, 0.0, 0.05), direction_G=(1.0, 0.0, 0.0),
                 magnitude_N=5.0)
    return Project(info=ProjectInfo(title="Two boxes"), springs=(spring,), masses=(lower, upper),
                   attachments=(att,), forces=(load,))


def sphere_mesh(radius_m: float = 0.01, subdivisions: int = 2, source: str = "sphere.stl") -> MeshData:
    s = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius_m)
    return MeshData(np.asarray(s.vertices), np.asarray(s.faces), source=source)


def small_project(with_mesh: bool = True) -> Project:
    """Two bones, two tissue types, every section and feature list filled."""
    mesh = sphere_mesh() if with_mesh else None
    box = trimesh.creation.box((0.02, 0.01, 0.03))
    cart = MeshData(np.asarray(box.vertices), np.asarray(box.faces), source="cart.ply",
                    warnings=("open surface",)) if with_mesh else None
    return Project(
        info=ProjectInfo(title="Test joint", description="two bones", author="tester", notes="n",
                         gravity_G=(0.0, -9.81, 0.0)),
        springs=(SpringType("MCL", kx=(2.0e4, 0.0, 3.0e7), cx=5.0, slack_length_m=0.03),
                 SpringType("bushing", kx=(1e3,), ky=(2e3,), kz=(3e3, 1e5), model="bushing",
                            tension_only=False, colour="#112233")),
        masses=(Mass("humerus", mesh=mesh, cartilage=cart, fixed=True, properties_from_mesh=False,
                     mass_kg=0.3),
                Mass("ulna", mesh=mesh, mass_kg=0.2, properties_from_mesh=False, position_G=(0.0, 0.0, -0.05),
                     euler_deg=(10.0, -20.0, 30.0), euler_sequence="ZXY",
                     inertia_L=((2e-4, 1e-6, 0.0), (1e-6, 3e-4, 0.0), (0.0, 0.0, 4e-4))),
                Mass("radius", mass_kg=0.1, properties_from_mesh=False,
                     joint=JointSpec(type="custom", parent="ulna", coordinates=("q",), default_q=(0.1,),
                                     frame_parent=Frame((0.01, 0.0, 0.0), (0.0, 90.0, 0.0)),
                                     functions=(FunctionSpec("linear", (1.0, 0.0), coordinates=("q",)),
                                                FunctionSpec(), FunctionSpec(),
                                                FunctionSpec("spline", (0.0, 0.001, 0.003), x=(0.0, 1.0, 2.0)),
                                                FunctionSpec(), FunctionSpec()))),
                ),
        attachments=(Attachment("MCL anterior", "MCL", "humerus", "ulna", (0.001, 0.002, 0.003),
                                (0.004, 0.005, -0.006), initial_length_m=0.031, wraps=True,
                                via_points=(ViaPoint("humerus", (0.0, 0.01, 0.0), "q", -1.0, 1.0),),
                                wrap_objects=("drum",)),
                     Attachment("bush", "bushing", "ground", "ulna", (0.0, 0.0, 0.0), (0.0, 0.0, 0.01))),
        forces=(Force("varus", "ulna", (0.0, 0.0, -0.3), (1.0, 0.0, 0.0), 100.0,
                      LoadProfile("table", table_time_s=(0.0, 1.0), table_scale=(0.0, 1.0))),
                Force("weight", "ulna", (0.0, 0.0, 0.0), (0.0, 0.0, -1.0), 2.0, LoadProfile("ramp", 0.5))),
        contacts=(ContactPair("elbow", "humerus", "ulna", method="elastic_foundation"),),
        constraints=(ConstraintSpec("couple", "coordinate_coupler", bodies=("ulna", "radius"),
                                    function=FunctionSpec("polynomial", (0.0, 0.5)), coordinates=("q", "q")),),
        experiments=(Experiment("vv30", "humerus", "ulna",
                                measured=(MeasuredPoint(0.0, 0.0), MeasuredPoint(100.0, 3.2, 1))),),
        wrap_objects=(WrapObject("drum", "humerus", "cylinder", Frame((0.0, 0.0, 0.01)), (0.01, 0.05), "+x"),),
    )
