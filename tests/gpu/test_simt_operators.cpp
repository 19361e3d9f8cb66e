// tests/gpu/test_simt_operators.cpp: the portable (simt) operators on every form x dtype x layout x
// edge (empty and 1-row groups, rows or columns past the last group with and without zero_tail,
// K = 0, no rows, no columns) against the CPU operator and the float64 reference, outputs poisoned
// and checked element by element; malformed offsets clamped; more groups than a block stages or a
// grid row holds. Instantiated on every machine; skipped with the reason where no sm_80+ device is.
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <random>
#include <string>
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
enum class Edge { ragged, trailing, trailing_zero_tail, k_zero, no_rows, no_columns };

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
  }
  if (kind == OperationKind::gemm || kind == OperationKind::batched_gemm) s.trailing = 0;
  return s;
}

/// Runs `op` on a device copy of `host` and the CPU operator on a host copy, and checks: the CPU
/// result against the float64 reference, the device result against both (element by element;
/// what the reference leaves unwritten must keep its poison).
void expect_matches_cpu(const Operator& op, const HostProblem& host) {
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
  const Reference exact = reference_result(host.arguments());
  const Tolerance tol = default_tolerance(host.spec.out, host.spec.k);
  const Comparison cpu_vs_exact = compare(cpu.out, exact, tol);
  EXPECT_TRUE(cpu_vs_exact.ok()) << "cpu: " << cpu_vs_exact.describe();
  const Comparison vs_exact = compare(*got, exact, tol);
  EXPECT_TRUE(vs_exact.ok()) << "simt against float64: " << vs_exact.describe();
  Reference by_cpu = exact;  // the CPU operator's values where the operation writes
  for (int64_t e = 0, n = cpu.out.numel(); e < n; ++e) by_cpu.values[static_cast<size_t>(e)] = cpu.out.get(e);
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
                          Edge::no_columns}) {
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

/// Group ends as the kernels clamp malformed offsets: a running maximum of min(max(v, 0), limit).
std::vector<int32_t> clamped(const std::vector<int32_t>& raw, int32_t limit) {
  std::vector<int32_t> ends;
  int32_t end = 0;
  for (int32_t v : raw) ends.push_back(end = std::max(end, std::min(std::max(v, 0), limit)));
  return ends;
}

TEST(SimtOperators, malformed_device_offsets_are_clamped_and_nothing_outside_out_is_written) {
  // Decreasing, negative and past-the-end offsets on the device (validate() reads only host ones):
  // the result is that of the clamped ends, and every byte of out's storage outside the groups
  // (and outside out) keeps its poison.
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  const OperatorPtr op = simt_operator(DType::bf16, DType::fp32);
  ASSERT_NE(op, nullptr);
  std::mt19937 rng(13);
  const std::vector<std::vector<int32_t>> cases = {{30, 10, -5, 45, 1000, 20, 60},
                                                   {-1, -7, -3, -100, -2, -1, -9},
                                                   {500, 0, 0, 0, 0, 0, 0}};
  for (OperationKind kind : {OperationKind::grouped_m, OperationKind::grouped_n, OperationKind::grouped_k})
    for (const std::vector<int32_t>& raw : cases)
      for (bool zero_tail : {false, true}) {
        ProblemSpec s;
        s.kind = kind, s.a = s.b = DType::bf16, s.out = DType::fp32;
        s.groups = static_cast<int64_t>(raw.size()), s.m = 100, s.n = 90, s.k = 80, s.zero_tail = zero_tail;
        s.special_groups = false, s.out_layout = OutLayout::padded;
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
        const int32_t limit = static_cast<int32_t>(kind == OperationKind::grouped_m   ? s.m
                                                   : kind == OperationKind::grouped_n ? s.n
                                                                                      : s.k);
        const std::vector<int32_t> ends = clamped(raw, limit);
        for (size_t g = 0; g < ends.size(); ++g) host.offsets.set(static_cast<int64_t>(g), ends[g]);
        const Comparison c = compare(*got, reference_result(host.arguments()), default_tolerance(s.out, s.k));
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
