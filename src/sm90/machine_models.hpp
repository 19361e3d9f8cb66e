// src/sm90/machine_models.hpp: the named machine models (one per Hopper part) and which one a device is
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cuda/device.hpp"
#include "sm90/machine_model.hpp"

namespace gemmops::sm90 {

/// Every named model: h200, h100_sxm, h100_pcie, h800, h20 (machine_models.cpp says how each was derived).
std::span<const MachineModel> named_machine_models();
/// "h200, h100_sxm, h100_pcie, h800, h20": for messages that list the valid names.
std::string machine_model_names();
/// The model called `name` (case-insensitive); nullopt for a name that is none of them.
std::optional<MachineModel> machine_model_named(std::string_view name);

/// The model of the part `facts` describe: by name, SM count and memory bandwidth (an H200 is
/// 132 SMs and over 4.5 TB/s, an H100 SXM or H800 132 SMs at ~3.35 TB/s, an H100 PCIe 114 SMs, an
/// H20 78 SMs); any other part gets hopper_default(facts). Pure: tests give it made-up facts.
MachineModel machine_model_for(const cuda::DeviceFacts& facts);
/// A model built from the facts themselves (SMs, clock, memory clock x bus width, L2), with the
/// H200's fitted costs and calibrations: the defensible guess for a part nobody has swept.
MachineModel hopper_default(const cuda::DeviceFacts& facts);

/// The datasheet DRAM rate of `facts`' part, bytes/s: memory clock x 2 (double data rate) x bus bytes.
double spec_dram_bandwidth(const cuda::DeviceFacts& facts);

/// A number that differs between models with any field different: memo keys hold it, so that two
/// devices (or two choices) in one process never share an estimate.
std::uint64_t fingerprint(const MachineModel& model);

}  // namespace gemmops::sm90
