"""Use cases on mass rows: a new mass from an imported mesh, mass properties refreshed from meshes."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from jointmodeller.core.geometry.mass_properties import mesh_mass_properties
from jointmodeller.model.mesh import MeshData
from jointmodeller.model.specs import Mass, Project, mat3, vec3

DEFAULT_BONE_DENSITY_KG_M3 = 1900.0
"""Whole-bone density used when the user gives none (cortical ~1900–2000 kg/m³)."""


METHOD_TEXT = {
    "closed": "closed surface (exact for the triangulated solid)",
    "capped_holes": "open surface, its holes capped (solid of the capped surface)",
    "convex_hull": "convex hull of the surface (a closed hull: over-estimates a concave bone)",
}
"""How the mass properties of an imported mesh were computed, as the import dialog states it."""
METRE_FILE_EXTENT_M = 0.002
"""A mesh read in millimetres that spans less than this is taken to be a file in metres (no bone is
2 mm long; the Lenhart 2015 meshes are in metres)."""


@dataclass(frozen=True)
class ImportedMass:
    """A mass row made from a mesh, with how its properties were found (``method``: closed,
    capped_holes or convex_hull) and the notes to show the user."""

    mass: Mass
    method: str
    warnings: tuple[str, ...]

    @property
    def method_text(self) -> str:
        return METHOD_TEXT.get(self.method, self.method)


def import_mass(name: str, mesh: MeshData, *, density_kg_m3: float = DEFAULT_BONE_DENSITY_KG_M3,
                fixed: bool = False, colour: str = "#e8dcc4") -> ImportedMass:
    """A mass row whose mass, centre of mass and inertia come from the mesh, placed where the mesh
    file puts it (centre of mass at its mesh position, no rotation). Open (segmented) surfaces get the
    properties of a real solid: capped, or their convex hull (core.geometry.mass_properties)."""
    props = mesh_mass_properties(mesh, density_kg_m3)
    com = vec3(props.com_L)
    inertia = mat3(props.inertia_L)
    mass = Mass(name=name, mesh=mesh, density_kg_m3=density_kg_m3, mass_kg=float(props.mass_kg),
                com_L=com, inertia_L=inertia, properties_from_mesh=True, position_G=com,
                fixed=fixed, colour=colour)
    return ImportedMass(mass, props.method, tuple(props.warnings))


def mass_from_mesh(name: str, mesh: MeshData, *, density_kg_m3: float = DEFAULT_BONE_DENSITY_KG_M3,
                   fixed: bool = False, colour: str = "#e8dcc4") -> Mass:
    """The mass row of :func:`import_mass`."""
    return import_mass(name, mesh, density_kg_m3=density_kg_m3, fixed=fixed, colour=colour).mass


def likely_units(mesh_in_mm: MeshData) -> str:
    """"m" when a mesh read as millimetres is too small to be a bone (its file is in metres), else "mm"."""
    v = np.asarray(mesh_in_mm.vertices_L)
    extent = float(np.ptp(v, axis=0).max()) if len(v) else 0.0
    return "m" if 0.0 < extent < METRE_FILE_EXTENT_M else "mm"


def refresh_mass_properties(mass: Mass) -> Mass:
    """Recompute mass, centre of mass and inertia from the mesh when the row asks for it; the
    initial position of the centre of mass moves with the centre of mass."""
    if not mass.properties_from_mesh or mass.mesh is None or mass.density_kg_m3 is None:
        return mass
    props = mesh_mass_properties(mass.mesh, mass.density_kg_m3)
    com = vec3(props.com_L)
    shift = tuple(p - c for p, c in zip(mass.position_G, mass.com_L))
    return replace(mass, mass_kg=float(props.mass_kg), com_L=com, inertia_L=mat3(props.inertia_L),
                   position_G=vec3(c + s for c, s in zip(com, shift)))


def add_mass(project: Project, mass: Mass) -> Project:
    """The project with one more mass row (validated by the caller's save)."""
    return replace(project, masses=project.masses + (mass,))
