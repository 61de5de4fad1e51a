"""Runs as CSV tables: the GUI's File › Export run as CSV, the CLI's ``run --csv`` and
``export-run`` (any script can call it too).

One row per sample, one column per scalar of every series: a series of shape (n, k, 3) becomes k×3
columns named ``series[label].x`` (labels from the run, e.g. the tissue names), else by index.
``time`` comes first, then the run's poses as stored (model.results.BodyPoses): ``p_G[body].x``
[m] and the unit quaternion ``q_GB[body].w`` … ``.z`` of every body. Series with fewer rows than
the longest (a laxity run's measured points, a summary value) leave their cells empty below their
last row. Values are written as the shortest text that reads back as the same float64; units are
those of the stored series (SI, ``run.unit(name)``).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from jointmodeller.model.results import RunRecord

AXES = ("x", "y", "z")
QUATERNION = ("w", "x", "y", "z")


def _column_names(name: str, shape: tuple[int, ...], labels: list[str] | None) -> list[str]:
    """Names of the columns of a series whose rows have ``shape`` (rest of its shape)."""
    if not shape:
        return [name]
    out = []
    for idx in np.ndindex(*shape):
        parts = []
        for axis, i in enumerate(idx):
            if axis == 0 and labels and len(labels) == shape[0]:
                parts.append(f"[{labels[i]}]")
            elif axis == len(shape) - 1 and shape[-1] == 3:
                parts.append(f".{AXES[i]}")
            else:
                parts.append(f"[{i}]")
        out.append(name + "".join(parts))
    return out


def run_table(run: RunRecord) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a run as text cells (module docstring)."""
    names = sorted(run.series, key=lambda k: (k != "time", k))
    columns: list[tuple[str, np.ndarray]] = []
    if "time" in run.series:
        columns.append(("time", np.asarray(run.series["time"]).reshape(-1)))
        names.remove("time")
    if run.poses is not None:
        for j, body in enumerate(run.poses.bodies):
            columns += [(f"p_G[{body}].{a}", run.poses.p_G[:, j, i]) for i, a in enumerate(AXES)]
            columns += [(f"q_GB[{body}].{a}", run.poses.q_GB[:, j, i]) for i, a in enumerate(QUATERNION)]
    for key in names:
        a = np.asarray(run.series[key])
        if a.dtype.kind not in "biuf":
            continue
        if a.ndim == 0:
            a = a.reshape(1)
        flat = a.reshape(a.shape[0], -1)
        labels = run.labels.get(key)
        if labels is None and a.ndim > 1 and key.startswith("tissue"):
            labels = run.labels.get("tissue")
        for j, col in enumerate(_column_names(key, a.shape[1:], list(labels) if labels else None)):
            columns.append((col, flat[:, j]))
    n = max((len(c) for _, c in columns), default=0)
    rows = []
    for i in range(n):
        rows.append([_cell(c[i]) if i < len(c) else "" for _, c in columns])
    return [name for name, _ in columns], rows


def _cell(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return repr(float(v)) if np.isfinite(v) else ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf"))


def write_run_csv(run: RunRecord, path: str | os.PathLike) -> Path:
    """Write the run as a CSV table (UTF-8, comma-separated, one header row); returns the path."""
    header, rows = run_table(run)
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


__all__ = ["run_table", "write_run_csv"]
