// tests/gpu/test_simt_operators.cpp: the portable (simt) operators on every form x dtype x layout x
// edge (empty and 1-row groups, rows or columns past the last group with and without zero_tail,
// K = 0, no rows, no columns, aligned M-grouped groups) against the CPU operator and the float64
// reference, outputs poisoned and checked element by element (what the CPU operator leaves
// untouched, padding rows of aligned groups and rows past a masked group's count included, must keep
// its poison); the masked and aligned layouts at their edges; malformed offsets and counts clamped;
// more groups than a block stages or a grid row holds. Instantiated on every machine; skipped with
// the reason where no sm_80+ device is.
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/compare.hpp"
#include "support/device_problem.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {
namespace {

OperatorPtr simt_operator(DType ab, DType out) {
  for (const OperatorPtr& op : default_registry().all()) {
    const OperandConstraints& c = op->metadata().constraints;
    if (op->metadata().provider == "simt" && c.a_dtypes.at(0) == ab && c.out_dtypes.at(0) == out) return op;
  }
  return nullptr;
}

enum class Layout { row_major, column_major, padded, column_major_out };
enum class Edge { ragged, trailing, trailing_zero_tail, k_zero, no_rows, no_columns, aligned_8, aligned_128 };

/// The masked form has no tail (validate() refuses zero_tail there); aligned groups are M-grouped only.
bool applies(OperationKind kind, Edge edge) {
  if (edge == Edge::aligned_8 || edge == Edge::aligned_128) return kind == OperationKind::grouped_m;
  if (kind == OperationKind::grouped_m_masked) return edge != Edge::trailing && edge != Edge::trailing_zero_tail;
  return true;
}

const char* name_of(Layout l) {
  switch (l) {
    case Layout::row_major: return "row-major";
    case Layout::column_major: return "column-major A and B";
    case Layout::padded: return "padded";
    case Layout::column_major_out: return "column-major out";
  }
  return "?";
}

/// Sizes across tile edges (64 x 64 tiles, 16-deep K steps): 3 row tiles, 2 or 4 column tiles.
/// Masked: MaxM = 135 (group 0 fills it, group 1 is empty, the others random counts).
ProblemSpec spec_for(OperationKind kind, DType ab, DType out, Layout layout, Edge edge) {
  ProblemSpec s;
  s.kind = kind;
  s.a = s.b = ab;
  s.out = out;
  s.m = 135, s.n = kind == OperationKind::grouped_n ? 197 : 77, s.k = kind == OperationKind::grouped_k ? 300 : 40;
  s.groups = kind == OperationKind::gemm ? 1 : kind == OperationKind::batched_gemm ? 3 : 5;
  switch (layout) {
    case Layout::row_major: s.a_major = Major::k, s.b_major = Major::mn; break;
    case Layout::column_major: s.a_major = Major::mn, s.b_major = Major::k; break;
    case Layout::padded: s.padded_inputs = true, s.out_layout = OutLayout::padded, s.b_major = Major::mn; break;
    case Layout::column_major_out: s.out_layout = OutLayout::column_major, s.b_major = Major::k; break;
  }
  const bool tail = kind == OperationKind::grouped_m || kind == OperationKind::grouped_n;
  switch (edge) {
    case Edge::ragged: break;  // special_groups: one group empty, one of a single row (column, k)
    case Edge::trailing: s.trailing = 11; break;
    case Edge::trailing_zero_tail: s.trailing = 11, s.zero_tail = true; break;
    case Edge::k_zero: s.k = 0, s.trailing = tail ? 5 : 0, s.zero_tail = true; break;
    case Edge::no_rows: s.m = 0; break;
    case Edge::no_columns: s.n = 0; break;
    // Padding before nearly every group; rows past the last group zeroed (8) or untouched (128).
    // Rows enough that a draw of the groups fits: (G - 1) * (alignment - 1) padding rows at most.
    case Edge::aligned_8: s.group_alignment = 8, s.trailing = 11, s.zero_tail = true; break;
    case Edge::aligned_128: s.group_alignment = 128, s.m = 1100, s.trailing = 11; break;
  }
  if (kind == OperationKind::gemm || kind == OperationKind::batched_gemm) s.trailing = 0;
  if (kind == OperationKind::grouped_m_masked) s.trailing = 0, s.zero_tail = false;  // no tail
  return s;
}

bool poisoned(const HostTensor& t, int64_t e) {
  const std::byte* p = t.at(e);
  for (size_t b = 0; b < size_of(t.desc.dtype); ++b)
    if (p[b] != std::byte{0xff}) return false;
  return true;
}

/// Runs `op` on a device copy of `host` and the CPU operator on a host copy, and checks: the CPU
/// result against the float64 reference (unless `check_float64` is false), the device result
/// against both, element by element. The device must write exactly the elements the CPU operator
/// writes: what it leaves unwritten (rows or columns past the last group without zero_tail, the
/// padding rows of aligned groups, rows past a masked group's count) must keep its poison.
void expect_matches_cpu(const Operator& op, const HostProblem& host, bool check_float64 = true) {
  SCOPED_TRACE(host.spec.describe());
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev) << dev.status().to_string();
  Status s = op.supports(dev->args);
  ASSERT_TRUE(s) << s.to_string();
  s = dev->run(op);
  ASSERT_TRUE(s) << s.to_string();
  s = synchronize();
  ASSERT_TRUE(s) << s.to_string();
  auto got = dev->download_out(host.out);
  ASSERT_TRUE(got) << got.status().to_string();

