# tests/python/test_interop.py: operands from jax and cupy through DLPack, next to numpy and torch
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import gemmops as ops
from helpers import offsets_of, rand, ref_grouped_m

SENTINEL = 7.0


def _problem(seed, dtype):
    rng = np.random.default_rng(seed)
    sizes = [6, 0, 11, 1]  # an empty group, a 1-row group, and rows past offsets[-1]
    total_m, K, N = 24, 32, 16
    A = rand(rng, (total_m, K), dtype)
    B = np.ascontiguousarray(rand(rng, (len(sizes), N, K), dtype)).transpose(0, 2, 1)  # (G,K,N), K-major
    return A, B, offsets_of(sizes), total_m, N


def _jax_on_cpu(x):
    """A jax array on jax's CPU device (where jax has a GPU too, jnp.asarray would put it there)."""
    jax = pytest.importorskip("jax")
    return jax.device_put(x, jax.devices("cpu")[0])


def test_jax_cpu_operands_go_to_the_cpu_operator():
    A, B, offsets, total_m, N = _problem(0, np.float32)
    out = np.full((total_m, N), SENTINEL, dtype=np.float32)  # jax arrays are immutable: out is numpy
    args = ops.GroupedGemmArguments(_jax_on_cpu(A), _jax_on_cpu(B), out, accumulator_type="float32",
                                    offsets=_jax_on_cpu(offsets))
    op = ops.get_operators(args)[0]
    assert op.metadata["provider"] == "cpu"
    op.run(args, compiled_artifact=op.compile(args))
    end = int(offsets[-1])
    np.testing.assert_allclose(out[:end], ref_grouped_m(A, B, offsets, total_m)[:end], rtol=1e-5, atol=1e-5)
    assert np.all(out[end:] == SENTINEL)


def test_jax_strides_are_read_not_assumed():
    # jax exports a transposed view as a copy or with strides; either way the values must agree.
    A, B, offsets, total_m, N = _problem(1, np.float32)
    out = np.full((total_m, N), SENTINEL, dtype=np.float32)
    Bj = _jax_on_cpu(np.ascontiguousarray(B.transpose(0, 2, 1))).transpose(0, 2, 1)
    args = ops.GroupedGemmArguments(_jax_on_cpu(A), Bj, out, accumulator_type="float32", offsets=_jax_on_cpu(offsets))
    op = ops.get_operators(args)[0]
    op.run(args, compiled_artifact=op.compile(args))
    end = int(offsets[-1])
    np.testing.assert_allclose(out[:end], ref_grouped_m(A, B, offsets, total_m)[:end], rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_cupy_operands_run_on_the_gpu_operator():
    cp = pytest.importorskip("cupy")
    A, B, offsets, total_m, N = _problem(2, np.float16)
    # Sizes the sm90 operators accept: 16-byte aligned rows (K and N multiples of 8).
    out = cp.full((total_m, N), SENTINEL, dtype=cp.float16)
    args = ops.GroupedGemmArguments(cp.asarray(A), cp.asarray(B), out, accumulator_type="float32",
                                    offsets=cp.asarray(offsets))
    op = ops.get_operators(args)[0]
    assert op.metadata["provider"] == "sm90"
    op.run(args, compiled_artifact=op.compile(args))
    cp.cuda.Device().synchronize()
    host = cp.asnumpy(out).astype(np.float64)
    end = int(offsets[-1])
    np.testing.assert_allclose(host[:end], ref_grouped_m(A, B, offsets, total_m)[:end], rtol=2e-3, atol=2e-3)
    assert np.all(host[end:] == SENTINEL)
