"""l2's figure for scripts/plot.py. The footprint ladder: one SM's dependent L2-only load latency and every
SM's read TB/s vs footprint, with the L2's size and half of it marked."""
from plot import declared_metrics, figures, metric

M = declared_metrics(__file__)
SUBJECT = "l2: latency and bandwidth vs footprint"


def draw(p, report):
    fig, axes = figures(1, 2, figsize=(11, 4.5))
    for ax, test, name, label, corner in (
            (axes[0][0], "latency", M.latency_cycles, "one SM's dependent L2-only load (SM cycles)", "upper left"),
            (axes[0][1], "stream", M.tbps, "every SM reading it (TB/s)", "lower left")):
        pts = sorted((r["params"]["footprint_bytes"] / 2**20, metric(r, name)) for r in p.rows
                     if r["params"]["test"] == test)
        if pts:
            ax.plot(*zip(*pts), marker="o")
        l2 = report.get("device", {}).get("l2_bytes")
        if l2:
            for share, style in ((0.5, "--"), (1.0, ":")):
                ax.axvline(share * l2 / 2**20, color="0.4", ls=style, lw=1,
                           label=f"{'half the' if share < 1 else 'the'} L2 ({share * l2 / 2**20:.0f} MiB)")
        ax.set_xlabel("footprint (MiB)")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8, loc=corner)
    return fig
