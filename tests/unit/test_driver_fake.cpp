// tests/unit/test_driver_fake.cpp: the driver layer against a fake driver (launch assembly, errors, caches)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "cuda/context.hpp"
#include "cuda/device.hpp"
#include "cuda/launch.hpp"
#include "cuda/module.hpp"
#include "cuda/tensor_map.hpp"
#include "gemmops/device.hpp"
#include "gemmops/target.hpp"
#include "support/fake_driver.hpp"

namespace gemmops {
namespace {

using testing::ScopedFakeDriver;

CUfunction fake_fn(std::uintptr_t n) { return reinterpret_cast<CUfunction>(0x3000 + n); }

int count_attr(const testing::FakeDriverState& s, CUfunction fn, CUfunction_attribute a) {
  return static_cast<int>(std::count_if(s.attributes.begin(), s.attributes.end(),
                                        [&](const auto& r) { return r.fn == fn && r.attr == a; }));
}

TEST(FakeLaunch, passes_grid_block_smem_and_stream_through) {
  ScopedFakeDriver fake;
  cuda::LaunchConfig c;
  c.grid[0] = 132; c.grid[1] = 2;
  c.block[0] = 384;
  c.smem_bytes = 1024;
  c.stream = reinterpret_cast<CUstream>(0x77);
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(1), c, nullptr)) << "launch failed";
  ASSERT_EQ(fake.state().launches.size(), 1u);
  const auto& l = fake.state().launches[0];
  EXPECT_EQ(l.fn, fake_fn(1));
  EXPECT_EQ(l.config.gridDimX, 132u);
  EXPECT_EQ(l.config.gridDimY, 2u);
  EXPECT_EQ(l.config.gridDimZ, 1u);
  EXPECT_EQ(l.config.blockDimX, 384u);
  EXPECT_EQ(l.config.sharedMemBytes, 1024u);
  EXPECT_EQ(l.config.hStream, reinterpret_cast<CUstream>(0x77));
  EXPECT_TRUE(l.attrs.empty()) << "no cluster attribute for a 1x1x1 cluster";
  EXPECT_TRUE(fake.state().attributes.empty()) << "no function attribute at or below 48 KiB";
}

TEST(FakeLaunch, raises_the_smem_limit_only_above_48_kib_and_once) {
  ScopedFakeDriver fake;
  cuda::LaunchConfig c;
  c.smem_bytes = 48 * 1024;
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(2), c, nullptr));
  EXPECT_EQ(count_attr(fake.state(), fake_fn(2), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 0);
  c.smem_bytes = 200 * 1024;
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(2), c, nullptr));
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(2), c, nullptr));
  EXPECT_EQ(count_attr(fake.state(), fake_fn(2), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 1);
  EXPECT_EQ(fake.state().attributes.back().value, 200 * 1024);
  c.smem_bytes = 220 * 1024;  // a larger need raises again
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(2), c, nullptr));
  EXPECT_EQ(count_attr(fake.state(), fake_fn(2), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 2);
  EXPECT_EQ(fake.state().launches.back().config.sharedMemBytes, 220u * 1024u);
}

