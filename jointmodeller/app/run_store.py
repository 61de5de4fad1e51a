"""The open document's finished runs (Qt-free): stored in its project file when there is one, else
kept in memory until the first save writes them there. A :class:`~jointmodeller.app.document.Document`
owns one as ``doc.runs``; the GUI's run box lists them, replay loads one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from jointmodeller.model.results import RunRecord

if TYPE_CHECKING:
    from jointmodeller.app.document import Document
    from jointmodeller.persistence import ProjectStore


def _store(path: Path) -> ProjectStore:
    """The project file at ``path``, opened; persistence (SQLAlchemy and Alembic, ~1 s) is imported
    with the first file a document reads or writes, not to show a window (issue 18)."""
    from jointmodeller.persistence import ProjectStore

    return ProjectStore(path)


class StoredRuns:
    """The runs of one document, read and written through :class:`ProjectStore` (the same names:
    ``add_run``, ``list_runs``, ``load_run``). ``changed`` is called after a run is added (the document
    emits its "runs" event)."""

    def __init__(self, doc: Document, changed: Callable[[], None]):
        self._doc = doc
        self._changed = changed
        self.memory: list[RunRecord] = []
        """Runs of a document without a file yet (negative ids), written by the first save."""

    def add_run(self, run: RunRecord) -> int:
        """Store a finished run: in the project file when there is one, else in memory until the
        first save. Returns its id."""
        path = self._doc.path
        if path is not None and path.exists():
            with _store(path) as store:
                rid = store.save_run(run)
        else:
            rid = -(len(self.memory) + 1)
            run.id = rid
            self.memory.append(run)
        self._changed()
        return rid

    def list_runs(self) -> list[RunRecord]:
        """Stored runs, oldest first (without series when they come from the file)."""
        runs: list[RunRecord] = []
        path = self._doc.path
        if path is not None and path.exists():
            with _store(path) as store:
                runs = store.list_runs()
        return runs + list(self.memory)

    def load_run(self, run_id: int) -> RunRecord:
        for run in self.memory:
            if run.id == run_id:
                return run
        path = self._doc.path
        if path is None:
            raise KeyError(f"no run {run_id}")
        with _store(path) as store:
            return store.load_run(run_id)

    def save_to(self, target: Path) -> None:
        """The project was just written to ``target`` (:meth:`Document.save`, before the document's
        path changes): a save-as copies the runs of the old file there; runs held in memory are
        written there and leave memory."""
        old = self._doc.path
        if old is not None and target != old and self.memory == [] and old.exists():
            _copy_runs(old, target)
        for run in self.memory:
            with _store(target) as store:
                store.save_run(run)
        self.memory = []


def _copy_runs(src: Path, dst: Path) -> None:
    with _store(src) as a, _store(dst) as b:
        for r in a.list_runs():
            assert r.id is not None  # a stored run has its row's id
            run = a.load_run(r.id)
            run.id = None
            b.save_run(run)


__all__ = ["StoredRuns"]
