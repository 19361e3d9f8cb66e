// tools/gemmops/problem_spec.cpp: one table of options, each with its parser and help line
// SPDX-License-Identifier: Apache-2.0
#include "problem_spec.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <vector>

namespace gemmops::cli {
namespace {

using Setter = std::function<Status(ProblemSpec&, std::string_view)>;

struct Option {
  std::string_view name;   // without the leading "--"
  std::string_view value;  // placeholder in the help; empty for a flag
  std::string_view help;
  bool list_only;
  Setter set;
};

Status bad_value(std::string_view option, std::string_view rule, std::string_view got) {
  return invalid_argument("--" + std::string(option) + ": " + std::string(rule) + "; got '" +
                          std::string(got) + "'");
}

template <class T>
Setter integer(T ProblemSpec::*field, std::string_view option, int64_t min) {
  return [=](ProblemSpec& spec, std::string_view text) -> Status {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < min ||
        v > int64_t(std::numeric_limits<int>::max()))
      return bad_value(option, "must be an integer >= " + std::to_string(min), text);
    spec.*field = T(v);
    return Status::ok();
  };
}

template <class E>
Setter choice(E ProblemSpec::*field, std::string_view option,
              std::vector<std::pair<std::string_view, E>> choices) {
  return [=](ProblemSpec& spec, std::string_view text) -> Status {
    std::string all;
    for (const auto& [word, value] : choices) {
      if (word == text) {
        spec.*field = value;
        return Status::ok();
      }
      all += (all.empty() ? "" : "|") + std::string(word);
    }
    return bad_value(option, "must be one of " + all, text);
  };
}

const std::vector<std::pair<std::string_view, DType>> kDTypes = {
    {"bf16", DType::bf16}, {"fp16", DType::fp16}, {"fp32", DType::fp32}, {"e4m3", DType::e4m3}};
// What out may be (validate() refuses fp8 outputs): no choice that always fails is offered.
const std::vector<std::pair<std::string_view, DType>> kOutDTypes = {
    {"bf16", DType::bf16}, {"fp16", DType::fp16}, {"fp32", DType::fp32}};

const std::vector<Option>& options() {
  static const std::vector<Option> table = {
      {"op", "KIND", "grouped_m | grouped_k | grouped_n | masked | gemm | batched (default grouped_m)", false,
       choice(&ProblemSpec::op, "op",
              {{"grouped_m", OperationKind::grouped_m}, {"grouped_k", OperationKind::grouped_k},
               {"grouped_n", OperationKind::grouped_n}, {"gemm", OperationKind::gemm},
               {"batched", OperationKind::batched_gemm}, {"masked", OperationKind::grouped_m_masked}})},
      {"total-m", "M", "rows of A: TotalM (grouped_m), M (others; batched, masked: all batches) (8192)", false,
       integer(&ProblemSpec::total_m, "total-m", 0)},
      {"groups", "G", "groups G, or batches L for batched (12; batched: 8)", false,
       integer(&ProblemSpec::groups, "groups", 1)},
      {"k", "K", "K, or TotalK for grouped_k (1024)", false, integer(&ProblemSpec::k, "k", 0)},
      {"n", "N", "N, or TotalN for grouped_n (2048)", false, integer(&ProblemSpec::n, "n", 1)},
      {"dist", "D", "group sizes: uniform | skewed | zipf | empty (uniform)", false,
       choice(&ProblemSpec::dist, "dist",
              {{"uniform", Distribution::uniform}, {"skewed", Distribution::skewed},
               {"zipf", Distribution::zipf}, {"empty", Distribution::empty}})},
      {"seed", "S", "seed of the group sizes and values (1)", false, integer(&ProblemSpec::seed, "seed", 0)},
      {"dtype", "T", "A and B: bf16 | fp16 | fp32 | e4m3 (bf16)", false,
       choice(&ProblemSpec::dtype, "dtype", kDTypes)},
      {"out-dtype", "T", "out: bf16 | fp16 | fp32 (as --dtype; bf16 for e4m3)", false,
       choice(&ProblemSpec::out_dtype, "out-dtype", kOutDTypes)},
      {"b-major", "k|n", "k: B stored as a permuted (G,N,K) tensor; n: row-major (k)", false,
       choice(&ProblemSpec::b_major, "b-major", {{"k", Major::k}, {"n", Major::mn}})},
      {"device", "D", "auto | cpu | cuda (auto: cuda when a GPU operator supports the problem)", false,
       choice(&ProblemSpec::device, "device",
              {{"auto", DeviceChoice::automatic}, {"cpu", DeviceChoice::cpu}, {"cuda", DeviceChoice::cuda}})},
      {"operator", "NAME", "use this operator instead of the best one", false,
       [](ProblemSpec& s, std::string_view v) { s.operator_name = v; return Status::ok(); }},
      {"iters", "N", "timed iterations (20 on a GPU, 1 on the CPU)", false,
       integer(&ProblemSpec::iters, "iters", 1)},
      {"warmup", "N", "untimed iterations first (5 on a GPU, 0 on the CPU)", false,
       integer(&ProblemSpec::warmup, "warmup", 0)},
      {"no-check", "", "skip the comparison with the CPU operator", false,
       [](ProblemSpec& s, std::string_view) { s.check = false; return Status::ok(); }},
      {"target", "T", "discover for this target without a GPU (fake tensors): 90a | cpu; 90a:h100_sxm ranks on that machine model", true,
       [](ProblemSpec& s, std::string_view v) { s.target = std::string(v); return Status::ok(); }},
  };
  return table;
}

}  // namespace

