"""smem-latency's figure for scripts/plot.py. Load-to-use cycles per chain and address form."""
from plot import declared_metrics, figure, grouped_bars, label_bars, legend_on_top, metric

M = declared_metrics(__file__)
SUBJECT = "smem-latency: load-to-use latency per chain"


def draw(p, report):
    def chain(params):
        return f"stride {params['stride_bytes']} B" if params.get("chain") == "stride" else params.get("chain", "")

    chains = list(dict.fromkeys(chain(r["params"]) for r in p.rows))
    addresses = list(dict.fromkeys(r["params"].get("address", "") for r in p.rows))
    cycles = {(chain(r["params"]), r["params"].get("address", "")): metric(r, M.latency_cycles) for r in p.rows}
    fig, ax = figure(figsize=(max(5, 1.3 * len(chains) + 2), 4))
    label_bars(ax, grouped_bars(ax, chains, addresses, lambda g, s: cycles.get((g, s))))
    ax.set_ylabel("load-to-use latency (SM cycles)")
    ax.set_xlabel("pointer chain through shared memory")
    legend_on_top(ax, title="address")
    ax.grid(axis="y", alpha=0.3)
    return fig
