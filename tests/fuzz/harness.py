"""Runs fuzz cases in a child process under a memory cap (RLIMIT_AS) and a per-case time cap.
Each kind of file (projects, JSON, meshes, .osim, CSV) is read in a fresh child: a reader that ran
out of its address space inside a native library (OpenBLAS under the cap) cannot leave state that
turns another kind's case into a failure (an SVD that "did not converge" on a valid rotation in the
.osim cases after the mesh bombs, seen once on a loaded machine).

One child reads every case in turn (child.py); when it dies (a crash: signal, abort) or stops
answering for longer than the time cap (a hang inside C code), the case it was on is recorded as
"crash" or "hang" and a new child carries on from the next case.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

MEMORY_CAP_BYTES = 3 << 30
"""3 GiB of address space for the reading process (issue 19: memory ≤ 3 GiB)."""
CASE_TIME_S = 30.0
"""Per-case time cap (issue 19: each case ≤ 30 s)."""
REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("child.py")


@dataclass
class Outcome:
    kind: str
    name: str
    path: str
    outcome: str  # ok | error | traceback | hang | crash
    cls: str = ""
    message: str = ""
    traceback: str = ""
    seconds: float = 0.0


@dataclass
class Batch:
    outcomes: list[Outcome] = field(default_factory=list)
    wall_s: float = 0.0
    children: int = 0
    max_rss_mib: float = 0.0


def _limits() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _read_results(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a crash
            break
    return out


def run_cases(cases: list[dict], workdir: Path, case_time_s: float = CASE_TIME_S) -> Batch:
    """cases: dicts with kind, name, path. Returns one Outcome per case, in order."""
    manifest = workdir / "manifest.json"
    manifest.write_text(json.dumps(cases))
    results = workdir / "results.jsonl"
    results.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]]
                                                                        if os.environ.get("PYTHONPATH") else [])),
               JM_FUZZ_CASE_TIME_S=str(max(1, int(case_time_s))))
    done: dict[int, dict] = {}
    special: dict[int, tuple[str, str]] = {}
    batch = Batch()
    t0 = time.perf_counter()
    start = 0
    while start < len(cases):
        batch.children += 1
        proc = subprocess.Popen([sys.executable, str(CHILD), str(manifest), str(results), str(start)], env=env,
                                cwd=str(workdir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                preexec_fn=_limits)
        last_start, started_at = None, time.perf_counter()
        stderr_tail = b""
        while True:
            try:
                _, err = proc.communicate(timeout=0.2)
                stderr_tail = (err or b"")[-3000:]
                break
            except subprocess.TimeoutExpired:
                pass
            records = _read_results(results)
            starts = [r["i"] for r in records if r["phase"] == "start"]
            if starts and starts[-1] != last_start:
                last_start, started_at = starts[-1], time.perf_counter()
            # the first case's clock includes the child's imports
            cap = case_time_s + 10.0 + (120.0 if last_start is None else 0.0)
            if time.perf_counter() - started_at > cap:
                proc.kill()
                proc.wait()
                if last_start is not None:
                    special[last_start] = ("hang", f"no answer after {cap:.0f} s (killed)")
                break
        records = _read_results(results)
        for r in records:
            if r["phase"] == "done":
                done[r["i"]] = r
        starts = [r["i"] for r in records if r["phase"] == "start"]
        unfinished = [i for i in starts if i not in done and i not in special]
        if proc.returncode not in (0, None) and unfinished:
            special[unfinished[-1]] = ("crash", f"reader process died (status {proc.returncode}): "
                                       + stderr_tail.decode("utf-8", "replace")[-1500:])
        handled = set(done) | set(special)
        if proc.returncode == 0 and all(i in handled for i in range(start, len(cases))):
            break
        nxt = max(handled) + 1 if handled else start
        if nxt <= start:  # no case finished: the child died before (or at) the first one
            special[start] = ("crash", "reader process died before answering (status "
                              f"{proc.returncode}): " + stderr_tail.decode("utf-8", "replace")[-1500:])
            nxt = start + 1
        start = nxt
    batch.max_rss_mib = max([r.get("rss_mib", 0.0) for r in done.values()] + [0.0])
    batch.wall_s = time.perf_counter() - t0
    for i, case in enumerate(cases):
        if i in special:
            kind, message = special[i]
            batch.outcomes.append(Outcome(case["kind"], case["name"], case["path"], kind, message=message))
        elif i in done:
            r = done[i]
            batch.outcomes.append(Outcome(case["kind"], case["name"], case["path"], r["outcome"], r.get("cls", ""),
                                          r.get("message", ""), r.get("traceback", ""), r.get("seconds", 0.0)))
        else:
            batch.outcomes.append(Outcome(case["kind"], case["name"], case["path"], "crash",
                                          message="never reached (the reader process ended early)"))
    return batch


def problem(o: Outcome) -> str | None:
    """Why an outcome is not acceptable, or None: every failure must be the app's own error class
    (JointModellerError) with a clear message — one line, or one line per problem for a
    ValidationError — no traceback, hang or crash."""
    if o.outcome == "ok":
        return None
    if o.outcome != "error":
        return f"{o.outcome}: {o.cls} {o.message[:300]}\n{o.traceback[-1500:]}"
    text = o.message.strip()
    lines = text.splitlines()
    if not text:
        return f"{o.cls} with an empty message"
    if "Traceback" in text:
        return f"{o.cls} message holds a traceback: {text[:300]}"
    if len(lines) > 1 and o.cls != "ValidationError":
        return f"{o.cls} message of {len(lines)} lines: {text[:300]}"
    if any(len(line) > 600 for line in lines):
        return f"{o.cls} message line longer than 600 characters: {text[:300]}…"
    return None
