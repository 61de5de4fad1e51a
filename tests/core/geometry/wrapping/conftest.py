"""Procedural meshes with known geodesics, shared by the wrapping tests (built once per session)."""

from __future__ import annotations

import pytest

from jointmodeller.core.geometry.wrapping.obstacles import MeshObstacle
from jointmodeller.core.geometry.wrapping.shapes import grid_cylinder, sphere
from tests.core.geometry.wrapping.wrap_helpers import HEIGHT, RADIUS


@pytest.fixture(scope="session")
def cylinder_50k():
    """Closed cylinder r = 20 mm about z, ~51k vertices, as (trimesh, obstacle on body 0)."""
    mesh = grid_cylinder(RADIUS, HEIGHT, 256, 160)
    return mesh, MeshObstacle(mesh.vertices, mesh.faces, body=0)


@pytest.fixture(scope="session")
def sphere_41k():
    mesh = sphere(RADIUS, subdivisions=6)
    return mesh, MeshObstacle(mesh.vertices, mesh.faces, body=0)

