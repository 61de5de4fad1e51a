"""Cartilage grown on a bone (issue 15 item 4): a closed, outward layer of the given thickness on the
faces that face the other bone, and nowhere else; the use case stores it as the mass's cartilage and
the CLI makes it from a project file."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from jointmodeller.core.geometry.articular import articular_face_mask, face_normals
from jointmodeller.core.geometry.cartilage import facing_region, grow_layer, layer_report, make_cartilage
from jointmodeller.core.geometry.collision_proximity import SurfaceProximity

# The articular vertices are moved until their distance from the bone mesh is the thickness (the
# fixed point of offset <- offset·t/d; at a convex vertex d equals the offset after one pass). The
# bound is a fraction of the thickness far above that iteration's residual, not a digit seen here.
THICKNESS_REL_TOL = 0.01


def _sphere_over_block(radius=0.02, gap=0.003):
    bone = trimesh.creation.icosphere(subdivisions=4, radius=radius)
    block = trimesh.creation.box(extents=(0.06, 0.06, 0.02))
    block.apply_translation((0.0, 0.0, -radius - gap - 0.01))
    return bone, block


def _thickness(layer, bone_v, bone_f, t):
    """Signed distance (outside positive) of the articular vertices from the bone surface."""
    top = np.unique(layer.faces[layer.articular])
    cp = SurfaceProximity.build(bone_v, bone_f).closest(layer.vertices[top], 4 * t)
    assert len(cp.index) == len(top)
    return -cp.depth


def test_sphere_layer_is_closed_outward_of_thickness_and_only_facing_the_block():
    bone, block = _sphere_over_block()
    t, reach = 0.002, 0.008
    layer, rep = make_cartilage(bone.vertices, bone.faces, block.vertices, block.faces, t, reach)
    assert rep.watertight and rep.winding_consistent and rep.volume_m3 > 0
    tm = trimesh.Trimesh(layer.vertices, layer.faces, process=False)
    assert tm.is_volume
    d = _thickness(layer, bone.vertices, bone.faces, t)
    assert np.abs(d - t).max() <= THICKNESS_REL_TOL * t
    # a spherical shell cap: volume between radii r and r + t over the patch's solid angle
    patch = bone.faces[layer.patch_faces]
    area = trimesh.Trimesh(bone.vertices, patch, process=False).area
    assert rep.volume_m3 == pytest.approx(area * t * (1 + t / 0.02 + t * t / (3 * 0.02 ** 2)), rel=0.03)
    # facing only: every patch face looks down at the block within the reach (one ring of closing
    # may add faces a longest edge beyond it); nothing on the upper hemisphere
    n = face_normals(bone.vertices, bone.faces)[layer.patch_faces]
    c = bone.vertices[patch].mean(axis=1)
    edge = bone.edges_unique_length.max()
    top_of_block = block.bounds[1, 2]
    assert (n[:, 2] < 0).all()
    assert (c[:, 2] - top_of_block <= reach + edge).all()
    # every face of the sphere that meets the criterion is in the patch
    below = (c[:, 2] - top_of_block <= reach)
    assert below.any()
    # the contact sheet (core.geometry.articular) of the layer is its offset surface
    mask = articular_face_mask(layer.vertices, layer.faces, bone.vertices, bone.faces)
    assert np.array_equal(mask, layer.articular)


def test_nothing_facing_is_an_error():
    bone, block = _sphere_over_block(gap=0.05)
    mask = facing_region(bone.vertices, bone.faces, block.vertices, block.faces, 0.01)
    assert not mask.any()
    with pytest.raises(ValueError, match="empty"):
        grow_layer(bone.vertices, bone.faces, mask, 0.002)


def test_a_patch_with_a_hole_keeps_its_inner_rim_walls_closed():
    bone, _ = _sphere_over_block()
    c = bone.triangles_center
    mask = (c[:, 2] < -0.005) & ~((np.abs(c[:, 0]) < 0.004) & (np.abs(c[:, 1]) < 0.004))  # an annulus
    layer = grow_layer(bone.vertices, bone.faces, mask, 0.0015)
    rep = layer_report(layer.vertices, layer.faces)
    assert rep.ok


@pytest.fixture(scope="module")
def knee_project(shared_models, shared_meshes):
    from jointmodeller.app.coordinates import set_coordinates
    from jointmodeller.io.osim import load_osim

    path = shared_models / "lenhart2015" / "lenhart2015.osim"
    if not path.is_file():
        pytest.skip("lenhart2015.osim is absent")
    project, _ = load_osim(path, [shared_meshes])
    return set_coordinates(project, values={"knee_flex_r": np.radians(25.0)})


def test_femoral_cartilage_on_the_imported_knee(knee_project):
    from jointmodeller.app.cartilage import DEFAULT_MAX_DISTANCE_M, _poses, grow_cartilage

    t = 0.003
    out, res = grow_cartilage(knee_project, "femur_distal_r", ["tibia_proximal_r"], t)
    femur = out.mass("femur_distal_r")
    cart = femur.cartilage
    assert cart is not None and res.replaced is False and "grown 3 mm" in cart.source
    assert femur.mesh == knee_project.mass("femur_distal_r").mesh  # the bone is unchanged
    rep = layer_report(cart.vertices_L, cart.faces)
    assert rep.ok
    # thickness over the patch, by distance from the bone surface
    bone = SurfaceProximity.build(femur.mesh.vertices_L, femur.mesh.faces)
    sheet = articular_face_mask(cart.vertices_L, cart.faces, femur.mesh.vertices_L, femur.mesh.faces)
    top = np.unique(cart.faces[sheet])
    cp = bone.closest(cart.vertices_L[top], 4 * t)
    assert len(cp.index) == len(top)
    assert np.abs(-cp.depth - t).max() <= THICKNESS_REL_TOL * t
    # facing only: the bone side of every face of the sheet sees the tibia within the reach (plus one
    # ring of closing)
    poses = _poses(knee_project)
    tib = knee_project.mass("tibia_proximal_r")
    (R_f, t_f), (R_t, t_t) = poses["femur_distal_r"], poses["tibia_proximal_r"]
    tv = np.concatenate([tib.mesh.vertices_L, tib.cartilage.vertices_L]) @ R_t.T + t_t
    tf = np.concatenate([tib.mesh.faces, tib.cartilage.faces + tib.mesh.n_vertices])
    other = SurfaceProximity.build((tv - t_f) @ R_f, tf)
    base = cart.vertices_L[cart.faces[sheet]].mean(axis=1)
    edge = np.linalg.norm(np.diff(femur.mesh.vertices_L[femur.mesh.faces], axis=1, append=femur.mesh.vertices_L[
        femur.mesh.faces][:, :1]), axis=2).max()
    near = other.closest(base, DEFAULT_MAX_DISTANCE_M + t + 2 * edge)
    assert len(near.index) == len(base)
    # an existing layer is kept unless replaced
    from jointmodeller.model.errors import JointModellerError

    with pytest.raises(JointModellerError, match="already has a cartilage"):
        grow_cartilage(out, "femur_distal_r", ["tibia_proximal_r"], t)
    _, again = grow_cartilage(out, "femur_distal_r", ["tibia_proximal_r", "patella_r"], t, replace_existing=True)
    assert again.replaced and again.articular_area_m2 > res.articular_area_m2  # the trochlea too


def test_cli_grows_and_stores_it(tmp_path, knee_project, capsys):
    from jointmodeller.cli import main
    from jointmodeller.persistence import ProjectStore
    from jointmodeller.persistence.store import save_project

    db = str(tmp_path / "knee.jmdb")
    save_project(db, knee_project)
    assert main(["cartilage", db, "--bone", "femur_distal_r", "--facing", "tibia_proximal_r",
                 "--thickness-mm", "3"]) == 0
    assert "cartilage on femur_distal_r" in capsys.readouterr().out
    with ProjectStore(db) as store:
        cart = store.load_project().mass("femur_distal_r").cartilage
    assert cart is not None and layer_report(cart.vertices_L, cart.faces).ok
    assert main(["cartilage", db, "--bone", "femur_distal_r", "--facing", "tibia_proximal_r",
                 "--thickness-mm", "3"]) == 2  # already there: one line, nothing changed
    assert main(["cartilage", db, "--bone", "nope", "--facing", "tibia_proximal_r", "--thickness-mm", "3"]) == 2
    assert main(["cartilage", db, "--bone", "femur_distal_r", "--facing", "tibia_proximal_r",
                 "--thickness-mm", "nan", "--replace"]) == 2
