# tests/python/test_transformers_experts.py: experts_implementation="gemmops" against torch's "grouped_mm"
# SPDX-License-Identifier: Apache-2.0
import copy
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
pytest.importorskip("transformers", reason="transformers is not installed")
try:
    import gemmops.transformers as gtransformers
except ImportError as e:  # a transformers without the experts registry (4.x)
    pytest.skip(f"gemmops.transformers is not importable: {e}", allow_module_level=True)
import gemmops.torch as gtorch  # noqa: E402
import transformers  # noqa: E402

pytestmark = pytest.mark.torch

# Tiny models from config (random weights, no downloads). Each has one MoE layer, the last one: the
# router then sees the same input under every implementation, so a rounding difference in an earlier
# layer's experts cannot flip a top-k choice (which would make the runs incomparable in bf16).
# Gradients still cross the experts (dA) into the layers and embeddings before them.
COMMON = dict(vocab_size=96, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
              initializer_range=0.1, tie_word_embeddings=False)
MODELS = {
    # [gate; up] weights (E,2I,H), softmax top-2 of 8, a dense MLP in layer 0 ahead of the MoE layer.
    "qwen3_moe": lambda: transformers.Qwen3MoeConfig(
        **COMMON, max_position_embeddings=64, num_hidden_layers=2, mlp_only_layers=[0],
        intermediate_size=96, moe_intermediate_size=32, num_experts=8, num_experts_per_tok=2,
        norm_topk_prob=True),
    "mixtral": lambda: transformers.MixtralConfig(
        **COMMON, max_position_embeddings=64, num_hidden_layers=1, intermediate_size=48,
        num_local_experts=4, num_experts_per_tok=2),
    # Transposed (E,H,2I) weights with biases and an interleaved, clamped gate of its own (and YaRN
    # positions, whose default scaling wants the default max_position_embeddings).
    "gpt_oss": lambda: transformers.GptOssConfig(
        **COMMON, num_hidden_layers=1, intermediate_size=32, num_local_experts=6, num_experts_per_tok=2,
        layer_types=["full_attention"]),
}

BATCH, SEQ = 2, 24

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                             reason="no CUDA device")),
]


def dtype_for(device):
    # bf16 is what MoE models run in on GPUs; fp32 on CPU keeps the comparison tight.
    return torch.bfloat16 if device == "cuda" else torch.float32


def tolerance_for(dtype):
    return 1e-2 if dtype == torch.bfloat16 else 1e-4


def torch_reference(device, dtype):
    """transformers' "grouped_mm" where torch's grouped GEMM runs here, else its "eager" loop."""
    try:
        a = torch.ones(4, 16, device=device, dtype=dtype)
        b = torch.ones(2, 16, 16, device=device, dtype=dtype)
        torch.nn.functional.grouped_mm(a, b, offs=torch.tensor([2, 4], device=device, dtype=torch.int32))
        return "grouped_mm"
    except (AttributeError, RuntimeError, NotImplementedError):
        return "eager"


def build(name, device, dtype, implementation):
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(MODELS[name](),
                                                          experts_implementation=implementation)
    return model.to(device=device, dtype=dtype).eval()  # eval: no dropout, no router jitter


def relative_error(actual, expected):
    expected = expected.double()
    return float((actual.double() - expected).norm() / expected.norm().clamp_min(1e-30))


def run(model, implementation, input_ids):
    model.set_experts_implementation(implementation)
    model.zero_grad(set_to_none=True)
    out = model(input_ids=input_ids, labels=input_ids)
    out.loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    return out.logits.detach(), out.loss.detach(), grads


