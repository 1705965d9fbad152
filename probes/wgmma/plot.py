"""wgmma's figure for scripts/plot.py. % of clock peak vs N per dtype, one line per A source and warpgroup
count."""
import collections

from plot import declared_metrics, figures, metric

M = declared_metrics(__file__)
SUBJECT = "wgmma: % of clock peak vs N"


def shape_n(shape):
    """N of a wgmma shape "64xNxK"."""
    return int(shape.split("x")[1])


def draw(p, report):
    dtypes = sorted({r["params"]["dtype"] for r in p.rows})
    fig, axes = figures(1, len(dtypes), figsize=(5 * len(dtypes) + 1, 4.5), sharey=True)
    for ax, dtype in zip(axes[0], dtypes):
        lines = collections.defaultdict(list)
        for r in p.rows:
            if r["params"]["dtype"] == dtype:
                key = (r["params"].get("a", "smem"), r["params"].get("warpgroups", 1))
                lines[key].append((shape_n(r["params"]["shape"]), metric(r, M.pct_clock_peak)))
        for (a, wg), pts in sorted(lines.items()):
            xs, ys = zip(*sorted(pts))
            ax.plot(xs, ys, marker=".", label=f"A in {a}, {wg} warpgroups")
        ax.set_title(dtype, fontsize=10)
        ax.set_xlabel("N (wgmma 64xNxK)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    axes[0][0].set_ylabel("% of clock peak (in-kernel SM clock)")
    return fig
