"""The spare study process (ProcessStudyRunner.prepare): the next study runs in a process started
before Start was pressed, gives the run a process of its own would, and another spare follows each
run; a retired spare exits unused."""

from __future__ import annotations

import time

import pytest

from jointmodeller.gui.runner import ProcessStudyRunner

pytestmark = pytest.mark.gui


def run_to_end(qtbot, runner: ProcessStudyRunner, study: str, project, options=None, timeout_ms: int = 120_000):
    ended: list = []
    runner.finished.connect(ended.append)
    runner.failed.connect(ended.append)
    runner.start(study, project, options or {})
    qtbot.waitUntil(lambda: bool(ended), timeout=timeout_ms)
    runner.finished.disconnect(ended.append)
    runner.failed.disconnect(ended.append)
    return ended[0]


def exited(process, timeout_s: float = 30.0) -> bool:
    end = time.perf_counter() + timeout_s
    while time.perf_counter() < end:
        if process._popen is not None:
            process.join(timeout=0.1)
            if not process.is_alive():
                return True
        else:
            time.sleep(0.05)
    return False


def test_the_next_study_runs_in_the_spare_and_another_spare_follows(qtbot, small_project):
    runner = ProcessStudyRunner()
    runner.SPARE_AFTER_RUN_MS = 50
    assert runner.spare is None  # none until asked for
    runner.prepare()
    spare = runner.spare
    assert spare is not None and spare.usable()
    on_spare = run_to_end(qtbot, runner, "equilibrium", small_project)  # sent while the spare may still import
    assert not isinstance(on_spare, str), on_spare
    assert on_spare.status == "completed", on_spare.message
    assert runner.process is None and exited(spare.process)  # the spare ran the study, then ended
    qtbot.waitUntil(lambda: runner.spare is not None, timeout=5000)
    assert runner.spare is not spare and runner.spare.usable()
    runner.keep_spare = False  # the same study in a process of its own: the same run
    runner.retire_spare()
    own = run_to_end(qtbot, runner, "equilibrium", small_project)
    assert own.status == "completed", own.message
    assert own.summary["residual_force_N"] == on_spare.summary["residual_force_N"]
    assert own.poses.p_G.tolist() == on_spare.poses.p_G.tolist()


def test_a_retired_spare_exits_unused_and_stop_reaches_a_study_on_a_spare(qtbot, small_project):
    runner = ProcessStudyRunner()
    runner.prepare()
    first = runner.spare
    runner.retire_spare()
    assert runner.spare is None and not runner.keep_spare
    assert exited(first.process)
    runner.prepare()
    runner.start("dynamics", small_project, {"t_end": 1e4, "digits": 10.0})
    runner.stop()  # before the spare may even be up: the study ends at once as stopped
    ended: list = []
    runner.finished.connect(ended.append)
    runner.failed.connect(ended.append)
    qtbot.waitUntil(lambda: bool(ended), timeout=120_000)
    assert not isinstance(ended[0], str), ended[0]
    assert ended[0].status == "stopped", ended[0].message
    runner.retire_spare()