@pytest.fixture
def count_gemmops_calls(monkeypatch):
    """Counts calls into gemmops.torch: grouped_mm (layers run as grouped GEMMs around the module's
    own ops) and moe_experts (layers it computes whole); the integration looks both up at every call."""
    calls = []

    def counting(original):
        def wrapper(*args, **kwargs):
            calls.append(original.__name__)
            return original(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(gtorch, "grouped_mm", counting(gtorch.grouped_mm))
    monkeypatch.setattr(gtorch, "moe_experts", counting(gtorch.moe_experts))
    return calls


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_logits_loss_and_gradients_match_torch_grouped_mm(name, device, count_gemmops_calls):
    dtype = dtype_for(device)
    reference = torch_reference(device, dtype)
    model = build(name, device, dtype, reference)
    input_ids = torch.randint(0, 96, (BATCH, SEQ), generator=torch.Generator().manual_seed(1)).to(device)

    ref_logits, ref_loss, ref_grads = run(model, reference, input_ids)
    assert not count_gemmops_calls, f"the {reference!r} run must not reach gemmops"
    logits, loss, grads = run(model, "gemmops", input_ids)
    assert model.config._experts_implementation == "gemmops"
    # The MoE layers run whole through moe_experts: SwiGLU without biases (Qwen3-MoE, Mixtral) and
    # gpt-oss's clamped SwiGLU with its biases.
    assert count_gemmops_calls == ["moe_experts"], "the experts run whole on gemmops"

    exact = float32_run(model, reference, input_ids) if dtype != torch.float32 else None
    assert_close("logits", logits, ref_logits, reference, dtype, exact and exact[0])
    assert_close("loss", loss, ref_loss, reference, dtype, exact and exact[1])
    assert grads.keys() == ref_grads.keys()
    experts = [n for n in grads if ".experts." in n]
    assert {n.rsplit(".", 1)[-1] for n in experts} >= {"gate_up_proj", "down_proj"}
    # Expert weights (dB), and what lies before the experts (dA): embeddings, attention, a dense MLP.
    for n, g in grads.items():
        assert_close(f"gradient of {n}", g, ref_grads[n], reference, dtype, exact and exact[2][n])


def float32_run(model, reference, input_ids):
    """The reference implementation on a float32 copy of the model (the same bf16-valued weights):
    what both bf16 runs approximate."""
    exact = copy.deepcopy(model).float()
    return run(exact, reference, input_ids)


def assert_close(what, got, ref, reference, dtype, exact):
    """gemmops' result within the dtype's tolerance of the reference's; in bf16, where the two round
    at different points (the fused layer keeps fp32 through its epilogues), one that is further off
    still passes when it is as close to the float32 run as the reference is (within 2x)."""
    err = relative_error(got, ref)
    if err < tolerance_for(dtype):
        return
    assert exact is not None, f"{what} differs from {reference!r}: relative error {err:.2e}"
    ours, theirs = relative_error(got, exact), relative_error(ref, exact)
    assert ours <= 2 * theirs, (f"{what} differs from {reference!r} by {err:.2e}, and from the float32 run by "
                                f"{ours:.2e} where {reference!r} is {theirs:.2e} off it")


def test_from_pretrained_takes_the_name(tmp_path, count_gemmops_calls):
    build("mixtral", "cpu", torch.float32, "eager").save_pretrained(tmp_path)
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, experts_implementation="gemmops")
    assert model.config._experts_implementation == "gemmops"
    with torch.no_grad():
        model(input_ids=torch.zeros((1, 4), dtype=torch.long))
    assert count_gemmops_calls == ["moe_experts"], "one MoE layer, computed whole"


def test_a_gate_of_its_own_is_not_taken_for_gpt_oss():
    """A gated module with biases whose gate is not gpt-oss's clamped SwiGLU keeps the grouped GEMMs
    around its own gate (the probe compares the gate's values, not its name)."""
    model = build("gpt_oss", "cpu", torch.float32, "gemmops")
    experts = model.model.layers[0].mlp.experts
    assert gtransformers._fused_activation(experts) == ("swiglu_oss", "interleaved")
    experts.limit = 5.0  # another clamp: not what moe_experts computes
    assert gtransformers._fused_activation(experts) is None


def test_registered_once_under_its_name():
    from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

    assert ALL_EXPERTS_FUNCTIONS["gemmops"] is gtransformers.gemmops_experts_forward
    gtransformers.register()  # idempotent
    assert ALL_EXPERTS_FUNCTIONS["gemmops"] is gtransformers.gemmops_experts_forward


def test_expert_parallel_sentinels_contribute_nothing():
    """Ids >= num_experts (experts on other ranks) drop out, and their rows get no gradient."""
    model = build("qwen3_moe", "cpu", torch.float32, "gemmops")
    experts = model.model.layers[1].mlp.experts
    g = torch.Generator().manual_seed(2)
    hidden = torch.randn(6, 64, generator=g, requires_grad=True)
    index = torch.tensor([[0, 9], [3, 3], [8, 1], [7, 2], [5, 11], [4, 6]])  # of 8: 8, 9, 11 are remote
    weights = torch.rand(6, 2, generator=g)
    local = index < experts.num_experts
    out = gtransformers.gemmops_experts_forward(experts, hidden, index, weights)
    # The reference: the same routing with remote choices pointed at expert 0 with weight zero.
    ref_hidden = hidden.detach().clone().requires_grad_(True)
    ref = gtransformers.gemmops_experts_forward(experts, ref_hidden, index.where(local, 0),
                                                weights * local)
    torch.testing.assert_close(out, ref)
    out.square().sum().backward()
    ref.square().sum().backward()
    torch.testing.assert_close(hidden.grad, ref_hidden.grad)
    if torch_reference("cpu", torch.float32) == "grouped_mm":  # and what transformers' own gives
        from transformers.integrations.moe import grouped_mm_experts_forward

        # Later transformers read ids past num_experts as sentinels only in expert-parallel mode.
        if hasattr(experts, "_is_expert_parallel"):
            experts._is_expert_parallel = True
        torch.testing.assert_close(out, grouped_mm_experts_forward(experts, hidden, index, weights))


def test_compiles_without_graph_breaks():
    """No host synchronisation in the experts forward: it traces whole (fullgraph), the op included."""
    model = build("mixtral", "cpu", torch.float32, "gemmops")
    experts = model.model.layers[0].mlp.experts
    hidden = torch.randn(10, 64, generator=torch.Generator().manual_seed(3))
    index = torch.randint(0, 4, (10, 2), generator=torch.Generator().manual_seed(4))
    weights = torch.rand(10, 2, generator=torch.Generator().manual_seed(5))
    torch._dynamo.reset()
    compiled = torch.compile(gtransformers.gemmops_experts_forward, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(experts, hidden, index, weights),
                               gtransformers.gemmops_experts_forward(experts, hidden, index, weights))


def test_importing_gemmops_does_not_import_transformers():
    code = "import sys, gemmops, gemmops.torch; assert 'transformers' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
