"""Laxity report files: summary.json, curve CSVs, PNG plots (matplotlib, Agg) and a one-page HTML.

Input is plain data (a summary dict and numpy arrays) so this module knows nothing of the studies.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def _json_safe(value):
    """Replace NaN/inf by None and numpy scalars/arrays by plain Python, recursively."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return _json_safe(value.tolist())
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_summary_json(path: str | os.PathLike, summary: dict) -> Path:
    """summary.json, sorted keys, NaN written as null (strict JSON)."""
    p = Path(path)
    p.write_text(json.dumps(_json_safe(summary), indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
    return p


def write_curve_csv(path: str | os.PathLike, columns: dict[str, np.ndarray]) -> Path:
    """One CSV with a header row; ``columns`` name -> (k,) array (all the same length)."""
    p = Path(path)
    names = list(columns)
    data = [np.asarray(columns[n]).reshape(-1) for n in names]
    k = data[0].size if data else 0
    if any(d.size != k for d in data):
        raise ValueError("curve columns differ in length: " + ", ".join(f"{n}={d.size}" for n, d in zip(names, data)))
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for i in range(k):
            w.writerow([repr(float(d[i])) if np.issubdtype(d.dtype, np.number) else str(d[i]) for d in data])
    return p


def plot_curve(path: str | os.PathLike, loads: np.ndarray, values: np.ndarray, *, xlabel: str, ylabel: str,
               title: str, measured: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
               extra_curves: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> Path:
    """Load–displacement PNG: simulated curve (line, in sweep order per branch), optional measured points
    (loads, values, repeat ids) and further labelled curves (e.g. the calibrated model)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 4.2), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    order = np.argsort(loads, kind="stable")
    ax.plot(np.asarray(loads)[order], np.asarray(values)[order], "-o", ms=3, color="#1f5f9e", label="model")
    for label, (lo, va) in (extra_curves or {}).items():
        o = np.argsort(lo, kind="stable")
        ax.plot(np.asarray(lo)[o], np.asarray(va)[o], "--", color="#c0392b", label=label)
    if measured is not None:
        ml, mv, mr = measured
        for rep in np.unique(mr):
            sel = mr == rep
            ax.plot(ml[sel], mv[sel], "s", ms=4, alpha=0.8, label=f"measured (repeat {int(rep)})")
    ax.axhline(0.0, color="0.7", lw=0.8)
    ax.axvline(0.0, color="0.7", lw=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    p = Path(path)
    fig.savefig(p, format="png")
    return p


def plot_tissue_forces(path: str | os.PathLike, loads: np.ndarray, tension_N: np.ndarray, names: list[str],
                       *, xlabel: str, title: str) -> Path:
    """Tissue tension [N] against load, one line per tissue."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 4.2), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    order = np.argsort(loads, kind="stable")
    for j, name in enumerate(names):
        ax.plot(np.asarray(loads)[order], np.asarray(tension_N)[order, j], "-", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("tension [N]")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    if names:
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    p = Path(path)
    fig.savefig(p, format="png")
    return p


def _table(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return "<table>" + cells + "</table>"


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def write_html_summary(path: str | os.PathLike, summary: dict, images: Sequence[str | os.PathLike]) -> Path:
    """A self-contained one-page HTML: headline numbers, fit and calibration tables, embedded PNGs."""
    exp = summary.get("experiment", {})
    rows = [("project", _fmt(summary.get("project", ""))), ("experiment", _fmt(exp.get("name", ""))),
            ("joint", f"{exp.get('moving_body', '')} relative to {exp.get('fixed_body', '')}"),
            ("protocol", f"{exp.get('load_kind', '')}, ±{_fmt(exp.get('max_load', ''))} in {exp.get('steps', '')} steps"
                         + (f", lever {_fmt(exp.get('lever_m', ''))} m"
                            if exp.get("load_kind") == "varus_valgus" else "")),
            ("flexion", f"{_fmt(exp.get('flexion_deg', ''))}°"),
            ("laxity (total range)", f"{_fmt(summary.get('laxity', float('nan')))} {summary.get('unit', '')}"),
            ("run time", f"{_fmt(summary.get('seconds', float('nan')))} s")]
    for k, v in (summary.get("stiffness") or {}).items():
        rows.append((f"stiffness, {k.replace('_', ' ')}", f"{_fmt(v)} {summary.get('stiffness_unit', '')}"))
    parts = [f"<h1>{html.escape(str(summary.get('title', 'Laxity experiment')))}</h1>", _table(rows)]
    fit = summary.get("fit")
    if fit:
        parts.append("<h2>Against measured data</h2>")
        parts.append(_table([(k.replace("_", " "), _fmt(v)) for k, v in fit.items() if not isinstance(v, dict)]))
    cal = summary.get("calibration")
    if cal:
        parts.append("<h2>Calibration</h2>")
        head = ("<tr><th>parameter</th><th>start</th><th>fitted</th><th>std</th><th>95% interval</th>"
                "<th>identifiability</th></tr>")

        def note(p: dict) -> str:
            if p.get("fixed"):
                return "fixed: " + str(p["fixed"])
            if p.get("grouped_with"):
                return "one common scale with " + ", ".join(map(str, p["grouped_with"]))
            return ""

        body = "".join(
            f"<tr><td>{html.escape(n)}</td><td>{_fmt(p['start'])}</td><td>{_fmt(p['fitted'])}</td>"
            f"<td>{_fmt(p['std'])}</td><td>{_fmt((p.get('ci95') or [None, None])[0])} – "
            f"{_fmt((p.get('ci95') or [None, None])[1])}</td><td>{html.escape(note(p))}</td></tr>"
            for n, p in cal.get("parameters", {}).items())
        parts.append(f"<table>{head}{body}</table>")
        parts.append(_table([(k.replace("_", " "), _fmt(v)) for k, v in cal.items()
                             if not isinstance(v, (dict, list))]))
    for img in images:
        data = base64.b64encode(Path(img).read_bytes()).decode("ascii")
        parts.append(f'<figure><img alt="{html.escape(Path(img).name)}" src="data:image/png;base64,{data}"/>'
                     f"<figcaption>{html.escape(Path(img).name)}</figcaption></figure>")
    style = ("body{font-family:sans-serif;max-width:900px;margin:1em auto}table{border-collapse:collapse;margin:.5em 0}"
             "th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}img{max-width:440px;display:inline-block}"
             "figure{display:inline-block;margin:4px}")
    doc = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(str(summary.get('title', 'Laxity')))}"
           f"</title><style>{style}</style></head><body>{''.join(parts)}</body></html>\n")
    p = Path(path)
    p.write_text(doc, encoding="utf-8")
    return p
