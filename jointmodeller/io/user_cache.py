"""The per-user cache folder every disk cache lives under (signed distance fields, articular sheets,
generated demo meshes, the built demo project): ``$JOINTMODELLER_CACHE`` when set (tests point it at a
temporary folder), else ``$XDG_CACHE_HOME/jointmodeller``, else ``~/.cache/jointmodeller``."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "JOINTMODELLER_CACHE"


def cache_root() -> Path:
    """The cache folder (not created here)."""
    root = os.environ.get(ENV_VAR) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "jointmodeller")
    return Path(root)
