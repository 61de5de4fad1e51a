"""Fixtures shared by the OpenSim import tests: the arm26 model from ../shared/models."""

from __future__ import annotations

from pathlib import Path

import pytest

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
