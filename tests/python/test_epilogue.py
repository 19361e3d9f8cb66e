# tests/python/test_epilogue.py: gemmops.EpilogueOps through the CPU operators against numpy, its
# errors, discovery (which operators serve which op) and plans
# SPDX-License-Identifier: Apache-2.0
import itertools
import math

import numpy as np
import pytest

import gemmops as ops
from helpers import offsets_of, rand, ref_grouped_m

SENTINEL = 7.0
GATED = ("swiglu", "swiglu_oss")
ALPHA, LIMIT = 1.702, 1.25  # a small limit, so that swiglu_oss's clamps bite


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def ref_epilogue(product, activation, layout, bias=None, row_scale=None, alpha=ALPHA, limit=LIMIT):
    """The header's formula in float64 on rows of the product (..., N)."""
    v = product.astype(np.float64)
    if bias is not None:
        v = v + bias.astype(np.float64)
    if activation in GATED:
        i = v.shape[-1] // 2
        gate, up = (v[..., 0::2], v[..., 1::2]) if layout == "interleaved" else (v[..., :i], v[..., i:])
        if activation == "swiglu":
            v = gate * sigmoid(gate) * up
        else:
            g = np.minimum(gate, limit)
            u = np.clip(up, -limit, limit)
            v = (u + 1.0) * g * sigmoid(alpha * g)
    elif activation == "silu":
        v = v * sigmoid(v)
    elif activation == "gelu_tanh":
        v = 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)))
    elif activation == "relu_squared":
        v = np.maximum(v, 0.0) ** 2
    if row_scale is not None:
        v = v * row_scale.astype(np.float64)[..., None]
    return v


def op_cases():
    for activation in ops.activations:
        for layout in ops.gate_layouts if activation in GATED else ("concatenated",):
            yield activation, layout


CASES = [(a, l, b, s) for (a, l), b, s in itertools.product(op_cases(), (False, True), (False, True))]


def test_activation_and_gate_layout_names():
    assert ops.activations == ("none", "silu", "gelu_tanh", "relu_squared", "swiglu", "swiglu_oss")
    assert ops.gate_layouts == ("concatenated", "interleaved")


def test_epilogue_ops_keeps_its_fields():
    bias = np.zeros((4, 16), np.float32)
    e = ops.EpilogueOps(activation="swiglu_oss", gate_layout="interleaved", alpha=1.5, limit=3.0, bias=bias)
    assert (e.activation, e.gate_layout, e.alpha, e.limit) == ("swiglu_oss", "interleaved", 1.5, 3.0)
    assert e.bias is bias and e.row_scale is None and e.gated and not e.empty
    assert ops.EpilogueOps().empty and ops.EpilogueOps().activation == "none"
    assert "swiglu_oss" in repr(e) and "interleaved" in repr(e)


def test_unknown_names_are_refused_with_the_list():
    with pytest.raises(ValueError, match=r"^epilogue.activation: must be one of none, silu, gelu_tanh, "
                                         r"relu_squared, swiglu, swiglu_oss; got 'gelu'$"):
        ops.EpilogueOps(activation="gelu")
    with pytest.raises(ValueError, match=r"^epilogue.gate_layout: must be one of concatenated, interleaved; "
                                         r"got 'split'$"):
        ops.EpilogueOps(activation="swiglu", gate_layout="split")


def grouped(activation, layout, with_bias, with_scale, out_dtype=np.float32, n=12, seed=0):
    rng = np.random.default_rng(seed)
    sizes = [3, 0, 1, 6]  # an empty group, a one-row group, and rows past offsets[-1]
    total_m, K = 14, 8
    A = rand(rng, (total_m, K), np.float32)
    B = rand(rng, (len(sizes), K, n), np.float32)
    out_n = n // 2 if activation in GATED else n
    out = np.full((total_m, out_n), SENTINEL, dtype=out_dtype)
    offsets = offsets_of(sizes)
    bias = rand(rng, (len(sizes), n), np.float32) * 4 if with_bias else None
    scale = (rng.integers(2, 12, size=total_m) / 8.0).astype(np.float32) if with_scale else None
    e = ops.EpilogueOps(activation=activation, gate_layout=layout, alpha=ALPHA, limit=LIMIT, bias=bias,
                        row_scale=scale)
    args = ops.GroupedGemmArguments(A, B, out, offsets=offsets, epilogue=e)
    return A, B, out, offsets, bias, scale, args


