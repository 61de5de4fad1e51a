"""Issue 19, items 5, 7 and 8: every bad input to the command line is one clear line, exit status 2,
nothing written (no .partial, -wal or -shm left behind); read-only files and folders, missing folders
and a full disk are named as such; `import` over an existing project needs --force and says what
happens to its runs."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from jointmodeller.cli import main
from jointmodeller.model import Project, ProjectInfo, RunRecord
from jointmodeller.model.codec import project_to_data, project_to_json
from jointmodeller.persistence import ProjectStore, load_project, save_project
from tests.model.factories import small_project

REPO = Path(__file__).resolve().parents[1]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: "), err
    return err


def _import_text(tmp_path: Path, text: str, capsys) -> str:
    src = tmp_path / "in.json"
    src.write_text(text, encoding="utf-8")
    assert main(["import", str(src), str(tmp_path / "p.jmdb")]) == 2
    err = _one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.json"], "something was written"
    return err


def _base_json() -> dict:
    return project_to_data(small_project(with_mesh=False))


# ------------------------------------------------------------------------------ item 5: JSON import
def test_json_integer_too_large_for_a_float_is_one_line(tmp_path, capsys):
    text = json.dumps(_base_json()).replace('"mass_kg": 0.3', '"mass_kg": ' + "9" * 400)
    err = _import_text(tmp_path, text, capsys)
    assert "Masses › row 1 › mass_kg: the whole number 99999999999999999999…(400 digits) is too large" in err


def test_json_lone_surrogate_is_one_line_and_leaves_no_partial(tmp_path, capsys):
    text = json.dumps(_base_json()).replace('"title": "Test joint"', '"title": "Test \\ud800 joint"')
    err = _import_text(tmp_path, text, capsys)
    assert "Project › title: holds a lone UTF-16 surrogate '\\ud800'" in err


def test_json_row_nested_100000_deep_is_one_line(tmp_path, capsys):
    text = json.dumps(_base_json()).replace('"notes": "n"', '"notes": ' + "[" * 100_000 + "]" * 100_000)
    assert "nested too deeply" in _import_text(tmp_path, text, capsys)


def test_json_duplicate_key_is_refused_naming_it(tmp_path, capsys):
    """JSON keeps the last of two equal keys: the second "project" emptied the whole project."""
    text = json.dumps(_base_json())[:-1] + ', "project": {}}'
    err = _import_text(tmp_path, text, capsys)
    assert "the key 'project' appears twice" in err
    row = json.dumps(_base_json()).replace('"mass_kg": 0.3', '"mass_kg": 0.3, "mass_kg": 30.0')
    assert "the key 'mass_kg' appears twice" in _import_text(tmp_path, row, capsys)


def test_json_mass_row_without_mass_kg_is_refused(tmp_path, capsys):
    """It silently got the dataclass's placeholder of 1 kg."""
    data = _base_json()
    del data["project"]["masses"][1]["mass_kg"]
    err = _import_text(tmp_path, json.dumps(data), capsys)
    assert "Masses › row 2 › mass_kg: is missing" in err
    data = _base_json()
    del data["project"]["springs"][0]["kx"]
    assert "Springs › row 1 › kx: is missing" in _import_text(tmp_path, json.dumps(data), capsys)


def test_json_field_with_a_neutral_default_may_be_left_out(tmp_path):
    """Older exports lack fields added since: those still take their defaults; and export → import →
    export stays identical."""
    data = _base_json()
    del data["project"]["masses"][1]["colour"]
    del data["project"]["experiments"][0]["flexion_coordinate"]
    src = tmp_path / "old.json"
    src.write_text(json.dumps(data))
    assert main(["import", str(src), str(tmp_path / "p.jmdb")]) == 0
    assert load_project(tmp_path / "p.jmdb").mass("ulna").colour == "#e8dcc4"
    assert main(["export", str(tmp_path / "p.jmdb"), "--json", str(tmp_path / "a.json")]) == 0
    assert main(["import", str(tmp_path / "a.json"), str(tmp_path / "q.jmdb")]) == 0
    assert main(["export", str(tmp_path / "q.jmdb"), "--json", str(tmp_path / "b.json")]) == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()


