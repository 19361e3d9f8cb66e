// tests/unit/test_sm90_launch_chunks.cpp: launch_grouped against a fake driver that records each
// launch's parameters: one launch per chunk of groups, in order on the stream, each with its
// chunk's offsets, start, group base and table; split-K flags cleared before each; the zero tail
// alone without groups; operands without K mapped as one element at out's address
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/problems.hpp"
#include "sm90/designs.hpp"
#include "sm90/group_chunks.hpp"
#include "sm90/grouped_gemm.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/launch_grouped.hpp"
#include "support/fake_driver.hpp"

namespace gemmops {
namespace {

using kernels::sm90::GroupedGemmParams;

const Device kCuda = Device::cuda(0);

struct Seen {
  std::vector<GroupedGemmParams> params;
  std::vector<size_t> memsets_before;  // launches recorded when each flag memset was queued
  struct Map {
    const void* base;
    std::vector<cuuint64_t> dims, strides;
    CUtensorMapDataType type;
  };
  std::vector<Map> maps;
};
Seen& seen() {
  static Seen s;
  return s;
}

/// A fake driver that keeps each launch's parameters, the split-K memsets and the tensor maps asked for.
struct RecordingDriver {
  testing::ScopedFakeDriver fake;
  RecordingDriver() {
    seen() = {};
    fake.state().functions["kernel"] = reinterpret_cast<CUfunction>(uintptr_t{0x3001});
    fake.api().cuLaunchKernelEx = [](const CUlaunchConfig* c, CUfunction f, void** args, void**) {
      testing::RecordedLaunch l{f, *c, std::vector<CUlaunchAttribute>(c->attrs, c->attrs + c->numAttrs)};
      l.config.attrs = nullptr;  // points into the caller's stack
      testing::fake_state().launches.push_back(l);
      seen().params.push_back(*static_cast<const GroupedGemmParams*>(args[0]));
      return CUDA_SUCCESS;
    };
    fake.api().cuMemsetD8Async = [](CUdeviceptr, unsigned char, std::size_t, CUstream) {
      seen().memsets_before.push_back(testing::fake_state().launches.size());
      return CUDA_SUCCESS;
    };
    fake.api().cuOccupancyMaxActiveClusters = [](int* n, CUfunction, const CUlaunchConfig*) {
      *n = 66;
      return CUDA_SUCCESS;
    };
    fake.api().cuTensorMapEncodeTiled = [](CUtensorMap* m, CUtensorMapDataType type, cuuint32_t rank, void* base,
                                           const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t*,
                                           const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                           CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
      seen().maps.push_back({base, std::vector<cuuint64_t>(dims, dims + rank),
                             std::vector<cuuint64_t>(strides, strides + rank - 1), type});
      std::memset(m, 0xAB, sizeof(*m));
      return CUDA_SUCCESS;
    };
  }
};

void* address(uintptr_t a) { return reinterpret_cast<void*>(a); }

const sm90::Sm90Design& design_named(const std::string& name) {
  for (const sm90::Sm90Design& d : sm90::sm90_designs())
    if (d.design.to_string() == name) return d;
  ADD_FAILURE() << "no design " << name;
  return sm90::sm90_designs()[0];
}

Status launch(const Arguments& args, const sm90::Sm90Design& d, int splits = 1, Workspace workspace = {},
              bool programmatic = false) {
  GEMMOPS_ASSIGN_OR_RETURN(sm90::KernelProblem p, sm90::map_problem(args));
  const auto c = sm90::make_kernel_config(d, DType::bf16, DType::bf16, p.a_major, p.b_major,
                                          p.kind == OperationKind::grouped_k);
  cuda::LazyModule module("cubin");
  GEMMOPS_ASSIGN_OR_RETURN(sm90::LaunchShape shape, sm90::prepare_launch(p, c, module, "kernel", splits));
  return sm90::launch_grouped(p, c, shape, reinterpret_cast<Stream>(uintptr_t{0x77}), splits, workspace,
                              programmatic);
}

bool asks_programmatic_serialization(const testing::RecordedLaunch& l) {
  for (const CUlaunchAttribute& a : l.attrs)
    if (a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      return a.value.programmaticStreamSerializationAllowed == 1;
  return false;
}

// Fake device addresses far enough apart that no operand overlaps another.
constexpr uintptr_t kOut = uintptr_t{3} << 40;
GroupedGemmArguments with_data(GroupedGemmArguments g) {
  g.A.data = address(uintptr_t{1} << 40);
  g.B.data = address(uintptr_t{2} << 40);
  g.out.data = address(kOut);
  g.offsets.data = address(uintptr_t{4} << 40);
  return g;
}

TEST(Sm90GroupChunksLaunch, twenty_thousand_groups_launch_in_order_on_the_stream_each_with_its_chunk) {
  RecordingDriver driver;
  GroupedGemmArguments args = with_data(testing::moe_forward(20000, 65536, 2048, 768));
  args.zero_tail = true;
  const sm90::Sm90Design& d = design_named("128x256x64_c1x1_s4_coop_tma_ring2");
  const Status s = launch(args, d);
  ASSERT_TRUE(s) << s.to_string();
  const auto c = sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false);
  const int64_t capacity = sm90::table_capacity(c, sm90::kSm90SmemBudget);
  const auto& launches = driver.fake.state().launches;
  const auto& params = seen().params;
  ASSERT_EQ(static_cast<int64_t>(launches.size()), (20000 + 1 + capacity - 1) / capacity);
  ASSERT_EQ(params.size(), launches.size());
  const auto* offsets = static_cast<const int32_t*>(args.offsets.data);
  int64_t next = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    SCOPED_TRACE("launch " + std::to_string(i));
    const bool last = i + 1 == params.size();
    EXPECT_EQ(params[i].scheduler.group_base, next);
    EXPECT_EQ(params[i].scheduler.offsets, offsets + next);
    EXPECT_EQ(params[i].scheduler.start_offset, next > 0 ? offsets + next - 1 : nullptr);
    EXPECT_EQ(params[i].scheduler.table_groups, params[i].scheduler.groups + (last ? 1 : 0));
    EXPECT_EQ(params[i].scheduler.rows, 65536);
    EXPECT_EQ(launches[i].config.hStream, reinterpret_cast<CUstream>(uintptr_t{0x77}));
    EXPECT_EQ(launches[i].config.sharedMemBytes,
              static_cast<unsigned>(c.smem_bytes(params[i].scheduler.table_groups)));
    EXPECT_LE(launches[i].config.sharedMemBytes, static_cast<unsigned>(sm90::kSm90SmemBudget));
    next += params[i].scheduler.groups;
  }
  EXPECT_EQ(next, 20000);
  EXPECT_TRUE(seen().memsets_before.empty());  // no split-K: no flags to clear
}

TEST(Sm90GroupChunksLaunch, k_grouped_chunks_count_their_results_from_their_first_group) {
  RecordingDriver driver;
  const GroupedGemmArguments args = with_data(testing::moe_weight_gradient(3000, 65536, 64, 256));
  ASSERT_TRUE(launch(args, design_named("128x256x64_c1x1_s4_coop_tma_ring2")));
  const auto& params = seen().params;
  ASSERT_GT(params.size(), 1u);
  int64_t next = 0;
  for (const GroupedGemmParams& p : params) {
    EXPECT_EQ(p.scheduler.group_base, next);
    EXPECT_EQ(p.scheduler.table_groups, p.scheduler.groups);
    EXPECT_EQ(p.scheduler.k, 65536);
    next += p.scheduler.groups;
  }
  EXPECT_EQ(next, 3000);
}

TEST(Sm90GroupChunksLaunch, split_k_flags_are_cleared_before_every_launch) {
  RecordingDriver driver;
  const GroupedGemmArguments args = with_data(testing::moe_forward(400, 8192, 2048, 4096));
  const sm90::Sm90Design& d = design_named("128x256x64_c1x1_s4_coop_tma_ring2");
  auto p = sm90::map_problem(args);
  ASSERT_TRUE(p) << p.status().to_string();
  const auto c = sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false);
  const std::size_t bytes = sm90::split_k_workspace_bytes(*p, c, 2);
  ASSERT_TRUE(launch(args, d, 2, Workspace{address(uintptr_t{5} << 40), bytes}));
  const size_t launches = driver.fake.state().launches.size();
  ASSERT_EQ(launches, 3u);  // 400 groups, 164 a launch
  ASSERT_EQ(seen().memsets_before.size(), launches);
  for (size_t i = 0; i < launches; ++i) EXPECT_EQ(seen().memsets_before[i], i) << "memset before launch " << i;
  for (const GroupedGemmParams& params : seen().params) EXPECT_EQ(params.split_k.k_splits, 2);
}