  HostProblem cpu = host;
  const OperatorPtr cpu_op = default_registry().find("cpu_" + std::string(name(host.spec.kind)));
  ASSERT_NE(cpu_op, nullptr);
  s = cpu_op->run(cpu.arguments());
  ASSERT_TRUE(s) << s.to_string();
  const Tolerance tol = default_tolerance(host.spec.out, host.spec.k);
  if (check_float64) {
    const Reference exact = reference_result(host.arguments());
    const Comparison cpu_vs_exact = compare(cpu.out, exact, tol);
    EXPECT_TRUE(cpu_vs_exact.ok()) << "cpu: " << cpu_vs_exact.describe();
    const Comparison vs_exact = compare(*got, exact, tol);
    EXPECT_TRUE(vs_exact.ok()) << "simt against float64: " << vs_exact.describe();
  }
  Reference by_cpu;  // the CPU operator's values, where it wrote
  by_cpu.values.resize(static_cast<size_t>(cpu.out.numel()));
  by_cpu.written.resize(by_cpu.values.size());
  for (int64_t e = 0, n = cpu.out.numel(); e < n; ++e) {
    by_cpu.written[static_cast<size_t>(e)] = poisoned(cpu.out, e) ? 0 : 1;
    by_cpu.values[static_cast<size_t>(e)] = cpu.out.get(e);
  }
  // Both round their fp32 sums into out: up to one unit in the last place apart.
  const Comparison vs_cpu = compare(*got, by_cpu, {2 * tol.atol, 2 * tol.rtol});
  EXPECT_TRUE(vs_cpu.ok()) << "simt against the CPU operator: " << vs_cpu.describe();
}

TEST(SimtOperators, every_form_dtype_layout_and_edge_matches_the_cpu_operator) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  struct DTypes {
    DType ab, out;
  };
  std::mt19937 rng(2025);
  for (DTypes t : {DTypes{DType::bf16, DType::bf16}, DTypes{DType::fp16, DType::fp16}, DTypes{DType::fp32, DType::fp32},
                   DTypes{DType::bf16, DType::fp32}}) {
    const OperatorPtr op = simt_operator(t.ab, t.out);
    ASSERT_NE(op, nullptr);
    for (OperationKind kind : kAllOperationKinds)
      for (Layout layout : {Layout::row_major, Layout::column_major, Layout::padded, Layout::column_major_out})
        for (Edge edge : {Edge::ragged, Edge::trailing, Edge::trailing_zero_tail, Edge::k_zero, Edge::no_rows,
                          Edge::no_columns, Edge::aligned_8, Edge::aligned_128}) {
          if (!applies(kind, edge)) continue;
          SCOPED_TRACE(std::string(op->name()) + ", " + name_of(layout));
          expect_matches_cpu(*op, make_problem(spec_for(kind, t.ab, t.out, layout, edge), rng));
        }
  }
}

