// tests/gpu/test_sm90_empty_problems.cpp: the best sm90 operator runs problems with no work (TotalM,
// N, G or L of 0) without error, and writes zeros where K is 0.
// Operands without elements have no memory, as torch gives them (a null data pointer).
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/device_problem.hpp"

namespace gemmops::testing {
namespace {

constexpr unsigned char kPoison = 0xFF;  // all bits set: a bf16 NaN

/// Device memory for each operand with elements (poisoned; offsets zero); null for the others.
struct EmptyProblem {
  std::vector<DeviceBuffer> buffers;

  TensorDesc operand(DType t, std::vector<int64_t> shape, unsigned char fill = kPoison) {
    TensorDesc d = TensorDesc::contiguous(t, std::move(shape), Device::cuda(0));
    if (d.numel() == 0) return d;  // torch's empty tensors: no memory
    auto b = DeviceBuffer::allocate(static_cast<std::size_t>(d.span_bytes()));
    EXPECT_TRUE(b) << b.status().to_string();
    if (!b) return d;
    EXPECT_TRUE(b->fill_bytes(fill));
    d.data = b->data();
    buffers.push_back(std::move(*b));
    return d;
  }

  /// The bytes of the operand at `data` (a pointer operand() returned).
  std::vector<unsigned char> download(const void* data) const {
    for (const DeviceBuffer& b : buffers) {
      if (b.data() != data) continue;
      std::vector<unsigned char> bytes(b.bytes());
      EXPECT_TRUE(b.copy_to_host(bytes.data(), bytes.size()));
      return bytes;
    }
    return {};
  }
};

/// Runs the best sm90 operator for `args` and waits for it.
void run_best(const Arguments& args) {
  std::vector<OperatorPtr> ops = get_operators(args);
  std::erase_if(ops, [](const OperatorPtr& op) { return op->metadata().provider != "sm90"; });
  ASSERT_FALSE(ops.empty()) << "no sm90 operator; " << validate(args).to_string();
  SCOPED_TRACE(ops[0]->name());
  const std::size_t ws_bytes = ops[0]->workspace_size(args);
  DeviceBuffer ws;
  if (ws_bytes > 0) {
    auto allocated = DeviceBuffer::allocate(ws_bytes);
    ASSERT_TRUE(allocated) << allocated.status().to_string();
    ws = std::move(*allocated);
  }
  Status s = ops[0]->run(args, {}, nullptr, Workspace{ws.data(), ws_bytes});
  ASSERT_TRUE(s) << s.to_string();
  s = synchronize();
  ASSERT_TRUE(s) << s.to_string();
}

class Sm90EmptyProblems : public ::testing::Test {
 protected:
  void SetUp() override { GEMMOPS_SKIP_WITHOUT_DEVICE("90a"); }
  EmptyProblem p;
  const DType bf16 = DType::bf16;
};

TEST_F(Sm90EmptyProblems, m_grouped_without_rows_runs) {  // an expert-parallel rank with no tokens
  GroupedGemmArguments g{p.operand(bf16, {0, 64}), p.operand(bf16, {4, 64, 128}), p.operand(bf16, {0, 128}),
                         DType::fp32, p.operand(DType::i32, {4}, 0)};
  run_best(g);
}

TEST_F(Sm90EmptyProblems, m_grouped_with_n_zero_runs) {
  GroupedGemmArguments g{p.operand(bf16, {96, 64}), p.operand(bf16, {4, 64, 0}), p.operand(bf16, {96, 0}),
                         DType::fp32, p.operand(DType::i32, {4}, 0)};
  run_best(g);
}

TEST_F(Sm90EmptyProblems, k_grouped_without_groups_runs) {
  GroupedGemmArguments g{p.operand(bf16, {64, 96}), p.operand(bf16, {96, 128}), p.operand(bf16, {0, 64, 128}),
                         DType::fp32, p.operand(DType::i32, {0})};
  run_best(g);
}

TEST_F(Sm90EmptyProblems, dense_and_batched_without_rows_run) {
  run_best(GemmArguments{p.operand(bf16, {0, 64}), p.operand(bf16, {64, 128}), p.operand(bf16, {0, 128})});
  run_best(GemmArguments{p.operand(bf16, {0, 8, 64}), p.operand(bf16, {0, 64, 128}), p.operand(bf16, {0, 8, 128})});
}

// A sum over no K is zero: out is written although A and B have no elements (and no memory).
TEST_F(Sm90EmptyProblems, a_dense_gemm_without_k_writes_zeros) {
  GemmArguments g{p.operand(bf16, {96, 0}), p.operand(bf16, {0, 128}), p.operand(bf16, {96, 128})};
  run_best(g);
  for (unsigned char byte : p.download(g.out.data)) ASSERT_EQ(byte, 0);
}

TEST_F(Sm90EmptyProblems, k_grouped_without_k_writes_zeros) {
  GroupedGemmArguments g{p.operand(bf16, {64, 0}), p.operand(bf16, {0, 128}), p.operand(bf16, {3, 64, 128}),
                         DType::fp32, p.operand(DType::i32, {3}, 0)};
  run_best(g);
  for (unsigned char byte : p.download(g.out.data)) ASSERT_EQ(byte, 0);
}

}  // namespace
}  // namespace gemmops::testing
