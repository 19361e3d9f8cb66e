// tests/fuzz/fuzz_validate.cpp: libFuzzer target: random operands through validation must never crash or hit UB
// SPDX-License-Identifier: Apache-2.0
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gemmops/arguments.hpp"
#include "gemmops/metadata.hpp"
#include "gemmops/target.hpp"

namespace {

using namespace gemmops;

// Memory the fuzzer owns; data pointers of A, B and out point anywhere into it (validation only
// compares addresses), host offsets get a buffer of their own that covers their span.
unsigned char g_arena[1 << 16];
constexpr int64_t kMaxOffsetBytes = 1 << 20;

int64_t pick_extent(FuzzedDataProvider& in) {
  static constexpr int64_t kInteresting[] = {0, 1, 2, 3, 7, 8, 16, 64, 127, 1 << 16, int64_t{1} << 31,
                                             int64_t{1} << 32, int64_t{1} << 62,
                                             std::numeric_limits<int64_t>::max(),
                                             std::numeric_limits<int64_t>::min(), -1, -2};
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return in.PickValueInArray(kInteresting);
    case 1: return in.ConsumeIntegralInRange<int64_t>(0, 64);
    case 2: return in.ConsumeIntegralInRange<int64_t>(-4, 4096);
    default: return in.ConsumeIntegral<int64_t>();
  }
}

Device pick_device(FuzzedDataProvider& in) {
  return in.ConsumeBool() ? Device::cpu() : Device::cuda(in.ConsumeIntegralInRange<int>(0, 1));
}

TensorDesc pick_tensor(FuzzedDataProvider& in, Device device) {
  TensorDesc t;
  t.dtype = in.PickValueInArray(kAllDTypes);
  int rank = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < rank; ++i) t.shape.push_back(pick_extent(in));
  bool row_major = in.ConsumeBool();
  if (row_major && rank >= 1 && rank <= 3) {
    t = TensorDesc::contiguous(t.dtype, t.shape);
  } else {
    int strides = in.ConsumeIntegralInRange<int>(0, 10) == 0 ? in.ConsumeIntegralInRange<int>(0, 4) : rank;
    for (int i = 0; i < strides; ++i) t.strides.push_back(pick_extent(in));
  }
  t.device = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? pick_device(in) : device;
  if (in.ConsumeBool()) t.data = g_arena + in.ConsumeIntegralInRange<size_t>(0, sizeof g_arena - 1);
  return t;
}

// Host offsets with data must be readable for their whole span, as a caller's would be.
void give_offsets_memory(FuzzedDataProvider& in, TensorDesc& off, std::vector<unsigned char>& storage) {
  off.data = nullptr;
  if (off.device.is_cuda() || !in.ConsumeBool()) return;
  int64_t span = off.span_bytes();
  if (span <= 0 || span > kMaxOffsetBytes) return;
  storage.resize(static_cast<size_t>(span));
  std::vector<unsigned char> bytes = in.ConsumeBytes<unsigned char>(storage.size());
  if (!bytes.empty()) std::memcpy(storage.data(), bytes.data(), bytes.size());
  off.data = storage.data();
}

// A coherent problem first (so the deep rules are reached), then a few random mutations.
TensorDesc matrix(FuzzedDataProvider& in, DType t, std::vector<int64_t> shape, Device device) {
  TensorDesc d = TensorDesc::contiguous(t, shape, device);
  if (d.rank() >= 2 && in.ConsumeBool()) {  // column-major view of the last two dims
    int r = d.rank();
    d.strides[r - 1] = shape[r - 2] > 0 ? shape[r - 2] : 1;
    d.strides[r - 2] = 1;
  }
  if (in.ConsumeBool()) d.data = g_arena + in.ConsumeIntegralInRange<size_t>(0, sizeof g_arena - 1);
  return d;
}

void mutate(FuzzedDataProvider& in, TensorDesc& t, Device device) {
  switch (in.ConsumeIntegralInRange<int>(0, 6)) {
    case 0: if (!t.shape.empty()) t.shape[in.ConsumeIntegralInRange<size_t>(0, t.shape.size() - 1)] = pick_extent(in); break;
    case 1: if (!t.strides.empty()) t.strides[in.ConsumeIntegralInRange<size_t>(0, t.strides.size() - 1)] = pick_extent(in); break;
    case 2: t.dtype = in.PickValueInArray(kAllDTypes); break;
    case 3: t.device = pick_device(in); break;
    case 4: t.data = in.ConsumeBool() ? nullptr : g_arena + in.ConsumeIntegralInRange<size_t>(0, sizeof g_arena - 1); break;
    case 5: t.shape.push_back(pick_extent(in)); t.strides.push_back(pick_extent(in)); break;
    default: t = pick_tensor(in, device); break;
  }
}

int64_t small(FuzzedDataProvider& in) {
  return in.ConsumeIntegralInRange<int>(0, 7) == 0 ? pick_extent(in) : in.ConsumeIntegralInRange<int64_t>(0, 48);
}