TEST(Sm90GroupChunksLaunch, a_kernel_built_for_it_launches_programmatically_but_after_split_k_memsets) {
  const sm90::Sm90Design& d = design_named("128x256x64_c1x1_s4_coop_tma_ring2");
  {
    RecordingDriver driver;
    const GroupedGemmArguments args = with_data(testing::moe_forward(20000, 65536, 2048, 768));
    ASSERT_TRUE(launch(args, d));
    for (const auto& l : driver.fake.state().launches) EXPECT_FALSE(asks_programmatic_serialization(l));
  }
  {
    RecordingDriver driver;
    const GroupedGemmArguments args = with_data(testing::moe_forward(20000, 65536, 2048, 768));
    ASSERT_TRUE(launch(args, d, 1, {}, true));
    const auto& launches = driver.fake.state().launches;
    ASSERT_GT(launches.size(), 1u);  // every chunk's launch
    for (const auto& l : launches) EXPECT_TRUE(asks_programmatic_serialization(l));
  }
  RecordingDriver driver;
  const GroupedGemmArguments args = with_data(testing::moe_forward(400, 8192, 2048, 4096));
  auto p = sm90::map_problem(args);
  ASSERT_TRUE(p) << p.status().to_string();
  const auto c = sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false);
  ASSERT_TRUE(launch(args, d, 2, Workspace{address(uintptr_t{5} << 40), sm90::split_k_workspace_bytes(*p, c, 2)}, true));
  for (const auto& l : driver.fake.state().launches) EXPECT_FALSE(asks_programmatic_serialization(l));
}

