"""Where autosaves for crash recovery go: the per-user recovery folder (Qt-free; the GUI passes the
platform's application-data folder, which only Qt knows). The recovery files themselves are written
and read by :class:`jointmodeller.app.document.Document` (``autosave``, ``find_recoveries``,
``recover``)."""

from __future__ import annotations

import os
from pathlib import Path

RECOVERY_DIR_ENV = "JOINTMODELLER_RECOVERY_DIR"
"""Overrides the recovery folder (tests, the benchmarks, scripts/wheel_check.sh)."""


def recovery_dir(app_data: str | os.PathLike | None = None) -> Path:
    """The per-user folder for autosaves: $JOINTMODELLER_RECOVERY_DIR when set, else
    ``app_data``/recovery (the GUI gives Qt's AppDataLocation), else ~/.jointmodeller/recovery."""
    env = os.environ.get(RECOVERY_DIR_ENV)
    if env:
        return Path(env)
    return Path(app_data or Path.home() / ".jointmodeller") / "recovery"


__all__ = ["RECOVERY_DIR_ENV", "recovery_dir"]
