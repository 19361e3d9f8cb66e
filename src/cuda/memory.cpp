// src/cuda/memory.cpp: include/gemmops/device.hpp (device_count, DeviceBuffer, synchronize, EventTimer)
// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "core/log.hpp"
#include "cuda/context.hpp"
#include "cuda/driver_api.hpp"
#include "gemmops/device.hpp"

namespace gemmops {
namespace {

using cuda::DriverApi;

Result<const DriverApi*> on_device(int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, cuda::driver());
  GEMMOPS_TRY(cuda::make_current(ordinal));
  return api;
}

Status check_range(const char* what, std::size_t offset, std::size_t bytes, std::size_t size) {
  if (offset > size || bytes > size - offset)
    return invalid_argument(std::string(what) + ": offset + bytes must be <= the buffer's " +
                            std::to_string(size) + " bytes; got " + std::to_string(offset) + " + " +
                            std::to_string(bytes));
  return Status::ok();
}

}  // namespace

Result<int> device_count() {
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, cuda::driver());
  int count = 0;
  GEMMOPS_CU(*api, cuDeviceGetCount, &count);
  return count;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ == nullptr) return;
  auto api = on_device(ordinal_);
  if (!api) return;
  CUresult r = (*api)->cuMemFree(reinterpret_cast<CUdeviceptr>(ptr_));
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
    detail::log("DeviceBuffer: " + cuda::check(**api, r, "cuMemFree").message());
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(other.ptr_), bytes_(other.bytes_), ordinal_(other.ordinal_) {
  other.ptr_ = nullptr;
  other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));  // frees what this held
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    ordinal_ = other.ordinal_;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

Result<DeviceBuffer> DeviceBuffer::allocate(std::size_t bytes, int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, on_device(ordinal));
  DeviceBuffer b;
  b.ordinal_ = ordinal;
  if (bytes == 0) return b;  // the driver refuses 0-byte allocations; an empty buffer is fine
  CUdeviceptr p = 0;
  Status s = cuda::check(*api, api->cuMemAlloc(&p, bytes), "cuMemAlloc");
  if (!s) return Status(s.code(), s.message() + " allocating " + std::to_string(bytes) + " bytes on device " +
                                      std::to_string(ordinal));
  b.ptr_ = reinterpret_cast<void*>(p);
  b.bytes_ = bytes;
  return b;
}

Status DeviceBuffer::copy_from_host(const void* src, std::size_t bytes, std::size_t offset) {
  GEMMOPS_TRY(check_range("copy_from_host", offset, bytes, bytes_));
  if (bytes == 0) return Status::ok();
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, on_device(ordinal_));
  GEMMOPS_CU(*api, cuMemcpyHtoD, reinterpret_cast<CUdeviceptr>(ptr_) + offset, src, bytes);
  return Status::ok();
}

Status DeviceBuffer::copy_to_host(void* dst, std::size_t bytes, std::size_t offset) const {
  GEMMOPS_TRY(check_range("copy_to_host", offset, bytes, bytes_));
  if (bytes == 0) return Status::ok();
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, on_device(ordinal_));
  GEMMOPS_CU(*api, cuMemcpyDtoH, dst, reinterpret_cast<CUdeviceptr>(ptr_) + offset, bytes);
  return Status::ok();
}

Status DeviceBuffer::fill_bytes(unsigned char value) {
  if (bytes_ == 0) return Status::ok();
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, on_device(ordinal_));
  GEMMOPS_CU(*api, cuMemsetD8, reinterpret_cast<CUdeviceptr>(ptr_), value, bytes_);
  // cuMemsetD8 may return before the device is done; a poisoned output must be poisoned before any
  // kernel on another stream reads it.
  GEMMOPS_CU(*api, cuCtxSynchronize);
  return Status::ok();
}

Status synchronize(Stream stream, int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, on_device(ordinal));
  if (stream != nullptr) {
    GEMMOPS_CU(*api, cuStreamSynchronize, static_cast<CUstream>(stream));
  } else {
    GEMMOPS_CU(*api, cuCtxSynchronize);
  }
  return Status::ok();
}

}  // namespace gemmops
