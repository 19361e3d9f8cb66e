# tests/python/test_notebook.py: the seed notebook runs top to bottom on a Hopper GPU
# SPDX-License-Identifier: Apache-2.0
import importlib.util
import json
import pathlib

import pytest

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "examples" / "grouped_gemm_contiguous_offset.ipynb"


def code_cells(path):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def test_notebook_has_the_seed_api_calls():
    source = "\n".join(code_cells(NOTEBOOK))
    for call in ("ops.utils.device.device_or_env_supports(\"90a\")", "ops.GroupedGemmArguments(",
                 "ops.get_operators(args)", "operators[0].compile(args)",
                 "operators[0].run(args, compiled_artifact=artifact)", "torch.testing.assert_close(out, reference)"):
        assert call in source, call


@pytest.mark.gpu
@pytest.mark.torch
def test_notebook_runs_top_to_bottom():
    if importlib.util.find_spec("nbclient") and importlib.util.find_spec("ipykernel"):
        import nbclient
        import nbformat

        nb = nbformat.read(str(NOTEBOOK), as_version=4)
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3").execute()
        return
    namespace = {"__name__": "__notebook__"}
    for i, cell in enumerate(code_cells(NOTEBOOK)):
        exec(compile(cell, f"{NOTEBOOK.name}[cell {i}]", "exec"), namespace)