void build_problem(FuzzedDataProvider& in, GemmArguments& g, Device dev) {
  int64_t l = small(in), m = small(in), n = small(in), k = small(in);
  DType ab = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.PickValueInArray(kAllDTypes) : DType::bf16;
  if (in.ConsumeBool()) {
    g.A = matrix(in, ab, {m, k}, dev), g.B = matrix(in, ab, {k, n}, dev), g.out = matrix(in, DType::fp32, {m, n}, dev);
  } else {
    g.A = matrix(in, ab, {l, m, k}, dev), g.B = matrix(in, ab, {l, k, n}, dev);
    g.out = matrix(in, DType::bf16, {l, m, n}, dev);
  }
}

void build_problem(FuzzedDataProvider& in, GroupedGemmArguments& g, Device dev) {
  int64_t groups = small(in), m = small(in), n = small(in), k = small(in);
  DType ab = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.PickValueInArray(kAllDTypes) : DType::e4m3;
  if (in.ConsumeBool()) {
    g.A = matrix(in, ab, {m, k}, dev), g.B = matrix(in, ab, {groups, k, n}, dev);
    g.out = matrix(in, DType::bf16, {m, n}, dev);
  } else {
    g.A = matrix(in, ab, {m, k}, dev), g.B = matrix(in, ab, {k, n}, dev);
    g.out = matrix(in, DType::fp32, {groups, m, n}, dev);
  }
  g.offsets = TensorDesc::contiguous(DType::i32, {groups}, dev);
}

// fp8 scales: usually the documented shape for the operand as it stands, sometimes anything.
void maybe_scales(FuzzedDataProvider& in, std::optional<OperandScales>& s, const TensorDesc& operand, bool is_a,
                  int64_t groups, bool k_grouped, Device dev) {
  if (in.ConsumeIntegralInRange<int>(0, 2) == 0) return;
  OperandScales o;
  o.granularity = in.PickValueInArray(kAllScaleGranularities);
  o.layout = in.PickValueInArray(kAllScaleLayouts);
  const bool per_group = k_grouped && (o.granularity == ScaleGranularity::tensor || o.granularity == ScaleGranularity::row);
  if (operand.rank() >= 2 && operand.rank() <= 3 && operand.strides.size() == operand.shape.size() &&
      in.ConsumeIntegralInRange<int>(0, 3) != 0) {
    const int64_t mn = is_a ? operand.size(-2) : operand.size(-1), k = is_a ? operand.size(-1) : operand.size(-2);
    const int64_t lead = operand.rank() == 3 ? operand.size(0) : per_group ? groups : -1;
    if (mn >= 0 && k >= 0 && lead >= -1) o.scales = matrix(in, DType::fp32, scale_shape(o.granularity, lead, mn, k), dev);
  } else {
    o.scales = pick_tensor(in, dev);
  }
  if (in.ConsumeIntegralInRange<int>(0, 3) == 0) mutate(in, o.scales, dev);
  s = o;
}

template <class Args>
void add_scales(FuzzedDataProvider& in, Args& g, int64_t groups, bool k_grouped, Device dev) {
  maybe_scales(in, g.a_scales, g.A, true, groups, k_grouped, dev);
  maybe_scales(in, g.b_scales, g.B, false, groups, k_grouped, dev);
}

template <class Args>
void mutate_some(FuzzedDataProvider& in, Args& g, Device dev) {
  int count = in.ConsumeIntegralInRange<int>(0, 3);
  for (int i = 0; i < count; ++i) {
    TensorDesc* targets[] = {&g.A, &g.B, &g.out};
    mutate(in, *in.PickValueInArray(targets), dev);
  }
}

// Epilogue ops: mostly coherent with out (bias over its columns, row_scale over its rows), then
// anything; alpha and limit from the floats that break rules.
void pick_epilogue(FuzzedDataProvider& in, EpilogueOps& e, const TensorDesc& out, Device device) {
  if (in.ConsumeBool()) return;
  static constexpr float kFloats[] = {1.702f, 7.0f, 0.0f, -1.0f, 1e38f, std::numeric_limits<float>::infinity(),
                                      -std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN()};
  e.activation = in.PickValueInArray(kAllActivations);
  e.gate_layout = in.PickValueInArray(kAllGateLayouts);
  e.alpha = in.PickValueInArray(kFloats);
  e.limit = in.PickValueInArray(kFloats);
  const int64_t rows = out.rank() >= 1 ? out.shape[0] : 0, cols = out.rank() >= 1 ? out.shape.back() : 0;
  // The product's columns: out's, or twice them (a gated activation).
  const int64_t product_cols = in.ConsumeBool() && cols >= 0 && cols <= (1 << 20) ? 2 * cols : cols;
  if (in.ConsumeBool()) {
    e.bias = in.ConsumeBool() ? matrix(in, DType::fp32, {product_cols}, device) : pick_tensor(in, device);
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) mutate(in, *e.bias, device);
  }
  if (in.ConsumeBool()) {
    e.row_scale = in.ConsumeBool() ? matrix(in, DType::fp32, {rows}, device) : pick_tensor(in, device);
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) mutate(in, *e.row_scale, device);
  }
  // The second operands: the forward's pre-activation, or the gated backward (out = dh, 2I columns).
  if (in.ConsumeBool()) {
    e.pre_activation = in.ConsumeBool() ? matrix(in, out.dtype, {rows, product_cols}, device) : pick_tensor(in, device);
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) mutate(in, *e.pre_activation, device);
  }
  if (in.ConsumeBool()) {
    const int64_t i = cols / 2;
    ActivationGrad g{matrix(in, out.dtype, {rows, 2 * i}, device), matrix(in, out.dtype, {rows, i}, device),
                     matrix(in, DType::fp32, {rows, score_grad_chunks(i)}, device)};
    if (in.ConsumeBool()) g.pre_activation = pick_tensor(in, device);
    if (in.ConsumeBool()) g.score_grad_partials = pick_tensor(in, device);
    if (in.ConsumeIntegralInRange<int>(0, 3) == 0) mutate(in, g.scaled_activation, device);
    e.activation_grad = g;
  }
}

