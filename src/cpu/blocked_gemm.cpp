// src/cpu/blocked_gemm.cpp: output tiles shared out over threads; each tile packs, multiplies, stores
// SPDX-License-Identifier: Apache-2.0
#include "cpu/blocked_gemm.hpp"

#include <algorithm>
#include <atomic>
#include <new>
#include <vector>

#include "core/worker_threads.hpp"
#include "cpu/microkernel.hpp"

namespace gemmops::cpu {
namespace {

// Blocking for a core with ~512 KiB of L2: the A block (kMc x kKc) and B block (kKc x kNc) fit in L2
// together; one B micro-panel (kKc x kNr, 16 KiB) stays in L1 while the kernel walks the A panels.
// A tile of out is kTileM x kNc, accumulated in fp32 over all of K, then rounded once.
constexpr int64_t kMc = 144;  // multiple of kMr
constexpr int64_t kNc = 256;  // multiple of kNr
constexpr int64_t kKc = 256;
constexpr int64_t kTileM = 4 * kMc;  // rows per tile: each packed B block serves four A blocks
constexpr double kFlopsPerThread = 4.0e6;  // below this a thread costs more than it saves

struct Tile {
  int32_t task;
  int64_t m0, n0;
};

struct Buffers {
  std::vector<float> a, b, c;
  Buffers() : a(kMc * kKc), b(kKc * kNc), c(kTileM * kNc) {}
};

void compute_tile(const GemmTask& t, const Tile& tile, Buffers& buf, MicroKernel kernel) {
  const int64_t mt = std::min(kTileM, t.m - tile.m0);
  const int64_t nc = std::min(kNc, t.n - tile.n0);
  const int64_t n_panels = (nc + kNr - 1) / kNr;
  float* c = buf.c.data();
  std::fill(buf.c.begin(), buf.c.end(), 0.0f);
  for (int64_t k0 = 0; k0 < t.k; k0 += kKc) {
    const int64_t kc = std::min(kKc, t.k - k0);
    pack_b(t.b, k0, kc, tile.n0, nc, buf.b.data());
    for (int64_t mb = 0; mb < mt; mb += kMc) {
      const int64_t mc = std::min(kMc, mt - mb);
      const int64_t m_panels = (mc + kMr - 1) / kMr;
      pack_a(t.a, tile.m0 + mb, mc, k0, kc, buf.a.data());
      for (int64_t q = 0; q < n_panels; ++q) {
        const float* bp = buf.b.data() + q * kc * kNr;
        for (int64_t p = 0; p < m_panels; ++p)
          kernel(kc, buf.a.data() + p * kc * kMr, bp, c + (mb + p * kMr) * kNc + q * kNr, kNc);
      }
    }
  }
  store_tile(c, kNc, t.out, tile.m0, mt, tile.n0, nc);
}

void worker(std::span<const GemmTask> tasks, const std::vector<Tile>& tiles, std::atomic<size_t>& next,
            Buffers& buf) {
  const MicroKernel kernel = best_microkernel();
  // Dynamic hand-out balances ragged groups (edge tiles are smaller) better than a static split.
  for (size_t i = next.fetch_add(1); i < tiles.size(); i = next.fetch_add(1))
    compute_tile(tasks[static_cast<size_t>(tiles[i].task)], tiles[i], buf, kernel);
}

}  // namespace

Status run_blocked(std::span<const GemmTask> tasks, int threads) {
  try {
    std::vector<Tile> tiles;
    double flops = 0;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const GemmTask& t = tasks[i];
      flops += 2.0 * double(t.m) * double(t.n) * double(t.k);
      for (int64_t m0 = 0; m0 < t.m; m0 += kTileM)
        for (int64_t n0 = 0; n0 < t.n; n0 += kNc) tiles.push_back({static_cast<int32_t>(i), m0, n0});
    }
    const double by_work = std::max(1.0, flops / kFlopsPerThread);
    const size_t n_threads = static_cast<size_t>(
        std::clamp<double>(std::min<double>(threads, by_work), 1.0, double(std::max<size_t>(tiles.size(), 1))));
    std::vector<Buffers> buffers(n_threads);
    std::atomic<size_t> next{0};
    // (Fewer threads, where some cannot be started, still finish the job: the hand-out is dynamic.)
    detail::run_worker_threads(n_threads, [&](size_t w) { worker(tasks, tiles, next, buffers[w]); });
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::out_of_memory, "cpu: could not allocate the pack buffers");
  }
  return Status::ok();
}

}  // namespace gemmops::cpu
