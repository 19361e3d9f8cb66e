// src/providers.cpp: the default registry, populated with every built-in provider on first use
// SPDX-License-Identifier: Apache-2.0
#include "cpu/cpu_provider.hpp"
#include "gemmops/registry.hpp"
#include "simt/provider.hpp"
#include "sm90/provider.hpp"

namespace gemmops {

Registry& default_registry() {
  // Built on first use (not during static initialisation) so nothing touches CUDA before main.
  static Registry* registry = [] {
    auto* r = new Registry();  // never destroyed: operators may be used from atexit handlers
    sm90::register_sm90_operators(*r);
    simt::register_simt_operators(*r);  // the portable path for what the sm90 operators do not serve
    cpu::register_cpu_operators(*r);
    return r;
  }();
  return *registry;
}

}  // namespace gemmops
