"""The fuzz cases' reader process: ``python child.py MANIFEST RESULTS START``.

Reads each case of the manifest (JSON list of {"kind", "path"}) from index START on, the way the app
does for that kind of file, and appends to RESULTS one JSON line before ("start") and one after
("done": outcome "ok", "error" with the exception's class and message, or "traceback") each case.
The parent (harness.py) sets the memory cap (RLIMIT_AS) and watches for hangs and crashes; a per-case
alarm here turns a hang in Python code into a "hang" outcome without losing the process.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path

CASE_TIME_S = int(os.environ.get("JM_FUZZ_CASE_TIME_S", "30"))


class CaseTimeout(BaseException):
    """Raised by the alarm: not an Exception, so no reader's ``except Exception`` swallows it."""


def _alarm(signum, frame):
    raise CaseTimeout()


def read_project(path: str) -> None:
    from jointmodeller.persistence import ProjectStore

    with ProjectStore(path) as store:
        store.load_project()
        for run in store.list_runs():
            store.load_run(run.id)


def read_json(path: str) -> None:
    from jointmodeller.model.codec import project_from_json

    project_from_json(Path(path).read_bytes())


def read_mesh_file(path: str) -> None:
    """What `import-mesh` does: read, then the mass properties of the surface."""
    from jointmodeller.app.masses import mass_from_mesh
    from jointmodeller.io.meshes import read_mesh

    mesh = read_mesh(path, units="mm")
    mass_from_mesh("fuzz", mesh)


def read_osim(path: str) -> None:
    from jointmodeller.app.osim_import import import_osim

    import_osim(path)


def read_csv(path: str) -> None:
    from jointmodeller.io.measured_csv import read_measured_csv

    read_measured_csv(path)


def selftest(path: str) -> None:
    """The harness's own test: the file says how to misbehave."""
    what = Path(path).read_text().strip()
    if what == "abort":
        os.abort()
    if what == "memory":  # more than the address-space cap
        bytearray(4 << 30)
    if what == "stuck":  # a hang the alarm cannot interrupt (as inside C code)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(3600)
    if what == "slow":
        time.sleep(3600)
    if what == "raise":
        raise KeyError("a traceback")


READERS = {"selftest": selftest, "project": read_project, "json": read_json, "mesh": read_mesh_file, "osim": read_osim,
           "csv": read_csv}


def main(manifest: str, results: str, start: int) -> int:
    from jointmodeller.model.errors import JointModellerError

    cases = json.loads(Path(manifest).read_text())
    # import every reader once, before the first case's clock starts
    for reader in ("jointmodeller.app.masses", "jointmodeller.app.osim_import", "jointmodeller.io.measured_csv",
                   "jointmodeller.io.meshes", "jointmodeller.model.codec", "jointmodeller.persistence"):
        importlib.import_module(reader)
    signal.signal(signal.SIGALRM, _alarm)
    with open(results, "a", encoding="utf-8") as out:
        def emit(record: dict) -> None:
            out.write(json.dumps(record) + "\n")
            out.flush()

        for i in range(start, len(cases)):
            case = cases[i]
            if i > start and case["kind"] != cases[i - 1]["kind"]:
                break  # each kind in a fresh process (the harness starts the next one here)
            emit({"i": i, "phase": "start"})
            t0 = time.perf_counter()
            record = {"i": i, "phase": "done"}
            signal.alarm(CASE_TIME_S)
            try:
                READERS[case["kind"]](case["path"])
                record["outcome"] = "ok"
            except CaseTimeout:
                record["outcome"] = "hang"
            except JointModellerError as exc:
                record.update(outcome="error", cls=type(exc).__name__, message=str(exc))
            except BaseException as exc:  # noqa: BLE001 - what the fuzzing looks for
                record.update(outcome="traceback", cls=type(exc).__name__, message=str(exc)[:2000],
                              traceback=traceback.format_exc(limit=12)[-6000:])
            finally:
                signal.alarm(0)
            record["seconds"] = time.perf_counter() - t0
            record["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
            emit(record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
