"""mem-latency's figure for scripts/plot.py. Latency (cycles, ns on the right) vs footprint, warm and
flushed, with the plateaus found in the data shaded and named L1 / L2 / HBM."""
import collections

from plot import declared_metrics, figure, metric

M = declared_metrics(__file__)
SUBJECT = "mem-latency: load latency vs footprint"


def plateaus(points, tolerance=0.2):
    """Runs of consecutive (x, y) points whose y stays within `tolerance` of the run's first y; runs of
    one point are the steps between levels, not levels."""
    runs = []
    for x, y in points:
        if runs and abs(y - runs[-1][0][1]) <= tolerance * runs[-1][0][1]:
            runs[-1].append((x, y))
        else:
            runs.append([(x, y)])
    return [r for r in runs if len(r) >= 2]


def draw(p, report):
    fig, ax = figure(figsize=(8, 4.5))
    by_state = collections.defaultdict(list)
    for r in p.rows:
        by_state[r["params"]["cache_state"]].append((r["params"]["footprint_bytes"], metric(r, M.latency_cycles)))
    for state, marker in (("warm", "o"), ("flushed", "s")):
        if state in by_state:
            xs, ys = zip(*sorted(by_state.pop(state)))
            ax.plot(xs, ys, marker=marker, label=f"{state} caches")
    for state, pts in by_state.items():  # a state this script does not know still shows
        xs, ys = zip(*sorted(pts))
        ax.plot(xs, ys, marker="^", label=state)
    # The levels are read off the data: the plateaus of the whole ladder, named in order of latency
    # only when there are the three a Hopper part has (L1, L2, HBM).
    levels = plateaus(sorted((r["params"]["footprint_bytes"], metric(r, M.latency_cycles)) for r in p.rows))
    names = ["L1", "L2", "HBM"] if len(levels) == 3 else [f"level {i + 1}" for i in range(len(levels))]
    for i, (name, run) in enumerate(zip(names, levels)):
        lo, hi = run[0][0], run[-1][0]
        level = sorted(y for _, y in run)[len(run) // 2]
        ax.axvspan(lo / 1.2, hi * 1.2, color=f"C{i + 2}", alpha=0.12, lw=0)
        ax.annotate(f"{name} ≈ {level:.0f} cycles", ((lo * hi) ** 0.5, level), xytext=(0, 8),
                    textcoords="offset points", ha="center", fontsize=8)
    l2 = report.get("device", {}).get("l2_bytes")
    if l2:
        ax.axvline(l2, color="0.4", ls=":", lw=1, label=f"L2 size ({l2 / 2**20:.0f} MiB, device)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("footprint of the pointer chase (bytes, log2)")
    ax.set_ylabel("load-to-use latency (SM cycles)")
    clocks = sorted(metric(r, M.sm_clock_mhz) for r in p.rows if metric(r, M.sm_clock_mhz))
    if clocks:
        # ns on the second axis at the median clock: the rows' own clocks differ by a few percent.
        mhz = clocks[len(clocks) // 2]
        right = ax.secondary_yaxis("right", functions=(lambda c: c * 1e3 / mhz, lambda ns: ns * mhz / 1e3))
        right.set_ylabel(f"ns at {mhz:.0f} MHz (median SM clock)")
    ax.set_ylim(0, max(metric(r, M.latency_cycles) for r in p.rows) * 1.15)  # room for the level labels
    ax.legend(fontsize=8, loc="upper left")
    return fig
