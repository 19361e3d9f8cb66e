// tests/unit/test_sm90_trial_designs.cpp: designs not yet verified on a GPU are offered only on request
// (GEMMOPS_TRIAL_DESIGNS=1, AutotuneOptions::include_trial), and then rank after every other operator
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "sm90/designs.hpp"
#include "support/problems.hpp"
#include "support/scoped_env.hpp"

namespace gemmops::sm90 {
namespace {

bool is_trial(const OperatorPtr& op) {
  for (const Sm90Design& d : sm90_designs())
    if (d.trial && op->metadata().provider == "sm90" && op->metadata().design == d.design) return true;
  return false;
}

std::vector<GroupedGemmArguments> problems() {
  return {testing::moe_forward(12, 8192, 2048, 1024), testing::moe_forward(128, 256, 4096, 7168),
          testing::moe_forward(8, 65536, 4096, 4096)};
}

TEST(Sm90TrialDesigns, are_not_offered_by_default_and_the_rejections_say_how_to_ask) {
  for (const GroupedGemmArguments& args : problems()) {
    for (const OperatorPtr& op : get_operators(args, Target::sm(90, true)))
      EXPECT_FALSE(is_trial(op)) << op->name() << " is a trial design, offered without the opt-in";
    int trials = 0;
    for (const Rejection& r : get_rejections(args, Target::sm(90, true))) {
      if (!is_trial(r.op) || !r.op->supports(args, Target::sm(90, true))) continue;
      ++trials;
      EXPECT_NE(r.reason.message().find("GEMMOPS_TRIAL_DESIGNS=1"), std::string::npos) << r.reason.message();
    }
    EXPECT_GT(trials, 0) << "the trial designs support the M-grouped bf16 form and are named in the rejections";
  }
}

TEST(Sm90TrialDesigns, on_request_rank_after_every_other_operator) {
  // The seed problem, a decode-sized one and a large one: the trial designs' guessed calibrations
  // must not decide what any of them runs.
  testing::ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  for (const GroupedGemmArguments& args : problems()) {
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
