# bench/roofline.py: how far each benchmark row is from what the card can do, and what that leaves
# to gain over torch. Plain Python (no torch), so its arithmetic is tested without a GPU.
# SPDX-License-Identifier: Apache-2.0
import math

PEAK = {"flops": 784e12, "bytes": 4.2e12}  # --peak-tflops / --peak-tbps
DECODE_MAX_TOTAL_M = 1024  # the decode rows: TotalM <= 1024


def roofline_columns(flops, bytes_moved, t_ops, t_torch, t_memory):
    """The row's floor (the slower of its FLOPs at the peak rate and its bytes at the copy rate),
    how close we and torch come to it, and the decode rows' memory-pass reference."""
    floor_us = max(flops / PEAK["flops"], bytes_moved / PEAK["bytes"]) * 1e6
    return {"bytes_moved": bytes_moved, "floor_us": floor_us, "of_roofline": floor_us / t_ops,
            "torch_of_roofline": floor_us / t_torch, "memory_pass_us": t_memory,
            "memory_pass_tbps": bytes_moved / t_memory / 1e6 if not math.isnan(t_memory) else float("nan")}


def geometric_mean(values):
    """Of the values that are not NaN (a row torch refused has no ratio); NaN when none is left."""
    values = [v for v in values if not math.isnan(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def roofline_summary(rows):
    """What is left to gain: the geometric-mean speed-up over torch of a kernel at every row's floor,
    at the peak rates, and at realistic ones: compute at the rate dense cuBLAS sustains on the run's
    largest GEMM (long GEMMs run under the card's power limit, short ones at boost clocks, above the
    peak), a decode row no faster than the faster of its memory pass and ours (launch and ramp-up)."""
    sustained = max(rows, key=lambda r: r["TotalM"] * r["N"] * r["K"])["dense_tflops"] * 1e12
    def realistic_floor(r):
        us = max(2.0 * r["TotalM"] * r["N"] * r["K"] / sustained, r["bytes_moved"] / PEAK["bytes"]) * 1e6
        return us if math.isnan(r["memory_pass_us"]) else max(us, min(r["memory_pass_us"], r["gemmops_us"]))
    at_peak = geometric_mean([r["torch_us"] / r["floor_us"] for r in rows])
    at_realistic = geometric_mean([r["torch_us"] / realistic_floor(r) for r in rows])
    ours_peak = geometric_mean([r["of_roofline"] for r in rows])
    ours_realistic = geometric_mean([realistic_floor(r) / r["gemmops_us"] for r in rows])
    decode = [r for r in rows if not math.isnan(r["memory_pass_tbps"])]
    text = (f"Roofline (the slower of FLOPs at {PEAK['flops'] / 1e12:.0f} TFLOP/s and bytes at {PEAK['bytes'] / 1e12:.1f} TB/s): "
            f"a kernel at every row's floor would be {at_peak:.3f}x over torch (geometric mean); gemmops runs at "
            f"{100 * ours_peak:.0f}% of the floor. Realistic floor (compute at the {sustained / 1e12:.0f} TFLOP/s dense "
            f"cuBLAS sustains on this run's largest GEMM; a decode row no faster than the faster of its memory pass "
            f"and gemmops): {at_realistic:.3f}x over torch; gemmops at {100 * ours_realistic:.0f}%.")
    if decode:
        reach = sum(1 for r in decode if r["memory_pass_tbps"] >= 0.85 * PEAK["bytes"] / 1e12)
        text += (f" Decode rows (TotalM <= {DECODE_MAX_TOTAL_M}): a torch memory pass over the same bytes reaches "
                 f"85% of {PEAK['bytes'] / 1e12:.1f} TB/s on {reach} of {len(decode)}.")
    return text