OperandConstraints pick_constraints(FuzzedDataProvider& in) {
  OperandConstraints c;
  if (in.ConsumeBool()) c.kinds = {in.PickValueInArray(kAllOperationKinds)};
  if (in.ConsumeBool()) c.a_dtypes = {in.PickValueInArray(kAllDTypes)};
  if (in.ConsumeBool()) c.b_dtypes = {in.PickValueInArray(kAllDTypes)};
  if (in.ConsumeBool()) c.out_dtypes = {in.PickValueInArray(kAllDTypes)};
  c.a_b_same_dtype = in.ConsumeBool();
  if (in.ConsumeBool()) c.a_majors = {in.ConsumeBool() ? Major::k : Major::mn};
  if (in.ConsumeBool()) c.b_majors = {in.ConsumeBool() ? Major::k : Major::mn};
  c.out_row_major = in.ConsumeBool();
  static constexpr int kAlignments[] = {1, 2, 4, 8, 16, 128, 0, -1, 3};
  c.alignment_bytes = in.PickValueInArray(kAlignments);
  c.device = in.ConsumeBool() ? Device::Kind::cpu : Device::Kind::cuda;
  if (in.ConsumeBool()) c.epilogue = EpilogueSupport::all();
  if (in.ConsumeBool()) c.epilogue.activations = {in.PickValueInArray(kAllActivations)};
  if (in.ConsumeBool()) c.epilogue.gate_layouts = {in.PickValueInArray(kAllGateLayouts)};
  if (in.ConsumeBool()) c.scalings = ScalingSupport::all();
  if (in.ConsumeBool()) c.scalings.a = {in.PickValueInArray(kAllScaleGranularities)};
  return c;
}

void exercise(const Arguments& args, FuzzedDataProvider& in) {
  Status s = validate(args);
  Result<ProblemShape> p = problem_shape(args);
  if (s.is_ok() != p.has_value()) __builtin_trap();  // problem_shape must agree with validate
  (void)operation_kind(args);
  (void)check_constraints(pick_constraints(in), args);
  Major m;
  if (s) {
    (void)a_major(args, &m);
    (void)b_major(args, &m);
    (void)p->flops();
  }
  for (const TensorDesc* t : {&operand_a(args), &operand_b(args), &operand_out(args)}) {
    (void)t->describe();
    (void)t->span_bytes();
    (void)t->numel();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Device device = pick_device(in);
  bool structured = in.ConsumeIntegralInRange<int>(0, 3) != 0;
  std::vector<unsigned char> offsets_storage;
  if (in.ConsumeBool()) {
    GemmArguments g;
    if (structured) {
      build_problem(in, g, device);
      mutate_some(in, g, device);
    } else {
      g.A = pick_tensor(in, device);
      g.B = pick_tensor(in, device);
      g.out = pick_tensor(in, device);
    }
    add_scales(in, g, 0, false, device);
    g.accumulator = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.PickValueInArray(kAllDTypes) : DType::fp32;
    pick_epilogue(in, g.epilogue, g.out, device);
    exercise(g, in);
  } else {
    GroupedGemmArguments g;
    if (structured) {
      build_problem(in, g, device);
      mutate_some(in, g, device);
      if (in.ConsumeIntegralInRange<int>(0, 7) == 0) mutate(in, g.offsets, device);
    } else {
      g.A = pick_tensor(in, device);
      g.B = pick_tensor(in, device);
      g.out = pick_tensor(in, device);
      g.offsets = pick_tensor(in, device);
      if (in.ConsumeBool()) g.offsets.dtype = DType::i32;
    }
    g.accumulator = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.PickValueInArray(kAllDTypes) : DType::fp32;
    add_scales(in, g, g.out.rank() == 3 ? g.out.shape[0] : 0, g.A.rank() == 2 && g.B.rank() == 2, device);
    give_offsets_memory(in, g.offsets, offsets_storage);
    pick_epilogue(in, g.epilogue, g.out, device);
    exercise(g, in);
  }
  (void)Target::parse(in.ConsumeRandomLengthString(8));
  (void)parse_dtype(in.ConsumeRandomLengthString(16));
  (void)parse_activation(in.ConsumeRandomLengthString(16));
  (void)parse_gate_layout(in.ConsumeRandomLengthString(16));
  return 0;
}
