#!/usr/bin/env bash
# Wheel check: what `pip install jointmodeller` gives a user, not the editable install of .venv.
# Builds a wheel from the working tree (tracked and new, non-ignored files, copied to a temp folder so
# no stale build/ can leak into it), installs it into a fresh virtualenv, and from a folder outside the
# repository runs `demo`, `demo --knee`, `info`, an equilibrium study that stores a run, and `runs`. Any failure, or the
# package being imported from anywhere but that virtualenv, fails the check. Temp folders are removed.
#   scripts/wheel_check.sh            (run by scripts/test.sh; needs .venv from scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
PY="$repo/.venv/bin/python"
[ -x "$PY" ] || { echo "[wheel] no .venv: run scripts/setup.sh first" >&2; exit 1; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/jm-wheel.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "[wheel] FAILED: $*" >&2; exit 1; }
t0=$SECONDS

# 1. a wheel from a clean copy of the source
mkdir "$tmp/src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done \
    | tar -c --null -T - | tar -x -C "$tmp/src"
else  # an unpacked source archive
  tar -c --exclude=./.venv --exclude=./build --exclude=./dist --exclude='*.egg-info' \
    --exclude=__pycache__ --exclude=./test-artifacts . | tar -x -C "$tmp/src"
fi
"$PY" -m pip wheel -q --no-deps -w "$tmp/dist" "$tmp/src" >"$tmp/build.log" 2>&1 \
  || { cat "$tmp/build.log" >&2; fail "building the wheel"; }
wheel="$(ls "$tmp"/dist/jointmodeller-*.whl)"
echo "[wheel] built $(basename "$wheel") ($((SECONDS - t0)) s)"
"$PY" - "$wheel" <<'EOF' || fail "the wheel lacks package data"
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = ["jointmodeller/persistence/migrations/" + n for n in ("env.py", "script.py.mako", "alembic.ini")]
need += ["jointmodeller/assets/lenhart2015/" + n for n in (
    "knee.json", "femur_distal_r.ply", "tibia_proximal_r.ply", "tibia_proximal_r_cartilage.ply",
    "LICENSE-lenhart2015.txt", "CREDITS.md")]
missing = [n for n in need if n not in names]
if missing or not any(n.startswith("jointmodeller/persistence/migrations/versions/0001") for n in names):
    sys.exit(f"[wheel] not in the wheel: {missing or 'migrations/versions/'}")
EOF

# 2. a fresh virtualenv (same interpreter as .venv; pip reuses its download cache) with the wheel
"$PY" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q "$wheel" >"$tmp/install.log" 2>&1 \
  || { cat "$tmp/install.log" >&2; fail "installing the wheel"; }
echo "[wheel] installed into a fresh virtualenv ($((SECONDS - t0)) s)"

# 3. use it from outside the repository, with its own mesh cache (the wheel has no assets/)
mkdir "$tmp/work"
cd "$tmp/work"
export JOINTMODELLER_CACHE="$tmp/cache"
unset PYTHONPATH
for where in $("$tmp/venv/bin/python" -c "import jointmodeller; print(jointmodeller.__file__)
from jointmodeller.persistence.schema import MIGRATIONS_DIR; print(MIGRATIONS_DIR)"); do
  case "$where" in
    "$tmp/venv/"*) echo "[wheel] using $where" ;;
    *) fail "jointmodeller (or its migrations) found at $where, not in the fresh virtualenv" ;;
  esac
done
jm="$tmp/venv/bin/jointmodeller"
run() {
  echo "[wheel] \$ jointmodeller $*"
  "$jm" "$@" >"$tmp/out.log" 2>&1 || { cat "$tmp/out.log" >&2; fail "jointmodeller $*"; }
  sed 's/^/[wheel]   /' "$tmp/out.log" | tail -n 4
}
run demo d.jmdb
run info d.jmdb
run demo --knee knee.jmdb
run run d.jmdb --study equilibrium
run runs d.jmdb
grep -Eq "^#1 +equilibrium +completed" "$tmp/out.log" || fail "the completed equilibrium run was not stored"
echo "[wheel] ok ($((SECONDS - t0)) s)"
