# python/gemmops/utils/device.py: can this machine run operators built for a target?
# SPDX-License-Identifier: Apache-2.0
"""Device checks that answer with a Status (truthy when ok, ``.error`` says why not).

    if not (status := gemmops.utils.device.device_or_env_supports("90a")):
        print(status.error)
"""

from .._gemmops import device_or_env_supports, device_supports

__all__ = ["device_or_env_supports", "device_supports"]
