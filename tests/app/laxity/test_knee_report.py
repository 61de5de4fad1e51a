"""What a knee drawer's report states: the JCS, the anterior translation at 100 N (the negative load:
e2 points the way flexion moves the tibia, posteriorly), the ACL bundles' tension and the comparison
with Markolf 1978; other joints get the same numbers without knee words."""

from __future__ import annotations

import numpy as np

from jointmodeller.app.laxity_report import MARKOLF_1978_ANTERIOR_MM, drawer_summary, result_to_run
from jointmodeller.core.studies.laxity import LaxityResult
from jointmodeller.model import Experiment


def sweep(names: list[str]) -> LaxityResult:
    loads = np.array([0.0, 50.0, 100.0, -50.0, -100.0])
    coords = np.zeros((5, 6))
    coords[:, 4] = np.array([0.0, 3.0, 6.5, -1.2, -2.4]) / 1000.0  # m along e2
    T = np.zeros((5, len(names)))
    for k, n in enumerate(names):
        T[:, k] = 40.0 if n == "tone" else (np.maximum(-loads, 0.0) * (0.6 if "ACL" in n else 0.1))
    return LaxityResult(loads, coords, coords[:, 4] * 1000.0, "mm", "anterior_posterior_mm", T, names, np.zeros(5),
                        np.ones(5, int), np.ones(5, int), np.zeros(5), np.zeros((5, 3)), np.zeros((5, 4)),
                        np.zeros(6))


def test_a_knee_drawer_reports_anterior_translation_acl_tension_and_markolf():
    exp = Experiment("drawer", "femur_distal_r", "tibia_proximal_r", load_kind="anterior_posterior", max_load=100.0,
                     flexion_deg=25.0, measure="anterior_posterior_mm")
    out = drawer_summary(sweep(["ACLam1", "ACLpl1", "MCL", "tone"]), exp, "knee_flex_r")
    assert np.isclose(out["anterior_mm_at_100N"], 2.4) and np.isclose(out["posterior_mm_at_100N"], 6.5)
    assert out["acl_tension_at_anterior_max_N"] == {"ACLam1": 60.0, "ACLpl1": 60.0}
    assert np.isclose(out["acl_total_at_anterior_max_N"], 120.0)
    assert list(out["tissues_loaded_anterior_N"])[:2] == ["ACLam1", "ACLpl1"]
    assert "tone" not in out["tissues_loaded_anterior_N"]  # a constant tension carries none of the drawer
    m = out["markolf_1978"]
    assert m["anterior_mm_in_vivo_20deg"] == MARKOLF_1978_ANTERIOR_MM
    assert np.isclose(m["model_minus_in_vivo_mm"], 2.4 - MARKOLF_1978_ANTERIOR_MM)
    run = result_to_run(sweep(["ACLam1"]), exp, extra_parameters={"flexion_coordinate": "knee_flex_r"})
    assert "knee_flex_r" in run.summary["jcs"] and "anterior drawer" in run.summary["jcs"]
    assert "markolf_1978" in run.summary


def test_another_joint_gets_the_numbers_without_knee_words():
    exp = Experiment("shift", "humerus", "ulna", load_kind="anterior_posterior", max_load=100.0,
                     measure="anterior_posterior_mm")
    out = drawer_summary(sweep(["lig"]), exp)
    assert set(k for k in out if k.endswith("N") and "mm" in k) == {"along_e2_mm_at_100N", "against_e2_mm_at_100N"}
    assert "markolf_1978" not in out and "acl_tension_at_anterior_max_N" not in out
    vv = Experiment("vv", "humerus", "ulna", load_kind="varus_valgus", max_load=100.0, lever_m=0.3)
    assert drawer_summary(sweep(["lig"]), vv) == {}
