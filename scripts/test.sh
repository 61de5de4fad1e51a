#!/usr/bin/env bash
# Set up (system packages, .venv with test extras) and run every check: lint (ruff and the layering
# contracts, scripts/lint.sh), the type check (mypy, scripts/typecheck.sh), the test suite (GUI tests
# under Xvfb, started by pytest-xvfb), then the wheel check (a built wheel installed into a fresh
# virtualenv opens, runs and saves a project from outside the repository: scripts/wheel_check.sh;
# JM_SKIP_WHEEL_CHECK=1 skips it when iterating on a few tests).
# A failed lint or type check fails the run; the tests still run, so one run shows everything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
. .venv/bin/activate
rc=0
failed=""
scripts/lint.sh || { rc=1; failed="$failed lint"; }
scripts/typecheck.sh || { rc=1; failed="$failed typecheck"; }
echo "[test] pytest"
set +e
python -m pytest "$@"
prc=$?
set -e
if [ "$prc" = 5 ]; then
  echo "pytest collected no tests" >&2
fi
if [ "$prc" != 0 ]; then rc=1; failed="$failed pytest"; fi
if [ "${JM_SKIP_WHEEL_CHECK:-0}" != 1 ]; then
  echo "[test] wheel check"
  scripts/wheel_check.sh || { rc=1; failed="$failed wheel-check"; }
fi
if [ "$rc" != 0 ]; then
  echo "[test] FAILED:$failed" >&2
fi
exit "$rc"
