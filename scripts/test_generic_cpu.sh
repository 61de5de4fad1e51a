#!/usr/bin/env bash
# The numerical tests as on a plainer CPU: numba compiles for a generic x86-64 (NUMBA_CPU_NAME=generic:
# no AVX, no FMA) into its own cache, numpy's dispatched SIMD paths wider than its baseline are
# switched off (NPY_DISABLE_CPU_FEATURES, computed from numpy itself: only what this CPU has and numpy
# may disable at run time; a name it does not know makes it refuse to import), and OpenBLAS (numpy's
# and scipy's) uses its kernels for numpy's baseline CPU (OPENBLAS_CORETYPE). A test that asserts
# digits or counts which depend on the CPU's floating point fails here first. Run by .ci/run after
# `make test` (about 7 minutes on 2 cores).
#   scripts/test_generic_cpu.sh                  the numerical folders, GUI tests deselected
#   scripts/test_generic_cpu.sh tests/core/mechanics/contact    any pytest arguments instead of the folders
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
. .venv/bin/activate

disable="$(python -c "
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
print(' '.join(f for f in __cpu_dispatch__ if __cpu_features__.get(f)))")"
export NUMBA_CPU_NAME=generic
export NUMBA_CPU_FEATURES=""
export NUMBA_CACHE_DIR="$PWD/.venv/numba-cache-generic"  # never mixed with the native cache
case "$(uname -m)" in  # OpenBLAS kernels for numpy's baseline (x86-64-v2 / plain ARMv8)
  x86_64) export OPENBLAS_CORETYPE=Nehalem ;;
  aarch64) export OPENBLAS_CORETYPE=ARMV8 ;;
esac
if [ -n "$disable" ]; then
  export NPY_DISABLE_CPU_FEATURES="$disable"
else
  unset NPY_DISABLE_CPU_FEATURES
fi
python - <<'EOF'
import os
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
on = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
assert not on, f"numpy still dispatches to {on}"
import numba
print(f"[generic] NUMBA_CPU_NAME={os.environ['NUMBA_CPU_NAME']} (numba {numba.__version__}), "
      f"NPY_DISABLE_CPU_FEATURES={os.environ.get('NPY_DISABLE_CPU_FEATURES', '')!r}, "
      f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(native)')}")
EOF

if [ "$#" = 0 ]; then
  # the numerical core (geometry and wrapping, mechanics and contact, multibody, studies) and the laxity
  # use cases and the spec-to-system build that run it (tests/README.md maps the folders)
  set -- tests/core tests/app/laxity tests/app/test_build_and_studies.py -m "not gui"
fi
echo "[test] generic CPU: pytest $*"
set +e
python -m pytest "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
