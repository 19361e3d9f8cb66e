// tests/unit/test_worker_threads.cpp: run_worker_threads (core/worker_threads.hpp), shared by the CPU
// operators' tiles and autotune's compiles
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "core/worker_threads.hpp"

namespace gemmops::detail {
namespace {

TEST(WorkerThreads, runs_each_worker_once_and_returns_when_all_have) {
  std::vector<std::atomic<int>> runs(6);
  run_worker_threads(6, [&](std::size_t w) { ++runs[w]; });
  for (std::size_t w = 0; w < runs.size(); ++w) EXPECT_EQ(runs[w].load(), 1) << "worker " << w;
}

TEST(WorkerThreads, zero_or_one_thread_is_the_calling_thread_alone) {
  for (std::size_t threads : {0u, 1u}) {
    int runs = 0;
    run_worker_threads(threads, [&](std::size_t w) {
      EXPECT_EQ(w, 0u);
      ++runs;
    });
    EXPECT_EQ(runs, 1) << threads << " threads";
  }
}

TEST(WorkerThreads, the_calling_workers_exception_leaves_after_the_others_are_joined) {
  std::atomic<int> others{0};
  EXPECT_THROW(run_worker_threads(4,
                                  [&](std::size_t w) {
                                    if (w == 0) throw std::runtime_error("the caller's share failed");
                                    ++others;
                                  }),
               std::runtime_error);
  EXPECT_EQ(others.load(), 3);  // joined, not abandoned (std::terminate would have ended the test)
}

}  // namespace
}  // namespace gemmops::detail
