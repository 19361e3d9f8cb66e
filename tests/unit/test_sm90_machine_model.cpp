// tests/unit/test_sm90_machine_model.cpp: the machine models, which one a device (or a name) chooses,
// the estimate on each, and that memoised answers never mix two models
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "gemmops/gemmops.hpp"
#include "sm90/calibrations.hpp"
#include "sm90/designs.hpp"
#include "sm90/heuristics.hpp"
#include "sm90/machine_models.hpp"
#include "sm90/machine_of_device.hpp"
#include "support/fake_driver.hpp"
#include "support/scoped_env.hpp"

namespace gemmops::sm90 {
namespace {

using testing::ScopedEnv;

cuda::DeviceFacts facts(const char* name, int sms, int clock_khz, int memory_clock_khz, int bus_bits) {
  cuda::DeviceFacts f;
  f.cc = 90;
  f.name = name;
  f.sm_count = sms;
  f.clock_khz = clock_khz;
  f.memory_clock_khz = memory_clock_khz;
  f.memory_bus_bits = bus_bits;
  f.l2_bytes = 50 << 20;
  return f;
}

// The parts as their drivers describe them (clocks in kHz; memory clock x 2 x bus bytes = datasheet bandwidth).
const cuda::DeviceFacts kH100SxmFacts = facts("NVIDIA H100 80GB HBM3", 132, 1980000, 2619000, 5120);
const cuda::DeviceFacts kH100PcieFacts = facts("NVIDIA H100 PCIe", 114, 1755000, 1593000, 5120);
const cuda::DeviceFacts kH200Facts = facts("NVIDIA H200", 132, 1980000, 3201000, 6144);
const cuda::DeviceFacts kH800Facts = facts("NVIDIA H800", 132, 1980000, 2619000, 5120);
const cuda::DeviceFacts kH20Facts = facts("NVIDIA H20", 78, 1980000, 2619000, 6144);
const cuda::DeviceFacts kUnknownFacts = facts("NVIDIA Hopper Prototype", 100, 1500000, 2000000, 4096);

// No device answers for this ordinal, on any machine: the explicit choice or the default decides.
const Device kAbsent = Device::cuda(63);

TEST(MachineModel, each_part_gets_its_model) {
  EXPECT_EQ(machine_model_for(kH100SxmFacts).name, "h100_sxm");
  EXPECT_EQ(machine_model_for(kH100PcieFacts).name, "h100_pcie");
  EXPECT_EQ(machine_model_for(kH200Facts).name, "h200");
  EXPECT_EQ(machine_model_for(kH800Facts).name, "h800");
  EXPECT_EQ(machine_model_for(kH20Facts).name, "h20");
  EXPECT_EQ(machine_model_for(kUnknownFacts).name, "hopper_default");
  // An H200 is told by its bandwidth too, whatever its name says; a MIG slice (fewer SMs) is no H200.
  EXPECT_EQ(machine_model_for(facts("NVIDIA GH200 144G HBM3e", 132, 1980000, 3201000, 6144)).name, "h200");
  EXPECT_EQ(machine_model_for(facts("NVIDIA H200 MIG 3g.71gb", 60, 1980000, 3201000, 6144)).name, "hopper_default");
}

TEST(MachineModel, h200_is_unchanged_and_h100_differs_in_its_memory_and_gathered_rows) {
  const MachineModel h200 = *machine_model_named("h200");
  EXPECT_EQ(h200.sms, 132);
  EXPECT_EQ(h200.peak_flops, 784e12);
  EXPECT_EQ(h200.dram_bandwidth, 4.0e12);
  const MachineModel h100 = *machine_model_named("H100_SXM");  // names are case-insensitive
  EXPECT_EQ(h100.sms, h200.sms);
  EXPECT_EQ(h100.peak_flops, h200.peak_flops);
  EXPECT_NEAR(h100.dram_bandwidth, 4.0e12 * 3.35 / 4.8, 1e9);
  EXPECT_EQ(h100.l2_bandwidth, h200.l2_bandwidth);  // fitted on H200 only, until an H100 fit
  EXPECT_NEAR(machine_model_named("h100_pcie")->peak_flops / h200.peak_flops, 1 / 1.3, 0.03);
  EXPECT_NEAR(machine_model_named("h20")->peak_flops, 117e12, 2e12);
  EXPECT_FALSE(machine_model_named("h300"));
  EXPECT_EQ(machine_model_names(), "h200, h100_sxm, h100_pcie, h800, h20");
  EXPECT_NE(fingerprint(h200), fingerprint(h100));
}

// A fitted line whose design name matched no design would be ignored without a word: every H100 line
// names a registered design, each design takes its line there and keeps the H200's elsewhere.
TEST(MachineModel, the_h100_calibrations_name_registered_designs_and_are_the_ones_it_uses) {
  const MachineModel h100 = *machine_model_named("h100_sxm");
  const MachineModel h200 = *machine_model_named("h200");
  const auto fitted = fitted_calibrations("h100_sxm");
  ASSERT_FALSE(fitted.empty());
  EXPECT_TRUE(fitted_calibrations("h200").empty());
  for (const FittedCalibration& f : fitted) {
    SCOPED_TRACE(std::string(f.design));
    const auto designs = sm90_designs();
    const auto it = std::find_if(designs.begin(), designs.end(),
                                 [&](const Sm90Design& d) { return d.design.to_string() == f.design; });
    ASSERT_NE(it, designs.end());
    const Sm90Design on_h100 = calibrated_for(*it, h100);
    EXPECT_EQ(on_h100.calibration.mainloop_efficiency, f.calibration.mainloop_efficiency);
    EXPECT_EQ(on_h100.calibration.k_grouped_time_scale, f.calibration.k_grouped_time_scale);
    EXPECT_EQ(calibrated_for(*it, h200).calibration.mainloop_efficiency, it->calibration.mainloop_efficiency);
    EXPECT_EQ(on_h100.trial, it->trial);
  }
}

TEST(MachineModel, hopper_default_is_built_from_the_facts) {
  const MachineModel m = machine_model_for(kUnknownFacts);
  EXPECT_EQ(m.sms, 100);
  EXPECT_NEAR(m.spec_dram_bandwidth, 2.0e9 * 2 * 512, 1e6);
  EXPECT_LT(m.dram_bandwidth, m.spec_dram_bandwidth);
  // Built from an H200's facts it lands on the H200's rates.
  const MachineModel like_h200 = hopper_default(kH200Facts);
  EXPECT_NEAR(like_h200.peak_flops / kH200.peak_flops, 1.0, 0.01);
  EXPECT_NEAR(like_h200.dram_bandwidth / kH200.dram_bandwidth, 1.0, 0.03);
}

TEST(MachineModel, without_a_device_the_default_is_h200_and_the_variable_chooses) {
  ::unsetenv("GEMMOPS_MACHINE_MODEL");
  EXPECT_EQ(machine_model_of(kAbsent, nullptr)->name, "h200");
  {
    ScopedEnv env({{"GEMMOPS_MACHINE_MODEL", "h100_sxm"}});
    EXPECT_EQ(machine_model_of(kAbsent, nullptr)->name, "h100_sxm");
    const Target h20 = *Target::parse("90a:h20");  // the target's choice comes first
    EXPECT_EQ(machine_model_of(kAbsent, &h20)->name, "h20");
  }
  {
    ScopedEnv env({{"GEMMOPS_MACHINE_MODEL", "h300"}});
    const Result<MachineModel> m = machine_model_of(kAbsent, nullptr);
    ASSERT_FALSE(m);
    EXPECT_NE(m.status().message().find("GEMMOPS_MACHINE_MODEL"), std::string::npos) << m.status().to_string();
    EXPECT_NE(m.status().message().find("h200, h100_sxm, h100_pcie, h800, h20"), std::string::npos);
    EXPECT_NE(m.status().message().find("h300"), std::string::npos);
  }
}

TEST(MachineModel, a_present_device_chooses_its_own) {
  testing::ScopedFakeDriver fake;
  fake.state().devices[0].name = "NVIDIA H100 80GB HBM3";
  fake.state().devices[0].memory_clock_khz = 2619000;
  fake.state().devices[0].memory_bus_bits = 5120;
  ScopedEnv env({{"GEMMOPS_MACHINE_MODEL", "h200"}});
  EXPECT_EQ(machine_model_of(Device::cuda(0), nullptr)->name, "h100_sxm");
}

// The device's model is remembered per thread (run() plans on every call); a new driver is asked again.
TEST(MachineModel, a_remembered_model_is_never_served_for_another_driver) {
  {
    testing::ScopedFakeDriver fake;
    fake.state().devices[0].name = "NVIDIA H100 80GB HBM3";
    fake.state().devices[0].memory_clock_khz = 2619000;
    fake.state().devices[0].memory_bus_bits = 5120;
    EXPECT_EQ(machine_model_of(Device::cuda(0), nullptr)->name, "h100_sxm");
    EXPECT_EQ(machine_model_of(Device::cuda(0), nullptr)->name, "h100_sxm");
  }
  testing::ScopedFakeDriver fake;
  fake.state().devices[0].name = "NVIDIA H20";
  fake.state().devices[0].sm_count = 78;
  EXPECT_EQ(machine_model_of(Device::cuda(0), nullptr)->name, "h20");
}

TEST(TargetMachine, parses_and_prints_the_machine) {
  const Target t = *Target::parse("sm_90a:H100_SXM");
  EXPECT_EQ(t.cc, 90);
  EXPECT_TRUE(t.arch_specific);
  EXPECT_EQ(t.machine, "h100_sxm");
  EXPECT_EQ(t.to_string(), "90a:h100_sxm");
  EXPECT_TRUE(t.can_run(Target::sm(90, true)));
  EXPECT_FALSE(Target::parse("90a:"));
  EXPECT_FALSE(Target::parse("cpu:h200"));
  EXPECT_FALSE(Target::parse("90a:h1-00"));
}

// The arguments must outlive the KernelProblem, which points into them.
struct Problem {
  explicit Problem(Arguments a) : args(std::move(a)) { kp = *map_problem(args); }
  Arguments args;
  KernelProblem kp;
};

Arguments forward(int64_t groups, int64_t total_m, int64_t n, int64_t k, Device device = kAbsent) {
  return GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {total_m, k}, device),
                              TensorDesc(DType::bf16, {groups, k, n}, {n * k, 1, k}, device),
                              TensorDesc::contiguous(DType::bf16, {total_m, n}, device), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {groups}, device)};
}

