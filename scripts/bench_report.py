#!/usr/bin/env python3
"""Run `jointmodeller bench --json` (or read its JSON from a file) and write docs/benchmarks.md.

    python scripts/bench_report.py                 # run every group, write docs/benchmarks.md
    python scripts/bench_report.py --from out.json # format an earlier run
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

TARGETS = {
    "dynamics.force_evals_per_s": "≥ 20,000 /s",
    "wrap.ms_per_path_70k": "≤ 5 ms",
    "wrap.ms_per_path_70k_cold": "≤ 25 ms",
    "wrap.cylinder_error_pct_max": "≤ 0.5 %",
    "collision.ms_70k": "≤ 5 ms",
    "mobilizer.knee_accel_speedup": "≥ 5.7× (seed 000)",
    "mobilizer.knee_sim_speedup": "≥ 3.6× (seed 000)",
    "mobilizer.knee_swing_vs_opensim": "≤ 2",
    "gui.viewport_fps_live": "≥ 30 fps",
    "gui.max_stall_ms": "≤ 100 ms",
    "laxity.sweep_s": "≤ 15 s",
    "laxity.knee_sweep_s": "≤ 5 s",
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="src", help="JSON written by `jointmodeller bench --json`")
    ap.add_argument("--out", default=str(REPO / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    if args.src:
        result = json.loads(Path(args.src).read_text())
    else:
        out = subprocess.run([sys.executable, "-m", "jointmodeller", "bench", "--json"], cwd=REPO,
                             capture_output=True, text=True)
        result = json.loads(out.stdout)
    m = result["machine"]
    lines = [
        "# Benchmarks",
        "",
        "Measured by `jointmodeller bench --json` (`make bench`); each figure stands beside a baseline",
        "measured in the same run, so the ratio (above 1 = better than the baseline) is meaningful on a",
        "shared, noisy machine. Timings are never asserted in tests.",
        "",
        f"Latest run: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} on {m['platform']}, "
        f"{m['cpu_count']} cores ({m['processor']}), Python {m['python']}, NumPy {m['numpy']}.",
        "",
        "| figure | value | unit | baseline | baseline is | ratio | target |",
        "| --- | ---: | --- | ---: | --- | ---: | --- |",
    ]
    for name in sorted(result["figures"]):
        f = result["figures"][name]
        base = "–" if f["baseline"] is None else f"{f['baseline']:.4g}"
        ratio = "–" if f["ratio"] is None else f"{f['ratio']:.3g}×"
        lines.append(f"| `{name}` | {f['value']:.4g} | {f['unit']} | {base} | {f['baseline_name']} | {ratio} "
                     f"| {TARGETS.get(name, '')} |")
    notes = [f"- `{n}`: {f['note']}" for n, f in sorted(result["figures"].items()) if f.get("note")]
    if notes:
        lines += ["", "Notes:", ""] + notes
    if result.get("errors"):
        lines += ["", "Groups that failed in this run:", ""]
        lines += [f"- `{g}`: {e.splitlines()[0]}" for g, e in sorted(result["errors"].items())]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
