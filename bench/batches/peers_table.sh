#!/usr/bin/env bash
# bench/batches/peers_table.sh: a device's table against QuACK (issue 31: BENCHMARKS.md per device):
# bench_grouped.py's default rows (the seed, DeepSeek-V3 up, Qwen3-30B-A3B up, gpt-oss-120b up,
# DeepSeek-V3 decode), uniform and Zipf, in one round-robin: the forward against torch and QuACK
# default and autotuned (QuACK from ../shared/peers' unpack script where it is there), then the
# weight gradient against torch (bench_grouped times QuACK on the forward only); AB:
# GEMMOPS_KERNEL_DEFINES for an extra column of ours (bench_grouped --ab), e.g. a kernel define's
# A/B against the build on the same rows
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ -f .peer/unpack.sh ] && . .peer/unpack.sh
gpu_name
step module 240 ensure_module
TAILN=30 step peers_fwd 300 python3 bench/bench_grouped.py --form fwd --dists uniform,zipf --peers --quack-tuned \
  --csv "$OUT/peers_fwd.csv" --markdown "$OUT/peers_fwd.md" ${AB:+--ab "GEMMOPS_KERNEL_DEFINES=$AB"}
TAILN=20 step wgrad 200 python3 bench/bench_grouped.py --form wgrad --dists uniform,zipf \
  --csv "$OUT/wgrad.csv" --markdown "$OUT/wgrad.md" ${AB:+--ab "GEMMOPS_KERNEL_DEFINES=$AB"}
echo "peers_table: $(( SECONDS - T0 )) s"
