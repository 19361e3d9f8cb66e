# python/gemmops/torch/_moe_bias.py: the MoE step's expert biases (gpt-oss): each sorted row's expert, a
# bias added per row where no kernel fuses it, and the biases' gradients with the scores' share of them
# SPDX-License-Identifier: Apache-2.0
from typing import Optional, Tuple

import torch


def expert_of_rows(offsets: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """The expert of each sorted row in `rows` (int32, any shape): E for rows past offsets[-1]
    (sentinels). On the device, no host synchronisation."""
    return torch.searchsorted(offsets, rows.contiguous(), right=True)


def add_row_bias(t: torch.Tensor, bias: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """t (S, N) + bias (E, N) of each row's expert; rows past offsets[-1] get none (where no kernel
    fuses the bias)."""
    rows = torch.arange(t.shape[0], device=t.device, dtype=offsets.dtype)
    expert = expert_of_rows(offsets, rows)
    padded = torch.cat([bias.to(t.dtype), bias.new_zeros((1, bias.shape[-1]), dtype=t.dtype)])
    return t + padded[expert]


def bias_gradients(dout: torch.Tensor, dh: torch.Tensor, offsets: torch.Tensor, pair: torch.Tensor,
                   sorted_scores: torch.Tensor, up_bias: bool, b_down: Optional[torch.Tensor]
                   ) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor], Optional[torch.Tensor]]:
    """(d b_gate_up (E, N_up), d b_down (E, H), the scores' extra gradient (T, k) fp32), each None where
    its bias is absent. y = a W2 + b2 and out = sum of s y, so: d b1[e] = the sum of dh over e's rows;
    d b2[e] = the sum of s dout[t] over e's (t, j); d s[t, j] gains dout[t] . b2[e] (the dgated
    epilogue's partials hold dout . a W2). Dense products over the experts (one-hot and score
    matrices): deterministic, no atomics decide a sum, no gathered copy of dout."""
    tokens, k = pair.shape
    experts = offsets.numel()
    d_b1 = None
    if up_bias:
        rows = torch.arange(dh.shape[0], device=dh.device, dtype=offsets.dtype)
        expert = expert_of_rows(offsets, rows).long()
        one_hot = torch.zeros(dh.shape[0], experts + 1, device=dh.device, dtype=dh.dtype)
        one_hot.scatter_(1, expert.unsqueeze(1), 1.0)
        d_b1 = one_hot[:, :experts].t() @ dh  # (E, N_up): each expert's rows summed
    if b_down is None:
        return d_b1, None, None
    expert = expert_of_rows(offsets, pair).long()  # (T, k): E for sentinels
    s = sorted_scores[pair.long()] * (expert < experts)
    dout32 = dout.float()
    weights = torch.zeros(tokens, experts + 1, device=dout.device, dtype=torch.float32)
    weights.scatter_add_(1, expert, s.float())
    d_b2 = weights[:, :experts].t() @ dout32  # (E, H)
    per_expert = torch.cat([dout32 @ b_down.float().t(), dout32.new_zeros((tokens, 1))], dim=1)  # (T, E + 1)
    return d_b1, d_b2, per_expert.gather(1, expert)
