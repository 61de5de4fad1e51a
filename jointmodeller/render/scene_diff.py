"""An edited project against what the scene shows (pyvista, no Qt), row by row, as napari's layer
events and pyvista's in-place actor updates do: actors are added for new rows and removed with
deleted ones; a row whose drawn properties changed keeps its actors, updated in place (a new mapper
input for a new mesh, axes or arrow shape; the colour); every other actor is left alone, the same
Python object. Poses are not compared here: :meth:`JointScene.set_frame` sets every user matrix.

Rows are matched by name; a row whose name is gone continues as the new row at its place (a rename).
The tissues are one actor (one line cell per tissue, so a live frame moves all their points in one
array): it is added with the first tissue, removed with the last and otherwise updated in place
when the tissues' bodies, points or colours changed (a stiffness edit changes none of them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jointmodeller.model.specs import Mass, Project
from jointmodeller.render.display_mesh import display_mesh
from jointmodeller.render.scene_rows import (
    SceneChanges,
    add_arrow_actor,
    add_axes_actor,
    add_cartilage_actor,
    add_mass_actor,
    arrow_of,
    arrow_poly,
    axes_changed,
    axes_poly_of,
    tissue_arrays,
)

if TYPE_CHECKING:
    from jointmodeller.render.scene import JointScene


def match_rows(old_names: list[str], new_names: list[str]) -> list[int | None]:
    """For each new row, the index of the old row it continues, or None (a new row): the first
    unmatched old row of its name; else, when the old row at its place has a name no new row has,
    that one (the row was renamed)."""
    first: dict[str, int] = {}
    for i, n in enumerate(old_names):
        first.setdefault(n, i)
    taken: set[int] = set()
    out: list[int | None] = []
    for n in new_names:
        i = first.get(n)
        if i is not None and i not in taken:
            taken.add(i)
            out.append(i)
        else:
            out.append(None)
    kept = set(new_names)
    for j, i in enumerate(out):
        if i is None and j < len(old_names) and j not in taken and old_names[j] not in kept:
            taken.add(j)
            out[j] = j
    return out


def set_actor_input(actor, poly) -> None:
    """Give an actor a new dataset in place: at the head of its pipeline (a smooth-shading or
    active-scalars filter pyvista put between the data and the mapper keeps working on it)."""
    consumer = actor.GetMapper()
    while True:
        producer = consumer.GetInputAlgorithm() if consumer.GetNumberOfInputConnections(0) else None
        if producer is None or producer.IsA("vtkTrivialProducer"):
            consumer.SetInputDataObject(0, poly)
            return
        consumer = producer


def actor_input(actor):
    """The dataset at the head of an actor's pipeline (what :func:`set_actor_input` gave it)."""
    consumer = actor.GetMapper()
    while True:
        producer = consumer.GetInputAlgorithm() if consumer.GetNumberOfInputConnections(0) else None
        if producer is None or producer.IsA("vtkTrivialProducer"):
            return consumer.GetInputDataObject(0, 0)
        consumer = producer


def _rename(actors: dict, old: str, new: str, prefix: str) -> None:
    """Move an actor from the key ``old`` to ``new`` (and its name in the renderer)."""
    if old == new or old not in actors:
        return
    actor = actors.pop(old)
    actor.name = f"{prefix}:{new}"
    actors[new] = actor


def _remove(scene: JointScene, actor, changes: SceneChanges) -> None:
    scene.plotter.remove_actor(actor, render=False)
    changes.removed.append(actor)


def _update_bone(scene: JointScene, old: Mass, m: Mass, changes: SceneChanges) -> None:
    """The bone and axes actors of a row that existed before (``old``), updated to ``m``."""
    actor = scene.mass_actors.get(m.name)
    axes = scene.axes_actors.get(m.name)
    if m.mesh is None:
        for a in (actor, axes):
            if a is not None:
                _remove(scene, a, changes)
        scene.mass_actors.pop(m.name, None)
        scene.axes_actors.pop(m.name, None)
        return
    if actor is None:
        _add_bone(scene, m, changes)
        return
    if old.mesh is not m.mesh:
        set_actor_input(actor, display_mesh(m.mesh, scene.display_cache))
        changes.updated.append(actor)
        changes.new_meshes.append(actor)
    elif old.colour != m.colour:
        actor.prop.color = m.colour  # (selection and hover colours are applied after the update)
        changes.updated.append(actor)
    if axes_changed(old, m):
        set_actor_input(axes, axes_poly_of(m))
        changes.updated.append(axes)


def _add_bone(scene: JointScene, m: Mass, changes: SceneChanges) -> None:
    actor = scene.mass_actors[m.name] = add_mass_actor(scene.plotter, m, scene.display_cache)
    axes = scene.axes_actors[m.name] = add_axes_actor(scene.plotter, m, scene.show_axes)
    changes.added += [actor, axes]
    changes.new_meshes.append(actor)


