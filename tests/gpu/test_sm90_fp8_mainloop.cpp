// tests/gpu/test_sm90_fp8_mainloop.cpp: the fp8 main loop (kernels/sm90/mainloop_fp8.cuh) against the
// CPU scaled operator on ragged groups (empty ones included) and K not a multiple of 128; skipped
// without a device. The fp8 operators are trial designs: the test opts in (GEMMOPS_TRIAL_DESIGNS=1)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/device_problem.hpp"
#include "support/host_tensor.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

using testing::HostTensor;

/// A scaled e4m3 M-grouped problem on the host: A (TotalM, K), B (G, K, N) K-major, 1x128 A scales
/// (TotalM, KB), 128x128 B scales (G, ceil(N/128), KB), and `rows` of A past the last group's end.
struct Fp8Problem {
  int64_t G, total_m, K, N;
  HostTensor A, B, a_scales, b_scales, offsets;
  bool rowwise = false;  ///< a scale per row of A (TotalM,) and per column of B (G, N), not blocks
  GroupedGemmArguments args(const TensorDesc& a, const TensorDesc& b, const TensorDesc& out, const TensorDesc& off,
                            const TensorDesc& sa, const TensorDesc& sb) const {
    GroupedGemmArguments g{a, b, out, DType::fp32, off};
    g.a_scales = OperandScales{sa, rowwise ? ScaleGranularity::row : ScaleGranularity::block_1x128};
    g.b_scales = OperandScales{sb, rowwise ? ScaleGranularity::row : ScaleGranularity::block_128x128};
    return g;
  }
};

Fp8Problem make_problem(const std::vector<int32_t>& group_rows, int64_t total_m, int64_t K, int64_t N, uint32_t seed,
                        bool rowwise = false) {
  Fp8Problem p{static_cast<int64_t>(group_rows.size()), total_m, K, N, {}, {}, {}, {}, {}, rowwise};
  const int64_t kb = (K + 127) / 128, nb = (N + 127) / 128;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> value(-2.0, 2.0), scale(0.25, 2.0);
  p.A = HostTensor::contiguous(DType::e4m3, {total_m, K});
  p.B = HostTensor::strided(DType::e4m3, {p.G, K, N}, {N * K, 1, K});
  p.a_scales = rowwise ? HostTensor::contiguous(DType::fp32, {total_m}) : HostTensor::contiguous(DType::fp32, {total_m, kb});
  p.b_scales = rowwise ? HostTensor::contiguous(DType::fp32, {p.G, N}) : HostTensor::contiguous(DType::fp32, {p.G, nb, kb});
  p.offsets = HostTensor::contiguous(DType::i32, {p.G});
  for (int64_t i = 0; i < p.A.numel(); ++i) p.A.set(i, value(rng));
  for (int64_t i = 0; i < p.B.numel(); ++i) p.B.set(i, value(rng));
  for (int64_t i = 0; i < p.a_scales.numel(); ++i) p.a_scales.set(i, scale(rng));
  for (int64_t i = 0; i < p.b_scales.numel(); ++i) p.b_scales.set(i, scale(rng));
  int32_t end = 0;
  for (int64_t g = 0; g < p.G; ++g) p.offsets.set(g, end += group_rows[static_cast<size_t>(g)]);
  return p;
}

/// Runs `op` on the device on p's operands into `out` (poisoned first, copied back to the host).
void run_on_device(const OperatorPtr& op, const Fp8Problem& p, HostTensor& out) {
  out.poison();
  auto dA = testing::upload(p.A), dB = testing::upload(p.B), dOut = testing::upload(out),
       dOff = testing::upload(p.offsets), dSa = testing::upload(p.a_scales), dSb = testing::upload(p.b_scales);
  ASSERT_TRUE(dA && dB && dOut && dOff && dSa && dSb);
  const GroupedGemmArguments g = p.args(testing::on(p.A, *dA), testing::on(p.B, *dB), testing::on(out, *dOut),
                                        testing::on(p.offsets, *dOff), testing::on(p.a_scales, *dSa),
                                        testing::on(p.b_scales, *dSb));
  const Status s = op->supports(g, Target::sm(90, true));
  ASSERT_TRUE(s) << s.to_string();
  const Status run = op->run(g);
  ASSERT_TRUE(run) << run.to_string();
  ASSERT_TRUE(dOut->copy_to_host(out.storage.data(), out.storage.size()));
}

