"""occupancy's figure for scripts/plot.py. Throughput vs resident warps per SM per kernel (the HBM stream
in TB/s on its own axis)."""
import collections

from plot import declared_metrics, figures, metric

M = declared_metrics(__file__)
SUBJECT = "occupancy: throughput vs resident warps"


def draw(p, report):
    curves = collections.defaultdict(list)
    for r in p.rows:
        curves[r["params"].get("kernel", r["params"].get("instruction"))].append(r)
    stream = curves.pop("stream", [])
    # HBM streaming is judged in bytes per second, not against the tensor peak: its own panel below.
    fig, axes = figures(1 + bool(stream), 1, figsize=(8, 6 if stream else 4.5), sharex=True,
                        gridspec_kw={"height_ratios": [3, 2] if stream else [1]})
    ax = axes[0][0]
    for kernel, rows in sorted(curves.items()):
        ax.plot(*zip(*sorted((metric(r, M.warps_per_sm), metric(r, M.pct_clock_peak)) for r in rows)), marker="o",
                label=kernel)
    ax.set_ylabel("tensor throughput\n(% of clock peak)")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right", title="kernel", title_fontsize=8)
    if stream:
        ax = axes[1][0]
        ax.plot(*zip(*sorted((metric(r, M.warps_per_sm), metric(r, M.tbps)) for r in stream)), marker="s",
                color="C3", label=", ".join(sorted({r["params"].get("op", "stream") for r in stream})))
        ax.set_ylabel("HBM stream (TB/s)")
        ax.set_ylim(0, max(metric(r, M.tbps) for r in stream) * 1.15)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlabel("resident warps per SM")
    return fig
