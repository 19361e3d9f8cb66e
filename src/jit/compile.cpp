// src/jit/compile.cpp: one NVRTC compile of a translation unit against the embedded kernel headers
// SPDX-License-Identifier: Apache-2.0
#include "jit/compile.hpp"

#include <chrono>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/env.hpp"
#include "core/log.hpp"
#include "jit/kernel_sources.hpp"
#include "jit/nvrtc_api.hpp"

#ifndef GEMMOPS_DEFAULT_CUDA_INCLUDE
#define GEMMOPS_DEFAULT_CUDA_INCLUDE ""
#endif

namespace gemmops::jit {
namespace {

std::vector<std::string> split_paths(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == ';' || c == ':') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Destroys the program on every path out of compile_uncached.
struct Program {
  const NvrtcApi& api;
  nvrtcProgram prog = nullptr;
  ~Program() {
    if (prog != nullptr) (void)api.nvrtcDestroyProgram(&prog);
  }
};

std::string program_log(const NvrtcApi& api, nvrtcProgram prog) {
  std::size_t size = 0;
  if (api.nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (api.nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// A developer's aid (GEMMOPS_DUMP_PTX=dir): the PTX of each fresh compile, to show that a refactor
// leaves the code byte for byte as it was. A failure to write only costs the dump.
void dump_ptx(const NvrtcApi& api, nvrtcProgram prog, const std::string& dir, const CacheKey& key) {
  std::size_t size = 0;
  if (api.nvrtcGetPTXSize(prog, &size) != NVRTC_SUCCESS || size == 0) return;
  std::string ptx(size, '\0');
  if (api.nvrtcGetPTX(prog, ptx.data()) != NVRTC_SUCCESS) return;
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // Named by what is instantiated and how, not by the sources: the same kernel before and after a
  // change of its code gets the same file name.
  std::string what;
  for (const auto& n : key.name_expressions) what += n + "\n";
  for (const auto& o : key.options) what += o + "\n";
  char tag[17];
  std::snprintf(tag, sizeof(tag), "%016zx", std::hash<std::string>{}(what));
  std::ofstream(std::filesystem::path(dir) / (key.kernel_name + "." + tag + ".ptx"), std::ios::binary) << ptx;
}

}  // namespace

std::vector<std::string> cuda_include_dirs() {
  std::vector<std::string> dirs;
  if (auto inc = env::cuda_include()) return split_paths(*inc);
  if (auto home = env::cuda_home()) return {*home + "/include", *home + "/include/cccl"};
  for (const auto& d : split_paths(GEMMOPS_DEFAULT_CUDA_INCLUDE)) {
    dirs.push_back(d);
    dirs.push_back(d + "/cccl");
  }
  return dirs;
}

Result<std::vector<std::string>> compile_options(const CompileRequest& req) {
  if (req.target.is_cpu())
    return invalid_argument("target: must be a CUDA target to compile " + req.kernel_name + "; got cpu");
  std::vector<std::string> opts = {"-std=c++20", "--gpu-architecture=sm_" + req.target.to_string(),
                                   "-default-device", "-DNDEBUG", "-lineinfo"};
  opts.insert(opts.end(), req.options.begin(), req.options.end());
  return opts;
}

Result<CacheKey> cache_key(const CompileRequest& req) {
  GEMMOPS_ASSIGN_OR_RETURN(std::vector<std::string> opts, compile_options(req));
  GEMMOPS_ASSIGN_OR_RETURN(const NvrtcApi* api, nvrtc());
  return CacheKey{req.kernel_name, req.source,        req.name_expressions, std::string(kernel_sources_hash()),
                  req.target.to_string(), api->version(), std::move(opts)};
}

Result<CompiledKernel> compile_uncached(const CompileRequest& req, const CacheKey& key) {
  GEMMOPS_ASSIGN_OR_RETURN(const NvrtcApi* api, nvrtc());
  const auto start = std::chrono::steady_clock::now();
  std::vector<const char*> header_names, header_texts;
  for (const KernelSource& s : kernel_sources()) {
    header_names.push_back(s.path);
    header_texts.push_back(s.text);
  }
  Program p{*api};
  const std::string tu_name = req.kernel_name + ".cu";
  GEMMOPS_TRY(check(*api, api->nvrtcCreateProgram(&p.prog, req.source.c_str(), tu_name.c_str(),
                                                  static_cast<int>(header_names.size()), header_texts.data(),
                                                  header_names.data()),
                    "nvrtcCreateProgram"));
  for (const auto& n : req.name_expressions)
    GEMMOPS_TRY(check(*api, api->nvrtcAddNameExpression(p.prog, n.c_str()), "nvrtcAddNameExpression"));

  std::vector<std::string> opts = key.options;
  for (const auto& d : cuda_include_dirs()) opts.push_back("-I" + d);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  nvrtcResult r = api->nvrtcCompileProgram(p.prog, static_cast<int>(argv.size()), argv.data());
  CompiledKernel k;
  k.log = program_log(*api, p.prog);
  if (!k.log.empty()) detail::log(req.kernel_name + ": nvrtc log:\n" + k.log);  // ptxas warnings, e.g. C7518
  if (r != NVRTC_SUCCESS)
    return compile_failed(req.kernel_name + ": nvrtc " + api->version() + " failed for sm_" + key.target + " (" +
                          api->nvrtcGetErrorString(r) + "):\n" + k.log);

  for (const auto& n : req.name_expressions) {
    const char* lowered = nullptr;
    GEMMOPS_TRY(check(*api, api->nvrtcGetLoweredName(p.prog, n.c_str(), &lowered), "nvrtcGetLoweredName"));
    k.lowered_names.emplace_back(lowered);
  }
  std::size_t size = 0;
  GEMMOPS_TRY(check(*api, api->nvrtcGetCUBINSize(p.prog, &size), "nvrtcGetCUBINSize"));
  if (size == 0)  // e.g. a virtual architecture ("compute_90") gives PTX only
    return compile_failed(req.kernel_name + ": nvrtc produced no cubin for sm_" + key.target);
  k.cubin.resize(size);
  GEMMOPS_TRY(check(*api, api->nvrtcGetCUBIN(p.prog, k.cubin.data()), "nvrtcGetCUBIN"));
  if (const std::optional<std::string> dir = env::ptx_dump_dir()) dump_ptx(*api, p.prog, *dir, key);
  k.key_text = key.to_string();
  k.origin = "nvrtc";
  k.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return k;
}

}  // namespace gemmops::jit
