# python/gemmops/torch/_env.py: the environment switches gemmops.torch reads at each call
# (docs/environment.md)
# SPDX-License-Identifier: Apache-2.0
import os


def switched_on(name: str) -> bool:
    """An on/off variable (GEMMOPS_AUTOTUNE, GEMMOPS_TRIAL_DESIGNS): set and neither empty nor 0."""
    return os.environ.get(name, "0") not in ("", "0")


def torch_routing_asked() -> bool:
    """GEMMOPS_ROUTING=torch: the routing and the router by torch's ops instead of gemmops' kernels."""
    return os.environ.get("GEMMOPS_ROUTING", "") == "torch"


def kernel_defines() -> str:
    """GEMMOPS_KERNEL_DEFINES as set now: the kernels a plan compiles depend on it, so a plan made under
    one value is not another's (one process can time a kernel define's step beside the build's)."""
    return os.environ.get("GEMMOPS_KERNEL_DEFINES", "")
