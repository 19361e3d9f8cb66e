#!/usr/bin/env bash
# scripts/gpu_test.sh: every GPU test, on a machine with an sm_90a GPU and the toolchain installed (no
# network needed), in one run of a few minutes: builds the C++ GPU tests and the Python module side by
# side, then runs at once the C++ gpu tier (sharded processes, scripts/gtest_shards.py), memcheck on
# the kernels' edge paths and the Python tests. Kernels are built with the barrier watchdog, so a
# deadlock fails its test in seconds, named by test (operator, design) and problem, instead of
# hanging the run. The compile tier runs in CI (scripts/test.sh) and is not repeated here.
#   scripts/gpu_test.sh [--gtest-source DIR] [--wheels DIR] [--shards N] [--deadline S]
#                       [--gtest-filter F] [--pytest-k EXPR] [--bench [ARGS...]]
# --wheels: a folder of wheels (nanobind, scikit-build-core) to install from where no index is reachable.
# --gtest-filter / --pytest-k: only those tests of the C++ gpu tier / the Python tier (a short call);
# memcheck, a whole-suite tier, is then skipped.
# Logs go to $GEMMOPS_LOG_DIR (default build/gpu-logs). Prints per tier passed / failed / skipped (and
# why) and exits non-zero if any step failed.
# SPDX-License-Identifier: Apache-2.0
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

gtest_source=""
wheels=""
jobs=$(nproc)
shards=$(( jobs < 12 ? jobs : 12 ))
deadline=420
bench=0
bench_args=()
gtest_filter=""
pytest_k=""
while [ $# -gt 0 ]; do
  case "$1" in
    --gtest-source) gtest_source=$2; shift 2 ;;
    --wheels) wheels=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --deadline) deadline=$2; shift 2 ;;
    --gtest-filter) gtest_filter=$2; shift 2 ;;
    --pytest-k) pytest_k=$2; shift 2 ;;
    --bench) bench=1; shift; bench_args=("$@"); break ;;
    *) echo "usage: scripts/gpu_test.sh [--gtest-source DIR] [--wheels DIR] [--shards N] [--deadline S] [--gtest-filter F] [--pytest-k EXPR] [--bench [ARGS...]]" >&2
       exit 2 ;;
  esac
done
logs=${GEMMOPS_LOG_DIR:-build/gpu-logs}
mkdir -p "$logs"
start=$SECONDS
# Seconds a kernel's barrier or split-K flag may spin before it traps; one value for every tier, as
# it is part of the kernel cache key.
export GEMMOPS_KERNEL_WATCHDOG=${GEMMOPS_KERNEL_WATCHDOG:-20}
# The suite is how trial designs and layouts earn their place: they are tested too.
export GEMMOPS_TRIAL_DESIGNS=1
export PIP_ROOT_USER_ACTION=ignore PYTHONUNBUFFERED=1
failed=()
elapsed() { echo "$((SECONDS - start)) s"; }

# ---- build: the C++ GPU tests and the Python module at once
configure=(cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release)
[ -n "$gtest_source" ] && configure+=("-DGEMMOPS_GTEST_SOURCE_DIR=$gtest_source")
build_cpp() { "${configure[@]}" && cmake --build build/gpu -j "$jobs" --target gemmops_gpu_tests; }
build_python() {
  if [ -n "$wheels" ]; then python3 -m pip install -q --no-index --find-links "$wheels" nanobind scikit-build-core || return 1; fi
  python3 -m pip install -q --no-build-isolation --no-deps --config-settings=build-dir=build/python .
}
echo "=== build (C++ gpu tests and the Python module, side by side)"
build_cpp >"$logs/build-cpp.log" 2>&1 &
cpp_pid=$!
build_python >"$logs/build-python.log" 2>&1 &
py_pid=$!
wait "$cpp_pid" || { failed+=(build-cpp); tail -30 "$logs/build-cpp.log"; }
echo "=== C++ build done ($(elapsed))"

