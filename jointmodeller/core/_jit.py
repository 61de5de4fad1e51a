"""The one numba switch of the numerical core.

Every compiled kernel in ``jointmodeller.core`` goes through this module. Numba compiles them when
it is importable, unless the environment variable ``JOINTMODELLER_NUMBA`` is ``0`` when the package
is imported; then every kernel runs as the plain Python/numpy function it is written as (slow, but
the same arithmetic: the tests run both and compare them).

- ``njit``: decorator; compiles (``cache=True`` unless given) with the switch on, identity off.
- ``kernel(fn, enabled, **options)``: ``fn`` compiled once (cached on disk) when ``enabled`` (default:
  the switch) and the switch is on, else ``fn`` itself. For code that keeps both forms at hand
  (a per-call ``use_numba`` override that tests and benchmarks use to compare the two paths).
- ``prange``, ``thread_count()``: numba's parallel range and its thread count (``range`` and 1 off).
- ``numba_enabled(flag)``: a per-object ``use_numba`` flag resolved against the switch (None = the
  switch; True only takes effect when the switch is on).
- ``on_disk(*kernels)``: whether the kernels are in the disk cache already (else their first call
  compiles: a front end says so before it starts).

Where the compiled kernels are cached: numba writes them beside the sources (``__pycache__``), else
in ``~/.cache/numba``, and refuses to compile a ``cache=True`` function at all ("cannot cache
function ...: no locator available") when neither is writable — an installed package in a read-only
site-packages with a read-only or missing home. So before numba compiles anything, when the
package's own ``__pycache__`` cannot be written and ``NUMBA_CACHE_DIR`` is not set, the cache goes to
the first writable of ``$XDG_CACHE_HOME/jointmodeller/numba``, ``~/.cache/jointmodeller/numba`` and
``<tempdir>/jointmodeller-<uid>/numba`` (``CACHE_DIR``); with none writable kernels are compiled
without a disk cache (``CACHE_ENABLED`` False: slower start, same code).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import ModuleType

ENV_VAR = "JOINTMODELLER_NUMBA"
NUMBA_ENABLED = os.environ.get(ENV_VAR, "1") != "0"


def _writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (made if missing), tried the way numba does."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
        return True
    except (OSError, ValueError):
        return False


def user_cache_candidates() -> list[Path]:
    """Folders for the kernel cache when the package's own cannot be written, in order of choice."""
    out = []
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        out.append(Path(xdg) / "jointmodeller" / "numba")
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):  # pragma: no cover - Windows
        out.append(Path(os.environ["LOCALAPPDATA"]) / "jointmodeller" / "numba")
    home = os.path.expanduser("~")
    if home and home != "~" and os.path.isabs(home):
        out.append(Path(home) / ".cache" / "jointmodeller" / "numba")
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    out.append(Path(tempfile.gettempdir()) / f"jointmodeller-{uid}" / "numba")
    return out


def _choose_cache_dir() -> tuple[str | None, bool]:
    """(folder for NUMBA_CACHE_DIR or None to keep numba's default, whether to cache at all)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None, True  # the user's (or the generic-CPU test run's) choice
    if _writable(Path(__file__).resolve().parent / "__pycache__"):
        return None, True
    for folder in user_cache_candidates():
        if _writable(folder):
            return str(folder), True
    return None, False


CACHE_DIR: str | None = None
CACHE_ENABLED = True
_numba: ModuleType | None = None
if NUMBA_ENABLED:
    CACHE_DIR, CACHE_ENABLED = _choose_cache_dir()
    if CACHE_DIR is not None:
        os.environ["NUMBA_CACHE_DIR"] = CACHE_DIR  # read when numba is imported (also by child processes)
    try:  # pragma: no cover - depends on the environment
        import numba as _numba_module
    except ImportError:  # pragma: no cover
        NUMBA_ENABLED = False
    else:
        _numba = _numba_module
        if CACHE_DIR is not None:  # numba imported before this module read the variable already
            # numba.config fills its attributes from the environment at run time: no static type has them
            _numba_module.config.CACHE_DIR = CACHE_DIR  # type: ignore[attr-defined]


def njit(fn=None, **options):
    """Compile with numba (no Python objects; cached on disk unless given, or unless no cache folder
    is writable) when the switch is on;
    otherwise return the function unchanged."""
    if not NUMBA_ENABLED:
        return (lambda f: f) if fn is None else fn
    options.setdefault("cache", True)
    if not CACHE_ENABLED:
        options["cache"] = False
    if fn is None:
        return lambda f: _numba.njit(**options)(f)
    return _numba.njit(**options)(fn)


#: numba's parallel loop range (a plain ``range`` with the switch off)
prange = _numba.prange if _numba is not None else range


def thread_count() -> int:
    """Threads a ``parallel`` kernel runs on (numba's, which honours NUMBA_NUM_THREADS); 1 with the switch off."""
    return int(_numba.get_num_threads()) if _numba is not None else 1


def numba_enabled(flag: bool | None = None) -> bool:
    """A per-call or per-object ``use_numba`` choice resolved against the switch."""
    return NUMBA_ENABLED if flag is None else (bool(flag) and NUMBA_ENABLED)


_compiled: dict = {}


def on_disk(*kernels) -> bool:
    """Whether numba's disk cache has an index for each compiled kernel (``njit`` dispatchers), so a
    first call in this process loads it instead of compiling; True with the switch off. Reads
    numba's cache bookkeeping: anything unexpected there counts as not cached (a needless notice,
    never an error). Callers use it to say so before a long first compile."""
    if not NUMBA_ENABLED or not CACHE_ENABLED:
        return not NUMBA_ENABLED
    for k in kernels:
        path = getattr(getattr(getattr(k, "_cache", None), "_cache_file", None), "_index_path", None)
        if not path or not os.path.exists(path):
            return False
    return True


def kernel(fn, enabled: bool | None = None, **options):
    """``fn`` compiled with numba (once per process, cached on disk) when ``numba_enabled(enabled)``,
    else the plain function."""
    if not numba_enabled(enabled):
        return fn
    if fn not in _compiled:
        _compiled[fn] = njit(fn, **options)
    return _compiled[fn]
