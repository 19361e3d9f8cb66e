// src/core/signature_memo.hpp: a bounded, thread-safe table of answers keyed by argument signature
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/signature.hpp"

namespace gemmops::detail {

/// Starts over when full: a process sees a few hundred layouts, and a sweep over thousands of sizes
/// only pays the first call of each again. put() keeps an answer only if no clear() came between the
/// generation() read before computing it and the put (an answer computed from stale inputs).
template <class Value>
class SignatureMemo {
 public:
  static constexpr std::size_t kMaxEntries = 8192;

  std::optional<Value> find(const Signature& s) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(s);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }
  std::uint64_t generation() const {
    std::lock_guard lock(mutex_);
    return generation_;
  }
  void put(const Signature& s, Value v, std::uint64_t generation) {
    std::lock_guard lock(mutex_);
    if (generation != generation_) return;
    if (entries_.size() >= kMaxEntries) entries_.clear();
    entries_.insert_or_assign(s, std::move(v));
  }
  void put(const Signature& s, Value v) { put(s, std::move(v), generation()); }
  void clear() {
    std::lock_guard lock(mutex_);
    entries_.clear();
    ++generation_;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<Signature, Value, SignatureHash> entries_;
  std::uint64_t generation_ = 0;
};

}  // namespace gemmops::detail
