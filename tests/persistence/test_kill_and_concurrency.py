"""The write path under abuse (issue 19, item 3's audit, kept as slow tests): 120 `kill -9`s at
random moments of saves into one project file, after each of which the file opens and holds
exactly a state that was committed — the last one the writer reported, or the one it was saving
when killed — with every run committed before still there; and two processes writing into one
file at the same time, neither losing a save.

Writers are started through a forkserver (a clean process with the persistence stack imported
once), so a kill costs milliseconds, not an interpreter start; the kill moments come from a seeded
generator (reproducible), 0–0.5 s after the writer is ready; the writer does nothing but save, so
most kills land inside a save transaction (the test counts them).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import random
import signal
import sqlite3
import time

import numpy as np
import pytest

from jointmodeller.model.codec import project_to_json
from jointmodeller.model.results import RunRecord
from jointmodeller.persistence import ProjectStore, load_project, save_project
from tests.model.factories import small_project

pytestmark = pytest.mark.slow

KILLS = 120
SEED = 19
STAMP = "2026-01-01T00:00:00+00:00"


def version(i: int):
    """The project as saved in version i (a different size every few versions)."""
    p = small_project()
    info = dataclasses.replace(p.info, title=f"version {i}", notes="n" * (1000 * (i % 7)),
                               created=STAMP, modified=STAMP)
    masses = list(p.masses)
    masses[1] = dataclasses.replace(masses[1], mass_kg=0.2 + 1e-3 * (i % 100))
    return dataclasses.replace(p, info=info, masses=tuple(masses))


def run_of(tag: str, i: int) -> RunRecord:
    return RunRecord(study="dynamics", parameters={"tag": tag, "i": i}, status="completed", message=f"{tag} {i}",
                     series={"time": np.arange(50) * 0.01 * (i + 1), "q": np.full((50, 3), float(i))},
                     labels={"q": ["a", "b", "c"]}, summary={"i": i}, created="2026-01-01T00:00:00+00:00")


def _log(fd: int, text: str) -> None:
    os.write(fd, (text + "\n").encode())  # unbuffered: a SIGKILL cannot lose a line already written


def _killed_writer(path: str, log: str, first: int) -> None:
    """Save versions first, first + 1, ... (and a run every fourth) until killed; log each commit."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with ProjectStore(path) as store:
        _log(fd, "ready")
        i = first
        while True:
            _log(fd, f"s {i}")
            store.save_project(version(i), touch=False)
            _log(fd, f"p {i}")
            if i % 4 == 0:
                _log(fd, f"s {i}")
                store.save_run(run_of("kill", i))
                _log(fd, f"r {i}")
            i += 1


def _json(project) -> str:
    return project_to_json(project)


def _context():
    ctx = multiprocessing.get_context("forkserver")
    try:
        ctx.set_forkserver_preload(["jointmodeller.persistence", "tests.model.factories", __name__])
    except Exception:  # pragma: no cover - the server may already run (then: preloaded or not, it works)
        pass
    return ctx


def test_120_kills_during_saves_leave_the_old_or_the_new_state(tmp_path):
    path = tmp_path / "killed.jmdb"
    save_project(path, version(0), touch=False)
    rng = random.Random(SEED)
    ctx = _context()
    committed_runs: set[int] = set()
    in_save = 0
    last, first = 0, 1
    for k in range(KILLS):
        log = tmp_path / f"log{k}.txt"
        proc = ctx.Process(target=_killed_writer, args=(str(path), str(log), first), daemon=True)
        proc.start()
        deadline = time.monotonic() + 60
        while not (log.exists() and log.read_text().startswith("ready")):
            assert time.monotonic() < deadline and proc.is_alive(), "the writer did not start"
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.5))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        assert proc.exitcode == -signal.SIGKILL
        lines = log.read_text().split()
        saved = [int(n) for tag, n in zip(lines[1::2], lines[2::2]) if tag == "p"]
        runs_logged = {int(n) for tag, n in zip(lines[1::2], lines[2::2]) if tag == "r"}
        in_save += lines[-2] == "s"  # killed between the start and the end of a save
        old = saved[-1] if saved else last
        new = old + 1 if saved else first  # the save in flight when killed
        new_run = old if old % 4 == 0 and old not in runs_logged and saved else None
        # every committed state readable, and either the old or the new one
        project = load_project(path)
        title = project.info.title
        got = int(title.split()[-1])
        assert got in (old, new), f"kill {k}: found {title!r}, expected version {old} or {new}"
        assert _json(project) == _json(version(got)), f"kill {k}: version {got} is not as it was saved"
        with ProjectStore(path) as store:
            stored = {r.parameters["i"]: r.id for r in store.list_runs()}
            committed_runs |= runs_logged
            assert committed_runs <= set(stored), f"kill {k}: runs lost: {sorted(committed_runs - set(stored))}"
            extra = set(stored) - committed_runs
            assert extra <= ({new_run} if new_run is not None else set()), f"kill {k}: unexpected runs {extra}"
            committed_runs |= extra
            if stored:
                newest = store.load_run(stored[max(stored)])
                assert newest == run_of("kill", max(stored))
        with sqlite3.connect(path) as conn:
            assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
        last, first = got, max(new, got) + 1
    with ProjectStore(path) as store:  # at the end every run committed is whole
        for r in store.list_runs():
            assert store.load_run(r.id) == run_of("kill", r.parameters["i"])
    assert len(committed_runs) >= 10
    # most kills land inside a save transaction: the writer does little else (not luck)
    assert in_save >= KILLS // 2, f"only {in_save} of {KILLS} kills landed inside a save"


def _concurrent_writer(path: str, tag: str, n: int, log: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with ProjectStore(path) as store:
        for i in range(n):
            store.save_run(run_of(tag, i))
            _log(fd, f"r {i}")
            if i % 5 == 0:
                store.save_project(dataclasses.replace(version(i), info=dataclasses.replace(
                    version(i).info, title=f"{tag} {i}")), touch=False)
                _log(fd, f"p {i}")


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "shared.jmdb"
    save_project(path, version(0), touch=False)
    ctx = _context()
    n = 60
    procs = [ctx.Process(target=_concurrent_writer, args=(str(path), tag, n, str(tmp_path / f"{tag}.log")))
             for tag in ("A", "B")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
    assert [p.exitcode for p in procs] == [0, 0], "a writer failed (see its stderr)"
    with ProjectStore(path) as store:
        runs = store.list_runs()
        got = sorted((r.parameters["tag"], r.parameters["i"]) for r in runs)
        assert got == sorted((tag, i) for tag in ("A", "B") for i in range(n))
        for r in runs:
            assert store.load_run(r.id) == run_of(r.parameters["tag"], r.parameters["i"])
        project = store.load_project()
    last = max(i for i in range(n) if i % 5 == 0)
    assert project.info.title in (f"A {last}", f"B {last}")  # the later of the two writers' last saves
