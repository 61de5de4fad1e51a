#!/usr/bin/env bash
# Lint: ruff (pycodestyle, pyflakes, isort, pep8-naming adapted to frame names, bugbear; configured
# in pyproject.toml) and the architecture contracts (import-linter, also in pyproject.toml).
# Runs every check and fails if any failed. Expects .venv with the test extra (scripts/setup.sh test).
set -uo pipefail
cd "$(dirname "$0")/.."
rc=0
echo "[lint] ruff"
.venv/bin/ruff check --output-format concise . || rc=1
echo "[lint] architecture contracts (import-linter)"
out=$(.venv/bin/lint-imports --no-cache 2>&1) || rc=1
echo "$out" | tail -n 8
exit "$rc"
