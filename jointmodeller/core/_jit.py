"""The one numba switch of the numerical core.

Every compiled kernel in ``jointmodeller.core`` goes through this module. Numba compiles them when
it is importable, unless the environment variable ``JOINTMODELLER_NUMBA`` is ``0`` when the package
is imported; then every kernel runs as the plain Python/numpy function it is written as (slow, but
the same arithmetic: the tests run both and compare them).

- ``njit``: decorator; compiles (``cache=True`` unless given) with the switch on, identity off.
- ``kernel(fn, enabled, **options)``: ``fn`` compiled once (cached on disk) when ``enabled`` (default:
  the switch) and the switch is on, else ``fn`` itself. For code that keeps both forms at hand
  (a per-call ``use_numba`` override that tests and benchmarks use to compare the two paths).
- ``numba_enabled(flag)``: a per-object ``use_numba`` flag resolved against the switch (None = the
  switch; True only takes effect when the switch is on).
"""

from __future__ import annotations

import os

ENV_VAR = "JOINTMODELLER_NUMBA"
NUMBA_ENABLED = os.environ.get(ENV_VAR, "1") != "0"

try:  # pragma: no cover - depends on the environment
    if not NUMBA_ENABLED:
        raise ImportError
    import numba as _numba
except ImportError:  # pragma: no cover
    _numba = None
    NUMBA_ENABLED = False


def njit(fn=None, **options):
    """Compile with numba (no Python objects; ``cache=True`` unless given) when the switch is on;
    otherwise return the function unchanged."""
    if not NUMBA_ENABLED:
        return (lambda f: f) if fn is None else fn
    options.setdefault("cache", True)
    if fn is None:
        return lambda f: _numba.njit(**options)(f)
    return _numba.njit(**options)(fn)


def numba_enabled(flag: bool | None = None) -> bool:
    """A per-call or per-object ``use_numba`` choice resolved against the switch."""
    return NUMBA_ENABLED if flag is None else (bool(flag) and NUMBA_ENABLED)


_compiled: dict = {}


def kernel(fn, enabled: bool | None = None, **options):
    """``fn`` compiled with numba (once per process, cached on disk) when ``numba_enabled(enabled)``,
    else the plain function."""
    if not numba_enabled(enabled):
        return fn
    if fn not in _compiled:
        _compiled[fn] = njit(fn, **options)
    return _compiled[fn]
