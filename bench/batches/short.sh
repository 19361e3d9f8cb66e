#!/usr/bin/env bash
# bench/batches/short.sh: for a call of a few minutes: the GPU tests of FILTER (C++) and PYTESTS
# (pytest -k), built side by side, then fp8 against DeepGEMM with FP8_AB's defines as the other column
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_name
export GEMMOPS_KERNEL_WATCHDOG=20 GEMMOPS_TRIAL_DESIGNS=1
( cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DGEMMOPS_GTEST_SOURCE_DIR="$PWD/$BUNDLE/googletest" \
  && cmake --build build/gpu -j "$(nproc)" --target gemmops_gpu_tests ) > "$OUT/build-cpp.log" 2>&1 &
cpp=$!
ensure_module > "$OUT/build-python.log" 2>&1 &
py=$!
wait $cpp; echo "=== C++ built: rc $? ($(left) s left)"; tail -3 "$OUT/build-cpp.log"
TAILN=25 step gtests 150 python3 scripts/gtest_shards.py build/gpu/tests/gemmops_gpu_tests --shards 12 \
  --test-timeout 60 --deadline 140 --filter "${FILTER:-*}" --label "gpu (C++), $FILTER" &
gt=$!
wait $py; echo "=== Python module built: rc $? ($(left) s left)"; tail -3 "$OUT/build-python.log"
TAILN=25 step pytests 150 python3 -m pytest -q -rs -p no:cacheprovider tests/python -k "${PYTESTS:-gpu}"
wait $gt
TAILN=60 step fp8 170 python3 bench/bench_fp8.py --reps 15 --rows deepgemm,uniform ${FP8_AB:+--ab-defines "$FP8_AB"}
echo "short: $(( SECONDS - T0 )) s"
