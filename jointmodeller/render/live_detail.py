"""Coarse bones and cartilage while a live run plays (pyvista, no Qt): the level of detail a viewer
drops to while things move, as VTK's LOD actors do during interaction.

A live frame of the demo is a software-OpenGL render whose scene part grows with the triangles drawn
(the bones and their cartilage at DISPLAY_MAX_FACES each): with LIVE_MAX_FACES the demo's live view
showed 31–35 frames a second against 26–27 (quiet 2-core machine, issue 18, ``gui.viewport_fps_live``,
docs/benchmarks.md). Each bone and cartilage actor gets a *twin*: a second actor drawing its display
mesh decimated to LIVE_MAX_FACES (:func:`~jointmodeller.render.display_mesh.display_mesh`, cached on
disk as the display meshes are), sharing the full actor's property (colour, selection, culling) and
following its pose. While live, a fresh twin is shown and its full actor hidden; otherwise the twins
are hidden. The coarse meshes are made with the display meshes, when the scene is built or edited
(:meth:`LiveDetail.prefetch`: ~50 ms a mesh the first time, a file read of a few ms afterwards), and
the twin actors one at a time when a study starts (:meth:`LiveDetail.make_next`, a few ms each), all on
the caller's thread: no VTK object is touched by two threads, and no decimation runs while a study
starts. A twin whose full actor or mesh changed (an edit) is dropped and its full actor drawn until it
is made again.
"""

from __future__ import annotations

from dataclasses import dataclass

from jointmodeller.render.display_mesh import display_mesh

LIVE_MAX_FACES = 4000
"""Triangles per bone or cartilage mesh while a live run plays (the display meshes have up to
render.display_mesh.DISPLAY_MAX_FACES)."""


@dataclass
class _Twin:
    full: object
    """The actor this twin stands in for."""
    mesh: object
    """The MeshData it was decimated from (identity: an edited row has another)."""
    actor: object


class LiveDetail:
    """The level of detail of one :class:`~jointmodeller.render.scene.JointScene`'s bones and cartilage:
    full (the display meshes) or live (their twins, where made)."""

    def __init__(self, scene):
        self.scene = scene
        self.live = False
        self._twins: dict[tuple[str, str], _Twin] = {}

    # ------------------------------------------------------------------ what is drawn
    def _rows(self) -> dict[tuple[str, str], tuple[object, object]]:
        """(kind, mass name) -> (full actor, MeshData it draws) for every bone and cartilage actor."""
        scene = self.scene
        masses = {m.name: m for m in scene.project.masses} if scene.project is not None else {}
        rows: dict[tuple[str, str], tuple[object, object]] = {}
        for kind, actors in (("mass", scene.mass_actors), ("cartilage", scene.cartilage_actors)):
            for name, actor in actors.items():
                m = masses.get(name)
                mesh = None if m is None else (m.mesh if kind == "mass" else m.cartilage)
                if mesh is not None:
                    rows[(kind, name)] = (actor, mesh)
        return rows

    def pending(self, rows: dict | None = None) -> list[tuple[str, str]]:
        """The actors that would draw fewer triangles with a twin not made yet (``rows``: :meth:`_rows`,
        if the caller has it)."""
        rows = self._rows() if rows is None else rows
        self.drop_stale(rows)
        return [key for key, (_actor, mesh) in rows.items()
                if key not in self._twins and mesh.n_faces > LIVE_MAX_FACES]

    def prefetch(self) -> None:
        """Make (or read from the display cache) the coarse meshes of the actors without a twin, so
        that :meth:`make_next` has only to add actors."""
        rows = self._rows()
        for key in self.pending(rows):
            display_mesh(rows[key][1], self.scene.display_cache, LIVE_MAX_FACES)

    def make_next(self) -> bool:
        """Make one missing twin (shown at once when live); True while others are missing."""
        rows = self._rows()
        todo = self.pending(rows)
        if not todo:
            return False
        key = todo[0]
        full, mesh = rows[key]
        coarse = display_mesh(mesh, self.scene.display_cache, LIVE_MAX_FACES)
        actor = self.scene.plotter.add_mesh(coarse, smooth_shading=True, name=f"live:{key[0]}:{key[1]}",
                                            pickable=key[0] == "mass", render=False)
        actor.SetProperty(full.GetProperty())  # colour, highlight and culling follow the full actor's
        actor.SetUserMatrix(full.GetUserMatrix())
        self._twins[key] = _Twin(full, mesh, actor)
        self._show(self._twins[key])
        return len(todo) > 1

    def _show(self, twin: _Twin) -> None:
        twin.actor.SetVisibility(self.live)
        twin.full.SetVisibility(not self.live)

    def set_live(self, live: bool) -> bool:
        """Draw the twins made so far instead of their full actors (True) or the full actors again
        (False). True when what is drawn changed (the view needs a redraw)."""
        self.drop_stale()
        changed = bool(live) != self.live and bool(self._twins)
        self.live = bool(live)
        for twin in self._twins.values():
            self._show(twin)
        return changed

    def place(self) -> None:
        """Give each twin its full actor's pose (after the scene set the full actors' matrices)."""
        for twin in self._twins.values():
            twin.actor.SetUserMatrix(twin.full.GetUserMatrix())

    def mass_of_actor(self, actor: object) -> str | None:
        """The mass whose bone twin ``actor`` is, or None."""
        for (kind, name), twin in self._twins.items():
            if kind == "mass" and twin.actor is actor:
                return name
        return None

    # ------------------------------------------------------------------ lifetime
    def drop_stale(self, rows: dict | None = None) -> None:
        """Remove the twins whose full actor was replaced or removed or whose row's mesh changed (their
        full actors are drawn again)."""
        rows = self._rows() if rows is None else rows
        for key in [k for k, twin in self._twins.items()
                    if k not in rows or rows[k][0] is not twin.full or rows[k][1] is not twin.mesh]:
            twin = self._twins.pop(key)
            self.scene.plotter.remove_actor(twin.actor, render=False)
            twin.full.SetVisibility(True)

    def clear(self) -> None:
        """Remove every twin (the scene is rebuilt)."""
        for twin in self._twins.values():
            self.scene.plotter.remove_actor(twin.actor, render=False)
            twin.full.SetVisibility(True)
        self._twins.clear()


__all__ = ["LIVE_MAX_FACES", "LiveDetail"]
