// src/cuda/module.cpp: cuModuleLoadData / cuModuleGetFunction with RAII unload
// SPDX-License-Identifier: Apache-2.0
#include "cuda/module.hpp"

#include "core/log.hpp"
#include "cuda/context.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/launch.hpp"

namespace gemmops::cuda {

Result<std::shared_ptr<Module>> Module::load(const std::string& cubin, int ordinal) {
  if (cubin.empty()) return invalid_argument("cubin: must not be empty; got 0 bytes");
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  GEMMOPS_ASSIGN_OR_RETURN(CUcontext context, current_context(ordinal));
  CUmodule module = nullptr;
  GEMMOPS_CU(*api, cuModuleLoadData, &module, cubin.data());
  return std::shared_ptr<Module>(new Module(module, context, ordinal));
}

Module::~Module() {
  auto api = driver();
  if (!api || (*api)->cuModuleUnload == nullptr) return;
  const DriverApi& d = **api;
  for (const auto& [name, fn] : functions_) forget_launch_attributes(fn);
  // Unload in the module's own context, then give the thread back the context it had.
  CUcontext previous = nullptr;
  bool switched = d.cuCtxGetCurrent != nullptr && d.cuCtxSetCurrent != nullptr &&
                  d.cuCtxGetCurrent(&previous) == CUDA_SUCCESS && previous != context_ &&
                  d.cuCtxSetCurrent(context_) == CUDA_SUCCESS;
  CUresult r = d.cuModuleUnload(module_);
  // At process exit the driver may already be torn down; that is not worth a word.
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
    detail::log("module of device " + std::to_string(ordinal_) + ": " + check(d, r, "cuModuleUnload").message());
  if (switched) (void)d.cuCtxSetCurrent(previous);
}

Result<CUfunction> Module::function(const std::string& lowered_name) const {
  std::lock_guard lock(mutex_);
  if (auto it = functions_.find(lowered_name); it != functions_.end()) return it->second;
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  CUfunction fn = nullptr;
  Status s = api->cuModuleGetFunction == nullptr
                 ? driver_error("cuModuleGetFunction: not provided by this CUDA driver")
                 : check(*api, api->cuModuleGetFunction(&fn, module_, lowered_name.c_str()),
                         "cuModuleGetFunction");
  if (!s) return Status(s.code(), s.message() + " for kernel '" + lowered_name + "'");
  functions_.emplace(lowered_name, fn);
  return fn;
}

Result<std::shared_ptr<Module>> LazyModule::on_device(int ordinal) const {
  std::lock_guard lock(mutex_);
  if (auto it = modules_.find(ordinal); it != modules_.end()) return it->second;
  GEMMOPS_ASSIGN_OR_RETURN(std::shared_ptr<Module> m, Module::load(cubin_, ordinal));
  modules_.emplace(ordinal, m);
  return m;
}

Result<CUfunction> LazyModule::function(int ordinal, const std::string& lowered_name) const {
  GEMMOPS_ASSIGN_OR_RETURN(std::shared_ptr<Module> m, on_device(ordinal));
  return m->function(lowered_name);
}

}  // namespace gemmops::cuda
