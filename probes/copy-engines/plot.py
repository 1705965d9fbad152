"""copy-engines's figure for scripts/plot.py. TB/s per engine, box and CTAs per SM, against the HBM
ceiling."""
from plot import declared_metrics, figure, grouped_bars, is_peer, legend_on_top, metric

M = declared_metrics(__file__)
SUBJECT = "copy-engines: global → shared bandwidth per engine"


def draw(p, report):
    def config(r):
        return f"box {r['params'].get('box')}\n{r['params'].get('ctas_per_sm')} CTA/SM"

    configs = list(dict.fromkeys(config(r) for r in p.rows))
    engines = list(dict.fromkeys(r["params"]["engine"] for r in p.rows))
    tbps = {(config(r), r["params"]["engine"]): metric(r, M.tbps) for r in p.rows}
    peers = {r["params"]["engine"] for r in p.rows if is_peer(r)}
    fig, ax = figure(figsize=(max(6, 1.1 * len(configs) + 2), 4.5))
    grouped_bars(ax, configs, engines, lambda g, s: tbps.get((g, s)), peer=lambda s: s in peers)
    ceilings = {metric(r, M.ceiling_tbps) for r in p.rows if metric(r, M.ceiling_tbps)}
    for c in ceilings:
        ax.axhline(c, color="0.3", ls="--", lw=1, label=f"HBM ceiling {c:.2f} TB/s")
    ax.set_ylabel("global → shared memory (TB/s)")
    ax.set_xlabel("box and CTAs per SM")
    legend_on_top(ax, title="engine")
    ax.grid(axis="y", alpha=0.3)
    return fig
