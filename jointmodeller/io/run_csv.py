"""CSV export of a stored run: one row per sample, one column per scalar of every series."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from jointmodeller.model.results import RunRecord


def run_columns(run: RunRecord) -> tuple[list[str], np.ndarray]:
    """Column names and a (k, c) table of every series whose first axis is the sample index.

    Trailing axes are flattened; labels (body or tissue names) name the columns where given,
    e.g. ``tissue_force_N[MCL anterior]`` or ``body_p_G[ulna][2]``.
    """
    if not run.series:
        return [], np.zeros((0, 0))
    n = None
    for key in ("time", "load", "step"):
        if key in run.series:
            n = len(run.series[key])
            break
    if n is None:
        n = len(next(iter(run.series.values())))
    names: list[str] = []
    blocks: list[np.ndarray] = []
    for name, values in run.series.items():
        a = np.asarray(values)
        if a.ndim == 0 or a.shape[0] != n:
            continue
        flat = a.reshape(n, -1).astype(float)
        blocks.append(flat)
        labels = run.labels.get(name)
        trailing = a.shape[1:]
        if not trailing:
            names.append(name)
            continue
        for idx in np.ndindex(*trailing):
            parts = []
            for axis, i in enumerate(idx):
                if axis == 0 and labels and len(labels) == trailing[0]:
                    parts.append(f"[{labels[i]}]")
                else:
                    parts.append(f"[{i}]")
            names.append(name + "".join(parts))
    return names, np.hstack(blocks) if blocks else np.zeros((n, 0))


def write_run_csv(run: RunRecord, path: str | Path) -> Path:
    """Write the run's series to ``path`` (UTF-8, comma separated, full float precision)."""
    path = Path(path)
    names, table = run_columns(run)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(names)
        for row in table:
            writer.writerow([repr(float(x)) for x in row])
    return path
