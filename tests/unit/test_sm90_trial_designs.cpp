// tests/unit/test_sm90_trial_designs.cpp: designs never timed on a GPU rank after every other operator
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "sm90/designs.hpp"
#include "support/problems.hpp"

namespace gemmops::sm90 {
namespace {

bool is_trial(const OperatorPtr& op) {
  for (const Sm90Design& d : sm90_designs())
    if (d.trial && op->metadata().provider == "sm90" && op->metadata().design == d.design) return true;
  return false;
}

TEST(Sm90TrialDesigns, rank_after_every_other_operator) {
  // The seed problem, a decode-sized one and a large one: the trial designs' guessed calibrations
  // must not decide what any of them runs.
  for (const GroupedGemmArguments& args : {testing::moe_forward(12, 8192, 2048, 1024),
                                           testing::moe_forward(128, 256, 4096, 7168),
                                           testing::moe_forward(8, 65536, 4096, 4096)}) {
    const std::vector<OperatorPtr> ops = get_operators(args, Target::sm(90, true));
    ASSERT_FALSE(ops.empty());
    bool seen_trial = false;
    int trials = 0;
    for (const OperatorPtr& op : ops) {
      EXPECT_EQ(op->metadata().trial, is_trial(op)) << op->name();
      if (is_trial(op)) {
        seen_trial = true;
        ++trials;
      } else {
        EXPECT_FALSE(seen_trial) << op->name() << " (timed, or the portable operator) ranks after a trial design";
      }
    }
    EXPECT_GT(trials, 0) << "the trial designs support the M-grouped bf16 form and are listed";
  }
}

TEST(Sm90TrialDesigns, trial_designs_are_listed_in_the_table) {
  int trials = 0;
  for (const Sm90Design& d : sm90_designs()) trials += d.trial;
  EXPECT_GE(trials, 1);
  EXPECT_LT(trials, static_cast<int>(sm90_designs().size()));
}

}  // namespace
}  // namespace gemmops::sm90
