"""Run independent cases (a parameter study, calibration restarts) on local processes or on Dask.

``run_cases(fn, cases)`` maps a picklable module-level function over picklable cases and returns the
results in case order, whichever executor ran them: a ``concurrent.futures.ProcessPoolExecutor``
(spawned workers, so no inherited threads or numba state) by default, or a Dask distributed cluster
when a scheduler address (``tcp://host:port``) or a ``dask.distributed.Client`` is given.
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
    from dask.distributed import Client
    from dask.distributed import as_completed as dask_completed

    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futures = client.map(fn, cases, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for done, fut in enumerate(dask_completed(futures), start=1):
            results[index[fut.key]] = fut.result()
            if progress is not None:
                progress(done, total)
    finally:
        if own:
            client.close()
    return results
