"""bench.gui's figures from the measuring processes' output (the windows themselves are measured by
`jointmodeller bench --only gui`; here their JSON is given): live_sim_rate is the simulated time the
window showed per wall second, beside MuJoCo's rate on the same model, and NaN with the reason when
no frame could be shown."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from jointmodeller.bench import gui as bench_gui
from jointmodeller.bench.harness import Figure

LIVE = {"fps_live": 20.0, "frames": 160, "wall_s": 8.0, "batches": 40, "states_received": 700,
        "distinct_states": 160, "steps_spanned": 150, "sim_span_s": 0.02, "first_frame_s": 1.5,
        "draw_ms_mean": 30.0, "fps_pose_only_unthrottled": 60.0, "fps_rebuild": 10.0, "max_stall_ms": 80.0,
        "stall_at_s": 1.0, "stall_start_ms": 80.0, "stall_live_ms": 50.0, "stall_end_ms": 40.0,
        "idle_max_gap_ms": 12.0, "median_gap_ms": 10.0, "note": "app dynamics study in its own process",
        "platform": "xcb", "error": None}


def _figures(monkeypatch, live: dict, mujoco=(0.5, "MuJoCo 4.0 on the same model")) -> dict[str, Figure]:
    warm = [{"SHOWN": (0.9, 0.8), "VIEW": (3.0, 2.8)}, {"SHOWN": (1.1, 0.9), "VIEW": (2.7, 2.6)}]
    monkeypatch.setattr(bench_gui, "_startup", lambda tmp: (warm, 9.0, [(0.3, 0.2), (0.4, 0.3)]))
    monkeypatch.setattr(bench_gui, "_edit_redraw", lambda env: Figure("edit_redraw_ms", 5.0, "ms", 9.0, "full", True))
    monkeypatch.setattr(bench_gui, "_mujoco_rate", lambda: mujoco)
    monkeypatch.setattr(bench_gui.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout="log\n" + json.dumps(live), stderr=""))
    return {f.name: f for f in bench_gui.run()}


def test_live_sim_rate_is_simulated_time_shown_per_wall_second_beside_mujoco(monkeypatch):
    figs = _figures(monkeypatch, LIVE)
    rate = figs["live_sim_rate"]
    assert rate.value == pytest.approx(0.02 / 8.0)
    assert rate.baseline == 0.5 and "MuJoCo" in rate.baseline_name
    assert not rate.lower_is_better
    assert figs["viewport_fps_live"].value == 20.0  # the other live figures are unchanged


def test_startup_is_the_window_painted_and_startup_view_the_first_3d_frame(monkeypatch):
    """The fastest warm start of each stamp (they need not be the same start), beside the fastest bare
    window; the same figures when no frame could be shown."""
    for live in (LIVE, dict(LIVE, platform="offscreen")):
        figs = _figures(monkeypatch, live)
        assert figs["startup_s"].value == 0.9 and figs["startup_view_s"].value == 2.7
        assert figs["startup_s"].baseline == figs["startup_view_s"].baseline == 0.3


def test_live_sim_rate_without_a_shown_frame_or_mujoco_says_why(monkeypatch):
    figs = _figures(monkeypatch, dict(LIVE, platform="offscreen"), mujoco=(None, "not installed"))
    rate = figs["live_sim_rate"]
    assert math.isnan(rate.value) and rate.baseline is None
    assert "no window" in rate.note
