#!/usr/bin/env bash
# bench/batches/suite_ab.sh: the whole GPU suite with kernel defines on (DEFINES: the changes to make
# the default if it passes), then the MoE step pieces' picks timed as built against AB (a define not
# yet timed) in one process, then fp8 as built against FP8_AB beside DeepGEMM (PYTHONPATH) if time is left
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_name
GEMMOPS_KERNEL_DEFINES="${DEFINES:-}" GEMMOPS_LOG_DIR=$OUT/suite timeout -k 5 $(( ${DEADLINE:-450} + 60 )) \
  bash scripts/gpu_test.sh --gtest-source "$BUNDLE/googletest" --wheels "$BUNDLE/wheels" \
  --deadline "${DEADLINE:-450}" 2>&1 | tail -40
echo "=== suite with '${DEFINES:-}' done ($(left) s left)"
if [ -n "${AB:-}" ]; then
  TAILN=40 step step_ab 150 python3 bench/bench_step_gemms.py --configs "${STEP_CONFIGS:-qwen3-30b-a3b}" \
    --reps 10 --ab-defines "$AB"
fi
if [ -n "${FP8_AB:-}" ]; then
  step fp8 120 env GEMMOPS_TRIAL_DESIGNS=1 python3 bench/bench_fp8.py --reps 10 --ab-defines "$FP8_AB"
fi
echo "suite_ab: $(( SECONDS - T0 )) s"
