"""OpenSim JAM contact (issue 15 item 3): Smith2018ContactMesh -> the body's cartilage layer, kept apart
from its bone mesh; Smith2018ArticularContactForce -> an elastic-foundation pair with the model's
lumped E, ν and thickness; the missing femoral cartilage file is reported and the rest imported."""

from __future__ import annotations

import numpy as np
import pytest

from jointmodeller.io.meshes import read_mesh
from jointmodeller.io.osim import load_osim
from jointmodeller.model.validation import validate_project


@pytest.fixture(scope="module")
def knee(shared_models, shared_meshes):
    path = shared_models / "lenhart2015" / "lenhart2015.osim"
    if not path.is_file():
        pytest.skip("lenhart2015.osim is absent")
    project, report = load_osim(path, [shared_meshes])
    return project, report, shared_meshes


def test_pairs_with_the_models_material_and_lumped_thickness(knee):
    project, report, _ = knee
    validate_project(project)
    pairs = {c.name: c for c in project.contacts}
    assert set(pairs) == {"tf_contact", "pf_contact"}
    tf, pf = pairs["tf_contact"], pairs["pf_contact"]
    # casting mesh (the spring bed) on body_a, target on body_b
    assert (tf.body_a, tf.body_b) == ("tibia_proximal_r", "femur_distal_r")
    assert (pf.body_a, pf.body_b) == ("patella_r", "femur_distal_r")
    for c in (tf, pf):
        assert c.method == "elastic_foundation"
        assert c.youngs_modulus_Pa == pytest.approx(10.0e6)
        assert c.poisson_ratio == pytest.approx(0.45)
        assert c.cartilage_thickness_m == pytest.approx(0.006)  # 3 + 3 mm, JAM's lumped model
    assert report.counts["contact pairs"] == 2
    # the pairs are no longer listed as "not a tissue"
    assert not [i for i in report.not_imported if i.type == "Smith2018ArticularContactForce"]


def test_cartilage_kept_apart_from_bone(knee):
    project, report, meshes = knee
    tibia = project.mass("tibia_proximal_r")
    cart = read_mesh(meshes / "lenhart2015-R-tibia-cartilage.stl", "m")
    bone = read_mesh(meshes / "lenhart2015-R-tibia-subchondral-bone.stl", "m")
    fibula = read_mesh(meshes / "lenhart2015-R-fibula-bone.stl", "m")
    assert tibia.cartilage is not None and np.array_equal(tibia.cartilage.vertices_L, cart.vertices_L)
    assert np.array_equal(tibia.cartilage.faces, cart.faces)
    # the bone mesh is the bone and the fibula (its other attached geometry), without the cartilage
    assert tibia.mesh.n_vertices == bone.n_vertices + fibula.n_vertices
    assert "cartilage" not in tibia.mesh.source
    patella = project.mass("patella_r")
    assert patella.cartilage is not None and "cartilage" not in patella.mesh.source
    assert patella.mesh.n_vertices == read_mesh(meshes / "lenhart2015-R-patella-bone.stl", "m").n_vertices


def test_missing_femoral_cartilage_reported_and_the_rest_imported(knee):
    project, report, _ = knee
    femur = project.mass("femur_distal_r")
    assert femur.cartilage is None and femur.mesh is not None
    missing = [i for i in report.not_imported if i.component == "femur_cartilage"]
    assert missing and "not found" in missing[0].why
    assert any(i.component == "tf_contact" and "femur_cartilage's mesh is missing" in i.why
               for i in report.approximated)
    assert "femur_cartilage" in report.to_text()


def test_without_meshes_the_pairs_are_still_read(shared_models):
    path = shared_models / "lenhart2015" / "lenhart2015.osim"
    if not path.is_file():
        pytest.skip("lenhart2015.osim is absent")
    project, _ = load_osim(path, load_meshes=False)
    assert {c.name for c in project.contacts} == {"tf_contact", "pf_contact"}
    assert all(m.cartilage is None for m in project.masses)
