#!/usr/bin/env bash
# scripts/bootstrap.sh: installs what gemmops needs and is missing on a Debian machine (apt-get, pip)
# SPDX-License-Identifier: Apache-2.0
#
# Idempotent and quick when everything is present: each tool is checked before anything is installed.
# Needs no GPU. The CUDA toolkit (12.8+ or 13) must already be installed; it is not fetched here.
set -euo pipefail

say() { printf 'bootstrap: %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else say "need root (or sudo) to run: $*"; return 1
  fi
}

# --- the CUDA toolkit: headers, NVRTC and nvcc come from it ------------------------------------
find_nvcc() {
  if command -v nvcc >/dev/null 2>&1; then command -v nvcc; return; fi
  for dir in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
    if [ -n "$dir" ] && [ -x "$dir/bin/nvcc" ]; then echo "$dir/bin/nvcc"; return; fi
  done
  return 1
}
if ! nvcc_path=$(find_nvcc); then
  say "the CUDA toolkit was not found (no nvcc on PATH, in \$CUDA_PATH or in /usr/local/cuda)."
  say "install CUDA 12.8+ or CUDA 13 (nvcc, NVRTC and CCCL headers) and put its bin/ on PATH; no GPU is needed."
  exit 1
fi
cuda_version=$("$nvcc_path" --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
read -r cuda_major cuda_minor <<<"${cuda_version:-0 0}"
if [ "$cuda_major" -lt 12 ] || { [ "$cuda_major" -eq 12 ] && [ "$cuda_minor" -lt 8 ]; }; then
  say "$nvcc_path is CUDA $cuda_major.$cuda_minor; gemmops needs CUDA 12.8+ or CUDA 13"
  exit 1
fi

# --- Debian packages ---------------------------------------------------------------------------
have_pkg() { dpkg -s "$1" >/dev/null 2>&1; }
cmake_ok() {
  command -v cmake >/dev/null 2>&1 || return 1
  local v; v=$(cmake --version | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  local major minor; read -r major minor <<<"${v:-0 0}"
  [ "$major" -gt 3 ] || { [ "$major" -eq 3 ] && [ "$minor" -ge 25 ]; }
}
gtest_ok() { have_pkg libgtest-dev || [ -f /usr/include/gtest/gtest.h ]; }

missing=()
cmake_ok || missing+=(cmake)
command -v ninja >/dev/null 2>&1 || missing+=(ninja-build)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
gtest_ok || missing+=(libgtest-dev)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
apt_updated=0
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -q && apt_updated=1
  as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# clang only builds the fuzzer; its absence is not an error.
if ! command -v clang++ >/dev/null 2>&1; then
  say "installing clang (optional: builds the fuzzer)"
  export DEBIAN_FRONTEND=noninteractive
  { [ "$apt_updated" -eq 1 ] || as_root apt-get update -q; } &&
    as_root apt-get install -y -q --no-install-recommends clang ||
    say "clang could not be installed; the fuzzer will be skipped"
fi

# --- Python packages ---------------------------------------------------------------------------
pip_args=(-q)
# Debian's own python3 refuses system-wide pip installs (PEP 668) unless told otherwise.
if python3 -c 'import os, sys, sysconfig; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)' 2>/dev/null \
   && [ -z "${VIRTUAL_ENV:-}" ]; then
  pip_args+=(--break-system-packages)
fi
py_missing=()
for spec in nanobind:nanobind scikit_build_core:scikit-build-core numpy:numpy pytest:pytest; do
  python3 -c "import ${spec%%:*}" >/dev/null 2>&1 || py_missing+=("${spec#*:}")
done
if ! cmake_ok; then py_missing+=("cmake>=3.25"); fi  # an apt cmake older than 3.25
if [ ${#py_missing[@]} -gt 0 ]; then
  say "pip installing ${py_missing[*]}"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install "${pip_args[@]}" "${py_missing[@]}"
fi
hash -r
cmake_ok || { say "cmake >= 3.25 is still missing after installing"; exit 1; }
say "ok (CUDA $cuda_major.$cuda_minor at $nvcc_path)"
