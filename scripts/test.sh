#!/usr/bin/env bash
# Set up (system packages, .venv with test extras) and run every check: the layering contracts,
# the test suite (GUI tests under Xvfb, started by pytest-xvfb), then the wheel check (a built wheel
# installed into a fresh virtualenv opens, runs and saves a project from outside the repository:
# scripts/wheel_check.sh; JM_SKIP_WHEEL_CHECK=1 skips it when iterating on a few tests).
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
  rc=1
fi
if [ "${JM_SKIP_WHEEL_CHECK:-0}" != 1 ]; then
  echo "[test] wheel check"
  scripts/wheel_check.sh || { echo "[test] wheel check FAILED" >&2; rc=1; }
fi
exit "$rc"
