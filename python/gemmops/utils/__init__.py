# python/gemmops/utils/__init__.py: helpers around the core API
# SPDX-License-Identifier: Apache-2.0
from . import device

__all__ = ["device"]