double best_estimate(const KernelProblem& p, const MachineModel& m) {
  double best = 1e300;
  for (const Sm90Design& d : sm90_designs())
    if (!d.trial) best = std::min(best, estimate_time_us(p, d, m));
  return best;
}

TEST(MachineModelEstimate, bandwidth_bound_rows_slow_down_with_the_memory_and_compute_bound_ones_do_not) {
  const MachineModel h200 = *machine_model_named("h200"), h100 = *machine_model_named("h100_sxm");
  // Decode: 512 rows over 64 experts read every expert's 7168 x 4096 weights once.
  const Problem decode(forward(64, 512, 4096, 7168));
  const double decode_ratio = best_estimate(decode.kp, h100) / best_estimate(decode.kp, h200);
  EXPECT_NEAR(decode_ratio, h200.dram_bandwidth / h100.dram_bandwidth, 0.1);
  // Prefill-sized rows on few experts: bound by the tensor cores, which the two parts share.
  const Problem prefill(forward(8, 65536, 4096, 4096));
  const double prefill_ratio = best_estimate(prefill.kp, h100) / best_estimate(prefill.kp, h200);
  EXPECT_GE(prefill_ratio, 1.0);
  EXPECT_LT(prefill_ratio, 1.05);
}

TEST(MachineModelEstimate, a_routed_group_ends_in_a_partial_unit_as_often_as_routing_s_noise_says) {
  double nonempty = 0;
  // 512 rows a group on average, 128-row units: an exact 4 only when the count is at most 512 (half).
  const double units = expected_units_of_routed_group(512, 128, nonempty);
  EXPECT_NEAR(units, 4.5, 0.03);
  EXPECT_EQ(nonempty, 1.0);
  // Units of one row: the mean itself.
  EXPECT_NEAR(expected_units_of_routed_group(1000, 1, nonempty), 1000, 0.5);
  // Two rows on average (Poisson): one unit whenever there is a row at all.
  EXPECT_NEAR(expected_units_of_routed_group(2, 64, nonempty), 1 - std::exp(-2.0), 1e-9);
  EXPECT_NEAR(nonempty, 1 - std::exp(-2.0), 1e-12);
  EXPECT_EQ(expected_units_of_routed_group(0, 64, nonempty), 0.0);
  EXPECT_EQ(nonempty, 0.0);
}

