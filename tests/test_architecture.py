"""The layering of docs/architecture.md, held by the import-linter contracts in pyproject.toml."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    out = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "broken" in out.stdout and "0 broken" in out.stdout


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
