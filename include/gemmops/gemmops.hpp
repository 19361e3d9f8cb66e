// include/gemmops/gemmops.hpp: umbrella header of the public API
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/arguments.hpp"
#include "gemmops/autotune.hpp"
#include "gemmops/device.hpp"
#include "gemmops/dtype.hpp"
#include "gemmops/epilogue.hpp"
#include "gemmops/metadata.hpp"
#include "gemmops/moe.hpp"
#include "gemmops/operator.hpp"
#include "gemmops/plan.hpp"
#include "gemmops/registry.hpp"
#include "gemmops/scaling.hpp"
#include "gemmops/status.hpp"
#include "gemmops/target.hpp"
#include "gemmops/tensor.hpp"
#include "gemmops/version.hpp"
