"""Writing an ``.npz`` of plain arrays so that a reader never sees half a file: a temporary file in
the same folder, renamed into place (``os.replace``), removed again if anything fails. Used by the
per-user caches (:mod:`jointmodeller.io.sdf_cache`, :mod:`jointmodeller.io.project_snapshot`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def save_npz_atomically(path: str | os.PathLike, arrays: dict[str, Any]) -> Path:
    """``numpy.savez(path, **arrays)`` atomically; the folder must exist. Returns the path."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=path.stem[:16] + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