def run_best(args):
    found = ops.get_operators(args)
    assert found, ops.get_rejections(args)
    found[0].run(args)
    return found[0]


@pytest.mark.parametrize("activation,layout,with_bias,with_scale", CASES)
def test_m_grouped_ops_match_numpy_and_leave_rows_past_the_groups(activation, layout, with_bias, with_scale):
    A, B, out, offsets, bias, scale, args = grouped(activation, layout, with_bias, with_scale)
    assert run_best(args).name == "cpu_grouped_gemm_m"
    product = ref_grouped_m(A, B, offsets, A.shape[0])
    end = int(offsets[-1])
    want = np.concatenate([ref_epilogue(product[s:e], activation, layout,
                                        None if bias is None else bias[g], None if scale is None else scale[s:e])
                           for g, (s, e) in enumerate(zip([0, *offsets[:-1]], offsets))])
    np.testing.assert_allclose(out[:end], want, rtol=1e-5, atol=1e-5)
    assert np.all(out[end:] == SENTINEL), "rows past offsets[-1] must be untouched"


@pytest.mark.parametrize("activation,layout", list(op_cases()))
def test_dense_and_batched_ops_match_numpy(activation, layout):
    rng = np.random.default_rng(5)
    L, M, K, N = 3, 5, 8, 10
    out_n = N // 2 if activation in GATED else N
    A, B = rand(rng, (M, K), np.float32), rand(rng, (K, N), np.float32)
    bias, scale = rand(rng, (N,), np.float32), (rng.integers(2, 12, size=M) / 8.0).astype(np.float32)
    out = np.full((M, out_n), SENTINEL, np.float32)
    e = ops.EpilogueOps(activation, layout, ALPHA, LIMIT, bias=bias, row_scale=scale)
    run_best(ops.GemmArguments(A, B, out, epilogue=e))
    np.testing.assert_allclose(out, ref_epilogue(A.astype(np.float64) @ B, activation, layout, bias, scale),
                               rtol=1e-5, atol=1e-5)

    A3, B3 = rand(rng, (L, M, K), np.float32), rand(rng, (L, K, N), np.float32)
    bias3, scale3 = rand(rng, (L, N), np.float32), (rng.integers(2, 12, size=(L, M)) / 8.0).astype(np.float32)
    out3 = np.full((L, M, out_n), SENTINEL, np.float32)
    e3 = ops.EpilogueOps(activation, layout, ALPHA, LIMIT, bias=bias3, row_scale=scale3)
    run_best(ops.GemmArguments(A3, B3, out3, epilogue=e3))
    want = ref_epilogue(A3.astype(np.float64) @ B3, activation, layout, bias3[:, None, :], scale3)
    np.testing.assert_allclose(out3, want, rtol=1e-5, atol=1e-5)


def test_fp16_out_and_an_fp16_bias():
    A, B, out, offsets, _, scale, _ = grouped("silu", "concatenated", False, True, out_dtype=np.float16)
    bias = (np.arange(4 * 12).reshape(4, 12) / 16.0).astype(np.float16)
    e = ops.EpilogueOps("silu", bias=bias, row_scale=scale)
    run_best(ops.GroupedGemmArguments(A, B, out, offsets=offsets, epilogue=e))
    end = int(offsets[-1])
    product = ref_grouped_m(A, B, offsets, A.shape[0])
    groups = np.repeat(np.arange(4), np.diff([0, *offsets]))
    want = ref_epilogue(product[:end], "silu", "concatenated", bias[groups], scale[:end])
    np.testing.assert_allclose(out[:end].astype(np.float64), want, rtol=2e-3, atol=2e-3)


