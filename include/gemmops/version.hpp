// include/gemmops/version.hpp: library version
// SPDX-License-Identifier: Apache-2.0
#pragma once

#define GEMMOPS_VERSION_MAJOR 0
#define GEMMOPS_VERSION_MINOR 1
#define GEMMOPS_VERSION_PATCH 0

namespace gemmops {
inline constexpr const char* kVersion = "0.1.0";
}
