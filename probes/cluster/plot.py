"""cluster's figure for scripts/plot.py. Dependent-load cycles (own memory, remote ranks) and streaming
bytes per SM cycle (own, neighbour) vs blocks per cluster, with the clusters resident at once; where the
report has them, TMA multicast vs each block loading: TB/s delivered and read from L2."""
import collections

from plot import declared_metrics, figures, metric

M = declared_metrics(__file__)
SUBJECT = "cluster: distributed shared memory, latency and bandwidth by cluster size"


def draw(p, report):
    # Left: a dependent load's cycles per cluster size, own memory and each remote rank the probe
    # chased; middle: 16-byte streaming from the own block and from a neighbour, bytes per SM cycle;
    # right (reports from before it have none): a tile delivered to every block of a cluster by TMA
    # multicast or by each block's own load, TB/s into shared memory and read from L2.
    def size(r):
        return r["params"]["cluster_size"]

    sizes = sorted({size(r) for r in p.rows})
    limits = {size(r): r["metrics"].get(M.max_active_clusters) for r in p.rows if r["params"]["test"] == "limits"}
    ticks = [f"{n}\n({limits[n]} at once)" if limits.get(n) is not None else str(n) for n in sizes]
    multicast = [r for r in p.rows if r["params"]["test"] == "multicast"]
    fig, axes = figures(1, 3 if multicast else 2, figsize=(15 if multicast else 10, 4.3), sharex=True)
    left, right = axes[0][:2]
    latency = collections.defaultdict(list)
    for r in p.rows:
        if r["params"]["test"] == "latency":
            target = r["params"]["target"]
            latency["own memory" if target == "own" else ("rank 1" if target == "rank 1" else "the last rank")].append(
                (sizes.index(size(r)), metric(r, M.latency_cycles)))
    for i, (name, pts) in enumerate(sorted(latency.items())):
        pts.sort()
        left.plot(*zip(*pts), marker="o", color=f"C{i}", label=name)
        for x, y in pts:  # the last rank's labels below its line: it runs close to rank 1's
            left.annotate(f"{y:.0f}", (x, y), xytext=(0, -12 if name == "the last rank" else 5),
                          textcoords="offset points", ha="center", fontsize=7, color=f"C{i}")
    left.set_ylim(0, max(y for pts in latency.values() for _, y in pts) * 1.2)
    left.set_ylabel("cycles per dependent 4-byte load")
    bandwidth = collections.defaultdict(list)
    for r in p.rows:
        if r["params"]["test"] == "bandwidth":
            bandwidth[r["params"]["source"]].append((sizes.index(size(r)), metric(r, M.bytes_per_clk_per_sm)))
    for i, (name, pts) in enumerate(sorted(bandwidth.items())):
        pts.sort()
        right.plot(*zip(*pts), marker="s", color=f"C{i + 3}",
                   label={"own": "own memory"}.get(name, f"a {name}'s memory"))
        for x, y in pts:
            right.annotate(f"{y:.1f}", (x, y), xytext=(0, 5), textcoords="offset points", ha="center", fontsize=7)
    right.axhline(128, color="0.35", ls=":", lw=0.9, label="shared memory's 128 B per SM cycle")
    right.set_ylim(0, 140)
    right.set_ylabel("bytes per SM cycle, every block streaming")
    if multicast:
        plot_cluster_multicast(axes[0][2], multicast, sizes)
    for ax in axes[0]:
        ax.set_xticks(range(len(sizes)), ticks, fontsize=8)
        ax.set_xlabel("blocks per cluster (clusters resident at once)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="center right")
    p.note("distributed shared memory through ld.shared::cluster; cycles are the SM clock's")
    if multicast:
        p.note(f"multicast: {multicast[0]['metrics'].get(M.tile_bytes, 0) // 1024} KiB TMA tiles; solid: delivered "
               "into every block's shared memory, dashed: read from L2")
    return fig


def plot_cluster_multicast(ax, rows, sizes):
    """TB/s delivered (solid) and read from L2 (dashed) per cluster size, one colour per delivery."""
    by_delivery = collections.defaultdict(list)
    for r in rows:
        by_delivery[r["params"]["delivery"]].append(
            (sizes.index(r["params"]["cluster_size"]), metric(r, M.delivered_tbps), metric(r, M.l2_read_tbps)))
    for i, (name, pts) in enumerate(sorted(by_delivery.items())):
        xs, delivered, read = zip(*sorted(pts))
        ax.plot(xs, delivered, marker="o", color=f"C{i + 5}", label=name)
        ax.plot(xs, read, marker=".", ls="--", color=f"C{i + 5}", lw=0.9)
        for x, y in zip(xs, delivered):
            ax.annotate(f"{y:.1f}", (x, y), xytext=(0, 5), textcoords="offset points", ha="center", fontsize=7)
    ax.set_ylim(0, max(y for pts in by_delivery.values() for _, y, _ in pts) * 1.25)
    ax.set_ylabel("TB/s: delivered into shared memory (read from L2)")
