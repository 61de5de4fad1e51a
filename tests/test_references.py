"""Every "seed 00x" citation in the code, tests and docs resolves through docs/references.md (the
papers themselves lie outside the repository)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"seed (\d{3})")


def test_every_seed_citation_resolves_in_docs_references():
    table = (ROOT / "docs" / "references.md").read_text(encoding="utf-8")
    keys = set(re.findall(r"^\| seed (\d{3}) \|", table, flags=re.M))
    assert {"000", "002", "003", "004"} <= keys
    cited: dict[str, str] = {}
    for folder in ("jointmodeller", "tests", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".md", ".toml") and path.is_file():
                for key in CITATION.findall(path.read_text(encoding="utf-8", errors="replace")):
                    cited.setdefault(key, str(path.relative_to(ROOT)))
    assert cited, "no seed citations found: the scan is broken"
    missing = {k: where for k, where in cited.items() if k not in keys}
    assert not missing, f"seed citations without an entry in docs/references.md: {missing}"


def test_no_citation_points_outside_the_repository():
    """The design brief outside the repo is not cited as the reference for the layering."""
    for path in [ROOT / "pyproject.toml", *(ROOT / "tests").glob("test_architecture.py")]:
        assert "DESIGN.md §" not in path.read_text(encoding="utf-8"), path
