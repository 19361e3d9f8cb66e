// tests/gpu/test_gather_reduce_device.cpp: gather_reduce() on the device gives the host's bits
// (every dtype pair, both vector widths, k from 1 to 8, sentinels, the row limit read on the device,
// padding rows of out untouched), and two runs give the same bits
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gemmops/device.hpp"
#include "gemmops/moe.hpp"
#include "support/device_problem.hpp"
#include "support/gather_reduce_problem.hpp"

namespace gemmops::testing {
namespace {

/// out as the device leaves it, poisoned first.
HostTensor run_on_device(GatherReduceProblem& p) {
  HostTensor got = p.out;
  auto rows = upload(p.rows), pair = upload(p.pair_rows), scores = upload(p.scores), limit = upload(p.row_limit),
       out = upload(p.out);
  EXPECT_TRUE(rows && pair && scores && limit && out);
  if (!(rows && pair && scores && limit && out)) return got;
  GatherReduceArguments a{on(p.rows, *rows), on(p.pair_rows, *pair), std::nullopt, std::nullopt, on(p.out, *out)};
  if (p.spec.scores) a.scores = on(p.scores, *scores);
  if (p.spec.row_limit >= 0) a.row_limit = on(p.row_limit, *limit);
  const Status s = gather_reduce(a);
  EXPECT_TRUE(s) << s.to_string();
  EXPECT_TRUE(synchronize());
  EXPECT_TRUE(out->copy_to_host(got.storage.data(), got.storage.size()));
  return got;
}

void expect_bits_equal(const HostTensor& got, const HostTensor& want, const std::string& what) {
  ASSERT_EQ(got.storage.size(), want.storage.size()) << what;
  EXPECT_EQ(std::memcmp(got.storage.data(), want.storage.data(), got.storage.size()), 0) << what;
}

TEST(GatherReduceDevice, equals_the_host_bit_for_bit) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  uint32_t seed = 1;
  for (DType in : {DType::bf16, DType::fp16, DType::fp32}) {
    for (DType out : {DType::bf16, DType::fp32}) {
      for (int64_t k : {1, 2, 8}) {
        for (int64_t h : {8, 2048, 100}) {  // 100: 16-bit rows off 16 bytes, one element a step
          for (int64_t pad : {0, 4}) {
            GatherReduceSpec s{in, out, 300, 257, k, h};
            s.row_pad = pad;
            s.scores = (seed % 2) == 0;
            s.row_limit = (seed % 3) == 0 ? 200 : -1;
            s.seed = seed++;
            auto p = GatherReduceProblem::make(s);
            const std::string what = std::string(name(in)) + " -> " + std::string(name(out)) + " k=" +
                                     std::to_string(k) + " H=" + std::to_string(h) + " pad=" + std::to_string(pad);
            expect_bits_equal(run_on_device(p), p.expected(), what);
          }
        }
      }
    }
  }
}

TEST(GatherReduceDevice, many_tokens_take_the_grid_stride_and_repeat_bitwise) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  GatherReduceSpec s{DType::bf16, DType::bf16, 4096, 70000, 8, 64};
  s.sentinel_share = 0.02;
  auto p = GatherReduceProblem::make(s);
  const HostTensor first = run_on_device(p);
  expect_bits_equal(first, p.expected(), "70000 tokens");
  expect_bits_equal(run_on_device(p), first, "second run");
}

}  // namespace
}  // namespace gemmops::testing
