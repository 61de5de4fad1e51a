"""Fixtures shared by the OpenSim import tests: the arm26 model from ../shared/models, and the
lenhart2015 knee imported from the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from jointmodeller.cli import main
from jointmodeller.io.osim import load_osim


@pytest.fixture(scope="module")
def arm26_path(shared_models) -> Path:
    path = shared_models / "arm26" / "arm26.osim"
    if not path.is_file():
        pytest.skip("arm26.osim is absent")
    return path


@pytest.fixture(scope="module")
def arm26(arm26_path):
    """(project, report) without meshes (fast)."""
    return load_osim(arm26_path, load_meshes=False)


def import_knee_at_25_degrees(shared_models: Path, shared_meshes: Path, db: str, free: str) -> None:
    """From the CLI: lenhart2015.osim (with its meshes) into ``db``, every coordinate locked but
    ``free`` (comma-separated), knee_flex_r at 25°; skips where the model is absent."""
    path = shared_models / "lenhart2015" / "lenhart2015.osim"
    if not path.is_file():
        pytest.skip("lenhart2015.osim is absent")
    assert main(["import-osim", str(path), db, "--geometry-path", str(shared_meshes)]) == 0
    assert main(["coordinates", db, "--lock-all", "--free", free, "--set", "knee_flex_r=25"]) == 0