TEST(MachineModelEstimate, routed_sizes_cost_tall_tiles_more_than_short_ones_and_are_the_model_s_choice) {
  // Qwen3-30B-A3B's down projection: 128 experts of 512 rows, whole 128-row tiles when exactly even.
  const Problem down(forward(128, 65536, 2048, 768));
  auto design = [](int tile_m, int tile_n, Schedule schedule) {
    for (const Sm90Design& d : sm90_designs())
      if (d.design.tile_m == tile_m && d.design.tile_n == tile_n && d.design.cluster_m == 1 &&
          d.design.schedule == schedule && !d.trial)
        return d;
    ADD_FAILURE() << "no " << tile_m << "x" << tile_n << " design";
    return sm90_designs().front();
  };
  const MachineModel h100 = *machine_model_named("h100_sxm");
  const Sm90Design tall = design(128, 256, Schedule::cooperative), short_rows = design(64, 256, Schedule::pingpong);
  auto growth = [&](const Sm90Design& d) {
    return estimate_time_us(down.kp, d, h100, 1, GroupSizes::routed) / estimate_time_us(down.kp, d, h100, 1, GroupSizes::even);
  };
  EXPECT_GT(growth(tall), 1.05);
  EXPECT_GT(growth(tall), growth(short_rows));
  // The ranking's balanced half is the model's: even on every part today, routed when chosen.
  EXPECT_EQ(h100.balanced_sizes, GroupSizes::even);
  MachineModel routed = h100;
  routed.balanced_sizes = GroupSizes::routed;
  EXPECT_NE(fingerprint(routed), fingerprint(h100));
  EXPECT_NEAR(estimate_time_us(down.kp, tall, routed, 1),
              std::sqrt(estimate_time_us(down.kp, tall, h100, 1, GroupSizes::routed) *
                        estimate_time_us(down.kp, tall, h100, 1, GroupSizes::skewed)),
              1e-9);
}

