// src/jit/disk_cache.hpp: content-addressed cubins on disk, published by atomic rename
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>
#include <optional>

#include "gemmops/status.hpp"
#include "jit/cache_key.hpp"
#include "jit/compile.hpp"

namespace gemmops::jit {

/// `<root>/v2/<kernel_name>/<hash>/{kernel.cu, kernel.cubin, key.txt, names.txt, log.txt}`. An entry
/// is written into a temporary sibling directory, each file fsync'ed, then renamed into place, so a
/// reader sees a whole entry or none. Several processes and threads may share one root. The compile
/// log travels with the cubin: what ptxas said (spills, wgmma serialisation) is known to a later
/// process too (v1 entries had no log, so a cached kernel's spills went unseen; they are not read).
class DiskCache {
 public:
  static constexpr const char* kLayoutVersion = "v2";
  explicit DiskCache(std::filesystem::path root) : root_(std::move(root)) {}
  /// The cache under env::cache_dir().
  static DiskCache from_env();

  /// The entry for `key` (origin "disk"), or nullopt for a miss. A partial or corrupt entry (a file
  /// missing, key.txt not equal to key.to_string(), a wrong number of names) is a miss.
  std::optional<CompiledKernel> load(const CacheKey& key) const;

  /// Publishes `kernel` under `key`. Losing a race to another writer of the same key is success;
  /// a corrupt entry in the way is replaced. internal_error with the path on an I/O failure.
  Status store(const CacheKey& key, const CompiledKernel& kernel) const;

  /// The entry's directory.
  std::filesystem::path entry_dir(const CacheKey& key) const;
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
};

}  // namespace gemmops::jit
