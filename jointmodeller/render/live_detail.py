"""Coarser bone meshes while a live run plays (pyvista, no Qt): the level of detail a viewer drops to
while things move, as VTK's LOD actors do during interaction.

A live frame of the demo is a software-OpenGL render whose cost grows with the triangles drawn (the
bones and their cartilage at DISPLAY_MAX_FACES each): 24 ms against 17 ms with LIVE_MAX_FACES, and
31 ms against 21 ms beside a busy process as the study's (medians, load 2–3 on the shared 2-core
machine; issue 18, ``gui.viewport_fps_live``). While a live run plays, :class:`LiveDetail` gives the
bone and cartilage actors meshes decimated to LIVE_MAX_FACES, made once per display mesh in a
background thread (:meth:`LiveDetail.prepare`: a decimation takes ~0.1–0.2 s, and VTK lets go of
Python's lock meanwhile, so the GUI thread is not held). The poses, tissues, forces and contact
patches drawn are the streamed states' own; the full display meshes come back when the run ends.
"""

from __future__ import annotations

import threading

import pyvista as pv

LIVE_MAX_FACES = 4000
"""Triangles per bone or cartilage mesh while a live run plays (the display meshes have up to
render.display_mesh.DISPLAY_MAX_FACES)."""

_COARSE: dict[str, tuple[object, pv.PolyData]] = {}
"""Address of a display mesh -> (that mesh, its coarse version): made once per display mesh in a process
(the mesh is held so that its address is not reused)."""


def _key(mesh) -> str:
    """The VTK object's address: a mapper hands back its input as a new Python wrapper each time."""
    return str(mesh.__this__)


def coarse_mesh(mesh, max_faces: int = LIVE_MAX_FACES, make: bool = True, source=None) -> object | None:
    """A display mesh (a vtkPolyData of triangles) decimated to at most ``max_faces`` triangles (``mesh``
    itself when it has no more); None when not made yet and ``make`` is off. ``source``: a copy of
    ``mesh`` to decimate instead (another thread then never reads the mesh being drawn)."""
    if mesh.GetNumberOfCells() <= max_faces:
        return mesh
    hit = _COARSE.get(_key(mesh))
    if hit is not None:
        return hit[1]
    if not make:
        return None
    source = mesh if source is None else source
    coarse = pv.wrap(source).decimate(1.0 - max_faces / source.GetNumberOfCells())
    if len(_COARSE) > 64:
        _COARSE.clear()
    _COARSE[_key(mesh)] = (mesh, coarse)
    return coarse


def _copy(mesh) -> pv.PolyData:
    copy = pv.PolyData()
    copy.deep_copy(mesh)
    return copy


class LiveDetail:
    """The level of detail of one :class:`~jointmodeller.render.scene.JointScene`'s bones: full (the
    display meshes) or live (coarse meshes, :func:`coarse_mesh`)."""

    def __init__(self, scene):
        self.scene = scene
        self.live = False
        self._swapped: dict[int, tuple[object, object, object]] = {}
        """id(actor) -> (actor, full mesh, coarse mesh) while live."""

    def _actors(self) -> list:
        return list(self.scene.mass_actors.values()) + list(self.scene.cartilage_actors.values())

    def _full_meshes(self) -> list:
        """The display meshes of the bone and cartilage actors (what they draw at full detail)."""
        out = []
        for actor in self._actors():
            swapped = self._swapped.get(id(actor))
            mesh = swapped[1] if swapped is not None else actor.GetMapper().GetInput()
            if mesh is not None:
                out.append(mesh)
        return out

    def prepare(self) -> threading.Thread | None:
        """Make the coarse meshes not made yet in a background thread, from copies taken here (None:
        all are made). :meth:`set_live` uses those made by the time it is called."""
        todo = [(mesh, _copy(mesh)) for mesh in self._full_meshes() if coarse_mesh(mesh, make=False) is None]
        if not todo:
            return None

        def run() -> None:
            for mesh, copy in todo:
                coarse_mesh(mesh, source=copy)

        thread = threading.Thread(target=run, name="jointmodeller-live-detail", daemon=True)
        thread.start()
        return thread

    def set_live(self, live: bool) -> None:
        """Draw the bones coarse (True; those whose coarse mesh is made) or in full again (False)."""
        if not live:
            for actor, full, coarse in self._swapped.values():
                if _key(actor.GetMapper().GetInput()) == _key(coarse):
                    actor.GetMapper().SetInputData(full)
            self._swapped.clear()
            self.live = False
            return
        self.live = True
        for actor in self._actors():
            if id(actor) in self._swapped:
                continue
            full = actor.GetMapper().GetInput()
            coarse = coarse_mesh(full, make=False) if full is not None else None
            if coarse is not None and _key(coarse) != _key(full):
                actor.GetMapper().SetInputData(coarse)
                self._swapped[id(actor)] = (actor, full, coarse)


__all__ = ["LIVE_MAX_FACES", "LiveDetail", "coarse_mesh"]
