#!/usr/bin/env bash
# bench/batches/layer.sh: the MoE layer (Qwen3-30B-A3B, Mixtral) against torch and SonicMoE (when
# importable: ../shared/peers' unpack script sourced first where it is there), the Qwen3 step again
# with trials autotuned in, the step's profile, the compiled Qwen3 step
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ -f .peer/unpack.sh ] && . .peer/unpack.sh
gpu_name
step module 240 ensure_module
TAILN=30 step layer_qwen3 200 python3 bench/bench_layer.py --configs qwen3-30b-a3b --modes eager-fwd,eager-fwd+bwd \
  --routings router --peers --router gemmops --iters 10 --repeats 3
# The same step with every trial path and design in, each piece's design chosen by timing (trials too).
TAILN=30 step layer_qwen3_tuned 150 env GEMMOPS_AUTOTUNE=1 GEMMOPS_TRIAL_DESIGNS=1 python3 bench/bench_layer.py \
  --configs qwen3-30b-a3b --modes eager-fwd+bwd --routings router --peers --router gemmops --iters 10 --repeats 3
TAILN=40 step profile_qwen3 120 python3 bench/profile_layer.py --configs qwen3-30b-a3b --peers --router gemmops --top 14
TAILN=30 step layer_mixtral 200 python3 bench/bench_layer.py --configs mixtral-8x7b --modes eager-fwd+bwd \
  --routings router --peers --iters 5 --repeats 3
TAILN=30 step layer_compiled 150 python3 bench/bench_layer.py --configs qwen3-30b-a3b --modes compile-fwd+bwd \
  --routings router --iters 10 --repeats 3
echo "layer: $(( SECONDS - T0 )) s"