TEST(Sm90GroupChunksLaunch, no_groups_launch_only_for_the_zero_tail) {
  RecordingDriver driver;
  GroupedGemmArguments args = with_data(testing::moe_forward(0, 1000, 256, 64));
  args.offsets.data = nullptr;  // torch's empty offsets
  ASSERT_TRUE(launch(args, sm90::sm90_designs()[0]));
  EXPECT_TRUE(driver.fake.state().launches.empty());
  args.zero_tail = true;
  ASSERT_TRUE(launch(args, sm90::sm90_designs()[0]));
  ASSERT_EQ(seen().params.size(), 1u);
  EXPECT_EQ(seen().params[0].scheduler.groups, 0);
  EXPECT_EQ(seen().params[0].scheduler.table_groups, seen().params[0].scheduler.groups + 1);
  EXPECT_EQ(seen().params[0].scheduler.start_offset, nullptr);
}

TEST(Sm90GroupChunksLaunch, operands_without_k_map_one_element_at_outs_address) {
  RecordingDriver driver;
  // torch's K = 0 tensors: null data, strides (1, 1) and (N, N, 1).
  GroupedGemmArguments args{TensorDesc(DType::bf16, {1000, 0}, {1, 1}, kCuda),
                            TensorDesc(DType::bf16, {8, 0, 2048}, {2048, 2048, 1}, kCuda),
                            TensorDesc::contiguous(DType::bf16, {1000, 2048}, kCuda, address(kOut)), DType::fp32,
                            TensorDesc::contiguous(DType::i32, {8}, kCuda, address(uintptr_t{4} << 40))};
  args.zero_tail = true;
  ASSERT_TRUE(launch(args, design_named("128x256x64_c2x1_s3_coop_tma")));
  ASSERT_EQ(seen().maps.size(), 3u);  // A, B and out (the TMA epilogue)
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(seen().maps[i].base, address(kOut)) << "map " << i;
    for (cuuint64_t d : seen().maps[i].dims) EXPECT_EQ(d, 1u) << "map " << i;
    for (cuuint64_t s : seen().maps[i].strides) EXPECT_EQ(s, 16u) << "map " << i;
  }
  EXPECT_EQ(seen().maps[2].dims, (std::vector<cuuint64_t>{2048, 64, 1001}));  // out's ragged view, all of it
  ASSERT_EQ(seen().params.size(), 1u);
  EXPECT_EQ(seen().params[0].scheduler.k, 0);
  EXPECT_EQ(seen().params[0].scheduler.table_groups, seen().params[0].scheduler.groups + 1);
}

