# tests/python/test_operator.py: metadata, supports Status, and a bring-your-own Python operator
# SPDX-License-Identifier: Apache-2.0
import itertools
import threading

import numpy as np
import pytest

import gemmops as ops
from helpers import offsets_of, rand, ref_grouped_m

_ids = itertools.count()


def grouped_problem(n=4, dtype=np.float32):
    rng = np.random.default_rng(5)
    A = rand(rng, (12, 8), dtype)
    B = rand(rng, (3, 8, n), dtype)
    out = np.zeros((12, n), np.float32)
    offsets = offsets_of([4, 4, 4])
    return A, B, out, offsets, ops.GroupedGemmArguments(A, B, out, offsets=offsets)


def test_cpu_operator_metadata_describes_provider_target_design_and_constraints():
    *_, args = grouped_problem()
    op = ops.get_operators(args)[0]
    md = op.metadata
    assert md["name"] == op.name and md["provider"] == "cpu" and md["target"] == "cpu"
    assert set(md["design"]) >= {"tile", "cluster", "stages", "schedule"}
    assert md["design"]["schedule"] == "cpu"
    c = md["constraints"]
    assert c["kinds"] == ["grouped_gemm_m"] and c["device"] == "cpu"
    assert "fp32" in c["a_dtypes"] and c["accumulator_dtypes"] == ["fp32"]


def test_supports_answers_with_a_status_that_carries_the_reason():
    *_, args = grouped_problem()
    op = ops.get_operators(args)[0]
    ok = op.supports(args)
    assert ok and ok.error is None and ok.code == "ok"
    no = op.supports(args, target="90a")
    assert not no and no.code == "unsupported" and no.error.startswith("target: ")
    with pytest.raises(ValueError, match="^target: "):
        no.raise_if_error()


def test_every_rejection_carries_a_reason():
    *_, args = grouped_problem()
    rejections = ops.get_rejections(args)
    assert rejections, "the other kinds' CPU operators and the sm90 ones must be rejected"
    for op, status in rejections:
        assert not status and status.error


def test_device_checks_answer_with_a_status():
    status = ops.utils.device.device_or_env_supports("90a")
    assert bool(status) == (status.error is None)
    assert ops.device_supports("cpu"), "the host always runs cpu operators"
    assert isinstance(ops.device_supports("90a"), ops.Status)


class NumpyGroupedOperator:
    """A user's operator written in Python: it serves only N == 3 fp32 M-grouped problems."""

    def __init__(self):
        self.name = f"python_numpy_grouped_m_{next(_ids)}"
        self.metadata = {
            "provider": "user", "target": "cpu",
            "design": {"tile": (16, 16, 16), "schedule": "custom"},
            "constraints": {"kinds": ["grouped_gemm_m"], "a_dtypes": ["fp32"], "b_dtypes": ["fp32"],
                            "out_dtypes": ["fp32"], "device": "cpu"},
        }
        self.calls = []

    def supports(self, args):
        return True if args.B.shape[-1] == 3 else "B: this operator serves N == 3 only"

    def compile(self, args):
        self.calls.append("compile")
        return {"compiled_for": self.name}

    def run(self, args, compiled_artifact=None, stream=None, workspace=None):
        assert compiled_artifact == {"compiled_for": self.name}
        self.calls.append("run")
        start = 0
        for g, end in enumerate(args.offsets):
            args.out[start:end] = args.A[start:end] @ args.B[g]
            start = end

    def estimated_time_us(self, args):
        return 0.0  # ahead of the CPU provider, so get_operators puts it first


def test_python_operator_is_found_ranked_and_run_through_the_core():
    impl = NumpyGroupedOperator()
    registered = ops.register_operator(impl)
    assert registered.name == impl.name and registered.metadata["provider"] == "user"
    assert registered.metadata["design"]["tile"] == (16, 16, 16)

    A, B, out, offsets, args = grouped_problem(n=3)
    found = ops.get_operators(args)
    assert found[0].name == impl.name
    artifact = found[0].compile(args)
    found[0].run(args, compiled_artifact=artifact)
    assert impl.calls == ["compile", "run"]
    np.testing.assert_allclose(out, ref_grouped_m(A, B, offsets, 12), rtol=1e-6)

    *_, other = grouped_problem(n=4)
    assert impl.name not in [o.name for o in ops.get_operators(other)]
    reasons = {o.name: s.error for o, s in ops.get_rejections(other) if o is not None}
    assert reasons[impl.name] == "B: this operator serves N == 3 only"


def test_autotune_compiles_a_python_operator_on_the_calling_thread_beside_the_built_in_ones():
    # The built-in candidates compile side by side on worker threads; a Python one needs the GIL the
    # caller holds, so it compiles on the caller's thread (a worker would wait for it forever).
    class Recording(NumpyGroupedOperator):
        def compile(self, args):
            self.threads.append(threading.get_ident())
            return super().compile(args)

    impl = Recording()
    impl.threads = []
    op = ops.register_operator(impl)
    A, B, out, offsets, args = grouped_problem(n=3)
    timed = ops.autotune(args, candidates=ops.get_operators(args), warmup=0, iterations=1, compile_threads=4)
    assert impl.threads == [threading.get_ident()]
    assert {o.name for o, _, status in timed if status.ok} >= {op.name}
    with pytest.raises(ValueError, match="compile_threads"):
        ops.autotune(args, compile_threads=-1)


def test_python_operator_exceptions_become_errors_with_their_text():
    class Broken(NumpyGroupedOperator):
        def compile(self, args):
            raise KeyError("no kernel for this")

    impl = Broken()
    op = ops.register_operator(impl)
    *_, args = grouped_problem(n=3)
    with pytest.raises(RuntimeError, match=f"^{impl.name}: compile\\(\\) raised KeyError"):
        op.compile(args)


def test_registering_a_name_twice_or_an_incomplete_operator_is_refused():
    impl = NumpyGroupedOperator()
    ops.register_operator(impl)
    with pytest.raises(ValueError):
        ops.register_operator(impl)
    with pytest.raises(TypeError, match="no 'run'"):
        class NoRun:
            name = "incomplete"
            def supports(self, args): return True
            def compile(self, args): return None
        ops.register_operator(NoRun())