# ------------------------------------------------------------------------------ item 5: laxity CLI
@pytest.fixture
def laxity_project(tmp_path, monkeypatch) -> Path:
    """A project with an experiment; the sweep itself must never start in these tests."""
    import jointmodeller.app.laxity_command as command

    def no_sweep(*_a, **_k):
        raise AssertionError("the sweep started before the input was checked")

    monkeypatch.setattr(command, "run_laxity", no_sweep)
    monkeypatch.setattr(command, "build_joint", no_sweep)
    path = tmp_path / "lax.jmdb"
    save_project(path, small_project(with_mesh=False))
    return path


def test_laxity_data_that_is_a_folder_is_one_line(laxity_project, tmp_path, capsys):
    (tmp_path / "data").mkdir()
    assert main(["laxity", str(laxity_project), "--data", str(tmp_path / "data"), "--out", str(tmp_path / "o")]) == 2
    assert "is a folder, not a CSV file" in _one_line_error(capsys)
    assert not (tmp_path / "o").exists()


def test_laxity_out_that_is_a_file_is_refused_before_the_sweep(laxity_project, tmp_path, capsys):
    (tmp_path / "out").write_text("keep me")
    assert main(["laxity", str(laxity_project), "--out", str(tmp_path / "out")]) == 2
    assert "exists and is not a folder" in _one_line_error(capsys)
    assert main(["laxity", str(laxity_project), "--out", str(tmp_path / "out" / "sub")]) == 2
    assert "is not a folder" in _one_line_error(capsys)
    assert (tmp_path / "out").read_text() == "keep me"


def test_laxity_measured_loads_beyond_max_load_is_a_message_before_the_sweep(laxity_project, tmp_path, capsys):
    csv = tmp_path / "far.csv"
    csv.write_text("load,angle_deg\n0,0\n150,3.5\n")
    assert main(["laxity", str(laxity_project), "--data", str(csv), "--out", str(tmp_path / "o")]) == 2
    err = _one_line_error(capsys)
    assert "measured loads in" in err and "reach 0..150 N, beyond the sweep -100..100 N" in err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------ item 7: folders, disks
def test_missing_folder_is_one_line(tmp_path, capsys):
    src = tmp_path / "p.json"
    src.write_text(project_to_json(small_project(with_mesh=False)))
    assert main(["import", str(src), str(tmp_path / "nope" / "p.jmdb")]) == 2
    err = _one_line_error(capsys)
    assert "the folder" in err and "does not exist" in err
    save_project(tmp_path / "p.jmdb", small_project(with_mesh=False))
    assert main(["export", str(tmp_path / "p.jmdb"), "--json", str(tmp_path / "nope" / "p.json")]) == 2
    assert "does not exist" in _one_line_error(capsys)


