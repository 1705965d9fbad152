"""overlap's figure for scripts/plot.py. % of clock peak vs filler instructions per wgmma, per filler and
warpgroups, 95% lines."""
import collections

from plot import declared_metrics, figure, metric

M = declared_metrics(__file__)
SUBJECT = "overlap: tensor throughput vs non-tensor work per wgmma"


def draw(p, report):
    # x: per_wgmma on a log2 axis; the 'none' row (0) is each warpgroup count's baseline, drawn half a
    # step left of 1.
    def x_of(k):
        return k if k > 0 else 0.5

    baseline = {r["params"].get("warpgroups", 1): metric(r, M.pct_clock_peak) for r in p.rows
                if r["params"].get("filler") == "none" or r["params"].get("per_wgmma") == 0}
    lines = collections.defaultdict(list)
    for r in p.rows:
        if r["params"].get("per_wgmma") != 0 and r["params"].get("filler") != "none":
            lines[(r["params"]["filler"], r["params"].get("warpgroups", 1))].append(
                (r["params"]["per_wgmma"], metric(r, M.pct_clock_peak)))
    fillers = sorted({f for f, _ in lines})
    warpgroups = sorted({wg for _, wg in lines} | set(baseline))
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("v", ":")]
    fig, ax = figure(figsize=(8, 4.8))
    for (filler, wg), pts in sorted(lines.items()):
        color = f"C{fillers.index(filler) % 10}"
        marker, ls = styles[warpgroups.index(wg) % len(styles)]
        pts = sorted(pts)
        if wg in baseline:
            pts = [(0, baseline[wg])] + pts
        # The probe's "5% lower" point: the first count below 95% of the no-filler value.
        drop = next((k for k, v in pts if k > 0 and wg in baseline and v < 0.95 * baseline[wg]), None)
        label = f"{filler}, {wg} warpgroup{'s' if wg != 1 else ''}/SM" + (f" (5% lower at {drop})" if drop else "")
        ax.plot([x_of(k) for k, _ in pts], [v for _, v in pts], marker=marker, ls=ls, ms=4, color=color, label=label)
    lone = [wg for wg in baseline if not any(w == wg for _, w in lines)]
    for wg in lone:  # a baseline without a sweep still shows
        ax.plot([0.5], [baseline[wg]], marker="D", color="0.3", ls="none", label=f"none, {wg} warpgroups/SM")
    # The 95% line is each series' no-filler value less 5%; the fillers of one warpgroup count share it.
    for wg, v in sorted(baseline.items()):
        ax.axhline(0.95 * v, color="0.35", ls=":", lw=0.9)
    if baseline:
        ax.plot([], [], color="0.35", ls=":", lw=0.9, label="95% of the no-filler value: " + ", ".join(
            f"{0.95 * v:.1f} ({wg} WG)" for wg, v in sorted(baseline.items())))
    ks = sorted({k for pts in lines.values() for k, _ in pts})
    ax.set_xscale("log", base=2)
    ax.set_xticks([0.5] * bool(baseline) + ks, ["none"] * bool(baseline) + [str(k) for k in ks])
    ax.minorticks_off()
    ax.set_xlim(0.4, max(ks or [1]) * 1.3)
    ax.set_ylim(0, 112)
    shapes = sorted({f"{r['params'].get('dtype', '')} {r['params'].get('shape', '')}" for r in p.rows})
    cycles = sorted({metric(r, M.ideal_cycles_per_instruction) for r in p.rows
                     if metric(r, M.ideal_cycles_per_instruction)})
    ax.set_xlabel("filler instructions per thread after each wgmma (log2)" +
                  (f"; one {', '.join(shapes)} wgmma is {cycles[0]:.0f} SM cycles" if len(cycles) == 1 else ""))
    ax.set_ylabel("tensor throughput (% of clock peak)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left", title="filler, warpgroups", title_fontsize=8)
    p.note("% of the peak at the SM clock measured inside the kernel")
    return fig
