// src/sm90/machine_models.cpp: the named machine models, how each was derived, and a device's model
// SPDX-License-Identifier: Apache-2.0
#include "sm90/machine_models.hpp"

#include <array>
#include <bit>
#include <cctype>

namespace gemmops::sm90 {
namespace {

// Dense 16-bit tensor-core work of one Hopper SM per clock: 4 tensor cores x 512 FMA x 2 FLOP.
constexpr double kDenseFlopPerClockPerSm = 4096;
// The H200 model's rates over its part's datasheet rates: its main loop sustains 784 TFLOP/s of
// the 132 SMs x 1.98 GHz x 4096 = 1070 TFLOP/s its clock allows (power-bound at 700 W), and a
// copy moves 4.0 of the 4.8 TB/s its HBM3e is rated for. Other parts' rates are their datasheet
// rates times these shares until a sweep of the part measures its own.
constexpr double kSustainedFlopShare = 784e12 / (132 * 1.98e9 * kDenseFlopPerClockPerSm);
constexpr double kCopyShare = 4.0e12 / 4.8e12;

constexpr double dense_flops(double sms, double clock_hz) {
  return sms * clock_hz * kDenseFlopPerClockPerSm * kSustainedFlopShare;
}

// The fitted fields (l2_bandwidth, launch_us, store_bandwidth, latencies, misaligned_row_l2_cost)
// were fitted on H200 sweeps only: every other model keeps the H200's until its part is swept.
constexpr MachineModel with_part(std::string_view name, std::string_view calibrations, double sms,
                                 double clock_hz, double spec_dram_bandwidth, double l2_bytes, double peak_flops) {
  MachineModel m = kH200;
  m.name = name;
  m.calibrations = calibrations;
  m.boost_clock_hz = clock_hz;
  m.spec_dram_bandwidth = spec_dram_bandwidth;
  m.l2_bytes = l2_bytes;
  m.sms = sms;
  m.peak_flops = peak_flops;
  m.dram_bandwidth = spec_dram_bandwidth * kCopyShare;
  return m;
}

constexpr double kMiB = 1024.0 * 1024.0;

// The H100's gathered rows, from its step pieces (bench/NOTES.md v20-v23): Qwen3-30B-A3B's up
// projection with x's rows gathered ran the 1-CTA 64x256 ping-pong pick 9-20% slower than its
// 2-CTA twin (B multicast: fewer L2 bytes beside the cp.async rows), where the H200 tied them. 3 is
// the smallest whole value at which the picks of both gathered pieces (the up projection and the
// dgated GEMM, every design timed on the H100 in v22) are their fastest designs, within 0.3%; at 2
// the dgated pick is 7% behind. A sweep of the gathered forms per device is to refit it. The parts
// that take the H100's calibrations take it.
constexpr double kH100GatheredRowL2Cost = 3.0;

constexpr MachineModel with_h100_gather(MachineModel m) {
  m.gathered_row_l2_cost = kH100GatheredRowL2Cost;
  return m;
}

// H100 SXM5 80 GB: the H200's die, clocks and power, so the same SMs and peak; HBM3 at 3.35 TB/s
// (its copy rate scaled from the H200's by the datasheet rates) and 50 MB of L2. Its design
// calibrations ("h100_sxm", calibrations.cpp) are fitted on an H100 sweep (bench/NOTES.md v25);
// its machine-wide fitted fields are still the H200's (a design the table lacks falls back to the
// H200's calibration).
constexpr MachineModel kH100Sxm = with_h100_gather(with_part("h100_sxm", "h100_sxm", 132, 1.98e9, 3.35e12, 50 * kMiB, kH200.peak_flops));
// H800 SXM: an H100 SXM with fewer NVLinks, which no single-GPU estimate sees.
constexpr MachineModel kH800 = with_h100_gather(with_part("h800", "h100_sxm", 132, 1.98e9, 3.35e12, 50 * kMiB, kH200.peak_flops));
// H100 PCIe 80 GB (350 W): 114 SMs at 1.755 GHz, HBM2e at 2.0 TB/s; peak from the formula above
// (114 x 1.755 GHz x 4096 x the H200's sustained share = 600 TFLOP/s, 1/1.3 of the SXM's).
constexpr MachineModel kH100Pcie =
    with_h100_gather(with_part("h100_pcie", "h100_sxm", 114, 1.755e9, 2.0e12, 50 * kMiB, dense_flops(114, 1.755e9)));
// H20: 78 SMs and HBM3 at 4.0 TB/s, but its tensor rate is capped far below what its SMs and clock
// would give (148 TFLOP/s dense bf16 on the datasheet), so the peak is the datasheet's times the
// share of its datasheet's 989.4 TFLOP/s the H200 model sustains.
constexpr MachineModel kH20 =
    with_h100_gather(with_part("h20", "h100_sxm", 78, 1.98e9, 4.0e12, 60 * kMiB, 148e12 * (kH200.peak_flops / 989.4e12)));

constexpr std::array kNamed{kH200, kH100Sxm, kH100Pcie, kH800, kH20};

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::span<const MachineModel> named_machine_models() { return kNamed; }

std::string machine_model_names() {
  std::string out;
  for (const MachineModel& m : kNamed) out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

std::optional<MachineModel> machine_model_named(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const MachineModel& m : kNamed)
    if (m.name == lower) return m;
  return std::nullopt;
}

double spec_dram_bandwidth(const cuda::DeviceFacts& f) {
  return double(f.memory_clock_khz) * 1e3 * 2.0 * double(f.memory_bus_bits) / 8.0;
}

MachineModel machine_model_for(const cuda::DeviceFacts& f) {
  const std::string name = upper(f.name);
  auto named = [&](const char* part) { return name.find(part) != std::string::npos; };
  const double bandwidth = spec_dram_bandwidth(f);
  // Every named model also needs its SM count: a MIG slice of one of these parts is another machine.
  if (f.cc == 90) {
    if (f.sm_count == 132 && (named("H200") || bandwidth > 4.5e12)) return kH200;
    if (f.sm_count == 132 && named("H800")) return kH800;
    if (f.sm_count == 132 && (named("H100") || (bandwidth > 3.0e12 && bandwidth <= 4.5e12))) return kH100Sxm;
    if (f.sm_count == 114) return kH100Pcie;
    if (f.sm_count == 78) return kH20;
  }
  return hopper_default(f);
}

MachineModel hopper_default(const cuda::DeviceFacts& f) {
  // A fact the driver did not give (0) is the H200's.
  const double sms = f.sm_count > 0 ? f.sm_count : kH200.sms;
  const double clock = f.clock_khz > 0 ? f.clock_khz * 1e3 : kH200.boost_clock_hz;
  const double bandwidth = spec_dram_bandwidth(f) > 0 ? spec_dram_bandwidth(f) : kH200.spec_dram_bandwidth;
  const double l2 = f.l2_bytes > 0 ? double(f.l2_bytes) : kH200.l2_bytes;
  return with_part("hopper_default", "h200", sms, clock, bandwidth, l2, dense_flops(sms, clock));
}

std::uint64_t fingerprint(const MachineModel& m) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  for (std::string_view s : {m.name, m.calibrations})
    for (char c : s) mix(static_cast<unsigned char>(c));
  for (double v : {m.boost_clock_hz, m.spec_dram_bandwidth, m.l2_bytes, m.sms, m.peak_flops, m.dram_bandwidth,
                   m.l2_bandwidth, m.launch_us, m.store_bandwidth, m.tma_store_share, m.split_k_memset_us,
                   m.load_latency_us, m.dram_miss_latency_us, m.misaligned_row_l2_cost, m.gathered_row_l2_cost})
    mix(std::bit_cast<std::uint64_t>(v));
  mix(static_cast<std::uint64_t>(m.balanced_sizes));
  return h;
}

}  // namespace gemmops::sm90
