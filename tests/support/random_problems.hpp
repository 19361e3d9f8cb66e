// tests/support/random_problems.hpp: random problems of every operation kind, in host memory
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gemmops/arguments.hpp"
#include "support/host_tensor.hpp"

namespace gemmops::testing {

/// How out is laid out: row-major, rows padded (row stride N + 3), or column-major.
enum class OutLayout { contiguous, padded, column_major };

/// One problem. m is TotalM for grouped_m (MaxM for grouped_m_masked, whose group ends are counts
/// in [0, MaxM]: with special_groups one group full and one empty); k is TotalK for grouped_k; n is TotalN for grouped_n;
/// groups is G (or L for batched_gemm, 1 for gemm). `trailing` rows (grouped_m), K columns
/// (grouped_k) or columns of out (grouped_n) lie past offsets[G-1]; `zero_tail` asks for zeros
/// there. With `special_groups` and G >= 3 one group is empty and one has a single row (column).
struct ProblemSpec {
  OperationKind kind = OperationKind::grouped_m;
  DType a = DType::bf16, b = DType::bf16, out = DType::bf16;
  Major a_major = Major::k, b_major = Major::k;
  OutLayout out_layout = OutLayout::contiguous;
  bool padded_inputs = false;  ///< A's and B's lines (and batches) padded: strides no shape implies
  int64_t m = 64, n = 48, k = 32, groups = 4;
  int64_t trailing = 0;
  bool special_groups = true;
  bool zero_tail = false;
  int32_t group_alignment = 1;  ///< grouped_m: groups start at aligned rows (padding rows between)

  std::string describe() const {
    return std::string(name(kind)) + " " + std::string(gemmops::name(a)) + "x" +
           std::string(gemmops::name(b)) + "->" + std::string(gemmops::name(out)) + " m" +
           std::to_string(m) + " n" + std::to_string(n) + " k" + std::to_string(k) + " g" +
           std::to_string(groups) + " A " + std::string(gemmops::name(a_major)) + " B " +
           std::string(gemmops::name(b_major)) + " out " + std::to_string(int(out_layout)) +
           (padded_inputs ? " padded" : "") + " trailing " + std::to_string(trailing) +
           (zero_tail ? " zero_tail" : "") +
           (group_alignment != 1 ? " aligned " + std::to_string(group_alignment) : "");
  }
};

/// G non-decreasing exclusive ends summing to `total`; see ProblemSpec::special_groups.
inline std::vector<int32_t> random_group_ends(std::mt19937& rng, int64_t groups, int64_t total,
                                              bool special_groups) {
  std::vector<int64_t> sizes(static_cast<size_t>(groups), -1);
  int64_t budget = total;
  if (special_groups && groups >= 3) {
    std::uniform_int_distribution<int64_t> pick(0, groups - 1);
    const int64_t empty = pick(rng);
    int64_t single = pick(rng);
    while (single == empty) single = pick(rng);
    sizes[static_cast<size_t>(empty)] = 0;
    sizes[static_cast<size_t>(single)] = std::min<int64_t>(1, budget);
    budget -= sizes[static_cast<size_t>(single)];
  }
  std::vector<size_t> free;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] < 0) free.push_back(i);
  // With G >= 3 two groups are special and at least one is free; G = 0 has nothing to share.
  if (!free.empty()) {
    std::uniform_int_distribution<int64_t> cut(0, budget);
    std::vector<int64_t> cuts(free.size() - 1);
    for (auto& c : cuts) c = cut(rng);
    std::sort(cuts.begin(), cuts.end());
    int64_t prev = 0;
    for (size_t i = 0; i < free.size(); ++i) {
      const int64_t next = i + 1 < free.size() ? cuts[i] : budget;
      sizes[free[i]] = next - prev;
      prev = next;
    }
  }
  std::vector<int32_t> ends(sizes.size());
  int64_t run = 0;
  for (size_t i = 0; i < sizes.size(); ++i) ends[i] = static_cast<int32_t>(run += sizes[i]);
  return ends;
}

