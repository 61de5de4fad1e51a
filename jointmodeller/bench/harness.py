"""Discover benchmark groups, run them and format the results as JSON or a table."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import platform
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np


@dataclass(frozen=True)
class Figure:
    """One benchmark figure beside its baseline, both measured in the same run.

    ``name`` is the dotted key without the group prefix (e.g. ``"ms_70k"`` in group ``collision``).
    ``ratio`` is ``baseline / value`` for times (lower is better) and ``value / baseline`` for rates,
    so a ratio above 1 always means "better than the baseline".
    """

    name: str
    value: float
    unit: str
    baseline: float | None
    baseline_name: str
    lower_is_better: bool = True
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or not np.isfinite(self.baseline) or self.value == 0:
            return None
        if self.lower_is_better:
            return float(self.baseline) / float(self.value)
        return float(self.value) / float(self.baseline) if self.baseline else None


def time_call(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """Best-of-``repeat`` wall time of ``number`` calls of ``fn``, in seconds per call."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


#: modules of this package that are not groups: the harness, and peers' model translations that a
#: group measures beside ours (mujoco_peer: in the dynamics group)
NOT_GROUPS = frozenset({"harness", "__main__", "mujoco_peer"})


def group_names() -> list[str]:
    """All benchmark groups: the modules of this package other than NOT_GROUPS."""
    import jointmodeller.bench as pkg

    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if m.name not in NOT_GROUPS)


def machine_info() -> dict:
    """What the figures were measured on."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
    }


def run_groups(only: Iterable[str] | None = None, log=print) -> dict:
    """Run the selected groups; a failing group is reported in ``errors`` and the rest still run."""
    wanted = set(only) if only else None
    figures: dict[str, dict] = {}
    errors: dict[str, str] = {}
    for group in group_names():
        if wanted and group not in wanted:
            continue
        log(f"[bench] {group} ...")
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(f"jointmodeller.bench.{group}")
            results: list[Figure] = module.run()
        except Exception as exc:  # a broken group must not hide the others' figures
            errors[group] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
            continue
        for fig in results:
            figures[f"{group}.{fig.name}"] = {
                "value": float(fig.value),
                "unit": fig.unit,
                "baseline": None if fig.baseline is None else float(fig.baseline),
                "baseline_name": fig.baseline_name,
                "ratio": fig.ratio,
                **({"note": fig.note} if fig.note else {}),
            }
        log(f"[bench] {group} done in {time.perf_counter() - t0:.1f} s")
    if wanted:
        unknown = wanted - set(group_names())
        for name in sorted(unknown):
            errors[name] = f"no benchmark group named {name!r}; known: {', '.join(group_names())}"
    return {"machine": machine_info(), "figures": figures, "errors": errors}


def format_table(result: dict) -> str:
    """A plain-text table of the figures for humans."""
    lines = [f"{'figure':40s} {'value':>14s} {'unit':8s} {'baseline':>14s}  baseline_name  ratio"]
    for name, f in result["figures"].items():
        base = "-" if f["baseline"] is None else f"{f['baseline']:.4g}"
        ratio = "-" if f["ratio"] is None else f"{f['ratio']:.3g}x"
        lines.append(f"{name:40s} {f['value']:14.4g} {f['unit']:8s} {base:>14s}  {f['baseline_name']}  {ratio}")
    for name, err in result["errors"].items():
        lines.append(f"ERROR in group {name}: {err.splitlines()[0]}")
    return "\n".join(lines)


def to_json(result: dict) -> str:
    return json.dumps(result, indent=2, sort_keys=True)
