#!/usr/bin/env bash
# bench/batches/ncu_fp8.sh: Nsight Compute on the fp8 kernels of DeepGEMM's first aligned row (4 x 8192,
# N 4096, K 7168): each of DESIGNS (our fp8 designs, by a part of their names) and DeepGEMM's kernel
# (PYTHONPATH must reach it), the second launch of each (the first compiles), full sets; the
# reports, their details pages as text, per-SASS-line source pages and raw metrics (gzipped) under
# $OUT. What to compare: tensor-pipe utilisation,
# the warp stall reasons of the consumers, shared-memory bank conflicts, issue slots.
# SPDX-License-Identifier: Apache-2.0
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gpu_name
step module 240 ensure_module
for d in ${DESIGNS:-128x192x128_c1x1_s4_coop_tma 128x128x128_c1x1_s5_coop_tma}; do
  step "ncu_$d" 150 ncu --set full -k regex:'grouped_gemm_kernel|fp8_gemm' --launch-skip 1 --launch-count 2 \
    -o "$OUT/ncu_$d" -f python3 bench/bench_fp8.py --once "$d"
  [ -f "$OUT/ncu_$d.ncu-rep" ] || continue
  ncu --import "$OUT/ncu_$d.ncu-rep" --page details > "$OUT/ncu_$d.txt" 2>&1
  # Per SASS instruction: executed counts and warp-stall samples (where our loop spends the 1.5x
  # instructions DeepGEMM's does not), and every raw metric (the stall reasons by name).
  ncu --import "$OUT/ncu_$d.ncu-rep" --page source --print-source sass --csv 2>&1 | gzip > "$OUT/ncu_${d}_sass.csv.gz"
  ncu --import "$OUT/ncu_$d.ncu-rep" --page raw --csv 2>&1 | gzip > "$OUT/ncu_${d}_raw.csv.gz"
done
echo "ncu_fp8: $(( SECONDS - T0 )) s"
