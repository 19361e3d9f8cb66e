#!/usr/bin/env bash
# bench/batches/kernel_timings.sh: kernel defines timed against the build in one call, no tests (for
# defines whose build the suite has passed, e.g. with suite_and_pieces.sh's SUITE_DEFINES): each
# MoE step piece's pick (bench_step_gemms --ab-defines STEP_AB, variants separated by '|'), the
# pick of the pieces DESIGN_PIECES among the designs named DESIGN (DESIGN_AB, e.g. an unpicked 2-CTA
# twin with its own define), and the fp8 operators (bench_fp8 --ab-defines FP8_AB; DeepGEMM's
# column where PYTHONPATH has it); TIMED_PIECES: those pieces' every candidate, trial designs in
# (bench_step_gemms --pieces, ';'-separated), first
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_name
step module 240 ensure_module
if [ -n "${TIMED_PIECES:-}" ]; then
  TAILN=60 step pieces 200 env GEMMOPS_TRIAL_DESIGNS=1 python3 bench/bench_step_gemms.py \
    --configs "${STEP_CONFIGS:-qwen3-30b-a3b,mixtral-8x7b}" --reps 10 --pieces "$TIMED_PIECES" --csv "$OUT/pieces.csv"
fi
if [ -n "${STEP_AB:-}" ]; then
  TAILN=30 step step_ab 240 python3 bench/bench_step_gemms.py --configs "${STEP_CONFIGS:-qwen3-30b-a3b,mixtral-8x7b}" \
    --reps 10 --ab-defines "$STEP_AB"
fi
if [ -n "${DESIGN_AB:-}" ]; then
  TAILN=10 step design_ab 120 python3 bench/bench_step_gemms.py --configs "${STEP_CONFIGS:-qwen3-30b-a3b,mixtral-8x7b}" \
    --reps 10 --pieces "${DESIGN_PIECES:-up}" --design "${DESIGN:?DESIGN: the design the A/B times}" --ab-defines "$DESIGN_AB"
fi
if [ -n "${FP8_AB:-}" ]; then
  TAILN=30 step fp8_ab 200 env GEMMOPS_TRIAL_DESIGNS=1 python3 bench/bench_fp8.py --reps 15 --ab-defines "$FP8_AB"
fi
echo "kernel_timings: $(( SECONDS - T0 )) s"
