"""mma-sync's figure for scripts/plot.py. ILP x warps-per-SM heat map of % of clock peak, per dtype."""
from plot import declared_metrics, figures, metric

M = declared_metrics(__file__)
SUBJECT = "mma-sync: % of clock peak by ILP and warps per SM"


def draw(p, report):
    kinds = sorted({(r["params"]["dtype"], r["params"].get("acc", ""), r["params"].get("shape", "")) for r in p.rows})
    cols = min(len(kinds), 3)
    rows_n = (len(kinds) + cols - 1) // cols
    fig, axes = figures(rows_n, cols, figsize=(4.2 * cols + 1, 3.6 * rows_n + 0.6))
    ilps = sorted({r["params"]["ilp"] for r in p.rows})
    warps = sorted({r["params"]["warps_per_sm"] for r in p.rows})
    image, blanks = None, False
    for ax, (dtype, acc, shape) in zip(axes.flat, kinds):
        # Unmeasured cells (configurations that do not fit on an SM) stay blank.
        grid = [[float("nan")] * len(ilps) for _ in warps]
        for r in p.rows:
            if (r["params"]["dtype"], r["params"].get("acc", ""), r["params"].get("shape", "")) == (dtype, acc, shape):
                v = metric(r, M.pct_clock_peak)
                grid[warps.index(r["params"]["warps_per_sm"])][ilps.index(r["params"]["ilp"])] = v
                ax.text(ilps.index(r["params"]["ilp"]), warps.index(r["params"]["warps_per_sm"]), f"{v:.0f}",
                        ha="center", va="center", fontsize=7, color="white" if v < 50 else "black")
        blanks |= any(v != v for line in grid for v in line)  # NaN: not measured
        image = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=100, aspect="auto")
        ax.set_xticks(range(len(ilps)), [str(i) for i in ilps])
        ax.set_yticks(range(len(warps)), [str(w) for w in warps])
        ax.set_xlabel("independent mma.sync per warp (ILP)")
        ax.set_ylabel("resident warps per SM")
        ax.set_title(f"{dtype} → {acc}, m{shape}", fontsize=9)
    for ax in axes.flat[len(kinds):]:
        ax.set_visible(False)
    fig.colorbar(image, ax=axes, label="% of clock peak", shrink=0.8)
    if blanks:
        p.note("blank: not measured (skipped: does not fit on an SM)")
    return fig
