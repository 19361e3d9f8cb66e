// src/sm90/designs.hpp: the registered Hopper designs (tile, stages, consumer warpgroups, schedule)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <span>

#include "gemmops/metadata.hpp"

namespace gemmops::sm90 {

/// One kernel design: what metadata says (Design) plus what only the kernel needs.
struct Sm90Design {
  Design design;
  int consumers;  ///< consumer warpgroups; cooperative: design.tile_m == 64 * consumers
};

/// Every registered design. Adding a design is one line in designs.cpp.
std::span<const Sm90Design> sm90_designs();

}  // namespace gemmops::sm90