std::string_view name(Distribution d) {
  switch (d) {
    case Distribution::uniform: return "uniform";
    case Distribution::skewed: return "skewed";
    case Distribution::zipf: return "zipf";
    case Distribution::empty: return "empty";
  }
  return "?";
}

Result<ProblemSpec> parse_problem_spec(std::span<const std::string_view> args, SpecOptions which) {
  ProblemSpec spec;
  bool out_dtype_given = false, groups_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view word = args[i];
    if (word == "--help" || word == "-h") {
      spec.help = true;
      continue;
    }
    if (!word.starts_with("--")) return invalid_argument("unexpected argument '" + std::string(word) + "'");
    std::string_view key = word.substr(2);
    std::optional<std::string_view> value;
    if (auto eq = key.find('='); eq != std::string_view::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    const Option* found = nullptr;
    for (const Option& o : options())
      if (o.name == key && (!o.list_only || which == SpecOptions::list)) found = &o;
    if (!found) return invalid_argument("unknown option '--" + std::string(key) + "'");
    if (found->value.empty()) {
      if (value) return invalid_argument("--" + std::string(key) + ": takes no value");
    } else if (!value) {
      if (i + 1 == args.size()) return invalid_argument("--" + std::string(key) + ": needs a value");
      value = args[++i];
    }
    GEMMOPS_TRY(found->set(spec, value.value_or("")));
    out_dtype_given = out_dtype_given || key == "out-dtype";
    groups_given = groups_given || key == "groups";
  }
  if (!out_dtype_given) spec.out_dtype = is_fp8(spec.dtype) ? DType::bf16 : spec.dtype;
  // Batched rows are L equal batches: a remainder would be dropped without a word. The default
  // rows (8192) divide into 8 batches, not into the 12 groups of the seed problem.
  if (spec.op == OperationKind::batched_gemm && !groups_given) spec.groups = 8;
  if (spec.op == OperationKind::batched_gemm && spec.total_m % spec.groups != 0)
    return bad_value("total-m", "must divide into the " + std::to_string(spec.groups) +
                                    " batches of --groups (L) for --op batched", std::to_string(spec.total_m));
  if (spec.op == OperationKind::grouped_m_masked && spec.total_m % spec.groups != 0)
    return bad_value("total-m", "must divide into the " + std::to_string(spec.groups) +
                                    " groups of MaxM rows (--groups) for --op masked", std::to_string(spec.total_m));
  if (spec.target) {
    if (auto t = Target::parse(*spec.target); !t) return bad_value("target", "must be a target such as 90a or cpu", *spec.target);
  }
  return spec;
}

std::string problem_spec_help(SpecOptions which) {
  std::string out;
  for (const Option& o : options()) {
    if (o.list_only && which != SpecOptions::list) continue;
    std::string head = "  --" + std::string(o.name) + (o.value.empty() ? "" : " " + std::string(o.value));
    head.resize(std::max<size_t>(head.size() + 2, 22), ' ');
    out += head + std::string(o.help) + "\n";
  }
  return out;
}

}  // namespace gemmops::cli
