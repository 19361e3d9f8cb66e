#!/usr/bin/env bash
# scripts/demo.sh: installs what is missing, builds the release preset and runs the seed problem
# SPDX-License-Identifier: Apache-2.0
# Extra arguments go to `gemmops run` (e.g. scripts/demo.sh --dist skewed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/bootstrap.sh
cmake --workflow --preset release
build/release/tools/gemmops/gemmops run "$@"
