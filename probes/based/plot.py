"""based's figure for scripts/plot.py. TFLOP/s and ms vs sequence length per value dim and normalization, %
of clock peak."""
import collections
import math

from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
from plot import declared_metrics, figures, metric

M = declared_metrics(__file__)
SUBJECT = "based: the DSL's Based linear-attention forward vs sequence length"


def crowded(xs, apart=0.4):
    """Indices of sorted positive xs that sit within `apart` (in log2) of the one before, alternately:
    those labels go on the other side, so that neighbours do not overlap."""
    out, last = set(), None
    for i, x in enumerate(xs):
        if last is not None and abs(math.log2(x) - math.log2(xs[last])) < apart and last not in out:
            out.add(i)
        last = i
    return out


def draw(p, report):
    def series_of(r):
        norm = "normalized" if r["params"].get("normalize", True) else "not normalized"
        return f"Dv {r['params'].get('value_dim')}, {norm}"

    lines = collections.defaultdict(list)
    for r in p.rows:
        lines[series_of(r)].append(r)
    fig, axes = figures(1, 2, figsize=(10, 4.3), sharex=True)
    left, right = axes[0]
    for i, (name, rows) in enumerate(sorted(lines.items())):
        rows.sort(key=lambda r: r["params"]["seq"])
        seqs = [r["params"]["seq"] for r in rows]
        flip = crowded(seqs)
        color = f"C{i % 10}"
        left.plot(seqs, [metric(r, M.tflops) for r in rows], marker="o", color=color, label=name)
        right.plot(seqs, [metric(r, M.ms) for r in rows], marker="o", color=color, label=name)
        for j, r in enumerate(rows):
            # % of clock peak: each row against the clock it ran at, so a label per point, not an axis.
            pct = metric(r, M.pct_clock_peak)
            if pct is not None:
                left.annotate(f"{pct:.1f}%", (seqs[j], metric(r, M.tflops)), xytext=(0, 6 if j in flip else -13),
                              textcoords="offset points", ha="center", fontsize=7, color=color)
            right.annotate(f"{metric(r, 'ms'):.3g}", (seqs[j], metric(r, M.ms)),
                           xytext=(6, -10) if j in flip else (-6, 4), textcoords="offset points",
                           ha="left" if j in flip else "right", fontsize=7, color=color)
    seqs = sorted({r["params"]["seq"] for r in p.rows})
    flip = crowded(seqs)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(seqs, [("\n" if j in flip else "") + str(x) for j, x in enumerate(seqs)], fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("sequence length N (log2)")
        ax.grid(alpha=0.3)
    left.set_ylim(0, max(metric(r, M.tflops) for r in p.rows) * 1.25)
    left.set_ylabel("TFLOP/s (labels: % of clock peak)")
    left.legend(fontsize=8, loc="upper left")
    right.set_yscale("log")
    right.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    right.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    right.yaxis.set_minor_formatter(NullFormatter())
    right.set_ylabel("time per launch (ms, log)")
    left.set_title("throughput", fontsize=10)
    right.set_title("time (median launch)", fontsize=10)
    shapes = sorted({(r["params"].get("batch"), r["params"].get("heads"), r["params"].get("feature_dim"),
                      r["params"].get("dtype")) for r in p.rows})
    p.note("shapes " + "; ".join(f"B{b} H{h} feature dim {f} {d}" for b, h, f, d in shapes))
    return fig
