"""Shared fixtures: the licensed meshes and models in ../shared (skipped when absent), the folder for
artifacts, and the small two-box project (the GUI, render and picking tests)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from jointmodeller.model.specs import Project

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


@pytest.fixture
def small_project() -> Project:
    """Two 40×40×100 mm boxes stacked along z with one ligament between them (valid)."""
    from tests.model.factories import two_box_project  # trimesh: with the first test that uses it

    return two_box_project()
