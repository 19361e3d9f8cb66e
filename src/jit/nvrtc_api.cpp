// src/jit/nvrtc_api.cpp: dlopen NVRTC once and fill the NvrtcApi table
// SPDX-License-Identifier: Apache-2.0
#include "jit/nvrtc_api.hpp"

#include <dlfcn.h>

#include <vector>

#include "core/env.hpp"

#ifndef GEMMOPS_DEFAULT_NVRTC_DIR
#define GEMMOPS_DEFAULT_NVRTC_DIR ""
#endif

namespace gemmops::jit {
namespace {

struct Loaded {
  NvrtcApi api;
  Status status;
};

std::vector<std::string> candidates() {
  if (auto lib = env::nvrtc_library()) return {*lib};  // an explicit choice is never second-guessed
  const std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  std::vector<std::string> out = names;
  const std::string dir = GEMMOPS_DEFAULT_NVRTC_DIR;
  if (!dir.empty())
    for (const auto& n : names) out.push_back(dir + "/" + n);
  return out;
}

Loaded load() {
  Loaded out;
  void* lib = nullptr;
  std::string tried;
  for (const std::string& name : candidates()) {
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed: lives as long as the process
    if (lib != nullptr) {
      out.api.library = name;
      break;
    }
    const char* why = dlerror();
    tried += "\n  " + (why != nullptr ? std::string(why) : name);
  }
  if (lib == nullptr) {
    out.status = compile_failed("nvrtc: cannot open NVRTC (set GEMMOPS_NVRTC to its path); tried:" + tried);
    return out;
  }
  NvrtcApi& api = out.api;
#define GEMMOPS_NVRTC_RESOLVE(name)                                  \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name)); \
  if (api.name == nullptr) {                                         \
    out.status = compile_failed("nvrtc: " + api.library + " has no " #name); \
    return out;                                                      \
  }
  GEMMOPS_NVRTC_FUNCTIONS(GEMMOPS_NVRTC_RESOLVE)
#undef GEMMOPS_NVRTC_RESOLVE
  out.status = check(api, api.nvrtcVersion(&api.major, &api.minor), "nvrtcVersion");
  return out;
}

}  // namespace

Result<const NvrtcApi*> nvrtc() {
  static const Loaded loaded = load();
  if (!loaded.status) return loaded.status;
  return &loaded.api;
}

Status check(const NvrtcApi& api, nvrtcResult result, const char* call) {
  if (result == NVRTC_SUCCESS) return Status::ok();
  const char* text = api.nvrtcGetErrorString != nullptr ? api.nvrtcGetErrorString(result) : nullptr;
  return compile_failed(std::string(call) + ": " +
                        (text != nullptr ? text : "NVRTC error " + std::to_string(static_cast<int>(result))));
}

}  // namespace gemmops::jit
