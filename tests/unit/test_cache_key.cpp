// tests/unit/test_cache_key.cpp: the cache key changes with every field and is stable otherwise
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <set>

#include "jit/cache_key.hpp"
#include "jit/kernel_sources.hpp"

namespace gemmops::jit {
namespace {

CacheKey base_key() {
  return CacheKey{"smoke", "#include \"common/smoke.cuh\"\n", {"gemmops_smoke_fill"}, "abc", "90a", "13.0",
                  {"-std=c++20", "--gpu-architecture=sm_90a"}};
}

TEST(CacheKey, equal_keys_have_equal_text_and_hash) {
  EXPECT_EQ(base_key().to_string(), base_key().to_string());
  EXPECT_EQ(base_key().hash(), base_key().hash());
  EXPECT_EQ(base_key().hash().size(), 16u);
  EXPECT_EQ(base_key().short_name(), "smoke/" + base_key().hash());
}

TEST(CacheKey, every_field_changes_the_hash) {
  std::vector<CacheKey> keys(8, base_key());
  keys[1].kernel_name = "smoke2";
  keys[2].source += " ";
  keys[3].name_expressions.push_back("x");
  keys[4].sources_hash = "abd";
  keys[5].target = "90";
  keys[6].nvrtc_version = "12.8";
  keys[7].options.push_back("-DGEMMOPS_DEVICE_CHECKS");
  std::set<std::string> hashes;
  for (const auto& k : keys) hashes.insert(k.hash());
  EXPECT_EQ(hashes.size(), keys.size());
}

TEST(CacheKey, field_boundaries_cannot_be_shifted) {
  CacheKey a = base_key(), b = base_key();
  a.options = {"-DA", "-DB"};
  b.options = {"-DA\noption (3): -DB"};
  EXPECT_NE(a.to_string(), b.to_string());
}

TEST(CacheKey, fnv1a_matches_the_reference_values) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(KernelSources, the_table_holds_the_smoke_kernel_by_relative_path) {
  const char* text = find_kernel_source("common/smoke.cuh");
  ASSERT_NE(text, nullptr);
  EXPECT_NE(std::string(text).find("gemmops_smoke_fill"), std::string::npos);
  EXPECT_EQ(find_kernel_source("kernels/common/smoke.cuh"), nullptr);
  EXPECT_EQ(kernel_sources_hash().size(), 64u);
  for (const KernelSource& s : kernel_sources()) EXPECT_NE(std::string(s.path).substr(0, 1), "/");
}

}  // namespace
}  // namespace gemmops::jit
