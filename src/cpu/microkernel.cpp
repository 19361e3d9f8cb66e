// src/cpu/microkernel.cpp: 6x16 fp32 kernels, portable and AVX2+FMA, dispatched at run time
// SPDX-License-Identifier: Apache-2.0
#include "cpu/microkernel.hpp"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMMOPS_CPU_X86_DISPATCH 1
#include <immintrin.h>
#endif

namespace gemmops::cpu {
namespace {

// Four-float vectors of the GCC/clang vector extension: SSE2 on x86-64, NEON on arm64, so the
// library needs no -march flag. The 16 columns are done as two halves of 6x8 so that the 12
// accumulators fit the 16 registers of SSE2.
typedef float Float4 __attribute__((vector_size(16)));

inline Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(float* p, Float4 v) { std::memcpy(p, &v, sizeof v); }

void kernel_portable(int64_t kc, const float* a, const float* b, float* c, int64_t ldc) {
  for (int h = 0; h < kNr; h += 8) {
    Float4 acc[kMr][2];
    for (int i = 0; i < kMr; ++i) acc[i][0] = load4(c + i * ldc + h), acc[i][1] = load4(c + i * ldc + h + 4);
    for (int64_t k = 0; k < kc; ++k) {
      const Float4 b0 = load4(b + k * kNr + h), b1 = load4(b + k * kNr + h + 4);
      for (int i = 0; i < kMr; ++i) {
        const float x = a[k * kMr + i];
        acc[i][0] += x * b0;
        acc[i][1] += x * b1;
      }
    }
    for (int i = 0; i < kMr; ++i) store4(c + i * ldc + h, acc[i][0]), store4(c + i * ldc + h + 4, acc[i][1]);
  }
}

#ifdef GEMMOPS_CPU_X86_DISPATCH
// 12 accumulators + 2 B vectors + 1 broadcast = 15 of the 16 ymm registers.
__attribute__((target("avx2,fma"))) void kernel_avx2(int64_t kc, const float* a, const float* b,
                                                     float* c, int64_t ldc) {
  __m256 c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
  __m256 c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
  __m256 c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
  __m256 c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
  __m256 c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
  __m256 c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
  for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40), c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50), c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
  _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
  _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
  _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
  _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
  _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}
#endif

}  // namespace

MicroKernel portable_microkernel() { return &kernel_portable; }

MicroKernel best_microkernel() {
#ifdef GEMMOPS_CPU_X86_DISPATCH
  static const MicroKernel best = [] {
    __builtin_cpu_init();
    return (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? &kernel_avx2
                                                                             : &kernel_portable;
  }();
  return best;
#else
  return &kernel_portable;
#endif
}

}  // namespace gemmops::cpu
