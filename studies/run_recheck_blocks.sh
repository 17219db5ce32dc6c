#!/bin/bash
# Issue 19's direct cells at n = m = 1000 rechecked with a given commit's code (session 33,
# studies/results/README_detm.md): `recheck-direct` in blocks of 10 replicates going round
# the cells, at most MAX replicates per cell, no block started after STOP_EPOCH. Run from
# the root of a tree at the commit to check.
# usage: run_recheck_blocks.sh OUT STOP_EPOCH design:model:pi:max ...
out=$1; stop=$2; shift 2
for first in 0 10 20 30 40 50 60 70; do
  for spec in "$@"; do
    cell=${spec%:*}; max=${spec##*:}
    [ "$first" -ge "$max" ] && continue
    if [ "$(date -u +%s)" -ge "$stop" ]; then echo "stop $(date -u)"; exit 0; fi
    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 nice -n 10 python studies/detm_interval.py recheck-direct \
      --tag _d _e _f_scar _f_scar_b _f_gamma _g_scar --n 1000 --cells "$cell" --first $first --reps 10 --out "$out"
  done
done
echo "done $(date -u)"
