// kernels/sm90/barriers.cuh: the named barriers (bar.sync ids) of the grouped GEMM kernel, in one
// place. A CTA has 16; id 0 is __syncthreads'. In id order: the CTA's, then one per consumer
// warpgroup (its 128 threads alone), then the K-edge clearing's (one for all consumers of a
// cooperative kernel, one per warpgroup of a ping-pong one). The ids are what the kernel used when
// they were computed by hand at each use, so its code is unchanged.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sm90/config.cuh"

namespace gemmops::kernels::sm90 {

/// What a named barrier synchronises; named_barrier_id() gives its id. (Functions, not variable
/// templates, below: a variable template is emitted into the PTX as a global.)
enum class NamedBarrier : int {
  cta = 0,        // the whole CTA: __syncthreads' (setup, the scheduler table)
  warpgroup = 1,  // one consumer warpgroup alone, ids 1 .. consumers: the TMA store's staging, the split-K fix-up
  k_clear,        // the threads that share a stage clear its K edges (K-grouped): after the warpgroups' ids
};

/// The barrier of consumer warpgroup `consumer` alone (its 128 threads): ids 1 .. consumers.
GEMMOPS_HD constexpr int warpgroup_barrier(int consumer) {
  return static_cast<int>(NamedBarrier::warpgroup) + consumer;
}

/// The barrier of the threads that clear a stage's K edges before the MMA reads it: all consumer
/// warpgroups together in a cooperative kernel (id 1 + consumers), each warpgroup its own stages
/// in a ping-pong one (1 + consumers + consumer).
template <KernelConfig C>
GEMMOPS_HD constexpr int k_clear_barrier(int consumer) {
  return warpgroup_barrier(C.consumers) + (C.pingpong() ? consumer : 0);
}
/// The threads that meet at a K-clearing barrier.
template <KernelConfig C>
GEMMOPS_HD constexpr int k_clear_threads() {
  return C.pingpong() ? 128 : 128 * C.consumers;
}

/// The id of barrier `b` for consumer warpgroup `consumer` (ignored by the CTA's).
template <KernelConfig C>
GEMMOPS_HD constexpr int named_barrier_id(NamedBarrier b, int consumer) {
  return b == NamedBarrier::cta ? 0 : b == NamedBarrier::warpgroup ? warpgroup_barrier(consumer)
                                                                   : k_clear_barrier<C>(consumer);
}

/// Named barriers kernel C uses (ids 0 .. this - 1): within the 16 of a CTA.
template <KernelConfig C>
GEMMOPS_HD constexpr int named_barriers() {
  return k_clear_barrier<C>(C.pingpong() ? C.consumers - 1 : 0) + 1;
}

}  // namespace gemmops::kernels::sm90
