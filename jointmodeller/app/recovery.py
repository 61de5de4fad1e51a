"""Crash recovery, Qt-free: the per-user recovery folder (the GUI passes the platform's
application-data folder, which only Qt knows), a document's autosave to its recovery file
(:class:`Recovery`, owned by each :class:`jointmodeller.app.document.Document` as ``doc.recovery``),
the recovery files a crashed session left (:func:`find_recoveries`) and the document rebuilt from one
(:func:`recover`)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jointmodeller.io.atomic_files import write_bytes_atomically
from jointmodeller.model.codec import project_to_data, row_from_data
from jointmodeller.model.errors import Problem, ValidationError
from jointmodeller.model.specs import Project

if TYPE_CHECKING:
    from jointmodeller.app.document import Document

RECOVERY_DIR_ENV = "JOINTMODELLER_RECOVERY_DIR"
"""Overrides the recovery folder (tests, the benchmarks, scripts/wheel_check.sh)."""

RECOVERY_SUFFIX = ".recovery.json"


def recovery_dir(app_data: str | os.PathLike | None = None) -> Path:
    """The per-user folder for autosaves: $JOINTMODELLER_RECOVERY_DIR when set, else
    ``app_data``/recovery (the GUI gives Qt's AppDataLocation), else ~/.jointmodeller/recovery."""
    env = os.environ.get(RECOVERY_DIR_ENV)
    if env:
        return Path(env)
    return Path(app_data or Path.home() / ".jointmodeller") / "recovery"


@dataclass(frozen=True)
class RecoveryInfo:
    """A recovery file left by a session that did not close cleanly."""

    file: Path
    original_path: Path | None
    saved_at: float
    title: str


class Recovery:
    """One document's autosave: its recovery file in the document's ``recovery_dir`` (named after its
    path, or a per-session token while it has none), written while there are unsaved changes and
    removed after a save or a clean close."""

    def __init__(self, doc: Document):
        self._doc = doc
        self.override: Path | None = None
        """The recovery file this document was recovered from (:func:`recover`): taken over, replaced
        by later autosaves, until the next save."""
        self._token = hashlib.sha1(f"{os.getpid()}-{time.time()}-{id(doc)}".encode()).hexdigest()[:8]

    def file(self) -> Path | None:
        """Where this document's autosave goes (None without a recovery folder)."""
        if self.override is not None:
            return self.override
        doc = self._doc
        if doc.recovery_dir is None:
            return None
        stem = doc.path.stem if doc.path is not None else "untitled"
        key = hashlib.sha1(str(doc.path.resolve() if doc.path else self._token).encode()).hexdigest()[:10]
        return doc.recovery_dir / f"{stem}-{key}{RECOVERY_SUFFIX}"

    def autosave(self) -> Path | None:
        """Write the unsaved project to the recovery file (atomically); None when clean or no folder.
        The project file itself is never touched, so an invalid edit is never saved there."""
        target = self.file()
        doc = self._doc
        if target is None or not doc.dirty:
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        data = {"recovery_for": str(doc.path) if doc.path is not None else None, "saved_at": time.time(),
                "title": doc.project.info.title, "document": project_to_data(doc.project)}
        return write_bytes_atomically(target, json.dumps(data, allow_nan=False).encode("utf-8"))

    def discard(self) -> None:
        """Remove the recovery file (after a save or a clean close)."""
        target = self.file()
        if target is not None:
            target.unlink(missing_ok=True)


def find_recoveries(recovery_dir: str | os.PathLike) -> list[RecoveryInfo]:
    """Recovery files in the folder, newest first (sessions that crashed)."""
    folder = Path(recovery_dir)
    out = []
    for f in folder.glob(f"*{RECOVERY_SUFFIX}") if folder.is_dir() else ():
        try:
            head = json.loads(f.read_text(encoding="utf-8"))
            orig = head.get("recovery_for")
            out.append(RecoveryInfo(f, Path(orig) if orig else None, float(head.get("saved_at", 0.0)),
                                    str(head.get("title", ""))))
        except (OSError, ValueError, TypeError, AttributeError):
            continue
    return sorted(out, key=lambda r: -r.saved_at)


def recover(file: str | os.PathLike, **kw) -> Document:
    """A dirty document holding the project of a recovery file (which may break rules: the panels
    show the problems). The recovery file is taken over and replaced by later autosaves. ``kw`` go to
    :class:`~jointmodeller.app.document.Document` (``recovery_dir`` defaults to the file's folder)."""
    from jointmodeller.app.document import Document  # the document owns a Recovery: imported here

    file = Path(file)
    head = json.loads(file.read_text(encoding="utf-8"), parse_constant=_reject)
    data = head.get("document", {})
    if not isinstance(data, dict) or data.get("format") is None:
        raise ValidationError(Problem("Recovery file", None, None, "holds no project"))
    project = row_from_data(Project, data.get("project"), "project", 0)
    orig = head.get("recovery_for")
    kw.setdefault("recovery_dir", file.parent)
    doc = Document(project, orig, saved=False, **kw)
    doc.recovery.override = file
    return doc


def _reject(name: str) -> Any:
    raise ValueError(f"{name} is not a number a project may hold")


__all__ = ["RECOVERY_DIR_ENV", "RECOVERY_SUFFIX", "Recovery", "RecoveryInfo", "find_recoveries", "recover",
           "recovery_dir"]
