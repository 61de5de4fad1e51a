#!/usr/bin/env bash
# Issue 15's variant matrix, from the CLI only: the lenhart2015 anterior drawer at 25° flexion,
# −100…+100 N in 21 loads, for both contact laws × 3 and 6 mm cartilage × gravity on and off ×
# the patellofemoral joint: free under 100 N of quadriceps tone ("free"), left out ("none": the
# built-in knee demo, the tibiofemoral joint alone) or locked as imported ("locked": its tendon then
# pulls the tibia into the femur with ~4.4 kN at 25°).
#   scripts/knee_matrix.sh BASE.jmdb OUT_DIR
# BASE: `import-osim lenhart2015.osim` (with --geometry-path to the meshes) then `coordinates
# --lock-all --free knee_add_r,knee_rot_r,knee_tx_r,knee_ty_r,knee_tz_r --set knee_flex_r=25`.
# Environment: PFS="free none" (which patellofemoral variants; also "locked"), MAXS (seconds per sweep, 900).
# Writes OUT_DIR/summary.csv: variant, status, steps solved, seconds, measure at +100 N, message.
set -u
J=${J:-jointmodeller}
BASE=$1; OUT=$2; MAXS=${MAXS:-900}
mkdir -p "$OUT"
[ -f "$OUT/summary.csv" ] || echo "variant,status,steps_solved,seconds,measure_at_max_load,message" > "$OUT/summary.csv"
for law in elastic_foundation mjm_springs; do for t in 3 6; do for g in on off; do for pf in ${PFS:-free none}; do
  v="$law-${t}mm-g$g-pf$pf"; f="$OUT/$v.jmdb"
  if [ $pf = none ]; then
    [ -f "$OUT/knee_demo.jmdb" ] || $J demo --knee "$OUT/knee_demo.jmdb" >/dev/null
    cp "$OUT/knee_demo.jmdb" "$f"
    $J cartilage "$f" --bone femur_distal_r --facing tibia_proximal_r --thickness-mm $t --replace >/dev/null
  else
    cp "$BASE" "$f"
    $J cartilage "$f" --bone femur_distal_r --facing tibia_proximal_r,patella_r --thickness-mm $t --replace >/dev/null
  fi
  $J contact add "$f" tf_contact tibia_proximal_r femur_distal_r --method $law --thickness-mm $t --replace >/dev/null
  tone=()
  if [ $pf = free ]; then
    $J contact add "$f" pf_contact patella_r femur_distal_r --method $law --thickness-mm $t --replace >/dev/null
    $J coordinates "$f" --free pf_flex_r,pf_rot_r,pf_tilt_r,pf_tx_r,pf_ty_r,pf_tz_r >/dev/null
    tone=(--tone vasmed_r=25 --tone vaslat_r=25 --tone vasint_r=25 --tone recfem_r=25)
  elif [ $pf = locked ]; then
    $J contact remove "$f" pf_contact >/dev/null
  fi
  [ $g = off ] && $J project "$f" --gravity 0,0,0 >/dev/null
  $J experiment add "$f" drawer --fixed femur_distal_r --moving tibia_proximal_r --load-kind anterior_posterior \
     --max-load 100 --steps 11 --flexion-deg 25 --load-point-mm 0,-100,0 "${tone[@]}" --replace >/dev/null
  start=$(date +%s)
  $J run "$f" --study laxity --experiment drawer --max-wall-s "$MAXS" > "$OUT/$v.log" 2>&1
  secs=$(( $(date +%s) - start ))
  status=$(grep -o "laxity [a-z]*$" "$OUT/$v.log" | head -1 | cut -d' ' -f2)
  steps=$(grep -o "steps_solved: [0-9]*" "$OUT/$v.log" | cut -d' ' -f2)
  msg=$(grep -m1 "no equilibrium\|stopped at" "$OUT/$v.log" | tr ',' ';' | cut -c1-300)
  at_max=$(python - "$f" <<'PY'
import sys
import numpy as np
from jointmodeller.persistence import ProjectStore
with ProjectStore(sys.argv[1]) as store:
    run = store.load_run(store.list_runs()[-1].id)
s = run.series
if len(s.get("load", ())):
    i = int(np.argmax(s["load"]))
    print(f"{float(s['measure'][i]):.2f}")
PY
)
  echo "$v,$status,${steps:-0},$secs,$at_max,$msg" | tee -a "$OUT/summary.csv"
done; done; done; done