TEST(SimtOperators, many_groups_many_tiles_and_more_batches_than_a_grid_column) {
  // 300 groups: a block stages the offsets 256 at a time; K-grouped blocks of group g > 256 read
  // more than one offset per thread; tiles meet several groups each. 70000 batches and 70000
  // K-grouped groups: more than gridDim.y holds, so blocks loop over them.
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  const OperatorPtr op = simt_operator(DType::fp32, DType::fp32);
  ASSERT_NE(op, nullptr);
  std::mt19937 rng(7);
  std::vector<ProblemSpec> specs;
  for (bool zero_tail : {false, true}) {
    ProblemSpec s;
    s.a = s.b = s.out = DType::fp32;
    s.groups = 300, s.trailing = 7, s.zero_tail = zero_tail;
    s.kind = OperationKind::grouped_m, s.m = 700, s.n = 70, s.k = 20;
    specs.push_back(s);
    s.kind = OperationKind::grouped_n, s.m = 70, s.n = 700, s.k = 20;
    specs.push_back(s);
    s.kind = OperationKind::grouped_k, s.m = 20, s.n = 30, s.k = 600;
    specs.push_back(s);
  }
  ProblemSpec batches;
  batches.a = batches.b = batches.out = DType::fp32;
  batches.kind = OperationKind::batched_gemm, batches.groups = 70000, batches.m = 2, batches.n = 3, batches.k = 5;
  specs.push_back(batches);
  ProblemSpec k_groups = batches;
  k_groups.kind = OperationKind::grouped_k, k_groups.m = 1, k_groups.n = 2, k_groups.k = 150, k_groups.trailing = 3;
  specs.push_back(k_groups);
  for (const ProblemSpec& s : specs) expect_matches_cpu(*op, make_problem(s, rng));
}

TEST(SimtOperators, masked_layout_full_empty_and_partial_groups_match_the_cpu_operator) {
  // A (G, MaxM, K), out (G, MaxM, N), offsets the row counts: group 0 fills MaxM, group 1 is empty,
  // the others random; rows past each count keep their poison. MaxM of one row, one whole tile,
  // one row past a tile and several tiles; decode sizes (a few tokens an expert, many experts);
  // more groups than gridDim.y holds.
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  std::mt19937 rng(41);
  struct Case {
    DType ab, out;
    int64_t max_m, n, k, groups;
    Layout layout;
  };
  const Case cases[] = {
      {DType::bf16, DType::bf16, 1, 70, 33, 5, Layout::row_major},
      {DType::bf16, DType::fp32, 64, 64, 48, 4, Layout::column_major},
      {DType::fp16, DType::fp16, 65, 130, 40, 6, Layout::padded},
      {DType::fp32, DType::fp32, 200, 77, 70, 3, Layout::column_major_out},
      {DType::bf16, DType::bf16, 16, 128, 512, 64, Layout::row_major},  // decode
      {DType::fp32, DType::fp32, 3, 5, 7, 70000, Layout::row_major},    // groups looped over along y
  };
  for (const Case& c : cases) {
    const OperatorPtr op = simt_operator(c.ab, c.out);
    ASSERT_NE(op, nullptr);
    ProblemSpec s = spec_for(OperationKind::grouped_m_masked, c.ab, c.out, c.layout, Edge::ragged);
    s.m = c.max_m, s.n = c.n, s.k = c.k, s.groups = c.groups;
    SCOPED_TRACE(std::string(op->name()) + ", " + name_of(c.layout));
    expect_matches_cpu(*op, make_problem(s, rng));
  }
  // Every count 0, and every count MaxM.
  const OperatorPtr op = simt_operator(DType::bf16, DType::fp32);
  ASSERT_NE(op, nullptr);
  for (int32_t count : {0, 100}) {
    ProblemSpec s = spec_for(OperationKind::grouped_m_masked, DType::bf16, DType::fp32, Layout::row_major, Edge::ragged);
    s.m = 100, s.groups = 3;
    HostProblem host = make_problem(s, rng);
    for (int64_t g = 0; g < s.groups; ++g) host.offsets.set(g, count);
    expect_matches_cpu(*op, host);
  }
}

