// src/jit/cache_key.cpp: the cache key's text and hash
// SPDX-License-Identifier: Apache-2.0
#include "jit/cache_key.hpp"

#include <cstdio>

namespace gemmops::jit {

std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string CacheKey::to_string() const {
  // Counted fields: a value containing newlines cannot be mistaken for the next field.
  std::string out = "gemmops kernel cache key v1\n";
  auto field = [&out](const char* name, const std::string& value) {
    out += name;
    out += " (" + std::to_string(value.size()) + "): " + value + "\n";
  };
  field("kernel_name", kernel_name);
  field("target", target);
  field("nvrtc_version", nvrtc_version);
  field("sources_hash", sources_hash);
  for (const auto& o : options) field("option", o);
  for (const auto& n : name_expressions) field("name_expression", n);
  field("source", source);
  return out;
}

std::string CacheKey::hash() const {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(fnv1a64(to_string())));
  return buf;
}

}  // namespace gemmops::jit
