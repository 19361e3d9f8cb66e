#!/usr/bin/env bash
# bench/batches/layer.sh: the MoE layer (Qwen3-30B-A3B, Mixtral) against torch and SonicMoE (when
# importable: ../shared/peers' unpack script sourced first where it is there; Qwen3's step also
# autotuned, trials in), both steps' profiles, the compiled Qwen3 step; LAYER_AB: kernel defines the
# Qwen3 step is also timed with (bench_layer --ab-defines, '|'-separated variants, after its A/A control)
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ -f .peer/unpack.sh ] && . .peer/unpack.sh
gpu_name
step module 240 ensure_module
# (--autotuned: the same step with each piece's design chosen by timing, trial designs too, in the
# same round-robin; the trials rank last, so the other columns' picks are the offered ones.)
TAILN=30 step layer_qwen3 260 env GEMMOPS_TRIAL_DESIGNS=1 python3 bench/bench_layer.py --configs qwen3-30b-a3b \
  --modes eager-fwd,eager-fwd+bwd --routings router --peers --router gemmops --autotuned --iters 10 --repeats 3 \
  ${LAYER_AB:+--ab-defines "$LAYER_AB"}
TAILN=40 step profile_qwen3 120 python3 bench/profile_layer.py --configs qwen3-30b-a3b --peers --router gemmops --top 14
TAILN=30 step layer_mixtral 200 python3 bench/bench_layer.py --configs mixtral-8x7b --modes eager-fwd+bwd \
  --routings router --peers --iters 5 --repeats 3
# Mixtral's step per kernel against SonicMoE's (never profiled: its step is 0.84-0.88x SonicMoE's,
# while its six GEMMs alone take about SonicMoE's whole step).
TAILN=40 step profile_mixtral 120 python3 bench/profile_layer.py --configs mixtral-8x7b --peers --top 14
TAILN=30 step layer_compiled 150 python3 bench/bench_layer.py --configs qwen3-30b-a3b --modes compile-fwd+bwd \
  --routings router --iters 10 --repeats 3
echo "layer: $(( SECONDS - T0 )) s"