/// Qwen3-30B-A3B's up projection as moe_experts runs it: x (T, H) gathered by the pairs' token index,
/// SwiGLU with the pre-activation kept.
Arguments gathered_up(Device device = kAbsent) {
  const int64_t t = 8192, h = 2048, i = 768, e = 128, s = t * 8;
  GroupedGemmArguments g{TensorDesc::contiguous(DType::bf16, {t, h}, device),
                         TensorDesc(DType::bf16, {e, h, 2 * i}, {h * 2 * i, 1, h}, device),
                         TensorDesc::contiguous(DType::bf16, {s, i}, device), DType::fp32,
                         TensorDesc::contiguous(DType::i32, {e}, device)};
  g.zero_tail = true;
  g.a_row_index = TensorDesc::contiguous(DType::i32, {s}, device);
  g.epilogue.activation = Activation::swiglu;
  g.epilogue.pre_activation = TensorDesc::contiguous(DType::bf16, {s, 2 * i}, device);
  return g;
}

TEST(MachineModelEstimate, gathered_rows_cost_the_h100_more_l2_time_and_the_second_operands_count) {
  const MachineModel h200 = *machine_model_named("h200"), h100 = *machine_model_named("h100_sxm");
  EXPECT_EQ(h200.gathered_row_l2_cost, 1.0);  // the H200's picks tied
  EXPECT_EQ(h100.gathered_row_l2_cost, 3.0);
  const Problem up(gathered_up());
  EXPECT_EQ(up.kp.epilogue_bytes_per_element, 3.0);  // a (half the columns) and h, bf16
  // The 1-CTA 64x256 ping-pong reads B once per 64 rows beside the gathered rows: on the H100 its
  // estimate rises above the 2-CTA twin's (B multicast), which the H100 measured 9-20% faster.
  auto design = [](int cluster_m) {
    for (const Sm90Design& d : sm90_designs())
      if (d.design.tile_m == 64 && d.design.tile_n == 256 && d.design.cluster_m == cluster_m &&
          d.design.schedule == Schedule::pingpong)
        return d;
    ADD_FAILURE() << "no 64x256 ping-pong design with cluster " << cluster_m;
    return sm90_designs().front();
  };
  EXPECT_GT(estimate_time_us(up.kp, design(1), h100), estimate_time_us(up.kp, design(2), h100));
  // Without the gather the H100 ranks them as the H200 does.
  GroupedGemmArguments dense = std::get<GroupedGemmArguments>(gathered_up());
  dense.a_row_index.reset();
  dense.A = TensorDesc::contiguous(DType::bf16, {8192 * 8, 2048}, kAbsent);
  const Problem plain(dense);
  EXPECT_LT(estimate_time_us(plain.kp, design(1), h100), estimate_time_us(plain.kp, design(2), h100));
  // The activation's backward moves h in, dh and s act(h) out: 5 elements a product element, gated.
  GroupedGemmArguments dgated = std::get<GroupedGemmArguments>(gathered_up());
  const int64_t s = 8192 * 8, i = 768;
  dgated.B = TensorDesc(DType::bf16, {128, 2048, i}, {i * 2048, i, 1}, kAbsent);
  dgated.out = TensorDesc::contiguous(DType::bf16, {s, 2 * i}, kAbsent);
  dgated.epilogue.pre_activation.reset();
  dgated.epilogue.row_scale = TensorDesc::contiguous(DType::fp32, {s}, kAbsent);
  dgated.epilogue.activation_grad =
      ActivationGrad{TensorDesc::contiguous(DType::bf16, {s, 2 * i}, kAbsent), TensorDesc::contiguous(DType::bf16, {s, i}, kAbsent),
                     TensorDesc::contiguous(DType::fp32, {s, score_grad_chunks(i)}, kAbsent)};
  const Problem grad(dgated);
  EXPECT_EQ(grad.kp.epilogue_bytes_per_element, 10.0);
}

