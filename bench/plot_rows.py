# bench/plot_rows.py: bench_grouped.py --plot: one bar group per row, gemmops' speed-up over each
# baseline (torch, QuACK), with the line at 1 where they tie. matplotlib only when asked for.
# SPDX-License-Identifier: Apache-2.0

# (column, label) of the speed-ups a row may carry; absent or NaN columns are left out.
SPEEDUPS = [("speedup_vs_torch", "over torch"), ("speedup_vs_quack", "over QuACK (default)"),
            ("speedup_vs_quack_tuned", "over QuACK (tuned)"), ("fused_over_plain", "fused / plain time")]


def present_series(rows):
    """The speed-up columns that hold a number in at least one row, in SPEEDUPS' order."""
    return [(k, label) for k, label in SPEEDUPS if any(r.get(k, float("nan")) == r.get(k) for r in rows)]


def row_label(r):
    return f"{r['model'][:14]} {r['scenario'][:22]} {r['dist'][:4]}"


def plot_rows(rows, path, device):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = present_series(rows)
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(max(8, 0.35 * len(rows) * max(1, len(series))), 5))
    for i, (key, label) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(rows))]
        ax.bar(xs, [r.get(key, float("nan")) for r in rows], width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([row_label(r) for r in rows], rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("gemmops speed-up (x)")
    ax.set_title(f"gemmops grouped GEMM, {device}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
