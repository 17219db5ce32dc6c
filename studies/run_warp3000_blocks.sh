#!/bin/bash
# Issue 19's n = m = 3000 warp-speed cells, replicates 400-799 (declared in session 33,
# studies/results/README_detm.md): blocks of 10 replicates going round the given cells
# (each block runs both pi), no block started after STOP_EPOCH. Restartable: `run` skips the
# replicates its file already has. Run from the root of a tree at the declared commit.
# usage: run_warp3000_blocks.sh TAG STOP_EPOCH design:model ...
tag=$1; stop=$2; shift 2
for first in $(seq 400 10 790); do
  for cell in "$@"; do
    if [ "$(date -u +%s)" -ge "$stop" ]; then echo "stop $(date -u)"; exit 0; fi
    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 nice -n 10 python studies/detm_interval.py run \
      --n 3000 --resamples 10 --pi 0.3 0.7 --design "${cell%%:*}" --model "${cell##*:}" \
      --first "$first" --reps 10 --tag "$tag"
  done
done
echo "done $(date -u)"
