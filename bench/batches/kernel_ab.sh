#!/usr/bin/env bash
# bench/batches/kernel_ab.sh: a kernel change behind a define (DEFINES: the names that switch it on),
# in one call: the GPU suite's tests of FILTER compiled with it (GEMMOPS_KERNEL_DEFINES), then each
# MoE step piece's pick compiled as built and with it, timed round-robin in one process
# (bench_step_gemms --ab-defines) on STEP_CONFIGS
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
: "${DEFINES:?DEFINES: the kernel define(s) to test and time}"
gpu_name
GEMMOPS_KERNEL_DEFINES="$DEFINES" GEMMOPS_LOG_DIR=$OUT/suite_ab timeout -k 5 $(( ${DEADLINE:-200} + 150 )) \
  bash scripts/gpu_test.sh --gtest-source "$BUNDLE/googletest" --wheels "$BUNDLE/wheels" --deadline "${DEADLINE:-200}" \
  --gtest-filter "${FILTER:-*}" --pytest-k "${PYTESTS:-moe_experts and gpu}" 2>&1 | tail -30
echo "=== tests with $DEFINES done ($(left) s left)"
TAILN=40 step step_ab 300 python3 bench/bench_step_gemms.py --configs "${STEP_CONFIGS:-qwen3-30b-a3b,mixtral-8x7b}" \
  --reps 10 --ab-defines "$DEFINES"
echo "kernel_ab: $(( SECONDS - T0 )) s"
