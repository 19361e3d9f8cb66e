// src/core/dtype.cpp: dtype names and the aliases torch and numpy use for them
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/dtype.hpp"

#include <cctype>
#include <string>

namespace gemmops {

std::string_view name(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::e4m3: return "e4m3";
    case DType::e5m2: return "e5m2";
    case DType::i32: return "int32";
  }
  return "unknown";
}

namespace {

struct Alias {
  std::string_view text;
  DType dtype;
};

// Lower-case spellings; "torch." and "numpy."/"np." prefixes are stripped before lookup.
constexpr Alias kAliases[] = {
    {"bf16", DType::bf16},         {"bfloat16", DType::bf16},
    {"fp16", DType::fp16},         {"float16", DType::fp16},       {"half", DType::fp16},
    {"f16", DType::fp16},
    {"fp32", DType::fp32},         {"float32", DType::fp32},       {"float", DType::fp32},
    {"f32", DType::fp32},
    {"e4m3", DType::e4m3},         {"float8_e4m3fn", DType::e4m3}, {"fp8_e4m3", DType::e4m3},
    {"e4m3fn", DType::e4m3},
    {"e5m2", DType::e5m2},         {"float8_e5m2", DType::e5m2},   {"fp8_e5m2", DType::e5m2},
    {"int32", DType::i32},         {"i32", DType::i32},
};

std::string_view strip_prefix(std::string_view s) {
  for (std::string_view p : {"torch.", "numpy.", "np."}) {
    if (s.substr(0, p.size()) == p) return s.substr(p.size());
  }
  return s;
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view text) {
  std::string lower;
  lower.reserve(text.size());
  for (char c : text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::string_view key = strip_prefix(lower);
  for (const Alias& a : kAliases) {
    if (a.text == key) return a.dtype;
  }
  return std::nullopt;
}

}  // namespace gemmops
