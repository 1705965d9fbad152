"""quadrants's figure for scripts/plot.py. FFMA lanes per SM cycle vs warps per SM, against the quadrants'
ideal if spread."""
from plot import declared_metrics, figure, metric

M = declared_metrics(__file__)
SUBJECT = "quadrants: FFMA lanes per SM cycle vs warps"


def draw(p, report):
    ops = list(dict.fromkeys(r["params"].get("op", "ffma") for r in p.rows))
    fig, ax = figure(figsize=(8, 4.5))
    ideal = sorted({(r["params"]["warps_per_sm"], metric(r, M.ideal_if_spread)) for r in p.rows
                    if metric(r, M.ideal_if_spread) is not None})
    if ideal:
        ax.plot(*zip(*ideal), drawstyle="steps-post", ls="--", color="0.3", lw=1.2,
                label="ideal if the warps spread over the quadrants\n(32 lanes per quadrant in use, 128 at most)")
    for i, op in enumerate(ops):
        pts = sorted((r["params"]["warps_per_sm"], metric(r, M.fma_lanes_per_clock)) for r in p.rows
                     if r["params"].get("op", "ffma") == op)
        ax.plot(*zip(*pts), marker="o", color=f"C{i % 10}", label=f"{op}, measured")
    if len(ops) == 1:
        # The values in two rows along the bottom, clear of the curve and the steps: lanes, % of the ideal.
        for r in p.rows:
            w = r["params"]["warps_per_sm"]
            ax.text(w, 11, f"{metric(r, M.fma_lanes_per_clock):.0f}", ha="center", fontsize=7, color="C0")
            if metric(r, M.pct_of_ideal) is not None:
                ax.text(w, 3, f"{metric(r, M.pct_of_ideal):.0f}%", ha="center", fontsize=7, color="0.3")
        ax.text(1, 20, "per point: lanes per cycle (blue), % of the ideal (grey)", fontsize=7, color="0.3")
    warps = sorted({r["params"]["warps_per_sm"] for r in p.rows})
    ax.set_xscale("log", base=2)
    ax.set_xticks(warps, [str(w) for w in warps])
    ax.minorticks_off()
    ax.set_ylim(0, 150)
    ax.set_yticks(range(0, 129, 32))
    ax.set_xlabel("warps per SM (one block, log2)")
    ax.set_ylabel("FFMA lanes per SM cycle")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return fig
