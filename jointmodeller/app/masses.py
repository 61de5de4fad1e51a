"""Use cases on mass rows: a new mass from an imported mesh, mass properties refreshed from meshes."""

from __future__ import annotations

from dataclasses import replace

from jointmodeller.core.geometry.mass_properties import mesh_mass_properties
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import Mass, Project

DEFAULT_BONE_DENSITY_KG_M3 = 1900.0
"""Whole-bone density used when the user gives none (cortical ~1900–2000 kg/m³)."""


def mass_from_mesh(name: str, mesh: MeshData, *, density_kg_m3: float = DEFAULT_BONE_DENSITY_KG_M3,
                   fixed: bool = False, colour: str = "#e8dcc4") -> Mass:
    """A mass row whose mass, centre of mass and inertia come from the mesh, placed where the mesh
    file puts it (centre of mass at its mesh position, no rotation)."""
    props = mesh_mass_properties(mesh, density_kg_m3)
    com = tuple(float(x) for x in props.com_L)
    inertia = tuple(tuple(float(x) for x in row) for row in props.inertia_L)
    return Mass(name=name, mesh=mesh, density_kg_m3=density_kg_m3, mass_kg=float(props.mass_kg),
                com_L=com, inertia_L=inertia, properties_from_mesh=True, position_G=com,
                fixed=fixed, colour=colour)


def refresh_mass_properties(mass: Mass) -> Mass:
    """Recompute mass, centre of mass and inertia from the mesh when the row asks for it; the
    initial position of the centre of mass moves with the centre of mass."""
    if not mass.properties_from_mesh or mass.mesh is None or mass.density_kg_m3 is None:
        return mass
    props = mesh_mass_properties(mass.mesh, mass.density_kg_m3)
    com = tuple(float(x) for x in props.com_L)
    shift = tuple(p - c for p, c in zip(mass.position_G, mass.com_L))
    return replace(mass, mass_kg=float(props.mass_kg), com_L=com,
                   inertia_L=tuple(tuple(float(x) for x in row) for row in props.inertia_L),
                   position_G=tuple(c + s for c, s in zip(com, shift)))


def add_mass(project: Project, mass: Mass) -> Project:
    """The project with one more mass row (validated by the caller's save)."""
    return replace(project, masses=project.masses + (mass,))
