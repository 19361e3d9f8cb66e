// tests/unit/test_compare.cpp: negative controls: the checker must reject wrong, missing and stray writes
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <random>

#include "cpu/cpu_operator.hpp"
#include "support/compare.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {
namespace {

struct Ran {
  HostProblem p;
  Reference ref;
};

Ran run_grouped_m() {
  std::mt19937 rng(31);
  ProblemSpec s;
  s.kind = OperationKind::grouped_m, s.m = 40, s.n = 24, s.k = 16, s.groups = 3, s.trailing = 5;
  s.out_layout = OutLayout::padded;
  Ran r{make_problem(s, rng), {}};
  EXPECT_TRUE(cpu::CpuOperator(s.kind).run(r.p.arguments()).is_ok());
  r.ref = reference_result(r.p.arguments());
  return r;
}

TEST(Compare, accepts_the_cpu_result) {
  Ran r = run_grouped_m();
  EXPECT_TRUE(compare(r.p.out, r.ref, default_tolerance(DType::bf16, 16)).ok());
}

TEST(Compare, rejects_a_reference_shifted_by_one_element) {
  Ran r = run_grouped_m();
  Reference shifted = r.ref;
  std::rotate(shifted.values.begin(), shifted.values.begin() + 1, shifted.values.end());
  const Comparison c = compare(r.p.out, shifted, default_tolerance(DType::bf16, 16));
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.first_mismatch, 0);
  EXPECT_GT(c.rel_frobenius, 0.1);
}

TEST(Compare, rejects_an_element_left_unwritten) {
  Ran r = run_grouped_m();
  std::fill_n(r.p.out.at(7), 2, std::byte{0xff});
  const Comparison c = compare(r.p.out, r.ref, default_tolerance(DType::bf16, 16));
  EXPECT_EQ(c.first_unwritten, 7);
}

TEST(Compare, rejects_a_write_past_the_last_offset_or_into_row_padding) {
  Ran r = run_grouped_m();
  const int64_t last_row = r.p.ends.back();
  HostTensor trailing = r.p.out;
  trailing.set(last_row * 24 + 3, 1.0);  // a row past offsets[G-1]
  EXPECT_GE(compare(trailing, r.ref, default_tolerance(DType::bf16, 16)).first_clobbered, 0);
  HostTensor padding = r.p.out;
  padding.storage[static_cast<size_t>(24 * 2)] = std::byte{0};  // first pad element of row 0
  EXPECT_EQ(compare(padding, r.ref, default_tolerance(DType::bf16, 16)).first_clobbered, 48);
}

}  // namespace
}  // namespace gemmops::testing
