// src/core/worker_threads.hpp: one job run by several threads that pull their work from a shared counter
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

namespace gemmops::detail {

/// Runs worker(w) for w = 0 on the calling thread and w = 1 .. threads - 1 on new ones, and returns
/// once all have. A thread that cannot be started is left out (its w never runs): workers that take
/// their items from a shared counter finish the job with fewer. The threads are joined even when
/// the caller's worker throws, so the exception leaves this function instead of std::terminate.
template <typename Worker>
void run_worker_threads(std::size_t threads, Worker&& worker) {
  std::vector<std::thread> pool;
  pool.reserve(threads > 1 ? threads - 1 : 0);  // so that only thread creation can throw once threads run
  struct JoinAll {
    std::vector<std::thread>& pool;
    ~JoinAll() {
      for (std::thread& t : pool) t.join();
    }
  } join_all{pool};
  for (std::size_t w = 1; w < threads; ++w) {
    try {
      pool.emplace_back(std::ref(worker), w);
    } catch (const std::system_error&) {
      break;
    }
  }
  worker(std::size_t{0});
}

}  // namespace gemmops::detail
