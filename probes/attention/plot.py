"""attention's figure for scripts/plot.py. % of clock peak and TFLOP/s per shape (a packed batch: its
length mix), kernel and pass, causal and not."""
from plot import declared_metrics, figures, grouped_bars, is_peer, legend_on_top, metric

M = declared_metrics(__file__)
SUBJECT = "attention: per shape, kernel and pass"


def attention_shape(params):
    if "varlen" in params:  # a packed batch: its length mix (spec) in place of B and N
        return f"packed {params['varlen']}\n{params['tokens']} tok H{params['heads']} D{params['head_dim']}"
    return f"B{params['batch']} H{params['heads']}\nN{params['seq']} D{params['head_dim']}"


def draw(p, report):
    def series_of(r):
        kernel = r["params"]["kernel"]
        return f"{kernel} {r['params']['pass']}" if "pass" in r["params"] else kernel

    metrics = [(m, label) for m, label in ((M.pct_clock_peak, "% of clock peak"), (M.tflops, "TFLOP/s"))
               if any(metric(r, m) is not None for r in p.rows)]
    causal = sorted({bool(r["params"].get("causal")) for r in p.rows})
    shapes = list(dict.fromkeys(attention_shape(r["params"]) for r in p.rows))
    series = list(dict.fromkeys(series_of(r) for r in p.rows))
    peers = {series_of(r) for r in p.rows if is_peer(r) or r["params"]["kernel"].startswith("torch-")}
    fig, axes = figures(len(metrics), len(causal), figsize=(5.5 * len(causal) + 1, 3.4 * len(metrics) + 0.8),
                          sharex=True, sharey="row")
    for i, (name, label) in enumerate(metrics):
        for j, c in enumerate(causal):
            ax = axes[i][j]
            heights = {(attention_shape(r["params"]), series_of(r)): metric(r, name)
                       for r in p.rows if bool(r["params"].get("causal")) == c}
            grouped_bars(ax, shapes, series, lambda g, s: heights.get((g, s)), peer=lambda s: s in peers,
                         labels=i == len(metrics) - 1)
            if j == 0:  # the row shares its y axis
                ax.set_ylabel(label)
            ax.grid(axis="y", alpha=0.3)
            if i == 0:
                ax.set_title("causal" if c else "not causal", fontsize=10)
            if i == len(metrics) - 1:
                ax.set_xlabel("shape (batch, heads, sequence, head dim)")
    legend_on_top(axes[0][-1], title="kernel, pass" if any("pass" in r["params"] for r in p.rows) else "kernel")
    if peers:
        p.note("hatched: a peer (PyTorch's backends)")
    if len(metrics) > 1 and peers:
        p.note("% of clock peak only for the probe's own rows")
    return fig