TEST(FakeLaunch, passes_a_cluster_attribute_only_for_clusters) {
  ScopedFakeDriver fake;
  cuda::LaunchConfig c;
  c.grid[0] = 4;
  c.cluster[0] = 2;
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(3), c, nullptr));
  const auto& l = fake.state().launches.back();
  ASSERT_EQ(l.attrs.size(), 1u);
  EXPECT_EQ(l.attrs[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  EXPECT_EQ(l.attrs[0].value.clusterDim.x, 2u);
  EXPECT_EQ(l.attrs[0].value.clusterDim.y, 1u);
  EXPECT_EQ(l.attrs[0].value.clusterDim.z, 1u);
  EXPECT_EQ(count_attr(fake.state(), fake_fn(3), CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED), 0);
}

TEST(FakeLaunch, passes_programmatic_serialization_when_asked_beside_the_cluster) {
  ScopedFakeDriver fake;
  cuda::LaunchConfig c;
  c.grid[0] = 4;
  c.programmatic_serialization = true;
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(3), c, nullptr));
  {
    const auto& l = fake.state().launches.back();
    ASSERT_EQ(l.attrs.size(), 1u);
    EXPECT_EQ(l.attrs[0].id, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    EXPECT_EQ(l.attrs[0].value.programmaticStreamSerializationAllowed, 1);
  }
  c.cluster[0] = 2;
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(3), c, nullptr));
  const auto& l = fake.state().launches.back();
  ASSERT_EQ(l.attrs.size(), 2u);
  EXPECT_EQ(l.attrs[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  EXPECT_EQ(l.attrs[0].value.clusterDim.x, 2u);
  EXPECT_EQ(l.attrs[1].id, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
}

TEST(FakeLaunch, allows_non_portable_clusters_above_8_blocks_once) {
  ScopedFakeDriver fake;
  cuda::LaunchConfig c;
  c.grid[0] = 16;
  c.cluster[0] = 16;
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(4), c, nullptr));
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(4), c, nullptr));
  EXPECT_EQ(count_attr(fake.state(), fake_fn(4), CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED), 1);
  c.cluster[0] = 8;  // 8 is portable
  c.grid[0] = 8;
  ASSERT_TRUE(cuda::launch(fake.api(), fake_fn(5), c, nullptr));
  EXPECT_EQ(count_attr(fake.state(), fake_fn(5), CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED), 0);
}

TEST(FakeLaunch, rejects_a_grid_that_is_not_a_multiple_of_the_cluster) {
  ScopedFakeDriver fake;
  cuda::LaunchConfig c;
  c.grid[0] = 3;
  c.cluster[0] = 2;
  Status s = cuda::launch(fake.api(), fake_fn(6), c, nullptr);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message(), "launch: grid must be a multiple of the cluster in every dimension; got grid 3x1x1, cluster 2x1x1");
  EXPECT_TRUE(fake.state().launches.empty());
}

TEST(FakeLaunch, reports_a_failed_launch_with_name_and_string) {
  ScopedFakeDriver fake;
  fake.state().launch_result = CUDA_ERROR_INVALID_VALUE;
  Status s = cuda::launch(fake.api(), fake_fn(7), cuda::LaunchConfig{}, nullptr);
  EXPECT_EQ(s.code(), ErrorCode::driver_error);
  EXPECT_EQ(s.message(), "cuLaunchKernelEx: CUDA_ERROR_INVALID_VALUE (invalid argument)");
}

