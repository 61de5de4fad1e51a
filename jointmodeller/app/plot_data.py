"""What the plots of a run show, Qt-free and without matplotlib: which panels a run's series give
(tissue forces and lengths, contact force over time, a laxity curve with the cadaver data when the
run has it, a coordinate sweep's lengths and moment arms), the curves of each panel in the plotted
units, their axis titles, and the plotted data as CSV columns. gui.plots draws them.
"""

from __future__ import annotations

import csv
import os
from typing import NamedTuple

import numpy as np

from jointmodeller.model.results import RunRecord

TIME_SERIES = (
    ("tissue_force_N", "tissue force [N]", 1.0),
    ("tissue_length_m", "tissue length [mm]", 1000.0),
    ("contact_force_G", "contact force [N]", 1.0),
)
VECTOR_SERIES = ("contact_force_G",)
"""Series of vectors (k, c, 3) plotted as their magnitudes."""
SWEEP_SERIES = (
    ("length_m", "tissue length [mm]", 1000.0),
    ("moment_arm_m", "moment arm [mm]", 1000.0),
)
"""Series of a coordinate sweep (muscle paths), plotted per tissue against the coordinate."""
LAXITY_X = ("load", "load_N", "load_Nm", "applied_load")
LAXITY_Y = ("value", "measure", "laxity_deg", "varus_valgus_deg", "displacement")
UNIT_SUFFIXES = (("_deg", "°"), ("_rad", "rad"), ("_mm", "mm"), ("_m", "m"), ("_N", "N"), ("_Nm", "N·m"))
"""Display units of series name suffixes in axis titles."""


class Panel(NamedTuple):
    """One plot of a run: kind "time" (curves over time), "bars" (the one sample of an equilibrium),
    "sweep" (curves against a swept quantity; key = (x, y) series) or "laxity" (key = (load,
    measure)); label: the y axis title; scale: series units -> plotted units."""

    kind: str
    key: str | tuple[str, str]
    label: str
    scale: float

    @property
    def title(self) -> str:
        """What the panel chooser lists."""
        return "laxity curve" if self.kind == "laxity" else self.label

    @property
    def plotted(self) -> str:
        """The series the panel shows (the y series of a sweep; "laxity" for a laxity curve)."""
        if isinstance(self.key, str):
            return self.key
        return self.key[1] if self.kind == "sweep" else "laxity"


def _pair(panel: Panel) -> tuple[str, str]:
    """The (x, y) series of a sweep or laxity panel."""
    if isinstance(panel.key, str):
        raise ValueError(f"a {panel.kind} panel has one series, not an (x, y) pair")
    return panel.key


def with_unit(name: str) -> str:
    """"varus_valgus_deg" -> "varus valgus [°]"; a name without a unit suffix keeps its words."""
    for suffix, unit in sorted(UNIT_SUFFIXES, key=lambda su: -len(su[0])):
        if name.endswith(suffix) and len(name) > len(suffix):
            return f"{name[: -len(suffix)].replace('_', ' ')} [{unit}]"
    return name.replace("_", " ")


def axis_label(run: RunRecord, key: str) -> str:
    """An axis title with its unit for a series name: the laxity load (N or N·m, from the run's
    stiffness unit) and measure (e.g. varus_valgus_deg -> "varus valgus [°]"), a swept coordinate,
    or the name itself."""
    if key == "load" and run.study == "laxity":
        unit = str(run.summary.get("stiffness_unit") or "").split("/")[0]
        kind = str(run.parameters.get("load_kind", "")).replace("_", "–")
        return f"applied {kind + ' ' if kind else ''}load" + (f" [{unit}]" if unit else "")
    if key == "measure" and run.study == "laxity":
        name = str(run.parameters.get("measure") or run.summary.get("measure") or "measure")
        return with_unit(name)
    return with_unit(key)


def times(run: RunRecord) -> np.ndarray | None:
    """The run's sample times (k,), or None when it has none (a sweep)."""
    return np.asarray(run.series["time"], float).reshape(-1) if "time" in run.series else None


