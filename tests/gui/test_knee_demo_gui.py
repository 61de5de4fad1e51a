"""File › New from knee demo shows the knee demo (issue 15 item 9) as a new, unsaved project: its
bones, cartilage and ligaments in the viewport, the drawer experiment in the project."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


def test_file_new_from_knee_demo(qtbot, window, small_project):
    w = window(small_project)
    assert w.act_demo_knee in w.menuBar().actions()[0].menu().actions()
    w.act_demo_knee.trigger()
    p = w.doc.project
    assert p.info.title.startswith("Demo knee") and w.doc.path is None and not w.doc.dirty
    assert [e.load_kind for e in p.experiments] == ["anterior_posterior"]
    scene = w.viewport.scene
    assert {"femur_distal_r", "tibia_proximal_r"} <= set(scene.mass_actors)
    assert {"femur_distal_r", "tibia_proximal_r"} <= set(scene.cartilage_actors)
    assert scene.tissue_poly is not None and scene.tissue_poly.n_points >= 2 * len(p.attachments)
