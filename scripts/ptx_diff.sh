#!/usr/bin/env bash
# scripts/ptx_diff.sh: whether a kernel change leaves kernels' code as it was: the PTX of a set of
# sm90 grouped GEMM instantiations compiled by nvcc (sm_90a) from this tree's kernels/ and from a
# git revision's, compared entry by entry with the kernels' mangled names and debug lines set aside
# (a new KernelConfig field changes every name, not the code). Needs nvcc, no GPU.
#   scripts/ptx_diff.sh [--rev REV] [--defines "A B"] [--base-defines "A B"] [--kernels FILE]
#                       [--any-param-size] [--show]
# --rev: the baseline (default HEAD); --defines / --base-defines: -D names for this tree's side / the
# baseline's (a define made the default: --base-defines NAME shows the new default is the old define's
# code); --any-param-size: the parameter's byte size set aside too (a field added at the end of
# GroupedGemmParams changes no code); --show: the differing lines; --kernels: a file of
# KernelConfig initializers, one a line (default: a 2-CTA TMA-ring cooperative, a gathered 2-CTA
# ping-pong, a gathered K-grouped ping-pong, a split-K twin, the 1-CTA 128x256 and the fp8 ones).
# Prints one line a kernel (same / differs) and exits 1 if any differs.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rev=HEAD defines="" base_defines="" kernels="" any_param_size=0 show=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rev) rev=$2; shift 2 ;;
    --defines) defines=$2; shift 2 ;;
    --base-defines) base_defines=$2; shift 2 ;;
    --kernels) kernels=$2; shift 2 ;;
    --any-param-size) any_param_size=1; shift ;;
    --show) show=1; shift ;;
    *) echo "usage: scripts/ptx_diff.sh [--rev REV] [--defines \"A B\"] [--base-defines \"A B\"] [--kernels FILE]" \
            "[--any-param-size] [--show]" >&2
       exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/base"
git archive "$rev" kernels | tar -x -C "$tmp/base"
if [ -n "$kernels" ]; then
  cp "$kernels" "$tmp/configs"
else
  cat > "$tmp/configs" <<'CONFIGS'
.tile_m = 128, .tile_n = 256, .stages = 4, .consumers = 2, .cluster_m = 2, .epilogue = 1, .epilogue_boxes = 2
.tile_m = 64, .tile_n = 256, .stages = 5, .consumers = 2, .cluster_m = 2, .schedule = KernelSchedule::pingpong, .gather_a = true
.tile_m = 128, .tile_n = 128, .stages = 6, .consumers = 2, .a_major = AMajor::m, .b_major = BMajor::n, .group_axis = GroupAxis::k, .schedule = KernelSchedule::pingpong, .gather_a = true, .gather_b = true
.tile_m = 128, .tile_n = 256, .stages = 4, .consumers = 2, .cluster_m = 2, .split_k = true
.tile_m = 128, .tile_n = 256, .stages = 4, .consumers = 2
.tile_m = 128, .tile_n = 128, .tile_k = 128, .stages = 5, .consumers = 2, .ab = ElemType::e4m3, .epilogue = 1
.tile_m = 128, .tile_n = 128, .tile_k = 128, .stages = 5, .consumers = 2, .ab = ElemType::e4m3, .fp8_rowwise = true
.tile_m = 128, .tile_n = 192, .tile_k = 128, .stages = 4, .consumers = 2, .ab = ElemType::e4m3, .cluster_m = 2, .epilogue = 1
CONFIGS
fi
{
  echo '#include "sm90/grouped_gemm.cuh"'
  echo 'using namespace gemmops::kernels::sm90;'
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    echo "template __global__ void gemmops::kernels::sm90::grouped_gemm_kernel<KernelConfig{$line}>(const __grid_constant__ GroupedGemmParams);"
  done < "$tmp/configs"
} > "$tmp/kernels.cu"
# (20012: the defaulted operator== of EpilogueOp, which every compile warns about.)
flags=(-std=c++20 -gencode=arch=compute_90a,code=sm_90a --ptx -diag-suppress 20012)
dflags=() bflags=()
for d in $defines; do dflags+=("-D$d"); done
for d in $base_defines; do bflags+=("-D$d"); done
nvcc "${flags[@]}" "${bflags[@]}" -I"$tmp/base/kernels" -o "$tmp/base.ptx" "$tmp/kernels.cu" &
base_pid=$!
nvcc "${flags[@]}" "${dflags[@]}" -Ikernels -o "$tmp/this.ptx" "$tmp/kernels.cu"
wait "$base_pid"
# One file a kernel, in order, without comments, debug lines and mangled names.
split_entries() {
  local size='s/x/x/'
  [ "$any_param_size" = 1 ] && size='s/(\.b8 K)\[[0-9]+\]/\1[size]/'
  grep -v '^\s*//' "$1" | grep -v '\.file\|\.loc' | sed -E 's/_ZN7gemmops[A-Za-z0-9_]+/K/g' | sed -E "$size" |
    awk -v out="$2" '/^\.visible \.entry/ {n++} n > 0 {print > (out "." n)}'
}
split_entries "$tmp/base.ptx" "$tmp/b"
split_entries "$tmp/this.ptx" "$tmp/t"
status=0 i=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  i=$((i + 1))
  if cmp -s "$tmp/b.$i" "$tmp/t.$i"; then
    echo "same     {$line}"
  else
    echo "differs  {$line} ($(diff "$tmp/b.$i" "$tmp/t.$i" | grep -c '^[<>]') lines)"
    [ "$show" = 1 ] && diff "$tmp/b.$i" "$tmp/t.$i" | head -40
    status=1
  fi
done < "$tmp/configs"
exit $status
