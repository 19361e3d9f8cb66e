#!/usr/bin/env bash
# bench/batches/routed_sweep.sh: every design (trials in) on the training and prefill rows of
# moe_shapes.csv with multinomial group sizes, as routing leaves them: the data
# `gemmops_fit_calibration --balanced routed` fits
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_name
step module 240 ensure_module
export GEMMOPS_TRIAL_DESIGNS=1
for job in "fwd train 200" "dgrad train 170" "fwd prefill 300"; do
  set -- $job
  TAILN=8 step "sweep_$1_$2" "$3" python3 bench/bench_grouped.py --shapes "$BUNDLE/moe_shapes.csv" --dists routed \
    --filter "$2" --form "$1" --sweep "$OUT/routed_$1_$2.csv"
done
echo "routed_sweep: $(( SECONDS - T0 )) s"