TEST(FakeDriverErrors, check_names_the_call_the_error_and_its_string) {
  ScopedFakeDriver fake;
  Status s = cuda::check(fake.api(), CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData");
  EXPECT_EQ(s.to_string(), "driver_error: cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)");
  EXPECT_TRUE(cuda::check(fake.api(), CUDA_SUCCESS, "cuInit"));
}

TEST(FakeDriverErrors, out_of_memory_maps_to_its_own_code) {
  ScopedFakeDriver fake;
  Status s = cuda::check(fake.api(), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
  EXPECT_EQ(s.code(), ErrorCode::out_of_memory);
  EXPECT_EQ(s.message(), "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  fake.state().alloc_result = CUDA_ERROR_OUT_OF_MEMORY;
  auto b = DeviceBuffer::allocate(1 << 20);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.status().code(), ErrorCode::out_of_memory);
}

TEST(FakeDriverErrors, an_unknown_error_still_has_its_number) {
  ScopedFakeDriver fake;
  Status s = cuda::check(fake.api(), static_cast<CUresult>(12345), "cuInit");
  EXPECT_EQ(s.message(), "cuInit: CUDA error 12345");
}

TEST(FakeModule, looks_up_each_function_once) {
  ScopedFakeDriver fake;
  fake.state().functions["kernel_a"] = fake_fn(10);
  auto m = cuda::Module::load("cubin bytes", 0);
  ASSERT_TRUE(m) << m.status().to_string();
  auto f1 = (*m)->function("kernel_a");
  auto f2 = (*m)->function("kernel_a");
  ASSERT_TRUE(f1 && f2);
  EXPECT_EQ(*f1, fake_fn(10));
  EXPECT_EQ(*f2, fake_fn(10));
  EXPECT_EQ(fake.state().get_function_calls, 1);
  auto missing = (*m)->function("nope");
  EXPECT_EQ(missing.status().message(), "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (named symbol not found) for kernel 'nope'");
}

TEST(FakeModule, unloads_on_destruction_and_reports_invalid_images) {
  ScopedFakeDriver fake;
  { auto m = cuda::Module::load("cubin", 0); ASSERT_TRUE(m); }
  EXPECT_EQ(fake.state().module_unloads, 1);
  fake.state().load_result = CUDA_ERROR_INVALID_IMAGE;
  auto bad = cuda::Module::load("cubin", 0);
  EXPECT_EQ(bad.status().to_string(), "driver_error: cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)");
}

TEST(FakeModule, lazy_module_loads_once_per_device) {
  ScopedFakeDriver fake;
  fake.state().devices.resize(2);
  cuda::LazyModule lazy("cubin");
  ASSERT_TRUE(lazy.on_device(0));
  ASSERT_TRUE(lazy.on_device(0));
  EXPECT_EQ(fake.state().module_loads, 1);
  auto m1 = lazy.on_device(1);
  ASSERT_TRUE(m1);
  EXPECT_EQ(fake.state().module_loads, 2);
  EXPECT_EQ((*m1)->ordinal(), 1);
}

TEST(FakeContext, keeps_a_current_context_of_the_same_device) {
  ScopedFakeDriver fake;
  fake.state().devices.resize(2);
  fake.state().current = testing::fake_context(1);  // as if PyTorch made device 1 current
  ASSERT_TRUE(cuda::make_current(1));
  EXPECT_EQ(fake.state().retains, 0);
  EXPECT_EQ(fake.state().set_current, 0);
  ASSERT_TRUE(cuda::make_current(0));
  EXPECT_EQ(fake.state().current, testing::fake_context(0));
  EXPECT_EQ(fake.state().retains, 1);
  fake.state().current = nullptr;
  ASSERT_TRUE(cuda::make_current(0));
  EXPECT_EQ(fake.state().retains, 1) << "the primary context is retained once";
  EXPECT_EQ(cuda::make_current(2).to_string(), "no_device: device 2: not present; 2 CUDA device(s) found");
}

TEST(FakeDevice, device_target_maps_compute_capabilities) {
  ScopedFakeDriver fake;
  fake.state().devices = {{90}, {80}, {100}, {89}};
  EXPECT_EQ(device_target(0)->to_string(), "90a");
  EXPECT_EQ(device_target(1)->to_string(), "80");
  EXPECT_EQ(device_target(2)->to_string(), "100a");
  EXPECT_EQ(device_target(3)->to_string(), "89");
  EXPECT_EQ(device_target(4).status().code(), ErrorCode::no_device);
}

TEST(FakeDevice, device_facts_reads_the_attributes) {
  ScopedFakeDriver fake;
  auto f = cuda::device_facts(0);
  ASSERT_TRUE(f) << f.status().to_string();
  EXPECT_EQ(f->cc, 90);
  EXPECT_EQ(f->sm_count, 132);
  EXPECT_EQ(f->smem_per_block_optin, 232448u);
  EXPECT_EQ(f->l2_bytes, 50331648u);
  EXPECT_EQ(f->name, "NVIDIA H200");
}

TEST(FakeDevice, device_supports_states_why_not) {
  ScopedFakeDriver fake;
  fake.state().devices = {{90}, {80}};
  EXPECT_TRUE(device_supports("90a", 0));
  EXPECT_TRUE(device_supports("80", 0));
  EXPECT_TRUE(device_supports("cpu", 0));
  EXPECT_EQ(device_supports("100a", 0).to_string(),
            "no_device: device 0 (NVIDIA H200) is sm_90a; operators for 100a need sm_100a");
  EXPECT_EQ(device_supports("90", 1).message(),
            "device 1 (NVIDIA H200) is sm_80; operators for 90 need sm_90 or later");
  EXPECT_EQ(device_supports("bogus", 0).code(), ErrorCode::invalid_argument);
}

TEST(FakeDevice, gemmops_target_stands_in_only_for_an_absent_device) {
  ScopedFakeDriver fake;
  fake.state().devices = {};
  unsetenv("GEMMOPS_TARGET");
  EXPECT_EQ(device_or_env_supports("90a").to_string(), "no_device: device 0: not present; 0 CUDA device(s) found");
  setenv("GEMMOPS_TARGET", "90a", 1);
  EXPECT_TRUE(device_or_env_supports("90a"));
  EXPECT_EQ(device_or_env_supports("100a").message(),
            "GEMMOPS_TARGET=90a stands in for a device and is sm_90a; operators for 100a need sm_100a "
            "(device 0: not present; 0 CUDA device(s) found)");
  fake.state().devices = {{80}};
  cuda::set_driver_for_testing(&fake.api());  // drops the cached facts
  EXPECT_EQ(device_or_env_supports("90a").code(), ErrorCode::no_device) << "a present sm_80 is not replaced";
  unsetenv("GEMMOPS_TARGET");
}

TEST(FakeTensorMap, rejects_a_null_base_and_checks_the_rules) {
  ScopedFakeDriver fake;
  const std::uint64_t dims[2] = {4096, 1024};
  const std::uint64_t strides[1] = {4096 * 2};
  const std::uint32_t box[2] = {64, 128};
  auto null_base = cuda::encode_tiled(fake.api(), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, nullptr, dims, strides,
                                      box, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(null_base.status().message(),
            "tensor map: base must be a device address; got null (a fake tensor has no data)");
  alignas(16) static unsigned char storage[64];
  auto ok = cuda::encode_tiled(fake.api(), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, storage, dims, strides, box,
                               CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_TRUE(ok) << ok.status().to_string();
  auto misaligned = cuda::encode_tiled(fake.api(), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, storage + 8, dims,
                                       strides, box, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(misaligned.status().code(), ErrorCode::invalid_argument);
  const std::uint32_t wide[2] = {128, 128};  // 256 bytes > 128-byte swizzle
  auto too_wide = cuda::encode_tiled(fake.api(), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, storage, dims, strides,
                                     wide, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(too_wide.status().message(),
            "tensor map: box[0] * element size must be <= the swizzle span 128 bytes; got 128 * 2 = 256");
  const std::uint64_t odd_stride[1] = {4096 * 2 + 8};
  auto bad_stride = cuda::encode_tiled(fake.api(), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, storage, dims,
                                       odd_stride, box, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(bad_stride.status().message(),
            "tensor map: strides_bytes[0] (dim 1) must be a multiple of 16 and < 2^40; got 8200");
  const std::uint32_t big_box[2] = {64, 512};
  auto bad_box = cuda::encode_tiled(fake.api(), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, storage, dims, strides,
                                    big_box, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(bad_box.status().message(), "tensor map: box[1] must be in [1, 256]; got 512");
}

TEST(FakeMemory, buffers_copy_fill_and_free) {
  ScopedFakeDriver fake;
  {
    auto b = DeviceBuffer::allocate(16);
    ASSERT_TRUE(b) << b.status().to_string();
    EXPECT_EQ(fake.state().live_allocations, 1);
    const unsigned char in[4] = {1, 2, 3, 4};
    ASSERT_TRUE(b->fill_bytes(0xFF));
    ASSERT_TRUE(b->copy_from_host(in, 4, 8));
    unsigned char out[16] = {};
    ASSERT_TRUE(b->copy_to_host(out, 16));
    EXPECT_EQ(out[0], 0xFF);
    EXPECT_EQ(out[8], 1);
    EXPECT_EQ(out[11], 4);
    EXPECT_EQ(b->copy_from_host(in, 4, 14).message(),
              "copy_from_host: offset + bytes must be <= the buffer's 16 bytes; got 14 + 4");
    DeviceBuffer moved = std::move(*b);
    EXPECT_EQ(moved.bytes(), 16u);
  }
  EXPECT_EQ(fake.state().live_allocations, 0);
  EXPECT_EQ(*device_count(), 1);
}

}  // namespace
}  // namespace gemmops
