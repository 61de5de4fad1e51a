"""The per-user cache folder every disk cache lives under (signed distance fields, articular sheets,
generated demo meshes, the built demo project): ``$JOINTMODELLER_CACHE`` when set (tests point it at a
temporary folder), else ``$XDG_CACHE_HOME/jointmodeller``, else ``~/.cache/jointmodeller``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable

import numpy as np

ENV_VAR = "JOINTMODELLER_CACHE"


def cache_root() -> Path:
    """The cache folder (not created here)."""
    root = os.environ.get(ENV_VAR) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "jointmodeller")
    return Path(root)


def content_key(header: bytes, arrays: Iterable[np.ndarray]) -> str:
    """Hex SHA-256 naming a cache entry: ``header`` (a format tag, versions, parameters as bytes) and
    each array's dtype, shape and bytes, so that other content, another layout or another version is
    another file."""
    h = hashlib.sha256(header)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()