/// Runs the fp8 operator on the device and the CPU scaled operator on the host, and compares: rows
/// of the groups within bf16's rounding plus fp32 summation (the device promotes per 128-K block,
/// the host dequantises first), rows past the last group untouched (poison).
void expect_matches_cpu(const OperatorPtr& op, const Fp8Problem& p) {
  const int64_t rows_done = static_cast<int64_t>(p.offsets.get(p.G - 1));
  // Reference: the CPU operator, fp32 out.
  HostTensor ref = HostTensor::contiguous(DType::fp32, {p.total_m, p.N});
  const OperatorPtr cpu = default_registry().find("cpu_grouped_gemm_m");
  ASSERT_NE(cpu, nullptr);
  const Status rs = cpu->run(p.args(p.A.desc, p.B.desc, ref.desc, p.offsets.desc, p.a_scales.desc, p.b_scales.desc));
  ASSERT_TRUE(rs) << rs.to_string();
  // Device.
  HostTensor out = HostTensor::contiguous(DType::bf16, {p.total_m, p.N});
  run_on_device(op, p, out);
  if (::testing::Test::HasFatalFailure()) return;
  int64_t bad = 0, first = -1;
  double err2 = 0, ref2 = 0;
  for (int64_t r = 0; r < p.total_m; ++r) {
    for (int64_t c = 0; c < p.N; ++c) {
      const int64_t e = r * p.N + c;
      if (r >= rows_done) {  // no group's row: untouched
        const std::byte* b = out.at(e);
        if (b[0] != std::byte{0xff} || b[1] != std::byte{0xff}) bad += 1, first = first < 0 ? e : first;
        continue;
      }
      const double want = ref.get(e), got = out.get(e);
      // bf16's rounding (2^-9) with room, plus the fp8 MMA's own accumulation inside each 128-K block
      // (fewer bits than fp32: why the kernel promotes per block), growing like sqrt(K). A wrong row,
      // column, group or scale costs O(|want|), about sqrt(K) here.
      const double tol = 0x1p-7 * std::fabs(want) + 0x1p-6 * std::sqrt(static_cast<double>(p.K));
      if (!(std::fabs(got - want) <= tol)) bad += 1, first = first < 0 ? e : first;
      err2 += (got - want) * (got - want), ref2 += want * want;
    }
  }
  EXPECT_LE(std::sqrt(err2 / (ref2 > 0 ? ref2 : 1)), 0x1p-7) << op->name() << ": relative Frobenius error";
  EXPECT_EQ(bad, 0) << op->name() << ": first wrong element " << first << " (row " << first / p.N << ", column "
                    << first % p.N << "): device " << (first >= 0 ? out.get(first) : 0.0) << ", cpu "
                    << (first >= 0 ? ref.get(first) : 0.0);
}

/// The masked layout (an expert-parallel dispatcher's): A (G, MaxM, K), out (G, MaxM, N), `counts`
/// rows of each group valid; the device against the CPU masked operator on those rows, every other
/// row of out untouched (poison).
void expect_masked_matches_cpu(const OperatorPtr& op, const std::vector<int32_t>& counts, int64_t max_m, int64_t K,
                               int64_t N, uint32_t seed) {
  const auto G = static_cast<int64_t>(counts.size());
  const int64_t kb = (K + 127) / 128, nb = (N + 127) / 128;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> value(-2.0, 2.0), scale(0.25, 2.0);
  Fp8Problem p{G, G * max_m, K, N, {}, {}, {}, {}, {}};
  p.A = HostTensor::contiguous(DType::e4m3, {G, max_m, K});
  p.B = HostTensor::strided(DType::e4m3, {G, K, N}, {N * K, 1, K});
  p.a_scales = HostTensor::contiguous(DType::fp32, {G, max_m, kb});
  p.b_scales = HostTensor::contiguous(DType::fp32, {G, nb, kb});
  p.offsets = HostTensor::contiguous(DType::i32, {G});
  for (HostTensor* t : {&p.A, &p.B})
    for (int64_t i = 0; i < t->numel(); ++i) t->set(i, value(rng));
  for (HostTensor* t : {&p.a_scales, &p.b_scales})
    for (int64_t i = 0; i < t->numel(); ++i) t->set(i, scale(rng));
  for (int64_t g = 0; g < G; ++g) p.offsets.set(g, counts[static_cast<size_t>(g)]);
  HostTensor ref = HostTensor::contiguous(DType::fp32, {G, max_m, N});
  const OperatorPtr cpu = default_registry().find("cpu_grouped_gemm_m_masked");
  ASSERT_NE(cpu, nullptr);
  const Status rs = cpu->run(p.args(p.A.desc, p.B.desc, ref.desc, p.offsets.desc, p.a_scales.desc, p.b_scales.desc));
  ASSERT_TRUE(rs) << rs.to_string();
  HostTensor out = HostTensor::contiguous(DType::bf16, {G, max_m, N});
  run_on_device(op, p, out);
  if (::testing::Test::HasFatalFailure()) return;
  int64_t bad = 0, first = -1;
  for (int64_t g2 = 0; g2 < G; ++g2)
    for (int64_t r = 0; r < max_m; ++r)
      for (int64_t c = 0; c < N; ++c) {
        const int64_t e = (g2 * max_m + r) * N + c;
        if (r >= counts[static_cast<size_t>(g2)]) {  // past the group's count: untouched
          const std::byte* b = out.at(e);
          if (b[0] != std::byte{0xff} || b[1] != std::byte{0xff}) bad += 1, first = first < 0 ? e : first;
          continue;
        }
        const double want = ref.get(e), got = out.get(e);
        const double tol = 0x1p-7 * std::fabs(want) + 0x1p-6 * std::sqrt(static_cast<double>(K));  // as above
        if (!(std::fabs(got - want) <= tol)) bad += 1, first = first < 0 ? e : first;
      }
  EXPECT_EQ(bad, 0) << op->name() << ": first wrong element " << first << " (group " << first / (max_m * N)
                    << ", row " << (first / N) % max_m << ", column " << first % N << ")";
}

