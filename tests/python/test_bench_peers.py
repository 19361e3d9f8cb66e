# tests/python/test_bench_peers.py: the benchmark's peer columns and summaries (bench/peers.py) and the
# plot's series (bench/plot_rows.py), which compare gemmops with QuACK in BENCHMARKS.md
# SPDX-License-Identifier: Apache-2.0
import importlib.util
import math
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import peers  # noqa: E402
import plot_rows  # noqa: E402
from roofline import geometric_mean  # noqa: E402

NAN = float("nan")


def row(model, dist, ours_us, quack_us=NAN, quack_tuned_us=NAN):
    r = {"model": model, "scenario": "up", "dist": dist, "speedup_vs_torch": 1.2}
    r.update(peers.peer_columns({"quack": quack_us, "quack tuned": quack_tuned_us}, ours_us, 2e9))
    return r


def test_peer_columns_are_times_rates_and_our_speed_up():
    r = row("seed", "uniform", 50.0, quack_us=60.0)
    assert r["quack_us"] == 60.0
    assert r["speedup_vs_quack"] == pytest.approx(1.2)
    assert r["quack_tflops"] == pytest.approx(2e9 / 60.0 / 1e6)
    assert math.isnan(r["quack_tuned_us"]) and math.isnan(r["speedup_vs_quack_tuned"])


def test_peer_summary_names_the_worst_row_and_counts_the_losses():
    rows = [row("seed", "uniform", 50.0, 60.0), row("qwen", "zipf", 80.0, 40.0), row("mixtral", "uniform", 10.0, 10.0)]
    text = peers.peer_summary(rows, geometric_mean)
    assert "QuACK (default config)" in text
    assert f"{geometric_mean([1.2, 0.5, 1.0]):.3f}x over 3 rows" in text
    assert "1 slower" in text and "worst 0.50x: qwen up zipf" in text
    assert "autotuned" not in text  # no tuned timings: no tuned summary


def test_peer_summary_says_when_there_is_nothing_to_compare():
    assert "no QuACK timings" in peers.peer_summary([row("seed", "uniform", 50.0)], geometric_mean)


def test_quack_group_starts_from_gemmops_group_ends():
    torch = pytest.importorskip("torch")
    cu = peers.cu_seqlens(torch.tensor([3, 3, 10], dtype=torch.int32))
    assert cu.tolist() == [0, 3, 3, 10] and cu.dtype == torch.int32


def test_without_quack_there_are_no_candidates_and_the_reason_is_given():
    if importlib.util.find_spec("quack") is not None:
        pytest.skip("QuACK is installed here")
    module, why = peers.quack_interface()
    assert module is None and why
    assert peers.quack_candidates(None, None, None) == {}


def test_the_plot_shows_only_the_series_some_row_has():
    rows = [row("seed", "uniform", 50.0, 60.0), row("qwen", "zipf", 80.0)]
    assert [k for k, _ in plot_rows.present_series(rows)] == ["speedup_vs_torch", "speedup_vs_quack"]


def test_the_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "rows.png"
    plot_rows.plot_rows([row("seed", "uniform", 50.0, 60.0), row("qwen", "zipf", 80.0, 70.0)], str(path), "test")
    assert path.stat().st_size > 1000
