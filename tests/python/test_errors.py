# tests/python/test_errors.py: the Status -> exception table of docs/errors.md, by error code alone
# SPDX-License-Identifier: Apache-2.0
import itertools

import numpy as np
import pytest

import gemmops as ops
from helpers import offsets_of

_ids = itertools.count()


def cpu_problem():
    A, B = np.zeros((12, 8), np.float32), np.zeros((3, 8, 4), np.float32)
    return ops.GroupedGemmArguments(A, B, np.zeros((12, 4), np.float32), offsets=offsets_of([4, 4, 4]))


def test_the_classes_derive_from_what_a_python_user_catches():
    assert issubclass(ops.UnsupportedError, ValueError)
    for cls in (ops.NoDeviceError, ops.CompileError, ops.DriverError, ops.OutOfMemoryError):
        assert issubclass(cls, RuntimeError) and not issubclass(cls, ValueError), cls
    assert issubclass(ops.OutOfMemoryError, MemoryError)
    for cls in (ops.UnsupportedError, ops.NoDeviceError, ops.CompileError, ops.DriverError, ops.OutOfMemoryError):
        assert cls.__module__ == "gemmops" and cls.__doc__, cls


def test_invalid_argument_is_a_plain_value_error_whatever_the_rule():
    A = np.zeros((12, 8), np.float32)
    for make in (lambda: ops.GemmArguments(A, np.zeros((9, 4), np.float32), np.zeros((12, 4), np.float32)),
                 lambda: ops.GemmArguments(A, np.zeros((8, 4), np.float16), np.zeros((12, 4), np.float32)),
                 lambda: ops.GemmArguments(A, np.zeros((8, 4), np.float32), np.zeros((12, 4), np.float32), "fp16")):
        with pytest.raises(ValueError) as e:
            make()
        assert type(e.value) is ValueError, e.value


def test_unsupported_is_an_unsupported_error():
    args = cpu_problem()
    op = ops.get_operators(args)[0]
    status = op.supports(args, target="90a")
    assert status.code == "unsupported"
    with pytest.raises(ops.UnsupportedError, match="^target: "):
        status.raise_if_error()
    sm90 = [o for o, s in ops.get_rejections(args) if o is not None and o.metadata["target"] == "90a"]
    with pytest.raises(ops.UnsupportedError, match="^A: must be on a cuda device; got cpu$"):
        sm90[0].compile(args)  # host tensors: no sm90 operator serves them


def test_no_device_is_a_no_device_error():
    status = ops.device_supports("90a")
    if status:
        pytest.skip("this machine has a 90a device")
    assert status.code == "no_device", status
    with pytest.raises(ops.NoDeviceError):
        status.raise_if_error()


class Failing:
    """A Python operator whose compile or run raises: compile_failed and internal."""

    def __init__(self, fail_in):
        self.name = f"failing_{fail_in}_{next(_ids)}"
        self.metadata = {"target": "cpu"}
        self.fail_in = fail_in

    def supports(self, args):
        return True

    def compile(self, args):
        if self.fail_in == "compile":
            raise KeyError("no kernel")
        return None

    def run(self, args, compiled_artifact=None, stream=None, workspace=None):
        raise ZeroDivisionError("bug")


def test_compile_failed_is_a_compile_error_and_internal_a_runtime_error():
    args = cpu_problem()
    op = ops.register_operator(Failing("compile"))
    with pytest.raises(ops.CompileError, match="compile\\(\\) raised KeyError"):
        op.compile(args)
    op = ops.register_operator(Failing("run"))
    with pytest.raises(RuntimeError, match="run\\(\\) raised ZeroDivisionError") as e:
        op.run(args, compiled_artifact=op.compile(args))
    assert type(e.value) is RuntimeError, "internal has no class of its own"


def test_ok_raises_nothing():
    assert ops.device_supports("cpu").raise_if_error() is None
