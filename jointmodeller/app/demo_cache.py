"""The built demo kept in the per-user cache folder (Qt-free; the GUI gives the platform's cache
folder): where that folder is, and the demo read back from it. Reading a cached demo imports neither
the demo's builders (meshes, mass properties: :mod:`jointmodeller.app.demo`) nor the project file's
SQLAlchemy and Alembic: the cache is a project snapshot (:mod:`jointmodeller.io.project_snapshot`),
so the GUI's first window shows the demo without them (issue 18)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

from jointmodeller.io.project_snapshot import SNAPSHOT_SUFFIX, load_snapshot, save_snapshot
from jointmodeller.model.errors import JointModellerError
from jointmodeller.model.specs import Project

DEMO_SOURCES = ("jointmodeller.app.demo", "jointmodeller.io.mesh_demo")
"""The modules that build the demo: the cache file is named by a hash of their source."""


def demo_cache_file(cache_dir: Path) -> Path:
    """Where the built demo project is cached in ``cache_dir``: named by a hash of the code that
    builds it, so a changed demo is rebuilt."""
    h = hashlib.sha1()
    for module in DEMO_SOURCES:
        spec = importlib.util.find_spec(module)  # finds the file without running the module
        if spec is not None and spec.origin:
            h.update(Path(spec.origin).read_bytes())
    return Path(cache_dir) / f"demo-{h.hexdigest()[:12]}{SNAPSHOT_SUFFIX}"


def cached_demo_project(cache_dir: Path) -> Project:
    """The demo project: read from the cache in ``cache_dir`` when it is there (a damaged cache file
    is removed), else built and cached (a cache that cannot be written is skipped)."""
    cache = demo_cache_file(cache_dir)
    if cache.is_file():
        try:
            return load_snapshot(cache)
        except (JointModellerError, OSError, ValueError):
            cache.unlink(missing_ok=True)
    from jointmodeller.app.demo import build_demo_project

    project = build_demo_project()
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        save_snapshot(cache, project)
    except (JointModellerError, OSError, ValueError):
        pass
    return project


def demo_cache_dir(platform_cache: str | os.PathLike | None = None) -> Path:
    """The per-user cache folder of the built demo project (and of the GUI's decimated display
    meshes, in its ``display`` folder): $JOINTMODELLER_CACHE when set (e.g. in tests), else
    ``platform_cache`` (the GUI gives Qt's CacheLocation), else :func:`jointmodeller.io.user_cache.cache_root`."""
    from jointmodeller.io.user_cache import ENV_VAR, cache_root

    if platform_cache and not os.environ.get(ENV_VAR):
        return Path(platform_cache)
    return cache_root()


def demo_project(platform_cache: str | os.PathLike | None = None) -> Project:
    """The demo project, from the per-user cache (:func:`demo_cache_dir`) when it is there."""
    return cached_demo_project(demo_cache_dir(platform_cache))


__all__ = ["cached_demo_project", "demo_cache_dir", "demo_cache_file", "demo_project"]
