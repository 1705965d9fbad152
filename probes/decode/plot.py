"""decode's figure for scripts/plot.py: % of the HBM read ceiling (measured in the same run) against
the cached keys per sequence, a line per batch."""
import collections

from plot import declared_metrics, figures, metric

M = declared_metrics(__file__)
SUBJECT = "decode: KV cache read against the HBM read ceiling, by keys per sequence"


def draw(p, report):
    steps = [r for r in p.rows if "keys" in r["params"]]
    if not steps:
        return None
    lines = collections.defaultdict(list)
    for r in steps:
        lines[r["params"]["batch"]].append(r)
    fig, axes = figures(1, 1, figsize=(6.5, 4.3))
    ax = axes[0][0]
    for i, (batch, rows) in enumerate(sorted(lines.items())):
        rows.sort(key=lambda r: r["params"]["keys"])
        keys = [r["params"]["keys"] for r in rows]
        pct = [metric(r, M.pct_hbm_ceiling) for r in rows]
        color = f"C{i % 10}"
        ax.plot(keys, pct, color=color, marker="o", label=f"batch {batch}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("cached keys per sequence (log2)")
    ax.set_ylabel("% of the HBM read ceiling")
    ax.set_ylim(0, 110)
    ax.axhline(100, color="gray", lw=0.8, ls="--")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ceiling = [r for r in p.rows if r["params"].get("row") == "hbm read ceiling"]
    if ceiling:
        p.note(f"ceiling {metric(ceiling[0], M.gbps):.0f} GB/s (HBM read, same run); each step starts with its cache out of the L2")
    return fig
