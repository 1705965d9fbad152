"""tensor-cores's figure for scripts/plot.py. Wgmma vs mma.sync % of clock peak per dtype."""
from plot import declared_metrics, figure, grouped_bars, label_bars, legend_on_top, metric

M = declared_metrics(__file__)
SUBJECT = "tensor-cores: wgmma vs mma.sync"


def draw(p, report):
    rows = {r["params"]["dtype"]: r for r in p.rows}
    dtypes = list(rows)
    fig, ax = figure(figsize=(max(6, 1.2 * len(dtypes) + 2), 4.5))
    series = {"wgmma": M.wgmma_pct_clock_peak, "mma.sync": M.mma_sync_pct_clock_peak}
    drawn = grouped_bars(ax, dtypes, list(series), lambda d, s: metric(rows[d], series[s]))
    label_bars(ax, drawn)
    for i, d in enumerate(dtypes):
        ratio = metric(rows[d], M.wgmma_over_mma_sync)
        if ratio:
            ax.text(i, 106, f"{ratio:.2f}x", ha="center", fontsize=7, color="0.3")
        if metric(rows[d], series["mma.sync"]) is None:  # a type mma.sync does not have (e5m2)
            ax.text(i + 0.2, 2, "no mma.sync", ha="center", va="bottom", rotation=90, fontsize=7, color="0.3")
    ax.set_ylim(0, 110)
    ax.set_ylabel("% of clock peak (best configuration)")
    ax.set_xlabel("dtype (above the bars: wgmma / mma.sync)")
    legend_on_top(ax)
    ax.grid(axis="y", alpha=0.3)
    return fig
