// tests/unit/test_constraints.cpp: check_constraints, design and operator names
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <vector>

#include "gemmops/metadata.hpp"
#include "support/problems.hpp"

namespace gemmops {
namespace {

using testing::make_batched;
using testing::make_gemm;
using testing::make_grouped_m;

std::string unsupported_by(const OperandConstraints& c, const Arguments& args) {
  Status s = check_constraints(c, args);
  EXPECT_EQ(s.code(), ErrorCode::unsupported) << s.to_string();
  return s.message();
}

TEST(CheckConstraints, empty_lists_accept_anything_valid) {
  OperandConstraints c;
  EXPECT_TRUE(check_constraints(c, make_gemm(8, 8, 8)));
  EXPECT_TRUE(check_constraints(c, make_grouped_m(4, 64, 8, 8)));
}

TEST(CheckConstraints, invalid_arguments_fail_validation_first) {
  auto g = make_gemm(8, 8, 8);
  g.accumulator = DType::fp16;
  Status s = check_constraints(OperandConstraints{}, g);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message(), "accumulator: must be fp32; got fp16");
}

TEST(CheckConstraints, operation_kind_must_be_listed) {
  OperandConstraints c;
  c.kinds = {OperationKind::gemm, OperationKind::batched_gemm};
  EXPECT_EQ(unsupported_by(c, make_grouped_m(4, 64, 8, 8)),
            "operation: must be one of gemm, batched_gemm; got grouped_gemm_m");
}

TEST(CheckConstraints, device_kind_must_match) {
  OperandConstraints c;
  c.device = Device::Kind::cuda;
  EXPECT_EQ(unsupported_by(c, make_gemm(8, 8, 8)), "A: must be on a cuda device; got cpu");
  c.device = Device::Kind::cpu;
  EXPECT_EQ(unsupported_by(c, make_gemm(8, 8, 8, DType::bf16, DType::bf16, Device::cuda(1))),
            "A: must be on a cpu device; got cuda:1");
}

TEST(CheckConstraints, a_dtype_must_be_listed) {
  OperandConstraints c;
  c.a_dtypes = {DType::bf16, DType::fp16};
  EXPECT_EQ(unsupported_by(c, make_gemm(8, 8, 8, DType::fp32, DType::fp32)),
            "A: dtype must be one of bf16, fp16; got fp32");
}

TEST(CheckConstraints, b_dtype_must_be_listed) {
  OperandConstraints c;
  c.a_b_same_dtype = false;
  c.b_dtypes = {DType::e4m3};
  auto g = make_gemm(8, 8, 8, DType::e4m3);
  g.B.dtype = DType::e5m2;
  EXPECT_EQ(unsupported_by(c, g), "B: dtype must be one of e4m3; got e5m2");
}

TEST(CheckConstraints, a_b_same_dtype_refuses_fp8_mixes) {
  OperandConstraints c;
  auto g = make_gemm(8, 8, 8, DType::e4m3);
  g.B.dtype = DType::e5m2;
  EXPECT_EQ(unsupported_by(c, g), "B: dtype must equal A's dtype (e4m3); got e5m2");
  c.a_b_same_dtype = false;
  EXPECT_TRUE(check_constraints(c, g));
}

TEST(CheckConstraints, out_dtype_must_be_listed) {
  OperandConstraints c;
  c.out_dtypes = {DType::bf16};
  EXPECT_EQ(unsupported_by(c, make_gemm(8, 8, 8, DType::bf16, DType::fp32)),
            "out: dtype must be one of bf16; got fp32");
}

TEST(CheckConstraints, accumulator_must_be_listed) {
  OperandConstraints c;
  c.accumulator_dtypes = {DType::fp16};  // an operator may only list what validate() allows
  EXPECT_EQ(unsupported_by(c, make_gemm(8, 8, 8)), "accumulator: dtype must be one of fp16; got fp32");
}

TEST(CheckConstraints, a_major_must_be_listed) {
  OperandConstraints c;
  c.a_majors = {Major::k};
  auto g = make_gemm(8, 8, 16);
  g.A = TensorDesc(DType::bf16, {8, 16}, {1, 8}, Device::cpu());
  EXPECT_EQ(unsupported_by(c, g), "A: must be k-major; got mn-major");
}

TEST(CheckConstraints, b_major_must_be_listed_and_a_strided_b_has_none) {
  OperandConstraints c;
  c.b_majors = {Major::k, Major::mn};
  auto g = make_gemm(8, 8, 16);
  g.B = TensorDesc(DType::bf16, {16, 8}, {16, 2}, Device::cpu());
  EXPECT_EQ(unsupported_by(c, g),
            "B: must be k-major, mn-major; got neither of its last two dimensions contiguous, strides (16, 2)");
  c.b_majors = {Major::k};
  EXPECT_EQ(unsupported_by(c, make_gemm(8, 8, 16)), "B: must be k-major; got mn-major");
}

TEST(CheckConstraints, out_must_be_row_major_when_asked) {
  OperandConstraints c;
  c.out_row_major = true;
  auto g = make_gemm(8, 8, 16);
  g.out = TensorDesc(DType::bf16, {8, 8}, {1, 8}, Device::cpu());
  EXPECT_EQ(unsupported_by(c, g), "out: last dimension must have stride 1 (row-major); got strides (1, 8)");
}

TEST(CheckConstraints, data_pointers_must_be_aligned) {
  OperandConstraints c;
  c.alignment_bytes = 16;
  alignas(16) static uint16_t buf[1024];
  auto g = make_gemm(8, 8, 16);
  g.A.data = buf + 1;  // 2 bytes past a 16-byte boundary
  EXPECT_EQ(unsupported_by(c, g), "A: data pointer must be 16-byte aligned; got an address 2 bytes past a boundary");
  g.A.data = buf + 8;
  EXPECT_TRUE(check_constraints(c, g));
}

TEST(CheckConstraints, non_unit_strides_must_be_aligned) {
  OperandConstraints c;
  c.alignment_bytes = 16;
  auto g = make_gemm(8, 8, 12);
  g.A = TensorDesc(DType::bf16, {8, 12}, {12, 1}, Device::cpu());  // 24-byte rows
  EXPECT_EQ(unsupported_by(c, g),
            "A: strides other than the unit one must be multiples of 16 bytes (8 elements of bf16); got strides "
            "(12, 1)");
  g.A.strides = {16, 1};
  EXPECT_TRUE(check_constraints(c, g));
}

// Nothing of a tensor without elements is read or written: its strides (numpy gives such arrays
// zero strides) break no rule on majors, row-major out or stride alignment.
TEST(CheckConstraints, layout_rules_do_not_apply_to_tensors_without_elements) {
  OperandConstraints c;
  c.a_majors = c.b_majors = {Major::k};
  c.out_row_major = true;
  c.alignment_bytes = 16;
  auto g = make_gemm(0, 8, 12);  // A (0,12), out (0,8)
  g.A.strides = {0, 0};
  g.out.strides = {0, 0};
  g.B = TensorDesc(DType::bf16, {12, 8}, {1, 16}, Device::cpu());  // k-major, aligned
  EXPECT_TRUE(check_constraints(c, g)) << check_constraints(c, g).to_string();
  g = make_gemm(8, 0, 16);  // B (16,0), out (8,0)
  g.B.strides = {0, 0};
  g.out.strides = {3, 7};
  EXPECT_TRUE(check_constraints(c, g)) << check_constraints(c, g).to_string();
}

TEST(CheckConstraints, a_tensor_without_elements_has_no_stride_to_align) {
  // K = 0: torch gives a batched (L, M, 0) A strides (M, 1, 1); it is never addressed.
  OperandConstraints c;
  c.alignment_bytes = 16;
  auto g = make_batched(3, 67, 8, 0);
  EXPECT_EQ(g.A.strides, (std::vector<int64_t>{67, 1, 1}));
  EXPECT_TRUE(check_constraints(c, g));
  g = make_batched(3, 67, 8, 2);  // the same M with elements: 134-byte batches
  EXPECT_EQ(unsupported_by(c, g).rfind("A: strides other than the unit one must be multiples of 16 bytes", 0), 0u);
}

TEST(Schedule, names_are_short) {
  EXPECT_EQ(name(Schedule::cpu_blocked), "cpu");
  EXPECT_EQ(name(Schedule::cooperative), "coop");
  EXPECT_EQ(name(Schedule::pingpong), "pingpong");
  EXPECT_EQ(name(Schedule::small_m), "smallm");
  EXPECT_EQ(name(Schedule::custom), "custom");
  EXPECT_EQ(name(Schedule::simt), "simt");
}

TEST(Design, to_string_lists_tile_cluster_stages_schedule) {
  Design d{128, 256, 64, 2, 1, 4, Schedule::cooperative};
  EXPECT_EQ(d.to_string(), "128x256x64_c2x1_s4_coop");
  EXPECT_EQ(Design{}.to_string(), "custom");
  d.epilogue = Epilogue::tma_store;
  EXPECT_EQ(d.to_string(), "128x256x64_c2x1_s4_coop_tma");
  d.epilogue_boxes = 2;
  EXPECT_EQ(d.to_string(), "128x256x64_c2x1_s4_coop_tma_ring2");
  Design cpu;
  cpu.schedule = Schedule::cpu_blocked;
  EXPECT_EQ(cpu.to_string(), "cpu");
}

TEST(OperatorName, follows_target_operation_dtypes_accumulator_design) {
  Design d{128, 256, 64, 2, 1, 4, Schedule::cooperative};
  EXPECT_EQ(make_operator_name(Target::sm(90, true), "grouped_gemm_m", DType::bf16, DType::bf16, DType::fp32, d),
            "sm90a_grouped_gemm_m_bf16_f32acc_128x256x64_c2x1_s4_coop");
  EXPECT_EQ(make_operator_name(Target::sm(90, true), "gemm", DType::e4m3, DType::bf16, DType::fp32, d),
            "sm90a_gemm_e4m3_bf16_f32acc_128x256x64_c2x1_s4_coop");
  Design cpu;
  cpu.schedule = Schedule::cpu_blocked;
  EXPECT_EQ(make_operator_name(Target::cpu(), "gemm", DType::fp32, DType::fp32, DType::fp32, cpu),
            "cpu_gemm_fp32_f32acc");
}

}  // namespace
}  // namespace gemmops