TEST(SimtOperators, aligned_layout_alignment_8_and_128_matches_the_cpu_operator) {
  // Groups start at the previous group's end rounded up to 8 or 128 (an expert-parallel
  // dispatcher's aligned prefix sums): the padding rows between keep their poison, with and without
  // zero_tail; rows past the last group are zeros (zero_tail) or untouched. Few large groups, and
  // many tiny or empty ones (padding before nearly every group, tiles meeting several groups).
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  std::mt19937 rng(43);
  for (DType ab : {DType::bf16, DType::fp32}) {
    const OperatorPtr op = simt_operator(ab, ab);
    ASSERT_NE(op, nullptr);
    for (int32_t alignment : {8, 128})
      for (bool zero_tail : {false, true})
        for (Layout layout : {Layout::row_major, Layout::column_major, Layout::padded}) {
          SCOPED_TRACE(std::string(op->name()) + ", " + name_of(layout));
          ProblemSpec s = spec_for(OperationKind::grouped_m, ab, ab, layout, Edge::ragged);
          s.group_alignment = alignment, s.zero_tail = zero_tail, s.trailing = 7, s.k = 40;
          // Rows for (G - 1) * (alignment - 1) padding rows: every draw of the groups fits.
          s.groups = 6, s.m = 5 * (alignment - 1) * 2 + 40, s.n = 70;
          expect_matches_cpu(*op, make_problem(s, rng));
          s.groups = alignment == 8 ? 40 : 12, s.m = (s.groups - 1) * (alignment - 1) * 2 + 30, s.k = 24;
          expect_matches_cpu(*op, make_problem(s, rng));
        }
  }
}

TEST(SimtOperators, aligned_layout_edges_written_by_hand_match_the_cpu_operator) {
  // Ends as a dispatcher may write them (validate()'s rule: a group ends at or after its aligned
  // start, or where the previous one ended: empty, without padding): the first group empty, a
  // group starting on the boundary, empty groups with and without their padding, the last group
  // ending exactly at TotalM or before a tail, the last group empty without padding. The zero tail
  // starts where the last group ends, as the CPU operator starts it (with an empty last group
  // written without padding: at the previous group's end, not rounded up).
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  const OperatorPtr op = simt_operator(DType::bf16, DType::fp32);
  ASSERT_NE(op, nullptr);
  std::mt19937 rng(47);
  struct Case {
    int32_t alignment;
    int64_t rows;
    std::vector<int32_t> ends;
    bool float64;  // the float64 reference agrees with the CPU operator (see below)
  };
  const std::vector<Case> cases = {
      {8, 80, {0, 5, 5, 8, 8, 21, 24, 24, 80}, true},        // ends exactly at TotalM
      {8, 80, {3, 3, 16, 17, 17, 40, 64, 70}, true},          // a tail of 10 rows
      {128, 300, {0, 1, 128, 129, 256, 257}, true},           // one row per group, 127 rows of padding
      {128, 300, {127, 255, 255, 256}, true},                 // groups ending one row before the boundary
      {8, 100, {10, 20, 20}, false},                          // the last group empty, without padding
      {128, 200, {5, 5, 5}, false},                           // only the first group, then empties
      {128, 130, {129, 129}, false},                          // the rounded-up start past TotalM
  };
  for (const Case& c : cases)
    for (bool zero_tail : {false, true}) {
      ProblemSpec s = spec_for(OperationKind::grouped_m, DType::bf16, DType::fp32, Layout::row_major, Edge::ragged);
      s.group_alignment = c.alignment, s.zero_tail = zero_tail, s.m = c.rows, s.n = 70, s.k = 24;
      s.groups = static_cast<int64_t>(c.ends.size());
      HostProblem host = make_problem(s, rng);
      host.ends = c.ends;
      for (size_t g = 0; g < c.ends.size(); ++g) host.offsets.set(static_cast<int64_t>(g), c.ends[g]);
      // tests/support/reference.hpp starts the zero tail after an empty last group's rounded-up
      // start (as the sm90 scheduler does); the CPU operator at the previous group's end.
      expect_matches_cpu(*op, host, c.float64 || !zero_tail);
    }
}

