"""Run independent cases (a parameter study, calibration columns) on local processes or on Dask.

``run_cases(fn, cases)`` maps a picklable module-level function over picklable cases and returns the
results in case order, whichever executor ran them: a ``concurrent.futures.ProcessPoolExecutor``
(spawned workers, so no inherited threads or numba state) by default, or a Dask distributed cluster
when a scheduler address (``tcp://host:port``), ``"local"`` / ``"local:N"`` (a LocalCluster of N
worker processes, default 2, made and closed here) or a ``dask.distributed.Client`` is given.

:class:`CaseExecutor` keeps one pool for many batches (a calibration's finite-difference columns,
iteration after iteration): in this process, on local processes or on Dask, with one large object
(``shared``: the project) sent to each worker once and resolved there by :func:`shared_object`.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Sequence


def default_workers() -> int:
    """Local worker count: the CPUs this process may use, at most 4 (the machine is shared)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        n = os.cpu_count() or 1
    return max(1, min(4, n))


def run_cases(
    fn: Callable[[Any], Any],
    cases: Sequence[Any],
    *,
    scheduler: Any = None,
    max_workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list:
    """Results of ``fn(case)`` for every case, in the order of ``cases``.

    scheduler: None for local processes; a Dask scheduler address string or a Client instance for
    a Dask distributed cluster. progress(done, total) is called as cases finish.
    """
    cases = list(cases)
    total = len(cases)
    results: list = [None] * total
    if total == 0:
        return results
    if scheduler is None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(max_workers or default_workers(), total), mp_context=ctx) as pool:
            futures = {pool.submit(fn, case): i for i, case in enumerate(cases)}
            for done, fut in enumerate(as_completed(futures), start=1):
                results[futures[fut]] = fut.result()
                if progress is not None:
                    progress(done, total)
        return results
    from dask.distributed import as_completed as dask_completed

    client, close = dask_client(scheduler)
    try:
        futures = client.map(fn, cases, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for done, fut in enumerate(dask_completed(futures), start=1):
            results[index[fut.key]] = fut.result()
            if progress is not None:
                progress(done, total)
    finally:
        close()
    return results


LOCAL_CLUSTER_WORKERS = 2


def dask_client(scheduler: Any) -> tuple[Any, Callable[[], None]]:
    """(Client, close) for a scheduler address, ``"local"``/``"local:N"`` (a LocalCluster of N
    single-threaded worker processes, default :data:`LOCAL_CLUSTER_WORKERS`) or a Client (not closed
    here). ValueError for a malformed ``local:N``."""
    from dask.distributed import Client

    if isinstance(scheduler, Client):
        return scheduler, lambda: None
    if isinstance(scheduler, str) and (scheduler == "local" or scheduler.startswith("local:")):
        from dask.distributed import LocalCluster

        count = scheduler.partition(":")[2] or str(LOCAL_CLUSTER_WORKERS)
        if not count.isdigit() or not 1 <= int(count) <= 64:
            raise ValueError(f"scheduler {scheduler!r}: give 'local' or 'local:N' with N workers from 1 to 64")
        cluster = LocalCluster(n_workers=int(count), threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)

        def close() -> None:
            client.close()
            cluster.close()

        return client, close
    client = Client(scheduler)
    return client, client.close


_SHARED: dict[str, Any] = {}


def _install_shared(token: str, obj: Any) -> None:
    """Process-pool initializer: keep ``obj`` for :func:`shared_object`."""
    _SHARED[token] = obj


def shared_object(ref: Any) -> Any:
    """The object a :class:`CaseExecutor` shared, from the reference a case carries (on Dask the
    scattered value arrives already resolved)."""
    if isinstance(ref, tuple) and len(ref) == 2 and ref[0] == "jointmodeller-shared":
        return _SHARED[ref[1]]
    return ref


class CaseExecutor:
    """One pool for many batches of cases: ``map(fn, cases)`` returns ``fn(case)`` in case order.

    scheduler None and workers <= 1: in this process, one case after the other; scheduler None and
    workers > 1: that many spawned local processes; a scheduler (see :func:`dask_client`): Dask.
    ``shared``: one object every case needs (sent to each worker once); cases carry :attr:`shared_ref`
    and the worker function resolves it with :func:`shared_object`. Use as a context manager.
    """

    def __init__(self, scheduler: Any = None, workers: int = 1, shared: Any = None, token: str = "shared"):
        self.kind = "dask" if scheduler is not None else ("processes" if workers > 1 else "sequential")
        self._close: Callable[[], None] = lambda: None
        self._pool: ProcessPoolExecutor | None = None
        self._client: Any = None  # a dask.distributed Client
        self.shared_ref: Any = shared
        self.workers = 1
        if self.kind == "processes":
            import multiprocessing

            pool = ProcessPoolExecutor(max_workers=int(workers), mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_install_shared, initargs=(token, shared))
            self._pool = pool
            self.shared_ref = ("jointmodeller-shared", token)
            self.workers = int(workers)
            self._close = lambda: pool.shutdown(cancel_futures=True)
        elif self.kind == "dask":
            self._client, self._close = dask_client(scheduler)
            if shared is not None:
                self.shared_ref = self._client.scatter(shared, broadcast=True, hash=False)
            self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))

    def map(self, fn: Callable[[Any], Any], cases: Sequence[Any]) -> list:
        cases = list(cases)
        if self._pool is not None:  # kind "processes"
            return list(self._pool.map(fn, cases))
        if self._client is not None:  # kind "dask"
            return self._client.gather(self._client.map(fn, cases, pure=False))
        return [fn(c) for c in cases]

    def close(self) -> None:
        self._close()
        self._close = lambda: None

    def __enter__(self) -> "CaseExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