@pytest.mark.slow
def test_import_osim_into_a_missing_folder_is_one_line(tmp_path, shared_models):
    """It printed a 117-line traceback."""
    model = shared_models / "arm26" / "arm26.osim"
    if not model.is_file():
        pytest.skip("arm26.osim is absent")
    done = subprocess.run([sys.executable, "-m", "jointmodeller", "import-osim", str(model),
                           str(tmp_path / "nope" / "arm.jmdb")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    err = done.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "does not exist" in err
    assert not (tmp_path / "nope").exists()


def _limit_pages(monkeypatch, pages: int) -> None:
    """SQLite's own 'database or disk is full' (SQLITE_FULL), as on a full disk: the page limit
    makes the file system look full to SQLite once the project grows past ``pages`` pages."""
    from sqlalchemy import event

    import jointmodeller.persistence.store as store

    real = store._engine

    def engine(path):
        eng = real(path)

        @event.listens_for(eng, "connect")
        def _limit(dbapi_conn, _record):
            dbapi_conn.execute(f"PRAGMA max_page_count={pages}")

        return eng

    monkeypatch.setattr(store, "_engine", engine)


def test_full_disk_is_said_and_a_failed_import_leaves_no_partial_files(tmp_path, capsys, monkeypatch):
    """It said 'the project file is damaged' and left .partial, -wal and -shm files behind, which
    then blocked the next import."""
    src = tmp_path / "p.json"
    src.write_text(project_to_json(small_project()))
    _limit_pages(monkeypatch, 12)
    for _ in range(2):  # the second attempt meets no leftovers of the first
        assert main(["import", str(src), str(tmp_path / "p.jmdb")]) == 2
        err = _one_line_error(capsys)
        assert "the disk is full" in err and "damaged" not in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


def test_full_disk_while_saving_into_an_existing_project_changes_nothing(tmp_path, capsys, monkeypatch):
    path = tmp_path / "p.jmdb"
    save_project(path, small_project(with_mesh=False))
    src = tmp_path / "big.json"
    src.write_text(project_to_json(small_project()))  # with meshes: more pages
    pages = sqlite3.connect(path).execute("PRAGMA page_count").fetchone()[0]
    before = load_project(path)
    _limit_pages(monkeypatch, pages + 1)
    assert main(["import", str(src), str(path), "--force"]) == 2
    err = _one_line_error(capsys)
    assert "the disk is full" in err and "Nothing was changed" in err
    monkeypatch.undo()
    assert load_project(path) == before


def test_full_disk_while_exporting_json_leaves_no_partial(tmp_path, capsys, monkeypatch):
    save_project(tmp_path / "p.jmdb", small_project(with_mesh=False))
    real_fdopen = os.fdopen

    class FillsUp:
        """The temporary file of io.atomic_files: a first block makes it to disk, then the disk is full."""

        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            self.fh.write(data[:1])
            self.fh.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", *a, **k: FillsUp(real_fdopen(fd, mode, *a, **k)))
    assert main(["export", str(tmp_path / "p.jmdb"), "--json", str(tmp_path / "p.json")]) == 2
    assert "the disk is full" in _one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jmdb"]


@contextlib.contextmanager
def _small_file_system(size: str):
    """A real tmpfs of ``size`` (needs root and mount; skipped elsewhere)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("a real full disk needs root to mount a small tmpfs")
    where = Path(tempfile.mkdtemp(prefix="jm-full-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        where.rmdir()
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)  # a file still open: detach
        with contextlib.suppress(OSError):
            where.rmdir()


def test_full_disk_on_a_real_small_file_system(tmp_path, capsys):
    src = tmp_path / "p.json"
    src.write_text(project_to_json(small_project()))
    with _small_file_system("64k") as disk:
        assert main(["import", str(src), str(disk / "p.jmdb")]) == 2
        err = _one_line_error(capsys)
        assert "the disk is full" in err
        assert list(disk.iterdir()) == []
        (disk / "filler").write_bytes(b"\0" * 60_000)
        save_project(tmp_path / "p.jmdb", small_project(with_mesh=False))
        assert main(["export", str(tmp_path / "p.jmdb"), "--json", str(disk / "p.json")]) == 2
        assert "the disk is full" in _one_line_error(capsys)
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]


# ------------------------------------------------------------------------------ item 7: read-only
@pytest.fixture
def unprivileged(tmp_path):
    """(folder, run): a folder another user may use, and a runner of the CLI as a user to whom chmod
    applies (root ignores it: as root, the commands run as 'nobody')."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    if root and not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: read-only files cannot be shown")
    base = Path(tempfile.mkdtemp(prefix="jm-ro-")) if root else tmp_path
    os.chmod(base, 0o777)
    cache = base / "numba-cache"
    cache.mkdir()
    os.chmod(cache, 0o777)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}

    def run(*args: str) -> subprocess.CompletedProcess:
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if root else []
        return subprocess.run([*as_nobody, sys.executable, "-m", "jointmodeller", *args], cwd=base, env=env,
                              capture_output=True, text=True, timeout=300)

    try:
        yield base, run
    finally:
        for p in [base, *base.rglob("*")]:
            with contextlib.suppress(OSError):
                os.chmod(p, 0o777 if p.is_dir() else 0o666)
        if root:
            shutil.rmtree(base, ignore_errors=True)


