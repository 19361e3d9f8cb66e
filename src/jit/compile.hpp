// src/jit/compile.hpp: source text + target + options -> cubin, through the memory and disk caches
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gemmops/status.hpp"
#include "gemmops/target.hpp"
#include "jit/cache_key.hpp"

namespace gemmops::jit {

/// What to compile. The JIT knows no GEMM: the caller writes the translation unit.
struct CompileRequest {
  std::string kernel_name;  ///< directory name in the cache, e.g. the operator name
  std::string source;       ///< the main translation unit; may #include any embedded kernel path
  std::vector<std::string> name_expressions;  ///< e.g. "gemmops::kernels::sm90::grouped_gemm_kernel<...>"
  Target target;                              ///< a CUDA target: "90a" compiles for sm_90a
  std::vector<std::string> options;           ///< extra, e.g. "-DGEMMOPS_DEVICE_CHECKS"
};

/// What a compile produced. Immutable once returned; shared between callers.
struct CompiledKernel {
  std::string cubin;
  std::vector<std::string> lowered_names;  ///< same order as name_expressions
  std::string key_text;                    ///< CacheKey::to_string()
  std::string origin;                      ///< "memory", "disk" or "nvrtc"
  double compile_seconds = 0.0;            ///< of the NVRTC compile (0 when loaded from disk)
  std::string log;                         ///< NVRTC's log (warnings), may be empty
};

/// The NVRTC options every compile gets, then `req.options`: -std=c++20, --gpu-architecture=sm_90a,
/// -default-device, -DNDEBUG, -lineinfo (no fast math: kernels keep IEEE unless asked).
/// invalid_argument for a cpu target.
Result<std::vector<std::string>> compile_options(const CompileRequest& req);

/// The key of `req` under the NVRTC that would compile it (compile_failed when none opens).
Result<CacheKey> cache_key(const CompileRequest& req);

/// The include directories NVRTC gets for the toolkit and CCCL: GEMMOPS_CUDA_INCLUDE, else
/// $CUDA_HOME/include and $CUDA_HOME/include/cccl, else the toolkit found at build time (+ /cccl).
std::vector<std::string> cuda_include_dirs();

/// Compiles with NVRTC, no cache: every embedded kernel source is given as a header named by its
/// path. compile_failed with NVRTC's full log in the message when the source does not compile.
Result<CompiledKernel> compile_uncached(const CompileRequest& req, const CacheKey& key);

/// The cubin for `req`: from memory, else from the disk cache (unless GEMMOPS_NO_DISK_CACHE), else
/// NVRTC (unless GEMMOPS_NO_JIT: then "jit disabled and no cached kernel for <key>"), stored back
/// to both. Concurrent callers with one key compile once. Thread-safe; failures are not cached.
Result<std::shared_ptr<const CompiledKernel>> compile_cached(const CompileRequest& req);

/// Forgets the in-process cache, as if the process had restarted (tests).
void clear_memory_cache_for_testing();

}  // namespace gemmops::jit