// The TMA store's map of out (kernels/sm90/params.cuh): a box at (c, 64 - (e - r), e) must address
// out's row r and clip its rows from e on, with no box reaching above out's first row.
TEST(Sm90GroupChunksLaunch, out_is_mapped_ragged_so_a_box_stops_at_its_groups_end) {
  RecordingDriver driver;
  GroupedGemmArguments args = with_data(testing::moe_forward(8, 1000, 256, 512));
  ASSERT_TRUE(launch(args, design_named("128x256x64_c2x1_s3_coop_tma")));
  ASSERT_EQ(seen().maps.size(), 3u);
  const Seen::Map& out = seen().maps[2];
  const uint64_t row_bytes = 256 * 2;  // out (1000, 256) bf16
  EXPECT_EQ(out.dims, (std::vector<cuuint64_t>{256, 64, 1001}));
  EXPECT_EQ(out.strides, (std::vector<cuuint64_t>{row_bytes, row_bytes}));
  const auto base = reinterpret_cast<uintptr_t>(out.base);
  EXPECT_EQ(base, kOut - 64 * row_bytes);
  for (const auto& [r, e] : {std::pair{0, 64}, std::pair{0, 5}, std::pair{936, 1000}, std::pair{960, 1000},
                             std::pair{130, 131}}) {
    const uint64_t x1 = 64 - (e - r), x2 = e;
    EXPECT_EQ(base + x1 * row_bytes + x2 * row_bytes, kOut + r * row_bytes) << r << " " << e;
    // Box row i is written while x1 + i < 64, that is while r + i < e; the last row addressed is in out.
    EXPECT_EQ(64 - x1, static_cast<uint64_t>(e - r));
    EXPECT_LE(x2, out.dims[2] - 1);
  }
}

// The TMA store's pre-activation (kernels/sm90/epilogue_tma.cuh): h's ragged view with the gate and
// up halves of a concatenated SwiGLU as a fourth dimension, I columns apart.
TEST(Sm90GroupChunksLaunch, the_tma_stores_pre_activation_maps_h_ragged_with_its_halves_as_planes) {
  RecordingDriver driver;
  constexpr uintptr_t kH = uintptr_t{5} << 40;
  GroupedGemmArguments args = with_data(testing::moe_forward(8, 1000, 512, 256));  // N = 2I = 512
  args.out = TensorDesc::contiguous(DType::bf16, {1000, 256}, Device::cuda(0), address(kOut));
  args.epilogue.activation = Activation::swiglu;
  args.epilogue.gate_layout = GateLayout::concatenated;
  args.epilogue.pre_activation = TensorDesc::contiguous(DType::bf16, {1000, 512}, Device::cuda(0), address(kH));
  const Arguments held = args;  // the problem points into it
  auto p = sm90::map_problem(held);
  ASSERT_TRUE(p) << p.status().to_string();
  const auto c = sm90::make_kernel_config(design_named("128x256x64_c1x1_s4_coop_tma_ring2"), DType::bf16,
                                          DType::bf16, Major::k, Major::k, false, sm90::kernel_op(args.epilogue));
  ASSERT_TRUE(c.op.pre_activation && c.op.split_b());
  cuda::LazyModule module("cubin");
  auto shape = sm90::prepare_launch(*p, c, module, "kernel", 1);
  ASSERT_TRUE(shape) << shape.status().to_string();
  const Status s = sm90::launch_grouped(*p, c, *shape, reinterpret_cast<Stream>(uintptr_t{0x77}), 1, {});
  ASSERT_TRUE(s) << s.to_string();
  ASSERT_EQ(seen().maps.size(), 4u);  // A, B, out, h
  EXPECT_EQ(seen().maps[2].dims, (std::vector<cuuint64_t>{256, 64, 1001}));  // out: I columns
  const Seen::Map& h = seen().maps[3];
  const uint64_t row_bytes = 512 * 2;
  EXPECT_EQ(h.dims, (std::vector<cuuint64_t>{256, 64, 1001, 2}));
  EXPECT_EQ(h.strides, (std::vector<cuuint64_t>{row_bytes, row_bytes, 256 * 2}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(h.base), kH - 64 * row_bytes);
  // The up half's box at (c, 64 - (e - r), e, 1) addresses h's row r, column I + c.
  const uint64_t r = 936, e = 1000, col = 128;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(h.base) + col * 2 + (64 - (e - r)) * row_bytes + e * row_bytes + 256 * 2,
            kH + r * row_bytes + (256 + col) * 2);
}