def panels(run: RunRecord) -> list[Panel]:
    """The panels the run's series give, in order."""
    s = run.series
    out = []
    t = times(run)
    if t is not None:
        # one sample (an equilibrium): a bar per tissue or contact, not a one-point time series
        kind = "bars" if t.shape[0] == 1 else "time"
        for key, label, scale in TIME_SERIES:
            if key in s and np.asarray(s[key]).shape[0] == t.shape[0] and np.asarray(s[key]).size:
                out.append(Panel(kind, key, label, scale))
    xk = next((k for k in LAXITY_X if k in s), None)
    yk = next((k for k in LAXITY_Y if k in s), None)
    if xk and yk:
        out.append(Panel("laxity", (xk, yk), "laxity", 1.0))
        tension = np.asarray(s.get("tissue_tension_N", np.zeros((0, 0))))
        n = np.asarray(s[xk]).reshape(-1).shape[0]
        if tension.ndim == 2 and tension.shape[0] == n and tension.shape[1] > 0 and n > 0:
            out.append(Panel("sweep", (xk, "tissue_tension_N"), "tissue tension [N]", 1.0))
    coordinate = run.parameters.get("coordinate") if run.study == "muscle_paths" else None
    xk = f"{coordinate}_{run.parameters.get('unit', 'deg')}" if coordinate else None
    if xk in s:  # a coordinate sweep: one curve per tissue against the coordinate
        for key, label, scale in SWEEP_SERIES:
            if key in s and np.asarray(s[key]).shape[0] == np.asarray(s[xk]).shape[0]:
                out.append(Panel("sweep", (xk, key), label, scale))
    return out


def curve_names(run: RunRecord, panel: Panel) -> list[str]:
    """Names of the panel's curves (the labels of its y series, else the run's tissue names)."""
    key = panel.key if isinstance(panel.key, str) else panel.key[1]
    return list(run.labels.get(key) or run.labels.get("tissue") or [])


def curves(run: RunRecord, panel: Panel) -> tuple[np.ndarray | None, np.ndarray, list[str]]:
    """(x (k,) or None, y (k, c) in the plotted units, curve names) of a "time", "bars" (k = 1, the
    one sample) or "sweep" panel: the one reading of a panel's series, for the figure and the CSV."""
    s = run.series
    if panel.kind == "sweep":
        xk, yk = _pair(panel)
        xs = np.asarray(s[xk], float).reshape(-1)
        return xs, np.asarray(s[yk], float).reshape(xs.shape[0], -1) * panel.scale, run.labels.get(yk) or []
    key = str(panel.key)
    x = times(run) if panel.kind == "time" else None
    k = 1 if x is None else x.shape[0]
    y = np.asarray(s[key], float)
    if key in VECTOR_SERIES:
        y = np.linalg.norm(y.reshape(k, -1, 3), axis=-1)
    return x, y.reshape(k, -1) * panel.scale, curve_names(run, panel)


def measured(run: RunRecord) -> tuple[np.ndarray, np.ndarray] | None:
    """The cadaver data a laxity run carries (loads, values), or None."""
    s = run.series
    if "measured_load" in s and "measured_value" in s:
        return np.asarray(s["measured_load"], float).reshape(-1), np.asarray(s["measured_value"], float).reshape(-1)
    return None


def plot_columns(run: RunRecord, shown: list[Panel]) -> tuple[list[str], list[np.ndarray]]:
    """(header, columns) of the plotted curves, in the units of the plot axes."""
    s = run.series
    header, columns = [], []
    t = times(run)
    if t is not None and any(p.kind in ("time", "bars") for p in shown):
        header.append("time [s]")
        columns.append(t)
    for p in shown:
        if p.kind in ("bars", "time", "sweep"):
            x, y, names = curves(run, p)
            if p.kind == "sweep" and x is not None and p.key[0] not in header:
                header.append(str(p.key[0]))
                columns.append(x)
            for j in range(y.shape[1]):
                header.append(f"{p.label} {names[j] if j < len(names) else j}")
                columns.append(y[:, j])
        else:
            xk, yk = _pair(p)
            header += [xk, yk]
            columns += [np.asarray(s[xk], float).reshape(-1), np.asarray(s[yk], float).reshape(-1)]
            data = measured(run)
            if data is not None:
                header += ["measured_load", "measured_value"]
                columns += list(data)
    return header, columns


def write_plot_csv(path: str | os.PathLike, run: RunRecord, shown: list[Panel]) -> str:
    """The plotted data as CSV (time, then one column per curve in the plotted units; a laxity curve
    as its load and measure columns); shorter columns leave their cells empty. Returns the path."""
    header, columns = plot_columns(run, shown)
    n = max((len(c) for c in columns), default=0)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for i in range(n):
            w.writerow([repr(float(c[i])) if i < len(c) else "" for c in columns])
    return str(path)


__all__ = ["Panel", "axis_label", "curve_names", "curves", "measured", "panels", "plot_columns", "times", "with_unit",
           "write_plot_csv"]