def test_arguments_keep_their_epilogue():
    *_, args = grouped("swiglu", "interleaved", True, False)
    assert args.epilogue.activation == "swiglu" and args.epilogue.gate_layout == "interleaved"
    assert "epilogue" in repr(args)
    plain = ops.GemmArguments(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32))
    assert plain.epilogue.empty


def k_grouped(epilogue):
    return ops.GroupedGemmArguments(np.zeros((4, 8), np.float32), np.zeros((8, 3), np.float32),
                                    np.zeros((2, 4, 3), np.float32), offsets=offsets_of([4, 4]), epilogue=epilogue)


def test_the_k_grouped_form_takes_no_epilogue_ops():
    with pytest.raises(ValueError, match=r"^epilogue: the K-grouped form \(grouped_gemm_k\) takes no epilogue ops"):
        k_grouped(ops.EpilogueOps("relu_squared"))
    k_grouped(ops.EpilogueOps())  # the empty epilogue is fine


def test_gated_out_needs_half_the_columns():
    A, B = np.zeros((4, 8), np.float32), np.zeros((2, 8, 6), np.float32)
    with pytest.raises(ValueError, match=r"^out: N \(6\) must equal B's N / 2 \(3\) with the gated activation swiglu"):
        ops.GroupedGemmArguments(A, B, np.zeros((4, 6), np.float32), offsets=offsets_of([2, 2]),
                                 epilogue=ops.EpilogueOps("swiglu"))


def test_bias_and_row_scale_errors_name_the_operand_and_rule():
    A, B, out, offsets = np.zeros((4, 8), np.float32), np.zeros((2, 8, 6), np.float32), np.zeros((4, 6), np.float32), offsets_of([2, 2])
    with pytest.raises(ValueError, match=r"^epilogue.bias: must have shape \(G,N\) = \(2, 6\)"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets, epilogue=ops.EpilogueOps(bias=np.zeros(6, np.float32)))
    with pytest.raises(ValueError, match=r"^epilogue.bias: dtype must be fp32 or out's dtype \(fp32\); got fp16$"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets, epilogue=ops.EpilogueOps(bias=np.zeros((2, 6), np.float16)))
    with pytest.raises(ValueError, match=r"^epilogue.row_scale: dtype must be fp32; got fp16$"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets,
                                 epilogue=ops.EpilogueOps(row_scale=np.zeros(4, np.float16)))
    with pytest.raises(ValueError, match=r"^epilogue.row_scale: must be contiguous"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets,
                                 epilogue=ops.EpilogueOps(row_scale=np.zeros(8, np.float32)[::2]))
    with pytest.raises(ValueError, match=r"^epilogue.bias: dtype must be fp32 or out's dtype; got int64$"):
        ops.EpilogueOps(bias=np.zeros((2, 6), np.int64))


def test_alpha_and_limit_are_checked():
    A, B, out, offsets = np.zeros((4, 8), np.float32), np.zeros((2, 8, 6), np.float32), np.zeros((4, 3), np.float32), offsets_of([2, 2])
    with pytest.raises(ValueError, match=r"^epilogue.limit: must be finite and greater than 0; got -1$"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets, epilogue=ops.EpilogueOps("swiglu_oss", limit=-1.0))
    with pytest.raises(ValueError, match=r"^epilogue.alpha: must be finite; got nan$"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets, epilogue=ops.EpilogueOps("swiglu_oss", alpha=math.nan))


def test_epilogue_must_be_epilogue_ops():
    with pytest.raises(TypeError, match=r"^epilogue: must be a gemmops.EpilogueOps or None; got str$"):
        ops.GemmArguments(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32),
                          epilogue="silu")


