// src/core/env.hpp: every GEMMOPS_* environment variable, read here and nowhere else (docs/environment.md)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gemmops::env {

/// GEMMOPS_TARGET: the target to assume when no CUDA device is present ("90a"), for discovery/compile.
std::optional<std::string> target();
/// GEMMOPS_MACHINE_MODEL: the machine model the estimates assume when no device is present ("h100_sxm").
std::optional<std::string> machine_model();
/// GEMMOPS_CACHE_DIR, else $XDG_CACHE_HOME/gemmops, else $HOME/.cache/gemmops, else /tmp/gemmops-cache.
std::string cache_dir();
/// GEMMOPS_NO_JIT=1: a kernel-cache miss is an error instead of a compile.
bool jit_disabled();
/// GEMMOPS_NO_DISK_CACHE=1: never read or write the on-disk kernel cache.
bool disk_cache_disabled();
/// GEMMOPS_LOG=1: the library logs to stderr (off by default; the library never prints otherwise).
bool log_enabled();
/// GEMMOPS_CUDA_INCLUDE: the toolkit include directories for NVRTC (';' or ':' separated).
std::optional<std::string> cuda_include();
/// CUDA_HOME, else CUDA_PATH: the toolkit whose include/ and include/cccl NVRTC uses (not GEMMOPS_*).
std::optional<std::string> cuda_home();
/// GEMMOPS_NVRTC: path or name of the NVRTC library to open.
std::optional<std::string> nvrtc_library();
/// GEMMOPS_CPU_THREADS: threads of the CPU provider (default: hardware concurrency).
int cpu_threads();
/// GEMMOPS_RASTER_BAND: M units the sm90 tile scheduler walks together (tuning; default: computed).
std::optional<int> raster_band();
/// GEMMOPS_MAX_SMS: at most this many SMs for a persistent sm90 kernel (leaves the rest to kernels
/// running beside it, e.g. expert-parallel communication); default: all of them.
std::optional<int> max_sms();
/// GEMMOPS_K_GROUPED_WALK: `index` walks the sm90 K-grouped tiles group by group in index order,
/// round-robin (experiments); anything else, or unset: longest group first, in a snake (default).
bool k_grouped_walk_longest_first();
/// GEMMOPS_KERNEL_WATCHDOG: seconds a kernel's barrier wait may spin before the kernel traps (a
/// debugging build of the kernels; unset: no watchdog, the default).
std::optional<int> kernel_watchdog_seconds();
/// GEMMOPS_KERNEL_DEFINES: preprocessor definitions (`NAME` or `NAME=VALUE`, separated by spaces or
/// commas) added to every sm90 kernel compile and so to its cache key: two variants of a kernel
/// compiled in one process (set, compile, change, compile) and timed side by side (experiments).
std::vector<std::string> kernel_defines();
/// GEMMOPS_DUMP_PTX=<dir>: every fresh NVRTC compile also writes its PTX there (<kernel>.<hash of what is instantiated>.ptx),
/// a developer's aid to show that a refactor leaves the kernels' code as it was.
std::optional<std::string> ptx_dump_dir();
/// GEMMOPS_TRIAL_DESIGNS (set, not "0"): discovery and autotune also offer trial designs
/// (OperatorMetadata::trial, not yet verified on hardware); by default they offer none.
bool trial_designs();
/// GEMMOPS_ROUTE_KERNELS=wide|chunked: route() on a device takes that set of kernels whatever the
/// number of pairs (tests and benchmarks; unset or anything else: chosen by the pairs).
std::optional<std::string> route_kernels();
/// GEMMOPS_SPLIT_K: ways to split K on the sm90 M-grouped kernels instead of the estimate's choice
/// (tests and experiments; capped by the kernel's limit).
std::optional<int> split_k();

}  // namespace gemmops::env
