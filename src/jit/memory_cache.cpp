// src/jit/memory_cache.cpp: compile_cached, the in-process map in front of the disk cache and NVRTC
// SPDX-License-Identifier: Apache-2.0
#include <map>
#include <mutex>

#include "core/env.hpp"
#include "core/log.hpp"
#include "jit/compile.hpp"
#include "jit/disk_cache.hpp"

namespace gemmops::jit {
namespace {

// One slot per key: the map lock is held only to find the slot, the slot lock across the compile,
// so that concurrent callers of one key compile once while other keys proceed.
struct Slot {
  std::mutex mutex;
  std::shared_ptr<const CompiledKernel> hit;  // what later callers get (origin "memory")
};

struct MemoryCache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Slot>> slots;  // by CacheKey::to_string(): no collisions
};

MemoryCache& memory_cache() {
  static auto* c = new MemoryCache;  // leaked: may be used while other statics are destroyed
  return *c;
}

Result<CompiledKernel> load_or_compile(const CompileRequest& req, const CacheKey& key) {
  const bool use_disk = !env::disk_cache_disabled();
  if (use_disk) {
    if (auto k = DiskCache::from_env().load(key)) return std::move(*k);
  }
  if (env::jit_disabled())
    return compile_failed("jit disabled and no cached kernel for " + key.short_name());
  GEMMOPS_ASSIGN_OR_RETURN(CompiledKernel k, compile_uncached(req, key));
  if (use_disk) {
    // A cache that cannot be written only costs a recompile next time; the kernel is still good.
    if (Status s = DiskCache::from_env().store(key, k); !s) detail::log(s.message());
  }
  return k;
}

}  // namespace

Result<std::shared_ptr<const CompiledKernel>> compile_cached(const CompileRequest& req) {
  GEMMOPS_ASSIGN_OR_RETURN(CacheKey key, cache_key(req));
  const std::string text = key.to_string();
  std::shared_ptr<Slot> slot;
  {
    MemoryCache& c = memory_cache();
    std::lock_guard lock(c.mutex);
    auto& s = c.slots[text];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard lock(slot->mutex);
  if (slot->hit) return slot->hit;
  GEMMOPS_ASSIGN_OR_RETURN(CompiledKernel k, load_or_compile(req, key));
  auto first = std::make_shared<const CompiledKernel>(k);
  k.origin = "memory";
  slot->hit = std::make_shared<const CompiledKernel>(std::move(k));
  return first;
}

void clear_memory_cache_for_testing() {
  MemoryCache& c = memory_cache();
  std::lock_guard lock(c.mutex);
  c.slots.clear();
}

}  // namespace gemmops::jit