/// Group ends as the kernels clamp malformed offsets: a running maximum of min(max(v, 0), limit).
std::vector<int32_t> clamped(const std::vector<int32_t>& raw, int32_t limit) {
  std::vector<int32_t> ends;
  int32_t end = 0;
  for (int32_t v : raw) ends.push_back(end = std::max(end, std::min(std::max(v, 0), limit)));
  return ends;
}

/// The float64 result of an M-grouped problem of aligned groups whose device offsets are `raw`, as
/// the kernels clamp them: e_g = the running maximum of min(max(raw[j], 0), TotalM) over j <= g;
/// group g covers [min(round_up(e_{g-1}), TotalM), e_g) when that is not empty; the zero tail starts
/// at e_{G-1}. Everything else is unwritten.
Reference aligned_reference(const HostProblem& h, const std::vector<int32_t>& raw) {
  const TensorDesc &A = h.A.desc, &B = h.B.desc;
  const int64_t rows = A.size(0), K = A.size(1), N = B.size(2), align = h.spec.group_alignment;
  Reference ref;
  ref.values.assign(static_cast<size_t>(rows * N), 0.0);
  ref.written.assign(ref.values.size(), 0);
  int64_t e = 0;
  for (size_t g = 0; g < raw.size(); ++g) {
    const int64_t start = std::min(rows, (e + align - 1) / align * align);
    e = std::max(e, std::min<int64_t>(std::max(raw[g], 0), rows));
    if (e <= start) continue;
    auto a = detail::read_matrix(A, start * A.strides[0], e - start, K, A.strides[0], A.strides[1]);
    auto b = detail::read_matrix(B, static_cast<int64_t>(g) * B.strides[0], K, N, B.strides[1], B.strides[2]);
    detail::multiply_into(ref.values, start, a, b, e - start, N, K);
    std::fill(ref.written.begin() + start * N, ref.written.begin() + e * N, 1);
  }
  if (h.spec.zero_tail) std::fill(ref.written.begin() + e * N, ref.written.end(), 1);
  return ref;
}

