#!/usr/bin/env bash
# bench/batches/suite_and_pieces.sh: the whole GPU suite (trial designs in), then the routing A/B,
# fp8 against DeepGEMM (importable when PYTHONPATH has it) with FP8_AB's defines as the other
# column, and every design on each step piece of STEP_CONFIGS (the first STEP_TOP candidates; STEP_PIECES:
# only those, ';'-separated; STEP_AB: kernel defines timed against the build, bench_step_gemms --ab-defines;
# SUITE_DEFINES: kernel defines the suite alone is compiled with, so that one call tests a define and
# then times it against the build)
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_name
GEMMOPS_KERNEL_DEFINES="${SUITE_DEFINES:-${GEMMOPS_KERNEL_DEFINES:-}}" GEMMOPS_LOG_DIR=$OUT/suite timeout -k 5 $(( ${DEADLINE:-450} + 60 )) bash scripts/gpu_test.sh \
  --gtest-source "$BUNDLE/googletest" --wheels "$BUNDLE/wheels" --deadline "${DEADLINE:-450}" 2>&1 | tail -40
echo "=== suite done ($(left) s left)"
step route 60 python3 bench/bench_route.py --reps 30
step fp8 180 env GEMMOPS_TRIAL_DESIGNS=1 python3 bench/bench_fp8.py --reps 20 \
  ${FP8_AB:+--ab-defines "$FP8_AB"}
TAILN=70 step stepgemms 400 env GEMMOPS_TRIAL_DESIGNS=1 python3 bench/bench_step_gemms.py \
  --configs "${STEP_CONFIGS:-qwen3-30b-a3b,mixtral-8x7b}" --top "${STEP_TOP:-6}" --reps 10 --csv "$OUT/stepgemms.csv" \
  ${STEP_PIECES:+--pieces "$STEP_PIECES"} ${STEP_AB:+--ab-defines "$STEP_AB"}
echo "suite_and_pieces: $(( SECONDS - T0 )) s"
