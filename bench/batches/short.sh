#!/usr/bin/env bash
# bench/batches/short.sh: for a call of a few minutes: the GPU suite's tests of FILTER (C++ gpu tier)
# and PYTESTS (pytest -k) only (scripts/gpu_test.sh --gtest-filter / --pytest-k), then fp8 against
# DeepGEMM with FP8_AB's defines as the other column
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_name
GEMMOPS_LOG_DIR=$OUT/suite timeout -k 5 $(( ${DEADLINE:-150} + 120 )) bash scripts/gpu_test.sh \
  --gtest-source "$BUNDLE/googletest" --wheels "$BUNDLE/wheels" --deadline "${DEADLINE:-150}" \
  --gtest-filter "${FILTER:-*}" --pytest-k "${PYTESTS:-gpu}" 2>&1 | tail -30
echo "=== tests done ($(left) s left)"
TAILN=60 step fp8 170 python3 bench/bench_fp8.py --reps 15 --rows deepgemm,uniform ${FP8_AB:+--ab-defines "$FP8_AB"}
echo "short: $(( SECONDS - T0 )) s"