def _update_cartilage(scene: JointScene, old: Mass | None, m: Mass, changes: SceneChanges) -> None:
    actor = scene.cartilage_actors.get(m.name)
    if m.cartilage is None:
        if actor is not None:
            _remove(scene, scene.cartilage_actors.pop(m.name), changes)
    elif actor is None:
        scene.cartilage_actors[m.name] = add_cartilage_actor(scene.plotter, m, scene.display_cache)
        changes.added.append(scene.cartilage_actors[m.name])
        changes.new_meshes.append(scene.cartilage_actors[m.name])
    elif old is None or old.cartilage is not m.cartilage:
        set_actor_input(actor, display_mesh(m.cartilage, scene.display_cache))
        changes.updated.append(actor)
        changes.new_meshes.append(actor)


def _update_masses(scene: JointScene, old_project: Project, project: Project, changes: SceneChanges) -> None:
    old_rows = list(old_project.masses)
    match = match_rows([m.name for m in old_rows], [m.name for m in project.masses])
    continued = {old_rows[i].name for i in match if i is not None}
    for name in [n for n in scene.mass_actors if n not in continued]:  # deleted rows
        _remove(scene, scene.mass_actors.pop(name), changes)
        _remove(scene, scene.axes_actors.pop(name), changes)
    for name in [n for n in scene.cartilage_actors if n not in continued]:
        _remove(scene, scene.cartilage_actors.pop(name), changes)
    renames = [(old_rows[i].name, m.name) for m, i in zip(project.masses, match)
               if i is not None and old_rows[i].name != m.name]
    # two steps, so that swapping two names never overwrites an actor still to be moved
    for pos, (a, _) in enumerate(renames):
        for actors, prefix in ((scene.mass_actors, "mass"), (scene.axes_actors, "axes"),
                               (scene.cartilage_actors, "cartilage")):
            _rename(actors, a, f"\0{pos}", prefix)
    for pos, (_, b) in enumerate(renames):
        for actors, prefix in ((scene.mass_actors, "mass"), (scene.axes_actors, "axes"),
                               (scene.cartilage_actors, "cartilage")):
            _rename(actors, f"\0{pos}", b, prefix)
    for m, i in zip(project.masses, match):
        old = old_rows[i] if i is not None else None
        if old is None:
            if m.mesh is not None:
                _add_bone(scene, m, changes)
        else:
            _update_bone(scene, old, m, changes)
        _update_cartilage(scene, old, m, changes)


def _update_arrows(scene: JointScene, project: Project, changes: SceneChanges) -> None:
    old_names = list(scene.arrow_actors)
    wanted = {}
    for f in project.forces:
        arrow = arrow_of(f, scene.mass_actors)
        if arrow is not None:
            wanted.setdefault(f.name, arrow)
    new_names = list(wanted)
    match = match_rows(old_names, new_names)
    old = scene.arrow_actors
    scene.arrow_actors = {}
    for name, i in zip(new_names, match):
        arrow = wanted[name]
        prev = old.pop(old_names[i]) if i is not None else None
        if prev is None:
            scene.arrow_actors[name] = add_arrow_actor(scene.plotter, name, arrow)
            changes.added.append(arrow.actor)
            continue
        arrow.actor = prev.actor
        arrow.actor.name = f"force:{name}"
        if prev.shape != arrow.shape:
            set_actor_input(arrow.actor, arrow_poly(arrow.shape))
            changes.updated.append(arrow.actor)
        scene.arrow_actors[name] = arrow  # its body and point: placed by set_frame
    for prev in old.values():
        _remove(scene, prev.actor, changes)


def _update_contacts(scene: JointScene, project: Project, changes: SceneChanges) -> None:
    if project.contacts and project.masses and scene.contact_actor is None:
        scene._show_contact_placeholder(project)
        changes.added.append(scene.contact_actor)
    elif not project.contacts and scene.contact_actor is not None:
        _remove(scene, scene.contact_actor, changes)
        scene.contact_actor = scene.contact_poly = None


def update_scene(scene: JointScene, project: Project) -> SceneChanges:
    """Bring the scene's actors from ``scene.project`` to ``project``; what was done."""
    changes = SceneChanges()
    old = scene.project
    assert old is not None
    scene.project = project
    _update_masses(scene, old, project, changes)
    before = scene.tissue_actor
    if scene._set_tissues(tissue_arrays(project)):
        after = scene.tissue_actor
        if before is None and after is not None:
            changes.added.append(after)
        elif before is not None and after is None:
            changes.removed.append(before)
        elif after is not None:
            changes.updated.append(after)
    scene._update_legend()
    _update_arrows(scene, project, changes)
    _update_contacts(scene, project, changes)
    return changes


__all__ = ["actor_input", "match_rows", "set_actor_input", "update_scene"]
