# tests/python/conftest.py: markers `gpu` and `torch`, skipped with the reason, never silently
# SPDX-License-Identifier: Apache-2.0
import pytest

import gemmops

GPU_TARGET = "90a"


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device that runs sm_90a operators")
    config.addinivalue_line("markers", "torch: needs PyTorch")


def _torch_missing():
    try:
        import torch  # noqa: F401
    except ImportError as e:  # the reason is the import error itself
        return f"torch is not importable: {e}"
    return None


def pytest_collection_modifyitems(config, items):
    # A GPU test runs kernels, so GEMMOPS_TARGET (which stands in for a device) is not enough.
    gpu = gemmops.utils.device.device_supports(GPU_TARGET)
    torch_reason = _torch_missing()
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(pytest.mark.skip(reason=f"no {GPU_TARGET} device: {gpu.error}"))
        if "torch" in item.keywords and torch_reason:
            item.add_marker(pytest.mark.skip(reason=torch_reason))
