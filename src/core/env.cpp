// src/core/env.cpp: reads the GEMMOPS_* environment variables (the only file that calls getenv)
// SPDX-License-Identifier: Apache-2.0
#include "core/env.hpp"

#include <cstdlib>
#include <string_view>
#include <thread>

namespace gemmops::env {
namespace {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read-only use
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

bool flag(const char* name) {
  auto v = get(name);
  if (!v) return false;
  std::string_view s = *v;
  return !(s == "0" || s == "false" || s == "off" || s == "no");
}

}  // namespace

std::optional<std::string> target() { return get("GEMMOPS_TARGET"); }
std::optional<std::string> machine_model() { return get("GEMMOPS_MACHINE_MODEL"); }

std::string cache_dir() {
  if (auto d = get("GEMMOPS_CACHE_DIR")) return *d;
  if (auto x = get("XDG_CACHE_HOME")) return *x + "/gemmops";
  if (auto h = get("HOME")) return *h + "/.cache/gemmops";
  return "/tmp/gemmops-cache";
}

bool jit_disabled() { return flag("GEMMOPS_NO_JIT"); }
bool disk_cache_disabled() { return flag("GEMMOPS_NO_DISK_CACHE"); }
bool log_enabled() { return flag("GEMMOPS_LOG"); }
std::optional<std::string> cuda_include() { return get("GEMMOPS_CUDA_INCLUDE"); }
std::optional<std::string> cuda_home() {
  if (auto h = get("CUDA_HOME")) return h;
  return get("CUDA_PATH");
}
std::optional<std::string> nvrtc_library() { return get("GEMMOPS_NVRTC"); }

int cpu_threads() {
  if (auto v = get("GEMMOPS_CPU_THREADS")) {
    int n = std::atoi(v->c_str());
    if (n > 0) return n;
  }
  unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

std::optional<int> raster_band() {
  if (auto v = get("GEMMOPS_RASTER_BAND")) {
    const int n = std::atoi(v->c_str());
    if (n > 0) return n;
  }
  return std::nullopt;
}

bool k_grouped_walk_longest_first() {
  const auto v = get("GEMMOPS_K_GROUPED_WALK");
  return !(v && *v == "index");
}

std::optional<int> max_sms() {
  if (auto v = get("GEMMOPS_MAX_SMS")) {
    const int n = std::atoi(v->c_str());
    if (n > 0) return n;
  }
  return std::nullopt;
}

std::optional<int> kernel_watchdog_seconds() {
  if (auto v = get("GEMMOPS_KERNEL_WATCHDOG")) {
    const int n = std::atoi(v->c_str());
    if (n > 0) return n;
  }
  return std::nullopt;
}

std::optional<std::string> route_kernels() {
  auto v = get("GEMMOPS_ROUTE_KERNELS");
  if (v && (*v == "wide" || *v == "chunked")) return v;
  return std::nullopt;
}

bool trial_designs() {
  const auto v = get("GEMMOPS_TRIAL_DESIGNS");
  return v && !v->empty() && *v != "0";
}

std::vector<std::string> kernel_defines() {
  std::vector<std::string> defines;
  const auto v = get("GEMMOPS_KERNEL_DEFINES");
  if (!v) return defines;
  std::string name;
  for (const char ch : *v + " ") {
    if (ch == ' ' || ch == ',' || ch == '\t') {
      if (!name.empty()) defines.push_back(std::move(name));
      name.clear();
    } else {
      name += ch;
    }
  }
  return defines;
}

std::optional<std::string> ptx_dump_dir() { return get("GEMMOPS_DUMP_PTX"); }

std::optional<int> split_k() {
  if (auto v = get("GEMMOPS_SPLIT_K")) {
    const int n = std::atoi(v->c_str());
    if (n > 0) return n;
  }
  return std::nullopt;
}

}  // namespace gemmops::env
