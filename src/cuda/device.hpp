// src/cuda/device.hpp: what the operators need to know about a device, queried once
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <string>

#include "gemmops/status.hpp"
#include "gemmops/target.hpp"

namespace gemmops::cuda {

/// Facts about CUDA device `ordinal`, so that no code hard-codes SM counts or smem sizes.
struct DeviceFacts {
  int ordinal = 0;
  int cc = 0;                            ///< major*10+minor, e.g. 90
  int sm_count = 0;                      ///< multiprocessors
  std::size_t smem_per_block_optin = 0;  ///< dynamic smem a block may opt into (227 KiB on H100)
  std::size_t l2_bytes = 0;
  int clock_khz = 0;                     ///< the SMs' boost clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
  int memory_clock_khz = 0;              ///< peak memory clock (x 2 x bus bytes: the datasheet's bandwidth)
  int memory_bus_bits = 0;               ///< global memory bus width
  std::string name;                      ///< "NVIDIA H200": the machine model is chosen by it among the rest
};

/// The facts of device `ordinal`, queried on first use and cached per ordinal (thread-safe).
/// no_device when there is no driver or no such device.
Result<DeviceFacts> device_facts(int ordinal);

/// The most specific target of a compute capability: "90a" for 90 and later ('a': arch-specific
/// instructions), "80" for 80.
Target target_of_cc(int cc);

}  // namespace gemmops::cuda
