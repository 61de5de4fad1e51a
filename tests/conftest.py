"""Shared fixtures: the licensed meshes in ../shared (skipped when absent) and a temp project dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)  # tests that run a small test session of their own (tests/gui/test_leak_check.py)

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("JOINTMODELLER_SHARED", REPO.parent / "shared"))
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="session")
def shared_meshes() -> Path:
    """Folder of the real bone meshes (licensed: read in place, never committed)."""
    path = SHARED / "meshes"
    if not path.is_dir():
        pytest.skip("../shared/meshes is absent")
    return path


@pytest.fixture(scope="session")
def shared_models() -> Path:
    path = SHARED / "models"
    if not path.is_dir():
        pytest.skip("../shared/models is absent")
    return path


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where tests leave files for people to look at (screenshots, plots)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
