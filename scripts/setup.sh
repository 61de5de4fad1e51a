#!/usr/bin/env bash
# Set up everything JointModeller needs on a fresh Debian/Ubuntu machine: the system libraries for
# Qt and VTK (OpenGL, X11/xcb, Xvfb for headless windows) and a virtualenv with the package.
#   scripts/setup.sh          runtime only
#   scripts/setup.sh test     runtime + test tools
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
PY="${PYTHON:-python3}"

debs="xvfb xauth libgl1 libglx-mesa0 libegl1 libxrender1 libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0
      libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 libxcb-shape0
      libxcb-xinerama0 libxcb-xkb1 libfontconfig1 libdbus-1-3"
missing=""
if command -v dpkg-query >/dev/null 2>&1; then
  for d in $debs; do
    dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "ok installed" || missing="$missing $d"
  done
fi
if [ -n "$missing" ]; then
  echo "[setup] installing system packages:$missing"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PY" -m venv .venv
fi
stamp=".venv/.installed-${extra:-run}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "[setup] installing jointmodeller${extra:+[$extra]} into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  if [ -n "$extra" ]; then
    .venv/bin/python -m pip install -q -e ".[$extra]"
  else
    .venv/bin/python -m pip install -q -e .
  fi
  # pip can report a failed wheel build and still exit 0 (seen when its own error printing broke):
  # check that the package really is installed, with its command, before calling the setup done
  if ! .venv/bin/python -c "import importlib.metadata as m; m.version('jointmodeller')" 2>/dev/null \
      || [ ! -x .venv/bin/jointmodeller ]; then
    echo "[setup] jointmodeller did not install into .venv (see pip's output above)" >&2
    exit 1
  fi
  touch "$stamp"
fi
