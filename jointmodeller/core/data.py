"""What changes per evaluation, kept beside a constant System: MuJoCo's mjData beside its mjModel.

Evaluating a built System (its bodies, force elements and path solvers) never changes it. What one
evaluation leaves for the next — contact candidate sets and reference poses, warm-started wrap
paths, the latest results kept for reports — lives in a :class:`SystemData`, keyed by the element
it belongs to. A run activates its own with :func:`using`; without one, each thread has its own, so
two runs or two threads on one System never share it, and a fresh SystemData evaluates cold.
"""

from __future__ import annotations

import contextvars
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

T = TypeVar("T")


class SystemData:
    """Per-evaluation data of any number of elements (each element's own object, made on first use)."""

    def __init__(self) -> None:
        self._work: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def work(self, owner: object, factory: Callable[[], T]) -> T:
        """``owner``'s data here, made by ``factory()`` on first use (dropped with the owner)."""
        try:
            return self._work[owner]
        except KeyError:
            made = self._work[owner] = factory()
            return made


_ACTIVE: contextvars.ContextVar[SystemData] = contextvars.ContextVar("jointmodeller_system_data")


def active() -> SystemData:
    """The SystemData evaluations use now: the one :func:`using` activated, else this thread's own."""
    try:
        return _ACTIVE.get()
    except LookupError:
        data = SystemData()
        _ACTIVE.set(data)
        return data


def work_of(owner: object, factory: Callable[[], T]) -> T:
    """``owner``'s per-evaluation data in the active SystemData."""
    return active().work(owner, factory)


@contextmanager
def using(data: SystemData | None = None) -> Iterator[SystemData]:
    """Evaluate with ``data`` (default: a fresh one, i.e. cold) inside the block."""
    data = SystemData() if data is None else data
    token = _ACTIVE.set(data)
    try:
        yield data
    finally:
        _ACTIVE.reset(token)