TEST(SimtOperators, malformed_device_offsets_are_clamped_and_nothing_outside_out_is_written) {
  // Decreasing, negative and past-the-end offsets on the device (validate() reads only host ones):
  // the result is that of the clamped ends, and every byte of out's storage outside the groups
  // (and outside out) keeps its poison. Aligned groups (8, 128) clamp the same ends and start at
  // them rounded up (never past TotalM); masked counts are clamped to [0, MaxM] one by one
  // (negative: an empty group; past MaxM: the whole group).
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  const OperatorPtr op = simt_operator(DType::bf16, DType::fp32);
  ASSERT_NE(op, nullptr);
  std::mt19937 rng(13);
  const std::vector<std::vector<int32_t>> cases = {{30, 10, -5, 45, 1000, 20, 60},
                                                   {-1, -7, -3, -100, -2, -1, -9},
                                                   {500, 0, 0, 0, 0, 0, 0},
                                                   {3, 4, 9, 2147483647, -2147483647 - 1, 99, 101},
                                                   {7, 7, 17, 16, 33, 64, 65}};
  struct Form {
    OperationKind kind;
    int32_t alignment;
  };
  for (Form f : {Form{OperationKind::grouped_m, 1}, Form{OperationKind::grouped_n, 1}, Form{OperationKind::grouped_k, 1},
                 Form{OperationKind::grouped_m, 8}, Form{OperationKind::grouped_m, 128},
                 Form{OperationKind::grouped_m_masked, 1}})
    for (const std::vector<int32_t>& raw : cases)
      for (bool zero_tail : {false, true}) {
        const OperationKind kind = f.kind;
        if (kind == OperationKind::grouped_m_masked && zero_tail) continue;  // no tail (validate() refuses it)
        ProblemSpec s;
        s.kind = kind, s.a = s.b = DType::bf16, s.out = DType::fp32;
        s.groups = static_cast<int64_t>(raw.size()), s.m = 100, s.n = 90, s.k = 80, s.zero_tail = zero_tail;
        s.special_groups = false, s.out_layout = OutLayout::padded;
        if (f.alignment > 1) s.trailing = 100, s.group_alignment = f.alignment;  // the draw: all groups empty
        SCOPED_TRACE(s.describe());
        HostProblem host = make_problem(s, rng);
        for (size_t g = 0; g < raw.size(); ++g) host.offsets.set(static_cast<int64_t>(g), raw[g]);
        auto dev = DeviceProblem::upload(host);
        ASSERT_TRUE(dev) << dev.status().to_string();
        Status st = dev->run(*op);
        ASSERT_TRUE(st) << st.to_string();
        ASSERT_TRUE(synchronize());
        auto got = dev->download_out(host.out);
        ASSERT_TRUE(got);
        const Tolerance tol = default_tolerance(s.out, s.k);
        if (f.alignment > 1) {
          const Comparison c = compare(*got, aligned_reference(host, raw), tol);
          EXPECT_TRUE(c.ok()) << c.describe();
          continue;
        }
        std::vector<int32_t> ends;
        if (kind == OperationKind::grouped_m_masked) {
          for (int32_t v : raw) ends.push_back(std::clamp<int32_t>(v, 0, static_cast<int32_t>(s.m)));
        } else {
          const int32_t limit = static_cast<int32_t>(kind == OperationKind::grouped_m   ? s.m
                                                     : kind == OperationKind::grouped_n ? s.n
                                                                                        : s.k);
          ends = clamped(raw, limit);
        }
        for (size_t g = 0; g < ends.size(); ++g) host.offsets.set(static_cast<int64_t>(g), ends[g]);
        const Comparison c = compare(*got, reference_result(host.arguments()), tol);
        EXPECT_TRUE(c.ok()) << c.describe();
      }
}

TEST(SimtOperators, offsets_are_read_on_the_device_at_each_run) {
  // One artifact, two runs: the second sees offsets changed in device memory (a CUDA graph
  // replays the same launch with whatever the offsets hold then).
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  const OperatorPtr op = simt_operator(DType::fp16, DType::fp16);
  ASSERT_NE(op, nullptr);
  std::mt19937 rng(17);
  ProblemSpec s;
  s.kind = OperationKind::grouped_n, s.a = s.b = s.out = DType::fp16;
  s.m = 33, s.n = 150, s.k = 24, s.groups = 4, s.trailing = 10;
  HostProblem host = make_problem(s, rng);
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev) << dev.status().to_string();
  auto artifact = op->compile(dev->args);
  ASSERT_TRUE(artifact) << artifact.status().to_string();
  ASSERT_TRUE(dev->run(*op, *artifact));
  const std::vector<int32_t> moved = {0, 70, 70, 149};  // group 0 and 2 empty now
  for (size_t g = 0; g < moved.size(); ++g) host.offsets.set(static_cast<int64_t>(g), moved[g]);
  ASSERT_TRUE(dev->offsets.copy_from_host(host.offsets.storage.data(), 4 * moved.size()));
  ASSERT_TRUE(dev->out.fill_bytes(0xff));
  ASSERT_TRUE(dev->run(*op, *artifact));
  ASSERT_TRUE(synchronize());
  auto got = dev->download_out(host.out);
  ASSERT_TRUE(got);
  const Comparison c = compare(*got, reference_result(host.arguments()), default_tolerance(s.out, s.k));
  EXPECT_TRUE(c.ok()) << c.describe();
}

}  // namespace
}  // namespace gemmops::testing
