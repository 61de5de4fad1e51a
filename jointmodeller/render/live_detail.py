"""Coarser bone and cartilage meshes while a live run plays (pyvista, no Qt): the level of detail a
viewer drops to while things move, as VTK's LOD actors do during interaction.

A live frame of the demo is a software-OpenGL render whose scene part grows with the triangles drawn
(the bones and their cartilage at DISPLAY_MAX_FACES each): renders 24 ms against 17 ms with
LIVE_MAX_FACES, 31 ms against 21 ms beside a busy process as the study's (medians, load 2–3 on the
shared 2-core machine; issue 18, ``gui.viewport_fps_live``, docs/benchmarks.md). While a live run
plays, :class:`LiveDetail` gives the bone and cartilage actors meshes decimated to LIVE_MAX_FACES, made
once per display mesh in a background thread (:meth:`LiveDetail.prepare`: a decimation takes
~0.05–0.2 s, and VTK lets go of Python's lock meanwhile, so the GUI thread is not held), with their
point normals. A coarse mesh is given to the actor's mapper directly, and the mapper is connected again
to its pipeline (pyvista's smooth-shading filter over the display mesh) when the run ends: the filter's
output is still up to date then. Putting the coarse mesh at the head of the pipeline instead made the
filter compute the normals of the full meshes again at the end, ~50 ms on the GUI thread for the demo.
The poses, tissues, forces and contact patches drawn are the streamed states' own.
"""

from __future__ import annotations

import threading

import pyvista as pv

from jointmodeller.render.scene_diff import actor_input, set_actor_input

LIVE_MAX_FACES = 4000
"""Triangles per bone or cartilage mesh while a live run plays (the display meshes have up to
render.display_mesh.DISPLAY_MAX_FACES)."""
_MAX_KEPT = 64
"""Coarse meshes kept per process (two per bone of a project; all are dropped past this)."""

_COARSE: dict[str, tuple[object, pv.PolyData]] = {}
"""Address of a display mesh -> (that mesh, its coarse version): made once per display mesh in a process
(the mesh is held so that its address is not reused)."""
_LOCK = threading.Lock()


def _key(mesh) -> str:
    """The VTK object's address: a pipeline hands back its input as a new Python wrapper each time."""
    return str(mesh.__this__)


def coarse_mesh(mesh, max_faces: int = LIVE_MAX_FACES, make: bool = True, source=None):
    """A display mesh (a vtkPolyData of triangles) decimated to at most ``max_faces`` triangles (``mesh``
    itself when it has no more); None when not made yet and ``make`` is off. ``source``: a copy of
    ``mesh`` to decimate instead (another thread then never reads the mesh being drawn)."""
    if mesh.GetNumberOfCells() <= max_faces:
        return mesh
    with _LOCK:
        hit = _COARSE.get(_key(mesh))
    if hit is not None:
        return hit[1]
    if not make:
        return None
    source = mesh if source is None else source
    coarse = pv.wrap(source).decimate(1.0 - max_faces / source.GetNumberOfCells())
    # smooth shading's point normals (as pyvista's filter computes them), made here off the GUI thread
    coarse = coarse.compute_normals(cell_normals=False, point_normals=True, split_vertices=False)
    with _LOCK:
        if len(_COARSE) >= _MAX_KEPT:
            _COARSE.clear()
        _COARSE[_key(mesh)] = (mesh, coarse)
    return coarse


def _copy(mesh) -> pv.PolyData:
    copy = pv.PolyData()
    copy.deep_copy(mesh)
    return copy


class LiveDetail:
    """The level of detail of one :class:`~jointmodeller.render.scene.JointScene`'s bones and cartilage:
    full (the display meshes) or live (coarse meshes, :func:`coarse_mesh`)."""

    def __init__(self, scene):
        self.scene = scene
        self.live = False
        self._swapped: dict[int, tuple] = {}
        """id(actor) -> (actor, full mesh, coarse mesh, the mapper's input connection it had, that
        connection's algorithm: held, as the mapper no longer holds it) while live."""

    def _actors(self) -> list:
        return list(self.scene.mass_actors.values()) + list(self.scene.cartilage_actors.values())

    def _full_meshes(self) -> list:
        """The display meshes of the bone and cartilage actors (what they draw at full detail)."""
        out = []
        for actor in self._actors():
            swapped = self._swapped.get(id(actor))
            mesh = swapped[1] if swapped is not None else actor_input(actor)
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

    def set_live(self, live: bool) -> bool:
        """Draw the bones and cartilage coarse (True; those whose coarse mesh is made) or in full again
        (False). True when an actor's mesh changed (the view needs a redraw)."""
        changed = False
        if not live:
            for actor, _full, coarse, port, _producer in self._swapped.values():
                mapper = actor.GetMapper()
                drawn = actor_input(actor)
                mapper.SetInputConnection(port)  # the pipeline's output as it was: nothing is computed again
                if drawn is not None and _key(drawn) != _key(coarse):  # an edit gave it a new mesh meanwhile
                    set_actor_input(actor, drawn)
                changed = True
            self._swapped.clear()
            self.live = False
            return changed
        self.live = True
        for actor in self._actors():
            if id(actor) in self._swapped:
                continue
            full = actor_input(actor)
            coarse = coarse_mesh(full, make=False) if full is not None else None
            mapper = actor.GetMapper()
            if coarse is not None and _key(coarse) != _key(full) and mapper.GetNumberOfInputConnections(0):
                port = mapper.GetInputConnection(0, 0)
                mapper.SetInputData(coarse)
                self._swapped[id(actor)] = (actor, full, coarse, port, port.GetProducer())
                changed = True
        return changed


__all__ = ["LIVE_MAX_FACES", "LiveDetail", "coarse_mesh"]
