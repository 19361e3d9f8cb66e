// src/jit/cache_key.hpp: everything that shapes a cubin, as one struct with a stable text and hash
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gemmops::jit {

/// Two compiles with equal keys produce interchangeable cubins. Include paths are left out on
/// purpose: the toolkit they point into is pinned by nvrtc_version, and leaving them out keeps the
/// key the same on every machine.
struct CacheKey {
  std::string kernel_name;                    ///< the cache directory, e.g. the operator name
  std::string source;                         ///< the main translation unit
  std::vector<std::string> name_expressions;  ///< they decide which instantiations exist
  std::string sources_hash;                   ///< kernel_sources_hash() of the embedded headers
  std::string target;                         ///< "90a"
  std::string nvrtc_version;                  ///< "13.0"
  std::vector<std::string> options;           ///< every NVRTC option except -I

  /// A readable, line-oriented rendering of every field (what key.txt holds; log it to debug).
  std::string to_string() const;
  /// 64-bit FNV-1a of to_string(), 16 lower-case hex digits; the entry's directory name.
  std::string hash() const;
  /// "<kernel_name>/<hash>": how messages name the key.
  std::string short_name() const { return kernel_name + "/" + hash(); }
};

/// 64-bit FNV-1a: tiny, stable across platforms and releases (std::hash is neither).
std::uint64_t fnv1a64(const std::string& text);

}  // namespace gemmops::jit