# ---- tests: three tiers at once, each in its own log; the C++ tiers start while the module builds
gpu_bin=build/gpu/tests/gemmops_gpu_tests
pids=()
if [ -x "$gpu_bin" ]; then
  python3 scripts/gtest_shards.py "$gpu_bin" --shards "$shards" --test-timeout 60 --deadline "$deadline" \
    --filter "$gtest_filter" --label "gpu (C++)" --junit "$logs/gpu-junit.xml" >"$logs/gpu.log" 2>&1 &
  pids+=("gpu:$!")
  if [ -n "$gtest_filter" ]; then
    echo "=== memcheck: skipped (--gtest-filter runs part of the suite)"
  elif command -v compute-sanitizer >/dev/null; then
    # The edge paths of the kernel, one design of each kind: ragged and zero-tail problems, K = 0, the
    # aligned and masked layouts, every epilogue op, more groups than one table holds, the 192-wide
    # and 256-row tiles, split-K; the portable operators on every form and on malformed offsets.
    designs='bf16_f32acc_128x256x64_c2x1_s4_coop_tma_ring2:bf16_f32acc_128x128x64_c1x1_s6_pingpong:bf16_f32acc_64x256x64_c1x1_s5_smallm'
    filter=""
    for d in ${designs//:/ }; do
      filter+="*matches_the_float64*/sm90a_grouped_gemm_$d:*aligned*/sm90a_grouped_gemm_$d:*masked*/sm90a_grouped_gemm_$d:"
      filter+="*KZero*/sm90a_grouped_gemm_$d:*rows_past_the_last*/sm90a_grouped_gemm_$d:"
    done
    filter+="*Sm90EpilogueTest*bf16_f32acc_128x256x64_c2x1_s4_coop_tma_ring2*:*Sm90EpilogueTest*bf16_f32acc_64x256x64_c1x1_s5_pingpong*:"
    filter+="*just_past_the_table*bf16_f32acc_128x128x64_c1x1_s6_pingpong:*split_k_matches*/sm90a_grouped_gemm_bf16_f32acc_128x256x64_c2x1_s4_coop_tma_ring2:"
    filter+="*matches_the_float64*/sm90a_grouped_gemm_bf16_f32acc_256x128x64_c2x1_s4_coop:SimtOperators.every_form*:SimtOperators.malformed*:"
    # A cluster along N (trial): A multicast, a unit's second column tile past N.
    filter+="*matches_the_float64*/sm90a_grouped_gemm_bf16_f32acc_128x128x64_c1x2_s6_pingpong:"
    # The MoE step's parts: the gathered A (2-CTA cooperative), the epilogue's second operands
    # (ping-pong, every activation and layout) and the gather-reduce kernel.
    filter+="Sm90/Sm90GatheredATest.*/sm90a_grouped_gemm_bf16_f32acc_128x128x64_c2x1_s6_coop:"
    filter+="Sm90/Sm90EpilogueOutputsTest.*/sm90a_grouped_gemm_bf16_f32acc_128x128x64_c1x1_s6_pingpong*:GatherReduceDevice.equals*:"
    filter+="Sm90/Sm90GatheredKTest.*/*_sm90a_grouped_gemm_bf16_f32acc_128x128x64_c1x1_s6_pingpong:"
    # out stored M-major (the TMA epilogue's transposed boxes and 3D map), plain and with A gathered
    filter+="Sm90/Sm90GatheredKTest.*/mt_*_sm90a_grouped_gemm_bf16_f32acc_128x256x64_c2x1_s4_coop_tma_ring2:"
    # fp8 quantisation: partial blocks, every vector width, strided and misaligned layouts, empty shapes.
    filter+="QuantizeDevice.equals*:QuantizeDevice.empty*:"
    # The routing kernels (trial): chunks, sentinels, 8192 experts, no pairs.
    filter+="RouteDevice.*:"
    # The router's softmax-top-k kernels (trial): every row width, padded rows, biases, T = 65536.
    filter+="RouterTopkDevice.*:"
    # The fp8 main loop (trial): scales read per thread, groups ragged and empty, K not a multiple of 128.
    filter+="Sm90/Sm90Fp8Mainloop.matches*"
    compute-sanitizer --tool memcheck --error-exitcode 1 "$gpu_bin" --gtest_filter="$filter" >"$logs/memcheck.log" 2>&1 &
    pids+=("memcheck:$!")
  fi
fi
wait "$py_pid" || { failed+=(build-python); tail -30 "$logs/build-python.log"; }
echo "=== Python module built ($(elapsed))"
python_tests() {
  python3 -m pytest -q -rs -p no:cacheprovider "--junitxml=$logs/python-junit.xml" tests/python ${pytest_k:+-k "$pytest_k"}
}
if [[ ! " ${failed[*]} " =~ " build-python " ]]; then
  python_tests >"$logs/python.log" 2>&1 &
  pids+=("python:$!")
fi
for entry in "${pids[@]}"; do
  name=${entry%%:*}
  if wait "${entry#*:}"; then echo "=== $name: ok ($(elapsed))"; else echo "=== $name: FAILED ($(elapsed))"; failed+=("$name"); fi
done

# ---- what failed, then one summary per tier
for name in "${failed[@]}"; do
  case "$name" in
    gpu) grep -E -A12 "^--- FAILED" "$logs/gpu.log" | head -150 ;;
    memcheck) grep -E "ERROR SUMMARY|Invalid|FAILED|at 0x" "$logs/memcheck.log" | head -40 ;;
    python) grep -E "^(FAILED|ERROR)" "$logs/python.log" | head -40 ;;
  esac
done
echo "=== tests per tier ($(elapsed)): passed, failed, skipped (and why)"
[ -f "$logs/gpu.log" ] && grep -E "^(gpu \(C\+\+\):|    [0-9]+ (skipped|not run))" "$logs/gpu.log"
[ -f "$logs/memcheck.log" ] && { grep -E "^\[  PASSED  \]|^\[  FAILED  \].*tests?, listed|^\[  SKIPPED \].*tests?, listed|ERROR SUMMARY" "$logs/memcheck.log" | sed 's/^/memcheck: /'; }
[ -f "$logs/python-junit.xml" ] && python3 scripts/summarize_tests.py --pytest-junit "$logs/python-junit.xml" 2>/dev/null | grep -v "^$"
if [ "$bench" = 1 ]; then
  echo "=== bench"
  python3 bench/bench_grouped.py "${bench_args[@]}" 2>&1 | tee "$logs/bench.log" || failed+=(bench)
fi
echo "gpu_test.sh: $(elapsed) in all"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'gpu_test.sh: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "gpu_test.sh: all steps passed"
