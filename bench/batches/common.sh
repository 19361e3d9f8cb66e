# bench/batches/common.sh: sourced by the batches. A batch is one call on an offline GPU machine, in
# the project's root, within a time budget: each step gets at most what is left, its output in
# $OUT/<step>.log (whatever the batch leaves under $OUT is what comes back from the machine).
#   BUNDLE  the folder scripts/offline_bundle.sh filled (GoogleTest sources, wheels, moe_shapes.csv)
#   BUDGET  seconds for the whole batch (default 585); DEADLINE: the C++ GPU tier's (default 450 in the suite batches: 1539 tests took ~400 s of shards on an H100)
# SPDX-License-Identifier: Apache-2.0
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PIP_ROOT_USER_ACTION=ignore PYTHONUNBUFFERED=1
BUNDLE=${BUNDLE:-.carry}
OUT=${OUT:-build/batch-out}; mkdir -p "$OUT"
T0=${T0:-$SECONDS}; BUDGET=${BUDGET:-585}
left() { echo $(( BUDGET - (SECONDS - T0) )); }
# step NAME SECONDS CMD...: CMD with at most SECONDS (or what is left, less 5), its tail printed
step() {
  local name=$1 want=$2; shift 2
  local l; l=$(left); local t=$(( want < l - 5 ? want : l - 5 ))
  if [ "$t" -lt 15 ]; then echo "=== $name: skipped, $l s left"; return 0; fi
  echo "=== $name (limit $t s, $l s left)"
  local rc
  if declare -F "$1" > /dev/null; then  # a shell function (timeout runs programs only)
    "$@" > "$OUT/$name.log" 2>&1; rc=$?
  else
    timeout -k 5 "$t" "$@" > "$OUT/$name.log" 2>&1; rc=$?
  fi
  echo "=== $name: rc $rc ($(left) s left)"; tail -n "${TAILN:-40}" "$OUT/$name.log"
}
# The Python module, once per machine (the suite installs it too).
ensure_module() {
  python3 -c "import gemmops" 2>/dev/null && return 0
  python3 -m pip install -q --no-index --find-links "$BUNDLE/wheels" nanobind scikit-build-core
  python3 -m pip install -q --no-build-isolation --no-deps --config-settings=build-dir=build/python .
}
gpu_name() { nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; }
