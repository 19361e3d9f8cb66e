// src/cuda/context.hpp: making a device's primary context current, as PyTorch and the runtime API do
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda.h>

#include "gemmops/status.hpp"

namespace gemmops::cuda {

/// Makes a context of device `ordinal` current on this thread and returns it. A current context
/// that already belongs to `ordinal` is kept (PyTorch has usually made the primary one current);
/// otherwise the primary context is retained (once per process, cached) and made current.
/// no_device when there is no driver or no such device; driver_error for other driver failures.
Result<CUcontext> current_context(int ordinal);

/// current_context(ordinal) without the context.
Status make_current(int ordinal);

/// The calling thread's current context, or null when it has none (or there is no driver): what a
/// worker thread adopts so that the modules it loads live where the caller's launches look for them.
CUcontext thread_context();

/// Makes `ctx` current on this thread; nothing for null.
Status adopt_context(CUcontext ctx);

/// no_device unless 0 <= ordinal < device count: "device 3: not present; 1 CUDA device(s) found".
Status check_ordinal(int ordinal);

}  // namespace gemmops::cuda
