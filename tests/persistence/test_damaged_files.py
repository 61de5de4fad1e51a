"""Tampered or damaged project files (issue 19, item 5): each is refused with one ProjectFileError or
ValidationError naming what is wrong and where, and the file is left exactly as it was."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from jointmodeller.model import ProjectFileError, ValidationError
from jointmodeller.persistence import load_project, save_project
from jointmodeller.persistence.schema import known_revisions
from tests.model.factories import small_project


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def project_file(tmp_path) -> Path:
    path = tmp_path / "p.jmdb"
    save_project(path, small_project(with_mesh=False))
    return path


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def test_tampered_boolean_is_refused_naming_the_row(project_file):
    """SQLAlchemy's Boolean read 'maybe' as true; the mass became fixed without a word."""
    _sql(project_file, "update masses set fixed='maybe' where name='ulna'")
    before = _digest(project_file)
    with pytest.raises(ValidationError, match=r"Masses › row 2 › fixed: must be true or false, got 'maybe'"):
        load_project(project_file)
    _sql(project_file, "update masses set fixed=2 where name='ulna'")
    with pytest.raises(ValidationError, match=r"Masses › row 2 › fixed: must be true or false, got 2"):
        load_project(project_file)
    _sql(project_file, "update masses set fixed=1 where name='ulna'")
    assert load_project(project_file).mass("ulna").fixed is True
    assert _digest(project_file) != before  # (the last update changed it; the refusals did not)


def test_row_of_an_unknown_section_is_reported_not_dropped(project_file):
    """It used to be dropped on load and deleted on the next save."""
    _sql(project_file,
         "insert into feature_rows (section, position, name, data) values ('ligament_sets', 0, 'x', '{}')")
    before = _digest(project_file)
    with pytest.raises(ProjectFileError,
                       match=r"rows of a section this JointModeller does not know \('ligament_sets'\)"):
        load_project(project_file)
    assert _digest(project_file) == before


def test_row_nested_100000_deep_in_the_file_is_one_message(project_file):
    _sql(project_file, "update feature_rows set data='" + "[" * 100_000 + "]" * 100_000 + "' where section='contacts'")
    before = _digest(project_file)
    with pytest.raises((ProjectFileError, ValidationError), match="nested too deeply"):
        load_project(project_file)
    assert _digest(project_file) == before


def test_invalid_utf8_in_sqlite_messages_is_one_message(project_file):
    """A damaged schema whose text is not UTF-8: SQLite quotes it in its error message, and Python
    failed to decode the message itself (UnicodeDecodeError out of the integrity check)."""
    _sql(project_file, "PRAGMA writable_schema=ON",
         "UPDATE sqlite_master SET sql = CAST(X'435245415445204958cc20' AS TEXT) WHERE name='ix_feature_rows_section'")
    before = _digest(project_file)
    with pytest.raises(ProjectFileError, match=r"damaged or truncated .*not UTF-8.*\\xcc"):
        load_project(project_file)
    assert _digest(project_file) == before


def test_integrity_check_failure_is_reported(project_file):
    """quick_check's answer was read and ignored: a file with a broken page (here the root page of an
    index that loading does not use) opened as if sound."""
    conn = sqlite3.connect(project_file)
    root = conn.execute("select rootpage from sqlite_master where name='ix_run_series_run_id'").fetchone()[0]
    page_size = conn.execute("pragma page_size").fetchone()[0]
    conn.close()
    raw = bytearray(project_file.read_bytes())
    raw[(root - 1) * page_size] = 0x07  # not a b-tree page type
    project_file.write_bytes(bytes(raw))
    with pytest.raises(ProjectFileError, match=r"damaged \(SQLite's integrity check: .*Page \d+") as err:
        load_project(project_file)
    assert "\n" not in str(err.value)
    assert project_file.read_bytes() == bytes(raw)


def test_schema_version_older_than_the_tables_is_refused_unchanged(project_file):
    _sql(project_file, f"update alembic_version set version_num='{known_revisions()[0]}'")
    before = _digest(project_file)
    with pytest.raises(ProjectFileError, match=r"cannot be migrated from schema .*does not match its tables.*"
                                               r"Nothing was changed"):
        load_project(project_file)
    assert _digest(project_file) == before