def _only_line(done: subprocess.CompletedProcess) -> str:
    err = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.mark.slow  # several CLI runs in fresh interpreters
def test_read_only_project_file_and_folder_are_named_not_called_damaged(unprivileged):
    base, run = unprivileged
    save_project(base / "ro.jmdb", small_project(with_mesh=False))
    (base / "p.json").write_text(project_to_json(small_project(with_mesh=False)))
    os.chmod(base / "p.json", 0o644)
    os.chmod(base / "ro.jmdb", stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    before = _digest(base / "ro.jmdb")
    err = _only_line(run("import", "p.json", "ro.jmdb", "--force"))
    assert "the project file is read-only" in err and "damaged" not in err
    err = _only_line(run("coordinates", "ro.jmdb", "--lock-all"))
    assert "read-only" in err and "damaged" not in err
    assert _digest(base / "ro.jmdb") == before

    folder = base / "locked"
    folder.mkdir()
    save_project(folder / "p.jmdb", small_project(with_mesh=False))
    os.chmod(folder / "p.jmdb", 0o644)
    os.chmod(folder, 0o555)
    err = _only_line(run("info", "locked/p.jmdb"))
    assert "its folder 'locked' is read-only" in err and "damaged" not in err
    err = _only_line(run("import", "p.json", "locked/new.jmdb"))
    assert "read-only" in err and "new.jmdb.partial" not in err
    err = _only_line(run("export", "ro.jmdb", "--json", "locked/x.json"))
    assert "read-only" in err
    assert sorted(p.name for p in folder.iterdir()) == ["p.jmdb"]


# ------------------------------------------------------------------------------ item 8: import over
def _project_with_a_run(path: Path) -> int:
    save_project(path, small_project(with_mesh=False))
    with ProjectStore(path) as store:
        return store.save_run(RunRecord("equilibrium", {"tol": 1e-9}, message="equilibrium found"))


def test_import_over_an_existing_project_needs_force(tmp_path, capsys):
    path = tmp_path / "p.jmdb"
    _project_with_a_run(path)
    src = tmp_path / "other.json"
    src.write_text(project_to_json(Project(info=ProjectInfo(title="Other"))))
    before = _digest(path)
    assert main(["import", str(src), str(path)]) == 2
    err = _one_line_error(capsys)
    assert "exists; give --force to replace its inputs" in err and "1 stored run(s)" in err
    assert _digest(path) == before


def test_import_with_force_keeps_the_runs_marked_as_the_earlier_models(tmp_path, capsys):
    path = tmp_path / "p.jmdb"
    run_id = _project_with_a_run(path)
    src = tmp_path / "other.json"
    src.write_text(project_to_json(Project(info=ProjectInfo(title="Other"))))
    assert main(["import", str(src), str(path), "--force"]) == 0
    assert "1 stored run(s) of the earlier model kept" in capsys.readouterr().out
    assert load_project(path).info.title == "Other"
    with ProjectStore(path) as store:
        run = store.load_run(run_id)
    assert run.message == "equilibrium found [earlier model]"
    assert f"by import of {src}" in run.parameters["earlier_model"] and run.parameters["tol"] == 1e-9
    assert main(["runs", str(path)]) == 0
    assert "[earlier model]" in capsys.readouterr().out


def test_import_with_force_and_delete_runs_deletes_them(tmp_path, capsys):
    path = tmp_path / "p.jmdb"
    _project_with_a_run(path)
    src = tmp_path / "same.json"
    src.write_text(project_to_json(small_project(with_mesh=False)))
    assert main(["import", str(src), str(path), "--force", "--delete-runs"]) == 0
    with ProjectStore(path) as store:
        assert store.list_runs() == []
        assert store.engine.connect().exec_driver_sql("select count(*) from run_series").scalar() == 0
    assert main(["import", str(src), str(tmp_path / "new.jmdb"), "--delete-runs"]) == 2
    assert "--delete-runs applies only with --force" in _one_line_error(capsys)