/// Ends of the same sizes with each group starting at a multiple of `alignment` (padding between):
/// the sizes of ends placed as an expert-parallel dispatcher's aligned prefix sums place them.
inline std::vector<int32_t> aligned_group_ends(const std::vector<int32_t>& ends, int64_t alignment) {
  std::vector<int32_t> out(ends.size());
  int64_t prev_end = 0, end = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    const int64_t size = ends[i] - prev_end;
    prev_end = ends[i];
    const int64_t start = (end + alignment - 1) / alignment * alignment;
    out[i] = static_cast<int32_t>(end = start + size);
  }
  return out;
}

/// Rows of the whole padded layout for groups of these ends: the last aligned end.
inline int64_t aligned_total(const std::vector<int32_t>& ends, int64_t alignment) {
  const std::vector<int32_t> aligned = aligned_group_ends(ends, alignment);
  return aligned.empty() ? 0 : aligned.back();
}

/// G counts in [0, max_m] (the masked form): with special_groups and G >= 2 group 0 full, group 1 empty.
inline std::vector<int32_t> random_counts(std::mt19937& rng, int64_t groups, int64_t max_m, bool special_groups) {
  std::uniform_int_distribution<int64_t> count(0, max_m);
  std::vector<int32_t> counts(static_cast<size_t>(groups));
  for (auto& c : counts) c = static_cast<int32_t>(count(rng));
  if (special_groups && groups >= 2) counts[0] = static_cast<int32_t>(max_m), counts[1] = 0;
  return counts;
}

/// Values drawn uniformly from [lo, hi) and rounded to the dtype, so each is exact in it.
inline void fill_random(HostTensor& t, std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t e = 0, n = t.numel(); e < n; ++e) t.set(e, d(rng));
}

/// Integers in [lo, hi]: exact in every dtype for |v| <= 8, and sums of their products are exact in
/// fp32, so the only rounding left in a GEMM is the final one into out.
inline void fill_random_integers(HostTensor& t, std::mt19937& rng, int lo = -8, int hi = 8) {
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t e = 0, n = t.numel(); e < n; ++e) t.set(e, d(rng));
}

/// A matrix operand of logical shape (..., rows, cols); `cols_is_k` says which dimension K is.
/// `padded`: each line 3 elements longer than it needs, each batch 5 (strides no shape implies).
inline HostTensor make_operand(DType t, std::vector<int64_t> shape, Major major, bool cols_is_k,
                               bool padded = false) {
  const bool cols_contiguous = (major == Major::k) == cols_is_k;
  if (padded) {
    const size_t r = shape.size();
    const int64_t rows = shape[r - 2], cols = shape[r - 1];
    std::vector<int64_t> strides(r);
    strides[r - 1] = cols_contiguous ? 1 : rows + 3;
    strides[r - 2] = cols_contiguous ? cols + 3 : 1;
    if (r == 3) strides[0] = (cols_contiguous ? rows * (cols + 3) : cols * (rows + 3)) + 5;
    return HostTensor::strided(t, std::move(shape), std::move(strides));
  }
  if (cols_contiguous) return HostTensor::contiguous(t, std::move(shape));
  return shape.size() == 3 ? HostTensor::permuted(t, std::move(shape), {0, 2, 1})
                           : HostTensor::permuted(t, std::move(shape), {1, 0});
}

inline HostTensor make_out(DType t, std::vector<int64_t> shape, OutLayout layout) {
  const size_t r = shape.size();
  const int64_t rows = shape[r - 2], cols = shape[r - 1];
  switch (layout) {
    case OutLayout::contiguous: return HostTensor::contiguous(t, std::move(shape));
    case OutLayout::padded: {
      std::vector<int64_t> strides(r);
      strides[r - 1] = 1, strides[r - 2] = cols + 3;
      if (r == 3) strides[0] = rows * (cols + 3);
      return HostTensor::strided(t, std::move(shape), std::move(strides));
    }
    case OutLayout::column_major:
      return r == 3 ? HostTensor::permuted(t, std::move(shape), {0, 2, 1})
                    : HostTensor::permuted(t, std::move(shape), {1, 0});
  }
  return {};
}

/// The host buffers of one problem; arguments() points into them (keep the problem alive).
struct HostProblem {
  ProblemSpec spec;
  HostTensor A, B, out, offsets;
  std::vector<int32_t> ends;

