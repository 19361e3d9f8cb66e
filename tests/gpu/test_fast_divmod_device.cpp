// tests/gpu/test_fast_divmod_device.cpp: the device paths of kernels/common/fast_divmod.cuh (the
// tile scheduler's divisions) equal integer division over every numerator the scheduler can see
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdint>

#include "cuda/driver_api.hpp"
#include "cuda/launch.hpp"
#include "cuda/module.hpp"
#include "gemmops/device.hpp"
#include "jit/compile.hpp"
#include "support/device_problem.hpp"

namespace gemmops::testing {
namespace {

// Each thread takes one numerator x < 2^22 (and x + 2^31 - 2^22 for the divisor's upper range) and
// every divisor up to 64; bad[0] counts mismatches, bad[1..2] keep the first (x, d).
constexpr const char* kCheckSource = R"(
#include "common/fast_divmod.cuh"
extern "C" __global__ void gemmops_check_fast_divmod(unsigned* bad) {
  const int x = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int high = x + (0x7fffffff - (1 << 22)) + 1;
  for (int d = 1; d <= 64; ++d) {
    const gemmops::kernels::common::FastDivisor by(d);
    const bool wrong = by.quotient(x) != x / d || by.quotient(high) != high / d ||
                       gemmops::kernels::common::small_quotient(x, d) != x / d;
    if (wrong && atomicAdd(bad, 1u) == 0) { bad[1] = unsigned(x); bad[2] = unsigned(d); }
  }
}
)";

TEST(FastDivmodDevice, quotients_equal_integer_division_for_every_numerator_below_2_to_the_22) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  jit::CompileRequest request;
  request.kernel_name = "check_fast_divmod";
  request.source = kCheckSource;
  request.name_expressions = {"gemmops_check_fast_divmod"};
  request.target = Target::sm(90, true);
  auto compiled = jit::compile_cached(request);
  ASSERT_TRUE(compiled) << compiled.status().to_string();
  auto module = cuda::Module::load((*compiled)->cubin, 0);
  ASSERT_TRUE(module) << module.status().to_string();
  auto fn = (*module)->function("gemmops_check_fast_divmod");
  ASSERT_TRUE(fn) << fn.status().to_string();
  auto bad = DeviceBuffer::allocate(3 * sizeof(unsigned), 0);
  ASSERT_TRUE(bad) << bad.status().to_string();
  ASSERT_TRUE(bad->fill_bytes(0));
  void* bad_ptr = bad->data();
  void* params[] = {&bad_ptr};
  cuda::LaunchConfig config;
  config.grid[0] = (1u << 22) / 256;
  config.block[0] = 256;
  auto api = cuda::driver();
  ASSERT_TRUE(api) << api.status().to_string();
  ASSERT_TRUE(cuda::launch(**api, *fn, config, params));
  unsigned host[3] = {};
  ASSERT_TRUE(bad->copy_to_host(host, sizeof host));
  EXPECT_EQ(host[0], 0u) << "first mismatch: x=" << host[1] << " d=" << host[2];
}

}  // namespace
}  // namespace gemmops::testing
