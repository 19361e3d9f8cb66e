// tests/unit/test_sm90_empty_discovery.cpp: sm90 operators are found for problems without work
// (TotalM, N, G, L or K of 0), with the strides torch gives empty tensors; the gpu tier runs them
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gemmops/gemmops.hpp"

namespace gemmops {
namespace {

TensorDesc on_gpu(std::vector<int64_t> shape, DType t = DType::bf16) {
  return TensorDesc::contiguous(t, std::move(shape), Device::cuda(0));
}

TEST(Sm90EmptyDiscovery, problems_without_work_find_sm90_operators) {
  const DType i32 = DType::i32, acc = DType::fp32;
  const std::vector<std::pair<const char*, Arguments>> cases = {
      {"grouped_m TotalM=0", GroupedGemmArguments{on_gpu({0, 64}), on_gpu({4, 64, 128}), on_gpu({0, 128}), acc,
                                                  on_gpu({4}, i32)}},
      {"grouped_m N=0", GroupedGemmArguments{on_gpu({96, 64}), on_gpu({4, 64, 0}), on_gpu({96, 0}), acc,
                                             on_gpu({4}, i32)}},
      {"grouped_k G=0", GroupedGemmArguments{on_gpu({64, 96}), on_gpu({96, 128}), on_gpu({0, 64, 128}), acc,
                                             on_gpu({0}, i32)}},
      {"grouped_k TotalK=0", GroupedGemmArguments{on_gpu({64, 0}), on_gpu({0, 128}), on_gpu({3, 64, 128}), acc,
                                                  on_gpu({3}, i32)}},
      {"gemm M=0", GemmArguments{on_gpu({0, 64}), on_gpu({64, 128}), on_gpu({0, 128})}},
      {"gemm K=0", GemmArguments{on_gpu({96, 0}), on_gpu({0, 128}), on_gpu({96, 128})}},
      {"batched L=0", GemmArguments{on_gpu({0, 8, 64}), on_gpu({0, 64, 128}), on_gpu({0, 8, 128})}},
  };
  for (const auto& [what, args] : cases) {
    SCOPED_TRACE(what);
    std::string reasons;
    for (const Rejection& r : get_rejections(args, Target::sm(90, true)))
      if (r.op && r.op->metadata().provider == "sm90") reasons = r.reason.to_string();
    EXPECT_FALSE(get_operators(args, Target::sm(90, true)).empty()) << reasons;
  }
}

}  // namespace
}  // namespace gemmops
