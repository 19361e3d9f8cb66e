// tests/compile/test_nvrtc_compile.cpp: NVRTC compiles the smoke kernel for sm_90a, through both caches
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "jit/compile.hpp"
#include "jit/disk_cache.hpp"
#include "jit/kernel_sources.hpp"
#include "jit/nvrtc_api.hpp"

namespace gemmops::jit {
namespace {

namespace fs = std::filesystem;

// Each test gets its own cache directory and a cold process cache; the environment is restored.
class NvrtcCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    auto api = nvrtc();
    if (!api) GTEST_SKIP() << api.status().message();
    dir_ = fs::temp_directory_path() / ("gemmops-nvrtc-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    setenv("GEMMOPS_CACHE_DIR", dir_.c_str(), 1);
    unsetenv("GEMMOPS_NO_JIT");
    unsetenv("GEMMOPS_NO_DISK_CACHE");
    clear_memory_cache_for_testing();
  }
  void TearDown() override {
    unsetenv("GEMMOPS_CACHE_DIR");
    unsetenv("GEMMOPS_NO_JIT");
    clear_memory_cache_for_testing();
    fs::remove_all(dir_);
  }

  static CompileRequest smoke(std::string extra_source = "") {
    CompileRequest r;
    r.kernel_name = "smoke";
    r.source = "#include \"common/smoke.cuh\"\n" + extra_source;
    r.name_expressions = {"gemmops::kernels::common::smoke_scale_kernel<3>", "gemmops_smoke_fill"};
    r.target = Target::sm(90, true);
    return r;
  }

  fs::path dir_;
};

TEST_F(NvrtcCompile, smoke_kernel_compiles_to_a_cubin_with_lowered_names) {
  auto k = compile_cached(smoke());
  ASSERT_TRUE(k) << k.status().to_string();
  EXPECT_EQ((*k)->origin, "nvrtc");
  EXPECT_GT((*k)->cubin.size(), 16u);
  EXPECT_EQ((*k)->cubin.substr(0, 4), "\x7f" "ELF");
  ASSERT_EQ((*k)->lowered_names.size(), 2u);
  EXPECT_EQ((*k)->lowered_names[0].substr(0, 2), "_Z") << (*k)->lowered_names[0];
  EXPECT_EQ((*k)->lowered_names[1], "gemmops_smoke_fill");
  EXPECT_GT((*k)->compile_seconds, 0.0);
}

TEST_F(NvrtcCompile, a_second_compile_hits_memory_then_a_fresh_process_hits_disk) {
  auto first = compile_cached(smoke());
  ASSERT_TRUE(first) << first.status().to_string();
  auto second = compile_cached(smoke());
  ASSERT_TRUE(second);
  EXPECT_EQ((*second)->origin, "memory");
  EXPECT_EQ((*second)->cubin, (*first)->cubin);
  clear_memory_cache_for_testing();
  auto third = compile_cached(smoke());
  ASSERT_TRUE(third) << third.status().to_string();
  EXPECT_EQ((*third)->origin, "disk");
  EXPECT_EQ((*third)->cubin, (*first)->cubin);
  EXPECT_EQ((*third)->lowered_names, (*first)->lowered_names);
  auto key = cache_key(smoke());
  ASSERT_TRUE(key);
  EXPECT_TRUE(fs::exists(DiskCache(dir_).entry_dir(*key) / "kernel.cubin"));
}

TEST_F(NvrtcCompile, a_syntax_error_returns_compile_failed_with_the_nvrtc_log) {
  auto k = compile_cached(smoke("this is not c++;\n"));
  ASSERT_FALSE(k);
  EXPECT_EQ(k.status().code(), ErrorCode::compile_failed);
  EXPECT_NE(k.status().message().find("smoke.cu("), std::string::npos) << k.status().message();
  EXPECT_NE(k.status().message().find("error"), std::string::npos) << k.status().message();
}

TEST_F(NvrtcCompile, jit_disabled_turns_a_miss_into_an_error_naming_the_key) {
  setenv("GEMMOPS_NO_JIT", "1", 1);
  auto k = compile_cached(smoke());
  ASSERT_FALSE(k);
  auto key = cache_key(smoke());
  ASSERT_TRUE(key);
  EXPECT_EQ(k.status().to_string(), "compile_failed: jit disabled and no cached kernel for " + key->short_name());
  unsetenv("GEMMOPS_NO_JIT");
  ASSERT_TRUE(compile_cached(smoke()));
  clear_memory_cache_for_testing();
  setenv("GEMMOPS_NO_JIT", "1", 1);
  auto cached = compile_cached(smoke());
  ASSERT_TRUE(cached) << "a disk hit needs no JIT: " << cached.status().to_string();
  EXPECT_EQ((*cached)->origin, "disk");
}

TEST_F(NvrtcCompile, no_disk_cache_writes_nothing) {
  setenv("GEMMOPS_NO_DISK_CACHE", "1", 1);
  ASSERT_TRUE(compile_cached(smoke()));
  unsetenv("GEMMOPS_NO_DISK_CACHE");
  EXPECT_FALSE(fs::exists(dir_ / DiskCache::kLayoutVersion));
}

TEST_F(NvrtcCompile, every_embedded_kernel_header_compiles_alone) {
  ASSERT_NE(find_kernel_source("common/smoke.cuh"), nullptr);
  for (const KernelSource& s : kernel_sources()) {
    const std::string path = s.path;
    CompileRequest r = smoke();
    r.kernel_name = "header_check";
    r.source = "#include \"" + path + "\"\n";
    r.name_expressions.clear();
    auto k = compile_cached(r);
    EXPECT_TRUE(k) << path << ": " << k.status().to_string();
  }
}

TEST(CompileOptions, the_target_sets_the_architecture_and_cpu_is_refused) {
  CompileRequest r;
  r.kernel_name = "x";
  r.target = Target::sm(80);
  r.options = {"-DGEMMOPS_DEVICE_CHECKS"};
  auto o = compile_options(r);
  ASSERT_TRUE(o);
  EXPECT_EQ(*o, (std::vector<std::string>{"-std=c++20", "--gpu-architecture=sm_80", "-default-device", "-DNDEBUG",
                                          "-lineinfo", "-DGEMMOPS_DEVICE_CHECKS"}));
  r.target = Target::cpu();
  EXPECT_EQ(compile_options(r).status().code(), ErrorCode::invalid_argument);
}

}  // namespace
}  // namespace gemmops::jit
