// src/core/signature.cpp: Arguments -> Signature (a few dozen integers and their hash)
// SPDX-License-Identifier: Apache-2.0
#include "core/signature.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <optional>
#include <string_view>
#include <variant>

#include "core/machine_choice.hpp"

namespace gemmops::detail {
namespace {

class Writer {
 public:
  explicit Writer(Signature& s) : s_(s) {}
  void put(int64_t v) {
    if (s_.size == Signature::kWords) {
      overflow_ = true;
      return;
    }
    s_.words[s_.size++] = v;
  }
  bool overflow() const { return overflow_; }

 private:
  Signature& s_;
  bool overflow_ = false;
};

// The largest power of two (up to 256) that divides the address; 0 for no data (a fake tensor).
int64_t alignment_of(const void* p) {
  if (p == nullptr) return 0;
  const auto address = reinterpret_cast<uintptr_t>(p);
  return int64_t{1} << std::min(8, std::countr_zero(address | (uintptr_t{1} << 8)));
}

void put_tensor(Writer& w, const TensorDesc& t) {
  w.put(static_cast<int64_t>(t.dtype));
  w.put(static_cast<int64_t>(t.device.kind) * 65536 + t.device.index);
  w.put(alignment_of(t.data));
  w.put(static_cast<int64_t>(t.shape.size()) * 16 + static_cast<int64_t>(t.strides.size()));
  for (int64_t v : t.shape) w.put(v);
  for (int64_t v : t.strides) w.put(v);
}

// The ops, then each optional operand: absent, or its layout (its dtype among it). alpha and limit
// are per-call values, checked on every call (validate_per_call), so they are left out.
void put_epilogue(Writer& w, const EpilogueOps& e) {
  w.put(static_cast<int64_t>(e.activation) * 16 + static_cast<int64_t>(e.gate_layout));
  for (const std::optional<TensorDesc>* t : {&e.bias, &e.row_scale, &e.pre_activation}) {
    if (!t->has_value()) {
      w.put(-1);
      continue;
    }
    put_tensor(w, **t);
  }
  if (!e.activation_grad) {
    w.put(-1);
    return;
  }
  put_tensor(w, e.activation_grad->pre_activation);
  put_tensor(w, e.activation_grad->scaled_activation);
  put_tensor(w, e.activation_grad->score_grad_partials);
}

// fp8 scales: presence, granularity and layout in one word, then the tensor (absent: one word).
void put_scales(Writer& w, const std::optional<OperandScales>& s) {
  if (!s) {
    w.put(0);
    return;
  }
  w.put(1 + static_cast<int64_t>(s->granularity) * 2 + static_cast<int64_t>(s->layout) * 16);
  put_tensor(w, s->scales);
}

void finish(Signature& s, bool overflow) {
  s.valid = !overflow;
  // FNV-1a over the words: cheap, and good enough for a table of a few thousand entries.
  std::size_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < s.size; ++i) {
    h ^= static_cast<std::size_t>(s.words[i]);
    h *= 1099511628211ull;
  }
  s.hash = h;
}

void put_arguments(Writer& w, const Arguments& args) {
  w.put(static_cast<int64_t>(args.index()));
  if (const auto* g = std::get_if<GemmArguments>(&args)) {
    w.put(static_cast<int64_t>(g->accumulator));
    put_tensor(w, g->A);
    put_tensor(w, g->B);
    put_tensor(w, g->out);
    put_epilogue(w, g->epilogue);
    put_scales(w, g->a_scales);
    put_scales(w, g->b_scales);
  } else {
    const auto& gg = std::get<GroupedGemmArguments>(args);
    w.put(static_cast<int64_t>(gg.accumulator) * 2 + (gg.zero_tail ? 1 : 0));
    w.put(gg.group_alignment);  // aligned groups are served by fewer operators
    put_tensor(w, gg.A);
    put_tensor(w, gg.B);
    put_tensor(w, gg.out);
    put_tensor(w, gg.offsets);
    put_epilogue(w, gg.epilogue);
    put_scales(w, gg.a_scales);
    put_scales(w, gg.b_scales);
    if (gg.a_row_index)  // a gathered A is served by fewer operators, and by other kernels
      put_tensor(w, *gg.a_row_index);
    else
      w.put(-1);
    for (const auto* idx : {&gg.a_k_index, &gg.b_k_index}) {  // gathered along K: the same
      if (*idx)
        put_tensor(w, **idx);
      else
        w.put(-1);
    }
  }
}

// The machine model asked for by name, as one word (0: none): estimates depend on it where no device
// is present, so answers for two choices are never mixed.
int64_t machine_word(const Target* target) {
  const auto choice = explicit_machine(target);
  if (!choice) return 0;
  const std::size_t h = std::hash<std::string_view>{}(choice->name);
  return static_cast<int64_t>(h | 1);
}

}  // namespace

Signature signature_of(const Arguments& args) {
  Signature s;
  Writer w(s);
  put_arguments(w, args);
  finish(s, w.overflow());
  return s;
}

Signature signature_of(const Arguments& args, const Target& target) {
  Signature s;
  Writer w(s);
  put_arguments(w, args);
  w.put(static_cast<int64_t>(target.kind) * 1024 + target.cc * 2 + (target.arch_specific ? 1 : 0));
  w.put(machine_word(&target));
  finish(s, w.overflow());
  return s;
}

Signature signature_with(const Arguments& args, std::uint64_t extra) {
  Signature s;
  Writer w(s);
  put_arguments(w, args);
  w.put(static_cast<int64_t>(extra));
  finish(s, w.overflow());
  return s;
}

bool has_host_offset_values(const Arguments& args) {
  const auto* g = std::get_if<GroupedGemmArguments>(&args);
  if (g == nullptr) return false;
  auto on_host = [](const TensorDesc& t) { return !t.device.is_cuda() && t.data != nullptr; };
  return on_host(g->offsets) || (g->a_row_index && on_host(*g->a_row_index)) ||
         (g->a_k_index && on_host(*g->a_k_index)) || (g->b_k_index && on_host(*g->b_k_index));
}

}  // namespace gemmops::detail
