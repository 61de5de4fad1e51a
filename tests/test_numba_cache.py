"""Compiled kernels of an installed package whose folder cannot be written (issue 19): numba's
``cache=True`` refuses to compile ("cannot cache function ...: no locator available") when neither
the package's ``__pycache__`` nor ``~/.cache`` can be written; core._jit then caches in a user cache
folder, or compiles without a disk cache when nothing is writable.

The package is copied into a temporary "site-packages"; a plain file named ``__pycache__`` in each of
its folders and a file named ``.cache`` in the home make them unwritable even for root (chmod does
not stop root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import jointmodeller

pytestmark = pytest.mark.skipif(os.environ.get("JOINTMODELLER_NUMBA", "1") == "0", reason="numba is switched off")

SCRIPT = """
import numpy as np
import jointmodeller
from jointmodeller.core import _jit
from jointmodeller.core.spatial_math import axis_rotation
assert jointmodeller.__file__.startswith({site!r}), jointmodeller.__file__
R = axis_rotation(np.array([0.0, 0.0, 1.0]), 0.3)
assert abs(R[0, 0] - np.cos(0.3)) < 1e-15
print("cache:", _jit.CACHE_DIR, _jit.CACHE_ENABLED)
"""


def _read_only_install(root: Path) -> Path:
    site = root / "site"
    shutil.copytree(Path(jointmodeller.__file__).parent, site / "jointmodeller",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder in [p for p in (site / "jointmodeller").rglob("*") if p.is_dir()] + [site / "jointmodeller"]:
        (folder / "__pycache__").write_text("not a folder")
    return site


def _run(site: Path, env_extra: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), **env_extra)
    return subprocess.run([sys.executable, "-c", SCRIPT.format(site=str(site))], env=env, capture_output=True,
                          text=True, timeout=300, cwd=str(site.parent))


@pytest.mark.slow
def test_read_only_package_caches_kernels_in_the_user_cache_folder(tmp_path):
    site = _read_only_install(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".cache").write_text("not a folder")  # numba's own fallback (~/.cache/numba) fails too
    xdg = tmp_path / "xdg"
    done = _run(site, {"HOME": str(home), "XDG_CACHE_HOME": str(xdg)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"cache: {xdg / 'jointmodeller' / 'numba'} True" in done.stdout
    assert list((xdg / "jointmodeller" / "numba").rglob("*.nbi")), "no kernel was cached"
    again = _run(site, {"HOME": str(home), "XDG_CACHE_HOME": str(xdg)})  # loads from that cache
    assert again.returncode == 0, again.stderr[-2000:]


@pytest.mark.slow
def test_nothing_writable_compiles_without_a_disk_cache(tmp_path):
    site = _read_only_install(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".cache").write_text("not a folder")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp / f"jointmodeller-{os.getuid()}").write_text("not a folder")
    done = _run(site, {"HOME": str(home), "TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cache: None False" in done.stdout