TEST(MachineModelEstimate, a_gathered_a_is_routed_so_its_balanced_half_counts_routing_s_partial_units) {
  const MachineModel h100 = *machine_model_named("h100_sxm");
  const Problem up(gathered_up());
  EXPECT_EQ(balanced_sizes_of(up.kp, h100), GroupSizes::routed);
  const Problem down(forward(128, 65536, 2048, 768));
  EXPECT_EQ(balanced_sizes_of(down.kp, h100), GroupSizes::even) << "no row index: the model's choice";
  auto tma_ring = [](int cluster_m) {
    for (const Sm90Design& d : sm90_designs())
      if (d.design.tile_m == 128 && d.design.tile_n == 256 && d.design.cluster_m == cluster_m &&
          d.design.epilogue == Epilogue::tma_store && d.design.epilogue_boxes == 2 && d.design.cluster_n == 1)
        return d;
    ADD_FAILURE() << "no 128x256 TMA ring with cluster " << cluster_m;
    return sm90_designs().front();
  };
  const Sm90Design one = tma_ring(1), two = tma_ring(2);
  EXPECT_NEAR(estimate_time_us(up.kp, two, h100, 1),
              std::sqrt(estimate_time_us(up.kp, two, h100, 1, GroupSizes::routed) *
                        estimate_time_us(up.kp, two, h100, 1, GroupSizes::skewed)),
              1e-9);
  // The 2-CTA kernel pairs no last unit with a gathered A, so a routed group of ~512 rows ends in a
  // partial 256-row unit half the time: on an H100 the 1-CTA ring ran this up projection 760.7 us
  // against the 2-CTA one's 835.9 (bench/NOTES.md v29), where the even sizes ranked the 2-CTA first.
  EXPECT_LT(estimate_time_us(up.kp, one, h100), estimate_time_us(up.kp, two, h100));
  EXPECT_GT(estimate_time_us(up.kp, one, h100, 1, GroupSizes::even), estimate_time_us(up.kp, two, h100, 1, GroupSizes::even));
}

TEST(MachineModelEstimate, memoised_rankings_never_mix_two_models) {
  const Arguments decode = forward(64, 512, 4096, 7168);
  const Target hopper = *Target::parse("90a");
  auto first_sm90 = [&](const Target& t) -> std::pair<std::string, double> {
    for (const OperatorPtr& op : get_operators(decode, t))
      if (op->metadata().provider == "sm90") return {op->name(), op->estimated_time_us(decode, t)};
    return {"", 0};
  };
  auto ranked_by_estimate = [&](const Target& t) {
    double last = 0;
    for (const OperatorPtr& op : get_operators(decode, t)) {
      const double us = op->estimated_time_us(decode, t);
      if (us < last) return false;
      last = us;
    }
    return true;
  };
  ::unsetenv("GEMMOPS_MACHINE_MODEL");
  const auto h200 = first_sm90(hopper);
  ASSERT_FALSE(h200.first.empty());
  std::pair<std::string, double> h100;
  {
    ScopedEnv env({{"GEMMOPS_MACHINE_MODEL", "h100_sxm"}});
    h100 = first_sm90(hopper);
    EXPECT_TRUE(ranked_by_estimate(hopper));
  }
  EXPECT_GT(h100.second, 1.3 * h200.second) << "the variable's model, not the memoised h200 answer";
  EXPECT_EQ(first_sm90(hopper), h200) << "back to h200: its answers, not the h100 ones";
  EXPECT_EQ(first_sm90(*Target::parse("90a:h100_sxm")), h100) << "the target's choice as the variable's";
  EXPECT_TRUE(ranked_by_estimate(hopper));
  // A machine name that is no model refuses every sm90 operator, saying why.
  const auto rejected = get_rejections(decode, *Target::parse("90a:h300"));
  const auto named = std::find_if(rejected.begin(), rejected.end(), [](const Rejection& r) {
    return r.op && r.op->metadata().provider == "sm90" && r.reason.message().find("h100_sxm") != std::string::npos;
  });
  EXPECT_NE(named, rejected.end());
}

}  // namespace
}  // namespace gemmops::sm90