class Sm90Fp8Mainloop : public ::testing::TestWithParam<OperatorPtr> {};

TEST_P(Sm90Fp8Mainloop, matches_the_cpu_scaled_operator_on_ragged_groups_with_empty_ones) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  // Ragged: a group of one row, empty groups (first, middle, last), groups across tile edges; 40
  // rows past the last group's end.
  const std::vector<int32_t> rows{0, 1, 130, 0, 257, 64, 0};
  for (int64_t k : {320, 128, 1040, 16}) {  // partial last blocks (64, 16 and 16 of 128), one whole
    SCOPED_TRACE("K = " + std::to_string(k));
    expect_matches_cpu(GetParam(), make_problem(rows, 452 + 40, k, 384, 7u + static_cast<uint32_t>(k)));
  }
}

TEST_P(Sm90Fp8Mainloop, matches_the_cpu_operator_where_tiles_straddle_b_scale_blocks) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  // 192-wide tiles start at 0 or 64 within a 128-wide B scale block: N = 320 (tiles at 0 and 192,
  // the second's columns 64 in block 1 and the rest in block 2, where N ends) and N = 448 (a third
  // tile at 384 whose second block does not exist: its columns past N read block 3's scales).
  const std::vector<int32_t> rows{0, 1, 130, 0, 257, 64, 0};
  for (int64_t n : {320, 448}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    expect_matches_cpu(GetParam(), make_problem(rows, 452 + 40, 1040, n, 53u + static_cast<uint32_t>(n)));
  }
}

TEST_P(Sm90Fp8Mainloop, matches_the_cpu_operator_with_rowwise_scales) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  if (GetParam()->metadata().design.cluster_m > 1) GTEST_SKIP() << "rowwise scales are served on 1-CTA designs";
  // torch's rowwise scales (a row of A, a column of B): ragged and empty groups, N = 320 (the last
  // tile's columns past N read no scale), K with a partial last block.
  const std::vector<int32_t> rows{0, 1, 130, 0, 257, 64, 0};
  for (int64_t k : {320, 1040}) {
    SCOPED_TRACE("K = " + std::to_string(k));
    expect_matches_cpu(GetParam(), make_problem(rows, 452 + 40, k, 320, 31u + static_cast<uint32_t>(k), true));
  }
}

TEST_P(Sm90Fp8Mainloop, matches_the_cpu_operator_on_the_masked_layout) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  // DeepGEMM's masked form at small size: counts of 0, 1, a partial tile, a full MaxM; K with a
  // partial last block.
  expect_masked_matches_cpu(GetParam(), {0, 1, 100, 256}, 256, 320, 384, 17u);
}

TEST_P(Sm90Fp8Mainloop, is_offered_without_the_trial_opt_in_unless_a_trial) {
  const bool trial = GetParam()->metadata().trial;
  testing::ScopedEnv no_trial{{"GEMMOPS_TRIAL_DESIGNS", "0"}};
  const Fp8Problem p = make_problem({3, 5}, 8, 256, 128, 1u);
  TensorDesc a = p.A.desc, b = p.B.desc, off = p.offsets.desc, sa = p.a_scales.desc, sb = p.b_scales.desc;
  TensorDesc out = TensorDesc::contiguous(DType::bf16, {8, 128}, Device::cuda(0));
  for (TensorDesc* t : {&a, &b, &off, &sa, &sb}) t->device = Device::cuda(0), t->data = nullptr;
  bool offered = false;
  for (const OperatorPtr& op : get_operators(p.args(a, b, out, off, sa, sb), Target::sm(90, true)))
    offered |= op->name() == GetParam()->name();
  EXPECT_EQ(offered, !trial);
}

std::string operator_name(const ::testing::TestParamInfo<OperatorPtr>& info) { return info.param->name(); }

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90Fp8Mainloop, ::testing::ValuesIn(testing::sm90_fp8_operators()), operator_name);

}  // namespace
}  // namespace gemmops
