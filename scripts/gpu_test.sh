#!/usr/bin/env bash
# scripts/gpu_test.sh: on a machine with an sm_90a GPU and the toolchain already installed (no
# network needed): builds, runs the gpu and compile tiers, memcheck on the edge cases, the Python
# tests (GPU ones included) and, with --bench, the benchmark.
#   scripts/gpu_test.sh [--gtest-source DIR] [--bench [ARGS...]]
# Writes logs to $GEMMOPS_LOG_DIR (default build/gpu-logs). Exit code non-zero if any step failed.
# SPDX-License-Identifier: Apache-2.0
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

gtest_source=""
bench=0
bench_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --gtest-source) gtest_source=$2; shift 2 ;;
    --bench) bench=1; shift; bench_args=("$@"); break ;;
    *) echo "usage: scripts/gpu_test.sh [--gtest-source DIR] [--bench [ARGS...]]" >&2; exit 2 ;;
  esac
done
logs=${GEMMOPS_LOG_DIR:-build/gpu-logs}
mkdir -p "$logs"
jobs=$(nproc)
failed=()
step() {  # step NAME COMMAND...: runs one step, its output to $logs/NAME.log, remembers a failure
  local name=$1; shift
  echo "=== $name"
  if "$@" >"$logs/$name.log" 2>&1; then echo "=== $name: ok"; else echo "=== $name: FAILED"; tail -40 "$logs/$name.log"; failed+=("$name"); fi
}

configure=(cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release)
[ -n "$gtest_source" ] && configure+=("-DGEMMOPS_GTEST_SOURCE_DIR=$gtest_source")
step configure "${configure[@]}"
step build cmake --build build/gpu -j "$jobs"
step ctest-gpu-compile ctest --test-dir build/gpu -L "gpu|compile" -j "$jobs" --output-on-failure
grep -E "tests passed|tests failed" "$logs/ctest-gpu-compile.log"
if command -v compute-sanitizer >/dev/null; then
  # The ragged problems (empty and 1-row groups, tile +- 1, trailing rows, K-grouped) of one design per schedule;
  # the portable operators on every form and edge, and on malformed device offsets.
  step memcheck compute-sanitizer --tool memcheck --error-exitcode 1 build/gpu/tests/gemmops_gpu_tests \
    --gtest_filter='*matches*bf16_f32acc_128x256x64_c2x1*:*matches*bf16_f32acc_128x256x64_c1x1_s4_coop_tma_ring2*:*matches*bf16_f32acc_64x128x64*:*k_grouped*bf16_f32acc_128x128x64_c2x1_s5*:*bf16_f32acc_128x128x64_c1x1_s4_pingpong*:SimtOperators.every_form*:SimtOperators.malformed*'
fi
python_tests() {
  python3 -m pip install -q --no-build-isolation --no-deps . && python3 -m pytest -q -rs tests/python
}
step python python_tests
grep -E "passed|failed|skipped" "$logs/python.log" | tail -3
if [ "$bench" = 1 ]; then
  echo "=== bench"
  python3 bench/bench_grouped.py "${bench_args[@]}" 2>&1 | tee "$logs/bench.log" || failed+=(bench)
fi
if [ ${#failed[@]} -gt 0 ]; then
  printf 'gpu_test.sh: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "gpu_test.sh: all steps passed"