// The TMA store's activation backward (trial): dh mapped as out's ragged view with a concatenated
// SwiGLU's gate and up halves as two planes I columns apart, s act(h) as its own ragged view.
TEST(Sm90GroupChunksLaunch, the_tma_stores_backward_maps_dh_by_halves_and_the_scaled_activation) {
  RecordingDriver driver;
  constexpr uintptr_t kH = uintptr_t{5} << 40, kScaled = uintptr_t{6} << 40, kPartials = uintptr_t{7} << 40;
  GroupedGemmArguments args = with_data(testing::moe_forward(8, 1000, 256, 256));  // dA: N = I = 256
  args.out = TensorDesc::contiguous(DType::bf16, {1000, 512}, Device::cuda(0), address(kOut));  // dh (1000, 2I)
  args.epilogue.activation = Activation::swiglu;
  args.epilogue.gate_layout = GateLayout::concatenated;
  args.epilogue.activation_grad =
      ActivationGrad{TensorDesc::contiguous(DType::bf16, {1000, 512}, Device::cuda(0), address(kH)),
                     TensorDesc::contiguous(DType::bf16, {1000, 256}, Device::cuda(0), address(kScaled)),
                     TensorDesc::contiguous(DType::fp32, {1000, 4}, Device::cuda(0), address(kPartials))};
  const Arguments held = args;  // the problem points into it
  auto p = sm90::map_problem(held);
  ASSERT_TRUE(p) << p.status().to_string();
  const auto c = sm90::make_kernel_config(design_named("128x128x64_c1x1_s4_pingpong_tma"), DType::bf16, DType::bf16,
                                          Major::k, Major::k, false, sm90::kernel_op(args.epilogue));
  ASSERT_TRUE(c.op.activation_grad && c.epilogue == 1);
  cuda::LazyModule module("cubin");
  auto shape = sm90::prepare_launch(*p, c, module, "kernel", 1);
  ASSERT_TRUE(shape) << shape.status().to_string();
  const Status st = sm90::launch_grouped(*p, c, *shape, reinterpret_cast<Stream>(uintptr_t{0x77}), 1, {});
  ASSERT_TRUE(st) << st.to_string();
  ASSERT_EQ(seen().maps.size(), 5u);  // A, B, dh, h (read by TMA), s act(h)
  const uint64_t dh_row = 512 * 2, scaled_row = 256 * 2;
  const Seen::Map& h = seen().maps[3];  // h's 2D view: all 2I columns, every row, 64x64 boxes
  EXPECT_EQ(h.dims, (std::vector<cuuint64_t>{512, 1000}));
  EXPECT_EQ(h.strides, (std::vector<cuuint64_t>{dh_row}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(h.base), kH);
  const Seen::Map& dh = seen().maps[2];
  EXPECT_EQ(dh.dims, (std::vector<cuuint64_t>{256, 64, 1001, 2}));  // I columns a plane
  EXPECT_EQ(dh.strides, (std::vector<cuuint64_t>{dh_row, dh_row, 256 * 2}));  // the up plane I columns on
  EXPECT_EQ(reinterpret_cast<uintptr_t>(dh.base), kOut - 64 * dh_row);
  const Seen::Map& scaled = seen().maps[4];
  EXPECT_EQ(scaled.dims, (std::vector<cuuint64_t>{256, 64, 1001, 1}));
  EXPECT_EQ(std::vector<cuuint64_t>(scaled.strides.begin(), scaled.strides.begin() + 2),
            (std::vector<cuuint64_t>{scaled_row, scaled_row}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(scaled.base), kScaled - 64 * scaled_row);
}

TEST(Sm90GroupChunksLaunch, tensor_maps_take_the_element_type_of_their_dtype_and_refuse_others) {
  RecordingDriver driver;
  GroupedGemmArguments args = with_data(testing::moe_forward(8, 1000, 256, 512));
  ASSERT_TRUE(launch(args, design_named("128x256x64_c2x1_s3_coop_tma")));
  ASSERT_EQ(seen().maps.size(), 3u);  // A, B and out (the TMA epilogue)
  for (const Seen::Map& m : seen().maps) EXPECT_EQ(m.type, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  // A dtype without a TMA element type is refused, never mapped as another of its size.
  auto p = sm90::map_problem(args);
  ASSERT_TRUE(p) << p.status().to_string();
  const TensorDesc a_i32(DType::i32, args.A.shape, args.A.strides, kCuda, args.A.data);
  const TensorDesc b_i32(DType::i32, args.B.shape, args.B.strides, kCuda, args.B.data);
  p->a = &a_i32;
  p->b = &b_i32;
  const auto c = sm90::make_kernel_config(design_named("128x256x64_c2x1_s3_coop_tma"), DType::bf16, DType::bf16,
                                          Major::k, Major::k, false);
  const auto params = sm90::make_params(*p, c);
  ASSERT_FALSE(params);
  EXPECT_EQ(params.status().code(), ErrorCode::unsupported) << params.status().to_string();
  EXPECT_NE(params.status().message().find("A: sm90 tensor maps take bf16, fp16, fp32, e4m3 or e5m2; got int32"),
            std::string::npos)
      << params.status().message();
}

}  // namespace
}  // namespace gemmops