  Arguments arguments() const {
    if (spec.kind == OperationKind::gemm || spec.kind == OperationKind::batched_gemm)
      return GemmArguments{A.desc, B.desc, out.desc, DType::fp32};
    GroupedGemmArguments g{A.desc, B.desc, out.desc, DType::fp32, offsets.desc, spec.zero_tail};
    g.group_alignment = spec.group_alignment;
    return g;
  }
};

/// Random values in A and B, random group ends, out poisoned.
inline HostProblem make_problem(const ProblemSpec& s, std::mt19937& rng) {
  HostProblem p;
  p.spec = s;
  const int64_t G = s.groups;
  switch (s.kind) {
    case OperationKind::gemm:
      p.A = make_operand(s.a, {s.m, s.k}, s.a_major, true, s.padded_inputs);
      p.B = make_operand(s.b, {s.k, s.n}, s.b_major, false, s.padded_inputs);
      p.out = make_out(s.out, {s.m, s.n}, s.out_layout);
      break;
    case OperationKind::batched_gemm:
      p.A = make_operand(s.a, {G, s.m, s.k}, s.a_major, true, s.padded_inputs);
      p.B = make_operand(s.b, {G, s.k, s.n}, s.b_major, false, s.padded_inputs);
      p.out = make_out(s.out, {G, s.m, s.n}, s.out_layout);
      break;
    case OperationKind::grouped_m:
      p.A = make_operand(s.a, {s.m, s.k}, s.a_major, true, s.padded_inputs);
      p.B = make_operand(s.b, {G, s.k, s.n}, s.b_major, false, s.padded_inputs);
      p.out = make_out(s.out, {s.m, s.n}, s.out_layout);
      p.ends = random_group_ends(rng, G, s.m - s.trailing, s.special_groups);
      if (s.group_alignment > 1) {  // the same sizes, padded apart, within the same rows
        // Halve the rows the sizes share until the padded layout fits: at the latest when every
        // group is empty (the loop ends; redrawing from the same budget need not: 40 groups aligned
        // to 128 rarely fit 300 rows).
        for (int64_t budget = (s.m - s.trailing) / 2; aligned_total(p.ends, s.group_alignment) > s.m - s.trailing;
             budget /= 2)
          p.ends = random_group_ends(rng, G, budget, s.special_groups);
        p.ends = aligned_group_ends(p.ends, s.group_alignment);
      }
      break;
    case OperationKind::grouped_m_masked:
      p.A = make_operand(s.a, {G, s.m, s.k}, s.a_major, true, s.padded_inputs);
      p.B = make_operand(s.b, {G, s.k, s.n}, s.b_major, false, s.padded_inputs);
      p.out = make_out(s.out, {G, s.m, s.n}, s.out_layout);
      p.ends = random_counts(rng, G, s.m, s.special_groups);
      break;
    case OperationKind::grouped_k:
      p.A = make_operand(s.a, {s.m, s.k}, s.a_major, true, s.padded_inputs);
      p.B = make_operand(s.b, {s.k, s.n}, s.b_major, false, s.padded_inputs);
      p.out = make_out(s.out, {G, s.m, s.n}, s.out_layout);
      p.ends = random_group_ends(rng, G, s.k - s.trailing, s.special_groups);
      break;
    case OperationKind::grouped_n:
      p.A = make_operand(s.a, {G, s.m, s.k}, s.a_major, true, s.padded_inputs);
      p.B = make_operand(s.b, {s.k, s.n}, s.b_major, false, s.padded_inputs);
      p.out = make_out(s.out, {s.m, s.n}, s.out_layout);
      p.ends = random_group_ends(rng, G, s.n - s.trailing, s.special_groups);
      break;
  }
  if (s.kind != OperationKind::gemm && s.kind != OperationKind::batched_gemm) {
    p.offsets = HostTensor::contiguous(DType::i32, {G});
    for (int64_t g = 0; g < G; ++g) p.offsets.set(g, p.ends[static_cast<size_t>(g)]);
  }
  fill_random(p.A, rng);
  fill_random(p.B, rng);
  p.out.poison();
  return p;
}

}  // namespace gemmops::testing
