// src/cpu/microkernel.hpp: the register-blocked inner kernel, c (kMr x kNr) += a_panel * b_panel
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

namespace gemmops::cpu {

inline constexpr int kMr = 6;   // rows of the register block
inline constexpr int kNr = 16;  // columns: two AVX vectors, or four SSE/NEON vectors

/// `a` holds kc steps of kMr floats (a[k*kMr + i]), `b` kc steps of kNr floats (b[k*kNr + j]);
/// c is row-major with leading dimension `ldc` and is accumulated into (fp32, k in order).
using MicroKernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc);

/// The fastest kernel this CPU runs (AVX2+FMA when present), chosen once at first use.
MicroKernel best_microkernel();
/// The portable kernel, for tests that compare the two paths.
MicroKernel portable_microkernel();

}  // namespace gemmops::cpu
