"""Writing a file so that a reader never sees half of it: a temporary file in the same folder,
renamed into place (``os.replace``), removed again if anything fails. The one way this program
replaces a file it did not build in place: the per-user caches (:mod:`jointmodeller.io.sdf_cache`,
:mod:`jointmodeller.io.articular_cache`, :mod:`jointmodeller.io.project_snapshot`), the generated
demo meshes, crash-recovery files and the CLI's exports. (A project file is built by SQLite beside
its target and moved the same way in :mod:`jointmodeller.persistence.store`, with its journal files.)"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable

import numpy as np


def write_atomically(path: str | os.PathLike, write: Callable[[IO[bytes]], object]) -> Path:
    """Call ``write`` on a binary file that becomes ``path`` once it returns (the folder must exist);
    any error leaves ``path`` as it was and no temporary file behind. Returns the path."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix="." + path.stem[:16] + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def write_bytes_atomically(path: str | os.PathLike, data: bytes) -> Path:
    """``Path(path).write_bytes(data)`` atomically; the folder must exist. Returns the path."""
    return write_atomically(path, lambda fh: fh.write(data))


def save_npz_atomically(path: str | os.PathLike, arrays: dict[str, Any]) -> Path:
    """``numpy.savez(path, **arrays)`` atomically; the folder must exist. Returns the path."""
    return write_atomically(path, lambda fh: np.savez(fh, **arrays))
