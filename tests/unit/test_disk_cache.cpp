// tests/unit/test_disk_cache.cpp: entries are whole or absent, shared safely, and corrupt ones replaced
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "jit/disk_cache.hpp"

namespace gemmops::jit {
namespace {

namespace fs = std::filesystem;

class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("gemmops-disk-cache-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  static CacheKey key(const std::string& source = "src") {
    return CacheKey{"op/with space", source, {"a", "b"}, "hash", "90a", "13.0", {"-std=c++20"}};
  }
  static CompiledKernel kernel() {
    CompiledKernel k;
    k.cubin = std::string("\x7f" "ELF\0binary", 11);
    k.lowered_names = {"_Z1av", "_Z1bv"};
    k.origin = "nvrtc";
    k.log = "ptxas warning : Registers are spilled to local memory in function 'f', 20 bytes spill stores\n";
    return k;
  }
  static std::size_t entries_in(const fs::path& dir) {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.is_directory() ? 1 : 0;
    return n;
  }

  fs::path root_;
};

TEST_F(DiskCacheTest, a_stored_entry_loads_back_whole) {
  DiskCache cache(root_);
  EXPECT_FALSE(cache.load(key()));
  ASSERT_TRUE(cache.store(key(), kernel()));
  auto k = cache.load(key());
  ASSERT_TRUE(k);
  EXPECT_EQ(k->cubin, kernel().cubin);
  EXPECT_EQ(k->lowered_names, kernel().lowered_names);
  EXPECT_EQ(k->log, kernel().log) << "what ptxas said must reach a later process (the compile tests read it)";
  EXPECT_EQ(k->origin, "disk");
  EXPECT_EQ(k->key_text, key().to_string());
  const fs::path dir = cache.entry_dir(key());
  EXPECT_EQ(dir.parent_path().filename(), "op_with_space");
  for (const char* f : {"kernel.cu", "kernel.cubin", "key.txt", "names.txt", "log.txt"}) EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_FALSE(cache.load(key("other source")));
}

TEST_F(DiskCacheTest, concurrent_writers_of_one_key_leave_one_valid_entry) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      DiskCache cache(root_);  // separate instances, as separate processes would have
      for (int i = 0; i < 5; ++i)
        if (!cache.store(key(), kernel())) ++failures;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  DiskCache cache(root_);
  ASSERT_TRUE(cache.load(key()));
  EXPECT_EQ(entries_in(cache.entry_dir(key()).parent_path()), 1u) << "no temporary directory left behind";
}

TEST_F(DiskCacheTest, a_partial_entry_is_a_miss_and_is_replaced) {
  DiskCache cache(root_);
  ASSERT_TRUE(cache.store(key(), kernel()));
  fs::remove(cache.entry_dir(key()) / "kernel.cubin");
  EXPECT_FALSE(cache.load(key()));
  ASSERT_TRUE(cache.store(key(), kernel()));
  EXPECT_TRUE(cache.load(key()));
}

TEST_F(DiskCacheTest, a_mismatched_key_file_is_a_miss_and_is_replaced) {
  DiskCache cache(root_);
  ASSERT_TRUE(cache.store(key(), kernel()));
  std::ofstream(cache.entry_dir(key()) / "key.txt", std::ios::trunc) << "something else";
  EXPECT_FALSE(cache.load(key()));
  ASSERT_TRUE(cache.store(key(), kernel()));
  auto k = cache.load(key());
  ASSERT_TRUE(k);
  EXPECT_EQ(k->cubin, kernel().cubin);
}

TEST_F(DiskCacheTest, a_wrong_number_of_names_is_a_miss) {
  DiskCache cache(root_);
  ASSERT_TRUE(cache.store(key(), kernel()));
  std::ofstream(cache.entry_dir(key()) / "names.txt", std::ios::trunc) << "_Z1av\n";
  EXPECT_FALSE(cache.load(key()));
}

TEST_F(DiskCacheTest, an_unwritable_root_is_an_error_with_the_path) {
  fs::create_directories(root_);
  std::ofstream(root_ / DiskCache::kLayoutVersion) << "a file where a directory must go";
  DiskCache cache(root_);
  Status s = cache.store(key(), kernel());
  EXPECT_EQ(s.code(), ErrorCode::internal);
  EXPECT_NE(s.message().find((root_ / DiskCache::kLayoutVersion).string()), std::string::npos) << s.message();
}

}  // namespace
}  // namespace gemmops::jit
