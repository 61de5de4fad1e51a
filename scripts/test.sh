#!/usr/bin/env bash
# Set up (system packages, .venv with test extras) and run every check: the layering contracts,
# then the test suite (GUI tests under Xvfb, started by pytest-xvfb).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
. .venv/bin/activate
echo "[test] architecture contracts (import-linter)"
lint-imports --no-cache | tail -n 8
echo "[test] pytest"
set +e
python -m pytest "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
