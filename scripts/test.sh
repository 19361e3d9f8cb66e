#!/usr/bin/env bash
# scripts/test.sh: installs what is missing, builds, runs every test (C++ through ctest, fuzz, Python)
# and ends with a summary per tier: passed, failed, skipped and why
# SPDX-License-Identifier: Apache-2.0
# Every step runs even when an earlier one failed; the exit code is non-zero if any step failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/bootstrap.sh || { echo "test.sh: bootstrap failed" >&2; exit 1; }

failed=()
step() {  # step NAME COMMAND...: runs one step and remembers a failure
  local name=$1; shift
  echo "=== $name"
  if "$@"; then echo "=== $name: ok"; else echo "=== $name: FAILED (exit $?)"; failed+=("$name"); fi
}

# GPU tests are part of every run: without a device they skip with the reason, which the summary
# at the end prints per tier (from the JUnit files the ci test preset and pytest write).
ctest_junit=build/ci/ctest-junit.xml
pytest_junit=build/pytest-junit.xml
rm -f "$ctest_junit" "$pytest_junit"  # a failed build must not summarise an earlier run
export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-$(nproc)}
step "c++ (cmake --workflow --preset ci)" cmake --workflow --preset ci

if [ -x scripts/run_fuzz.sh ] || [ -f scripts/run_fuzz.sh ]; then
  step "fuzz" bash scripts/run_fuzz.sh 20
fi

python_tests() {
  python3 -m pip install -q . || return 1
  local rc=0
  python3 -m pytest -q "--junitxml=$pytest_junit" tests/python || rc=$?
  # pytest exits 5 when it collected nothing: only a failure when there are tests to collect.
  if [ "$rc" -eq 5 ] && ! find tests/python -name 'test_*.py' -o -name '*_test.py' | grep -q .; then
    echo "no Python tests yet"
    rc=0
  fi
  return "$rc"
}
if [ -d python ] && [ -d tests/python ]; then
  export PIP_ROOT_USER_ACTION=ignore
  step "python (pytest)" python_tests
fi

echo "=== tests per tier: passed, failed, skipped (and why)"
summary_args=(--ctest-junit "$ctest_junit" --ctest-dir build/ci)
if [ -d python ] && [ -d tests/python ]; then summary_args+=(--pytest-junit "$pytest_junit"); fi
python3 scripts/summarize_tests.py "${summary_args[@]}" || echo "test.sh: no summary (python3 scripts/summarize_tests.py failed)"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'test.sh: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "test.sh: all steps passed"
