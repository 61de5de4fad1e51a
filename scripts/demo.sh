#!/usr/bin/env bash
# Set up and run the main job: open the GUI on the built-in demo elbow, or — with no display —
# run the demo's studies headless and print their results.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/jointmodeller "$@"
