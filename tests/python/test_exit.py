# tests/python/test_exit.py: an interpreter that used gemmops (a registered Python operator included)
# exits without nanobind's "leaked instances/types/functions" warnings
# SPDX-License-Identifier: Apache-2.0
import subprocess
import sys
import textwrap

import pytest

# The registry outlives the interpreter; a Python operator it held would keep alive all its class
# reaches: the methods' module globals, here the arguments, operators and artifacts of the script.
USE_EVERYTHING = """
    import numpy as np
    import gemmops as ops

    class Zeros:
        name = "zeros_at_exit"
        metadata = {"target": "cpu", "provider": "test"}
        def supports(self, args): return True
        def compile(self, args): return {"compiled": True}
        def run(self, args, compiled_artifact=None, stream=None, workspace=None):
            args.out[...] = 0

    A, B = np.ones((16, 8), np.float32), np.ones((2, 8, 4), np.float32)
    out = np.zeros((16, 4), np.float32)
    args = ops.GroupedGemmArguments(A, B, out, offsets=np.array([6, 16], np.int32))
    registered = ops.register_operator(Zeros())
    found = ops.get_operators(args)
    assert registered in found, found
    artifacts = [op.compile(args) for op in found]
    for op, artifact in zip(found, artifacts):
        op.run(args, compiled_artifact=artifact)
    rejections = ops.get_rejections(args)
    everything = ops.all_operators()
    spec = ops.TensorSpec((16, 8), "bf16")
    status = ops.device_supports("cpu")
    print("done")
"""


def run_script(body):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=120)


def test_no_leak_warnings_at_exit_after_using_a_registered_python_operator():
    r = run_script(USE_EVERYTHING)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "done"
    leaked = [line for line in r.stderr.splitlines() if "leaked" in line]
    assert not leaked, r.stderr


def test_a_python_operator_is_inert_once_released_at_exit():
    # An atexit handler registered before gemmops runs after gemmops' own: the operator is there, but
    # supports nothing, and calls answer with a reason instead of touching a released object.
    r = run_script("""
        import atexit
        import numpy as np

        def late():
            args = ops.GemmArguments(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32),
                                     np.zeros((2, 2), np.float32))
            print(op.supports(args).error)

        atexit.register(late)
        import gemmops as ops

        class Any:
            name = "inert_at_exit"
            metadata = {"target": "cpu"}
            def supports(self, args): return True
            def compile(self, args): return None
            def run(self, args, compiled_artifact=None, stream=None, workspace=None): pass

        op = ops.register_operator(Any())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "operator: inert_at_exit was released at interpreter exit", r.stdout + r.stderr


@pytest.mark.torch
def test_no_leak_warnings_at_exit_after_gemmops_torch():
    r = run_script("""
        import torch
        import gemmops.torch as gt
        A, B = torch.ones(16, 8), torch.ones(2, 8, 4)
        gt.grouped_mm(A, B, torch.tensor([6, 16], dtype=torch.int32))
    """)
    assert r.returncode == 0, r.stderr
    assert not [line for line in r.stderr.splitlines() if "leaked" in line], r.stderr
