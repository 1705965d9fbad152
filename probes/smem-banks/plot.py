"""smem-banks's figure for scripts/plot.py. Cycles per access vs stride per width (32-warp rows) against
the bank model; ldmatrix."""
from plot import declared_metrics, figures, label_bars, metric

M = declared_metrics(__file__)
SUBJECT = "smem-banks: bank-conflict cost vs stride"


def draw(p, report):
    plain = [r for r in p.rows if r["params"].get("access") == "ld.shared" and r["params"].get("warps") == 32]
    ldmatrix = [r for r in p.rows if r["params"].get("access", "").startswith("ldmatrix")]
    widths = sorted({r["params"]["width_bytes"] for r in plain})
    panels = len(widths) + bool(ldmatrix)
    fig, axes = figures(1, panels, figsize=(3.6 * panels + 0.5, 4.2),
                        gridspec_kw={"width_ratios": [3] * len(widths) + [1.4] * bool(ldmatrix)})
    for ax, width in zip(axes[0], widths):
        rows = sorted((r for r in plain if r["params"]["width_bytes"] == width), key=lambda r: r["params"]["stride"])
        strides = [r["params"]["stride"] for r in rows]
        ax.plot(strides, [metric(r, M.cycles_per_access) for r in rows], marker="o", ms=3, lw=2.5, alpha=0.6,
                label="measured")
        # The model: its ways times what a conflict-free access measured at this width.
        free = sorted(metric(r, M.cycles_per_access) for r in rows if r["metrics"].get(M.model_ways) == 1)
        if free:
            cost = free[len(free) // 2]
            ax.plot(strides, [metric(r, M.model_ways) * cost for r in rows], ls="--", lw=1, color="black",
                    label=f"bank model: ways x {cost:.2f} cycles")
        ax.set_title(f"ld.shared, {width} B per thread", fontsize=9)
        ax.set_xlabel("stride: lane t reads element t x stride")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    if widths:
        axes[0][0].set_ylabel("SM cycles per warp access (32 warps/SM)")
    if ldmatrix:
        ax = axes[0][-1]
        labels = [r["params"].get("layout", "").replace(", ", "\n") for r in ldmatrix]
        heights = [metric(r, M.cycles_per_access) for r in ldmatrix]
        label_bars(ax, list(zip(ax.bar(range(len(ldmatrix)), heights, color=["C1", "C2"]), heights)), "{:.1f}")
        ax.set_xticks(range(len(ldmatrix)), labels, fontsize=8)
        ax.set_title(ldmatrix[0]["params"]["access"], fontsize=9)
        ax.set_ylabel("SM cycles per warp access")
    left = len(p.rows) - len(plain) - len(ldmatrix)
    if left:  # the single-warp rows: why the SM is filled, not what a conflict costs
        p.note(f"{left} rows with other than 32 warps not drawn")
    return fig
