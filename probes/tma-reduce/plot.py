"""tma-reduce's figure for scripts/plot.py. TB/s reduced per target tile and method (bulk reduction vs
atomics), a panel per op and dtype."""
from plot import declared_metrics, figures, grouped_bars, label_bars, legend_on_top, metric

M = declared_metrics(__file__)
SUBJECT = "tma-reduce: reducing tiles into global memory, bulk vs atomic"


def draw(p, report):
    # A panel per (op, dtype) the report measured, two to a row (reports before bf16, min and max: f32
    # add alone).
    def kind(r):
        return f"{r['params'].get('op', 'add')} {r['params'].get('dtype', 'f32')}"

    kinds = list(dict.fromkeys(kind(r) for r in p.rows))
    targets = list(dict.fromkeys(r["params"]["target"] for r in p.rows))
    methods = list(dict.fromkeys(r["params"]["method"] for r in p.rows))
    tbps = {(kind(r), r["params"]["target"], r["params"]["method"]): metric(r, M.tbps) for r in p.rows}
    top = max(tbps.values())
    cols = min(len(kinds), 2)
    rows_n = (len(kinds) + cols - 1) // cols
    fig, axes = figures(rows_n, cols, figsize=(max(5, 1.6 * len(targets) + 2.5) * cols, 3.6 * rows_n + 0.6),
                        sharey=True)
    for ax, k in zip(axes.flat, kinds):
        drawn = grouped_bars(ax, targets, methods, lambda g, s: tbps.get((k, g, s)))
        label_bars(ax, drawn, "{:.2f}")
        if {"bulk", "atomic"} <= set(methods):  # the finding's comparison, above each pair
            for g, target in enumerate(targets):
                bulk, atomic = tbps.get((k, target, "bulk")), tbps.get((k, target, "atomic"))
                if bulk and atomic:
                    ax.text(g, top * 1.08, f"bulk / atomic = {bulk / atomic:.2f}x", ha="center", fontsize=8,
                            color="0.3")
        ax.set_title(k, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat[len(kinds):]:
        ax.set_visible(False)
    axes[0][0].set_ylim(0, top * 1.15)  # shared: every panel's bars on one scale
    legend_on_top(axes[0][0], title="method")
    for row in axes:
        row[0].set_ylabel("bytes reduced (TB/s)")
    sizes = sorted({(r["params"].get("blocks"), r["params"].get("tile_bytes")) for r in p.rows})
    what = "; ".join(f"{b} blocks, {t // 1024} KiB tiles" for b, t in sizes if b and t)
    for ax in axes[-1]:
        ax.set_xlabel("where the blocks reduce their tiles" + (f" ({what})" if what else ""))
    return fig
