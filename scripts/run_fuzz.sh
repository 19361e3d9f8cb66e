#!/usr/bin/env bash
# scripts/run_fuzz.sh: builds tests/fuzz/fuzz_validate with clang (ASan + UBSan, library instrumented
# for coverage) and runs it for N seconds; prints a skip line and exits 0 when clang++ is absent.
#   scripts/run_fuzz.sh [SECONDS=30] [BUILD_DIR=build/fuzz]
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-30}"
build_dir="${2:-build/fuzz}"

if ! command -v clang++ >/dev/null 2>&1; then
  echo "run_fuzz: SKIPPED: clang++ not found (libFuzzer needs clang)"
  exit 0
fi

# The library itself is built with the sanitizers and coverage hooks, not only the fuzz target:
# otherwise UB inside validation would go unseen and the fuzzer would be blind to its branches.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DGEMMOPS_BUILD_TESTS=ON -DGEMMOPS_BUILD_TOOLS=OFF "-DGEMMOPS_SANITIZE=address;undefined" \
  "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined" >/dev/null
cmake --build "$build_dir" -j"${GEMMOPS_JOBS:-2}" --target fuzz_validate

corpus="$build_dir/fuzz_corpus"
mkdir -p "$corpus"
# halt_on_error makes any UBSan report a failure; crash files land in the build directory.
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
  "$build_dir/tests/fuzz/fuzz_validate" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$build_dir/" "$corpus"
echo "run_fuzz: PASSED: no crash, hang or UB in ${seconds}s"
