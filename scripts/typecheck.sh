#!/usr/bin/env bash
# Type check: mypy on model, core, app and persistence (the files and options are in pyproject.toml).
# Expects .venv with the test extra (scripts/setup.sh test).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "[typecheck] mypy"
exec .venv/bin/mypy "$@"
