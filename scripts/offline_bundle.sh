#!/usr/bin/env bash
# scripts/offline_bundle.sh: fills a folder (git-ignored, default .carry) with what a GPU machine
# without network needs to build and test gemmops and run bench/batches: GoogleTest's sources, the
# build's wheels (nanobind, scikit-build-core and their dependencies) for its Python, and a copy of
# the MoE shapes table the sweeps read.
#   scripts/offline_bundle.sh [--python 3.12] [--shapes PATH/moe_shapes.csv] [DIR]
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python_version=3.12
shapes=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python_version=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    -*) echo "usage: scripts/offline_bundle.sh [--python X.Y] [--shapes CSV] [DIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
dir=${1:-.carry}
mkdir -p "$dir"
gtest=/usr/src/googletest  # where Debian's googletest package puts them (cmake/GemmopsTesting.cmake's default)
if [ ! -f "$dir/googletest/CMakeLists.txt" ]; then
  [ -f "$gtest/CMakeLists.txt" ] || { echo "offline_bundle: GoogleTest sources not found (install googletest)" >&2; exit 1; }
  cp -r "$gtest" "$dir/googletest"
fi
python3 -m pip download -q -d "$dir/wheels" --only-binary=:all: --python-version "$python_version" \
  --implementation cp --platform manylinux2014_x86_64 nanobind scikit-build-core
[ -n "$shapes" ] && cp "$shapes" "$dir/moe_shapes.csv"
du -sh "$dir"
