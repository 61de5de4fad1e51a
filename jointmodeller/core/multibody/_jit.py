"""numba switch: ``njit`` compiles when numba is importable, unless JOINTMODELLER_NUMBA=0.

With the switch off every kernel runs as plain Python/numpy (the fallback the tests also run).
"""

from __future__ import annotations

import os

NUMBA_ENABLED = os.environ.get("JOINTMODELLER_NUMBA", "1") != "0"

try:  # pragma: no cover - depends on the environment
    if not NUMBA_ENABLED:
        raise ImportError
    from numba import njit as _njit

    def njit(fn=None, **kw):
        """Compile with numba (cached, no Python objects)."""
        kw.setdefault("cache", True)
        if fn is None:
            return lambda f: _njit(**kw)(f)
        return _njit(**kw)(fn)

except ImportError:  # pragma: no cover
    NUMBA_ENABLED = False

    def njit(fn=None, **kw):
        """Identity decorator: plain Python fallback."""
        if fn is None:
            return lambda f: f
        return fn
