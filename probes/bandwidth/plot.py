"""bandwidth's figure for scripts/plot.py. TB/s per level, op and schedule, against each level's ceiling."""
from plot import PEER_HATCH, declared_metrics, figures, is_peer, metric

M = declared_metrics(__file__)
SUBJECT = "bandwidth: TB/s per level, op and schedule"


def bandwidth_label(params):
    """A bandwidth row's variant in words: everything but the level, op and total size."""
    skip = {"level", "op", "bytes", "schedule", "access"}
    words = [params[k] for k in ("schedule", "access") if k in params]
    words += [f"{k.replace('_', ' ')} {v}" for k, v in params.items() if k not in skip]
    return ", ".join(map(str, words))


def draw(p, report):
    levels = list(dict.fromkeys(r["params"].get("level", "hbm") for r in p.rows))
    counts = [sum(r["params"].get("level", "hbm") == lv for r in p.rows) for lv in levels]
    fig, axes = figures(len(levels), 1, figsize=(9, 0.2 * sum(counts) + 1.0 * len(levels) + 0.8),
                        gridspec_kw={"height_ratios": [c + 1.5 for c in counts]})
    schedules = list(dict.fromkeys(r["params"].get("schedule", r["params"].get("op")) for r in p.rows))
    for ax, level in zip(axes[:, 0], levels):
        rows = [r for r in p.rows if r["params"].get("level", "hbm") == level]
        rows.sort(key=lambda r: (["read", "write", "copy"].index(r["params"]["op"])
                                 if r["params"].get("op") in ("read", "write", "copy") else 3))
        ys = range(len(rows))[::-1]
        for y, r in zip(ys, rows):
            schedule = r["params"].get("schedule", r["params"].get("op"))
            ax.barh(y, metric(r, M.tbps), color=f"C{schedules.index(schedule) % 10}",
                    hatch=PEER_HATCH if is_peer(r) else None, edgecolor="0.2" if is_peer(r) else "white", lw=0.5)
            ax.text(metric(r, M.tbps), y, f" {metric(r, 'tbps'):.2f}", va="center", fontsize=6)
        ax.set_yticks(list(ys), [": ".join(filter(None, (r["params"].get("op"), bandwidth_label(r["params"])))) +
                                 (" (peer)" if is_peer(r) else "") for r in rows], fontsize=7)
        for c in {metric(r, M.ceiling_tbps) for r in rows if metric(r, M.ceiling_tbps)}:
            ax.axvline(c, color="0.3", ls="--", lw=1)
            ax.text(c, len(rows) - 0.4, f"ceiling {c:.2f}", fontsize=7, ha="right", va="bottom", color="0.3")
        ax.set_title(f"{level.upper() if level != 'smem' else 'shared memory'}", fontsize=9, loc="left")
        ax.set_xlabel("TB/s")
        ax.set_xlim(0, max(max(metric(r, M.tbps) for r in rows),
                           max([metric(r, M.ceiling_tbps) or 0 for r in rows])) * 1.12)
    if any(is_peer(r) for r in p.rows):
        p.note("hatched: a peer (reported for context)")
    return fig
