"""What the 3D scene shows at one moment (:class:`SceneFrame`) and the camera presets, without
pyvista: the GUI's modules import these to show the main window before the 3D view (and pyvista,
VTK) exist (issue 18, progressive start-up). :mod:`jointmodeller.render.scene` serves them too."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jointmodeller.app.picking import Pose

CAMERA_PRESETS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "anterior": ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    "posterior": ((0.0, -1.0, 0.0), (0.0, 0.0, 1.0)),
    "lateral": ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "medial": ((-1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "superior": ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
    "oblique": ((-0.7, 0.6, 0.35), (0.0, 0.0, 1.0)),  # anteromedial
}
"""Preset -> (direction from the focal point to the camera in G, view-up in G). Convention of the
global frame: x lateral, y anterior, z superior (a right limb in anatomical position)."""


@dataclass
class SceneFrame:
    """One moment to show: poses per mass name, tissue forces (m,) [N] in attachment order, optional
    wrapped paths (one (k_i, 3) array per tissue, in G), contact points (c, 3) in G with pressures (c,)
    (None: keep the patch shown; empty: no contact)."""

    poses: dict[str, Pose] = field(default_factory=dict)
    tissue_force_N: np.ndarray | None = None
    tissue_paths_G: list[np.ndarray] | None = None
    contact_points_G: np.ndarray | None = None
    contact_pressure_Pa: np.ndarray | None = None
    time: float | None = None


__all__ = ["CAMERA_PRESETS", "SceneFrame"]
