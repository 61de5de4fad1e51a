"""The layering of docs/architecture.md, held by the import-linter contracts in pyproject.toml."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    out = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "broken" in out.stdout and "0 broken" in out.stdout


@pytest.mark.slow
def test_core_and_model_import_without_gui_libraries():
    """Importing the numerical core pulls in no Qt, VTK or SQLAlchemy module."""
    code = ("import sys, pkgutil, importlib, jointmodeller.core as c, jointmodeller.model\n"
            "for m in pkgutil.walk_packages(c.__path__, 'jointmodeller.core.'):\n"
            "    importlib.import_module(m.name)\n"
            "bad = [m for m in sys.modules\n"
            "       if m.split('.')[0] in ('PySide6','vtk','vtkmodules','pyvista','sqlalchemy')]\n"
            "print(bad); sys.exit(1 if bad else 0)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


MAX_MODULE_LINES = 500
MAX_CLASS_METHODS = 25
"""Issue 20's limits for app/ and gui/: a module longer or a class with more methods does more than
one job; split it by job (docs/architecture.md says where each concept lives)."""


def _app_and_gui_modules() -> list[Path]:
    return sorted(p for pkg in ("app", "gui") for p in (REPO / "jointmodeller" / pkg).rglob("*.py"))


def test_no_module_in_app_and_gui_is_over_500_lines():
    lines = {str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines()) for p in _app_and_gui_modules()}
    assert {f: n for f, n in lines.items() if n > MAX_MODULE_LINES} == {}


def test_no_class_in_app_and_gui_has_more_than_25_methods():
    """Methods: the functions defined in the class body (properties, static and class methods too)."""
    counts = {}
    for p in _app_and_gui_modules():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                n = sum(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) for d in node.body)
                counts[f"{p.relative_to(REPO)}::{node.name}"] = n
    assert len(counts) > 50  # the walk found the classes
    assert {c: n for c, n in counts.items() if n > MAX_CLASS_METHODS} == {}