def test_discovery_with_fake_operands_names_the_op_an_operator_lacks():
    G, M, K, N = 4, 256, 128, 512
    spec = lambda shape, dtype="bf16": ops.TensorSpec(shape, dtype, device="cuda:0")  # noqa: E731
    e = ops.EpilogueOps("swiglu", "interleaved", bias=spec((G, N), "fp32"), row_scale=spec((M,), "fp32"))
    args = ops.GroupedGemmArguments(spec((M, K)), spec((G, K, N)), spec((M, N // 2)), offsets=spec((G,), "int32"),
                                    epilogue=e)
    reasons = [s.error for op, s in ops.get_rejections(args, target="90a") if op.metadata["provider"] == "sm90"]
    # The 192-wide designs store no gated halves; they say so and what they serve instead.
    named = [r for r in reasons if r.startswith("epilogue: ")]
    # (every design writes the pre-activation too: the TMA-store ones through their staging ring)
    served = "has no swiglu (interleaved) op; it serves none, silu, gelu_tanh, relu_squared, bias, row_scale, " \
             "pre_activation"
    assert named and all("x192x64" in r and r.endswith(served) for r in named)
    serving = ops.get_operators(args, target="90a")
    assert serving and serving[0].metadata["provider"] == "sm90"


def test_cpu_metadata_declares_every_op():
    *_, args = grouped("silu", "concatenated", False, False)
    c = ops.get_operators(args)[0].metadata["constraints"]["epilogue"]
    assert c == {"activations": list(ops.activations[1:]), "gate_layouts": list(ops.gate_layouts),
                 "bias": True, "row_scale": True, "pre_activation": True, "activation_grad": True}


class PlainOperator:
    """A user's operator that declares no epilogue support. Its own rule refuses everything, so that
    it stays registered for the rest of the session without serving other tests' problems; the
    epilogue's reason comes first (constraints before an operator's own rules)."""

    name = "user_plain_grouped_m"
    metadata = {"provider": "user", "target": "cpu", "constraints": {"kinds": ["grouped_gemm_m"]}}

    def supports(self, args):
        return "A: this operator serves nothing"

    def compile(self, args):
        return None

    def run(self, args, compiled_artifact=None, stream=None, workspace=None):
        raise AssertionError("never chosen")


def test_a_python_operator_without_epilogue_support_is_rejected_with_the_reason():
    registered = ops.register_operator(PlainOperator())
    assert registered.metadata["constraints"]["epilogue"]["activations"] == []
    *_, args = grouped("gelu_tanh", "concatenated", False, False)
    assert registered.name not in [o.name for o in ops.get_operators(args)]
    reasons = {o.name: s.error for o, s in ops.get_rejections(args) if o is not None}
    assert reasons[registered.name] == "epilogue: user_plain_grouped_m has no gelu_tanh op; it serves none"


def test_a_plan_takes_each_calls_bias_and_row_scale_and_refuses_other_scalars():
    A, B, out, offsets, bias, scale, args = grouped("swiglu_oss", "concatenated", True, True)
    plan = ops.make_plan(args)
    bias2 = bias + 1.0
    e2 = ops.EpilogueOps("swiglu_oss", alpha=ALPHA, limit=LIMIT, bias=bias2, row_scale=scale)
    out[:] = SENTINEL
    plan.run(ops.GroupedGemmArguments(A, B, out, offsets=offsets, epilogue=e2))
    end = int(offsets[-1])
    product = ref_grouped_m(A, B, offsets, A.shape[0])
    groups = np.repeat(np.arange(4), np.diff([0, *offsets]))
    want = ref_epilogue(product[:end], "swiglu_oss", "concatenated", bias2[groups], scale[:end])
    np.testing.assert_allclose(out[:end], want, rtol=1e-5, atol=1e-5)
    e3 = ops.EpilogueOps("swiglu_oss", alpha=1.0, limit=LIMIT, bias=bias2, row_scale=scale)
    with pytest.raises(ValueError, match=r"^epilogue.alpha, epilogue.limit: must be the plan's"):
        plan.run(ops.GroupedGemmArguments(A, B, out, offsets=offsets, epilogue=e3))
    with pytest.raises(ValueError, match=r"^epilogue.bias: must be given as in the plan's layout; got none$"):
        plan.run(ops.GroupedGemmArguments(A, B, out, offsets=offsets,
                                          epilogue=ops.EpilogueOps("swiglu_oss", alpha=ALPHA, limit=LIMIT,
                                                                   row_scale=scale)))
