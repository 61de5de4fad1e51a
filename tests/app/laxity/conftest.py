"""A synthetic two-bone joint as a Project (no meshes), for the app-level laxity tests."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.model.specs import Attachment, Experiment, Mass, Project, ProjectInfo, SpringType


def synthetic_project(lateral_k: float = 2.0e5, medial_k: float = 2.0e5, steps: int = 5,
                      max_load: float = 20.0) -> Project:
    """Fixed 'upper' and free 'lower' bone joined by four crossed linear ligament bundles (two spring
    types, lateral and medial) and a compressed central strut, mirror-symmetric about x = 0; no gravity."""
    upper = Mass("upper", mass_kg=2.0, com_L=(0.0, 0.0, 0.0), inertia_L=((1e-2, 0, 0), (0, 1.1e-2, 0), (0, 0, 2e-3)),
                 properties_from_mesh=False, position_G=(0.0, 0.0, 0.15), fixed=True)
    lower = Mass("lower", mass_kg=0.6, com_L=(0.0, 0.0, 0.0), inertia_L=((4e-3, 0, 0), (0, 4.2e-3, 0), (0, 0, 3e-4)),
                 properties_from_mesh=False, position_G=(0.0, 0.0, -0.10))
    springs = (SpringType("lateral collateral", kx=(lateral_k,), tension_only=False),
               SpringType("medial collateral", kx=(medial_k,), tension_only=False),
               SpringType("strut", kx=(1.0e6,), tension_only=False))
    atts = []
    for side, spring in ((1.0, "lateral collateral"), (-1.0, "medial collateral")):
        for front in (1.0, -1.0):
            a_G = np.array([0.020 * side, 0.006 * front, 0.012])
            b_G = np.array([0.022 * side, -0.006 * front, -0.025])
            atts.append(Attachment(f"{spring} {'anterior' if front > 0 else 'posterior'}", spring, "upper", "lower",
                                   tuple(a_G - [0, 0, 0.15]), tuple(b_G - [0, 0, -0.10])))
    # a central strut in compression stands in for cartilage contact (pre-tensions the ligaments)
    atts.append(Attachment("strut", "strut", "upper", "lower", (0.0, 0.0, -0.15), (0.0, 0.0, 0.09),
                           initial_length_m=0.012))
    # no joint: the JCS needs anatomical axes (flexion about +x, long axes along +z)
    exp = Experiment("vv", "upper", "lower", "varus_valgus", max_load=max_load, lever_m=0.3, steps=steps,
                     flexion_deg=0.0, measure="varus_valgus_deg",
                     axes=(("flexion_axis_fixed", (1.0, 0.0, 0.0)), ("long_axis_fixed", (0.0, 0.0, 1.0))))
    return Project(info=ProjectInfo(title="synthetic joint", gravity_G=(0.0, 0.0, 0.0)), springs=springs,
                   masses=(upper, lower), attachments=tuple(atts), experiments=(exp,))


@pytest.fixture
def project() -> Project:
    return synthetic_project()


@pytest.fixture
def make_project():
    """The synthetic project factory (ligament stiffnesses, steps, max load as keywords)."""
    return synthetic_project
