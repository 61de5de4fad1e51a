"""The run panel's time limit (issue 19 item 4): "default" leaves each study its own limit; a value
becomes the study's max_wall_s, and a dynamics run that reaches it ends as failed with its samples."""

from __future__ import annotations

import pytest

from jointmodeller.app.live import study_function
from jointmodeller.gui.run_panel import RunPanel

pytestmark = pytest.mark.gui


def test_time_limit_setting_reaches_the_study(qtbot, small_project):
    panel = RunPanel()
    qtbot.addWidget(panel)
    assert "max_wall_s" not in panel.dynamics_options() and panel.max_wall.text() == "default"
    panel.max_wall.setValue(5.0)
    assert panel.dynamics_options()["max_wall_s"] == 5.0
    panel.study.addItems(["dynamics", "equilibrium", "laxity"])
    panel.study.setCurrentText("laxity")
    assert panel.max_wall.isEnabled() and panel.tolerance.isEnabled() and not panel.digits.isEnabled()
    panel.study.setCurrentText("equilibrium")
    assert panel.max_wall.isEnabled() and panel.tolerance.isEnabled() and not panel.digits.isEnabled()
    panel.study.setCurrentText("dynamics")
    assert not panel.tolerance.isEnabled()


def test_tolerance_setting_reaches_equilibrium_and_laxity(qtbot, small_project, monkeypatch):
    """"default" leaves each study its own tolerance; a choice becomes equilibrium's force_tol and
    laxity's tol_N, and the equilibrium it runs meets it."""
    import jointmodeller.app.laxity as laxity

    panel = RunPanel()
    qtbot.addWidget(panel)
    assert "force_tol" not in panel.dynamics_options() and panel.tolerance.currentText() == "default"
    panel.tolerance.setCurrentIndex(panel.tolerance.findData(1e-4))
    options = panel.dynamics_options()
    assert options["force_tol"] == options["tol_N"] == 1e-4
    seen = {}
    monkeypatch.setattr(laxity, "run_laxity", lambda project, name, **kw: seen.update(kw))
    study_function("laxity", small_project, **options)(lambda *a: None, None)
    assert seen["tol_N"] == 1e-4
    run = study_function("equilibrium", small_project, **options)(lambda *a: None, None)
    assert run.status == "completed" and run.summary["residual_force_N"] <= 1e-4


def test_dynamics_from_the_panel_stops_at_its_time_limit(small_project):
    fn = study_function("dynamics", small_project, t_end=1e4, max_wall_s=0.5, digits=10.0)
    run = fn(lambda *a: None, None)
    assert run.status == "failed" and "wall-time limit of 0.5 s" in run.message
    assert run.parameters["max_wall_s"] == 0.5 and len(run.series["time"]) >= 1


def test_contact_geometry_setting_reaches_dynamics_and_laxity(qtbot, small_project, monkeypatch):
    """The run panel's contact geometry (issue 17): "auto" by default (app.build.resolve_contact_geometry),
    offered for dynamics and laxity only, and the choice reaches both studies (the dynamics run records
    it, and what was asked)."""
    import jointmodeller.app.laxity as laxity

    panel = RunPanel()
    qtbot.addWidget(panel)
    assert panel.dynamics_options()["contact_geometry"] == "auto"
    panel.study.addItems(["dynamics", "equilibrium", "laxity"])
    for study, offered in (("laxity", True), ("equilibrium", False), ("dynamics", True)):
        panel.study.setCurrentText(study)
        assert panel.contact_geometry.isEnabled() == offered, study
    panel.contact_geometry.setCurrentIndex(panel.contact_geometry.findData("field"))
    options = panel.dynamics_options()
    assert options["contact_geometry"] == "field"
    seen = {}
    monkeypatch.setattr(laxity, "run_laxity", lambda project, name, **kw: seen.update(kw))
    study_function("laxity", small_project, **options)(lambda *a: None, None)
    assert seen["contact_geometry"] == "field"
    run = study_function("dynamics", small_project, **{**options, "t_end": 0.01})(lambda *a: None, None)
    assert run.parameters["contact_geometry"] == "field" and run.parameters["contact_geometry_requested"] == "field"
