# python/gemmops/torch/_patch.py: patch(), routing torch's own grouped_mm through gemmops
# SPDX-License-Identifier: Apache-2.0
import torch
import torch.nn.functional as F


def _prime_dynamo() -> None:
    """torch.compile keeps torch's own functions in the graph as opaque calls, found by their names
    in torch's namespace the first time it looks. Looked up while patched, that name would find
    gemmops' function, and torch.compile would call it on fake tensors instead of tracing into it
    (to the custom op): make it look first."""
    try:
        from torch._dynamo import trace_rules

        trace_rules.get_torch_obj_rule_map()
    except (ImportError, AttributeError):  # another torch: nothing to prime
        pass


class patch:
    """Replaces torch.nn.functional.grouped_mm and torch._grouped_mm with gemmops.torch.grouped_mm,
    so that models calling them (transformers' "grouped_mm" experts, torchtitan, your own) run on
    gemmops unchanged. Takes effect at once; as a context manager it is undone on exit:

        gemmops.torch.patch()                 # for the rest of the process
        with gemmops.torch.patch(): ...       # for a block

    Code that bound the function before (``from torch.nn.functional import grouped_mm``) keeps it.
    """

    def __init__(self):
        from . import grouped_mm

        _prime_dynamo()
        self._saved = {}
        for owner, name in ((F, "grouped_mm"), (torch, "_grouped_mm")):
            if hasattr(owner, name):
                self._saved[(owner, name)] = getattr(owner, name)
                setattr(owner, name, grouped_mm)

    def undo(self) -> None:
        """Puts torch's functions back."""
        for (owner, name), fn in self._saved.items():
            setattr(owner, name, fn)
        self._saved = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.undo()
        return False
