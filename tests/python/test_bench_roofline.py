# tests/python/test_bench_roofline.py: the benchmark's roofline arithmetic (bench/roofline.py), which
# BENCHMARKS.md states as what is left to gain over torch
# SPDX-License-Identifier: Apache-2.0
import math
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import roofline  # noqa: E402


def row(M, N, K, G, ours_us, torch_us, dense_us, memory_pass_us=float("nan")):
    flops = 2.0 * M * N * K
    bytes_moved = G * K * N * 2 + M * K * 2 + M * N * 2
    r = {"TotalM": M, "N": N, "K": K, "gemmops_us": ours_us, "torch_us": torch_us,
         "dense_tflops": flops / dense_us / 1e6}
    r.update(roofline.roofline_columns(flops, bytes_moved, ours_us, torch_us, memory_pass_us))
    return r


def test_the_floor_is_the_slower_of_compute_and_memory():
    compute = row(32768, 4096, 7168, 4, 2800.0, 2850.0, 2830.0)  # 1.9 PFLOP, 0.8 GB
    assert compute["floor_us"] == pytest.approx(2.0 * 32768 * 4096 * 7168 / 784e12 * 1e6)
    memory = row(8, 1536, 2048, 8, 26.0, 32.0, 5.0, memory_pass_us=25.0)  # 8 experts read: 50 MB
    assert memory["floor_us"] == pytest.approx(memory["bytes_moved"] / 4.2e12 * 1e6)
    assert memory["memory_pass_tbps"] == pytest.approx(memory["bytes_moved"] / 25.0 / 1e6)
    assert memory["of_roofline"] == pytest.approx(memory["floor_us"] / 26.0)
    assert math.isnan(compute["memory_pass_tbps"])


def test_the_summary_states_the_ceiling_over_torch_and_how_close_we_come():
    big = row(32768, 4096, 7168, 4, 2800.0, 2850.0, 2830.0)
    small = row(8, 1536, 2048, 8, 26.0, 32.0, 5.0, memory_pass_us=25.0)
    text = roofline.roofline_summary([big, small])
    at_peak = math.sqrt(2850.0 / big["floor_us"] * 32.0 / small["floor_us"])
    assert f"would be {at_peak:.3f}x over torch" in text
    # Realistic: compute at the largest GEMM's dense rate (its floor is then its dense time); the
    # decode row no faster than its memory pass (25 us, faster than ours).
    assert f"{math.sqrt(2850.0 / 2830.0 * 32.0 / 25.0):.3f}x over torch" in text
    assert f"gemmops at {100 * math.sqrt(2830.0 / 2800.0 * 25.0 / 26.0):.0f}%" in text
    assert "reaches 85% of 4.2 TB/s on 0 of 1" in text


def test_rows_torch_refused_do_not_count():
    assert roofline.geometric_mean([2.0, float("nan"), 8.0]) == pytest.approx(4.0)
    assert math.isnan(roofline.geometric_mean([float("nan")]))


@pytest.mark.torch
@pytest.mark.parametrize("dist", ["uniform", "routed", "zipf"])
def test_the_sweep_s_group_sizes_sum_to_the_rows_and_routed_ones_carry_routing_s_noise(dist):
    torch = pytest.importorskip("torch")
    import bench_grouped
    sizes = bench_grouped.group_sizes(65536, 128, dist, torch.Generator().manual_seed(0))
    assert len(sizes) == 128 and sum(sizes) == 65536 and min(sizes) >= 0
    if dist == "uniform":
        assert set(sizes) == {512}
    if dist == "routed":  # multinomial: sd about sqrt(512) = 22.6, so most groups end in a partial 128-row tile
        spread = (sum((s - 512) ** 2 for s in sizes) / 128) ** 0.5
        assert 15 < spread < 30
        assert sum(1 for s in sizes if s % 128) > 100
