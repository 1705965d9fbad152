"""`tkprobe roofline`'s figure for scripts/plot.py: each kernel against the ceilings this GPU was
measured to have (solid) and its datasheet's (dashed), log-log."""
import statistics

from plot import figure, metric

SUBJECT = "roofline: kernels against the measured ceilings"
# Bandwidth ceilings (TB/s) are diagonals, compute ceilings (TFLOP/s) horizontal lines.
BANDWIDTHS = [("hbm", "HBM"), ("l2", "L2"), ("smem", "shared memory")]
COMPUTE = [("tensor_bf16", "tensor bf16"), ("tensor_fp16", "tensor fp16"), ("tensor_fp8", "tensor fp8"),
           ("tensor_tf32", "tensor tf32"), ("fp32", "FP32")]
# A kernel's intensity at each level: HBM filled, L2 and shared memory hollow, joined by a line.
LEVELS = [("intensity_dram", "o", "full"), ("intensity_l2", "s", "none"), ("intensity_smem", "^", "none")]


def ceiling(rows, name):
    """The ceiling's median over the kernels that have it (clock-bound ones differ with each clock)."""
    values = [metric(r, "ceiling_" + name) for r in rows if metric(r, "ceiling_" + name)]
    return statistics.median(values) if values else None


def short(kernel):
    """A kernel's name without its return type and arguments, at most 32 characters."""
    name = kernel.removeprefix("void ").split("(")[0]
    return name if len(name) <= 32 else name[:31] + "…"


def draw(p, report):
    rows = [r for r in p.rows if (metric(r, "tflops") or 0) > 0 and metric(r, "intensity_dram")]
    for r in p.rows:
        if r not in rows:
            p.note(f"{r['params']['kernel'][:40]} (no FLOPs or no HBM bytes): {metric(r, 'binding')} at "
                   f"{metric(r, 'pct_of_binding'):.0f}%, not drawn")
    if not rows:
        raise ValueError("no kernel with both FLOPs and HBM bytes to place")
    fig, ax = figure((9, 6))
    xs = [metric(r, key) for r in rows for key, _, _ in LEVELS if metric(r, key)]
    lo, hi = min(xs) / 4, max(xs) * 4
    rates = [metric(r, "tflops") for r in rows]
    for key, label in COMPUTE:
        if (rate := ceiling(rows, key)) is not None:
            ax.plot([lo, hi], [rate, rate], color="0.2", lw=1.2)
            ax.text(hi, rate, f"{label} {rate:.0f}", ha="right", va="bottom", fontsize=7)
            rates.append(rate)
    for key, label in BANDWIDTHS:
        if (rate := ceiling(rows, key)) is not None:
            ax.plot([lo, hi], [lo * rate, hi * rate], color="0.2", lw=1.2)
            ax.text(lo * 1.1, lo * 1.1 * rate, f"{label} {rate:.2f} TB/s", fontsize=7, rotation=30, va="bottom",
                    clip_on=True)
    tensor = next((metric(r, "datasheet_tensor_tflops") for r in rows if metric(r, "datasheet_tensor_tflops")), None)
    if tensor:
        ax.plot([lo, hi], [tensor, tensor], color="0.5", ls="--", lw=1)
        ax.text(lo * 1.1, tensor, f"datasheet tensor {tensor:.0f}", fontsize=7, va="bottom", color="0.4")
        rates.append(tensor)
    if (hbm := metric(rows[0], "datasheet_hbm_tbps")):
        ax.plot([lo, hi], [lo * hbm, hi * hbm], color="0.5", ls="--", lw=1)
    names = list(dict.fromkeys(r["params"]["kernel"] for r in rows))  # a kernel launched again: one colour, one label
    labelled = set()
    for r in rows:
        name = r["params"]["kernel"]
        color = f"C{names.index(name) % 10}"
        level_x = [(metric(r, key), marker, fill) for key, marker, fill in LEVELS if metric(r, key)]
        y = metric(r, "tflops")
        ax.plot([x for x, _, _ in level_x], [y] * len(level_x), color=color, lw=0.6)
        if (overlap := metric(r, "ceiling_overlap")):  # this kernel's own: its softmax's share of the tensor time
            ax.plot([level_x[0][0] / 2, level_x[0][0] * 2], [overlap, overlap], color=color, ls=":", lw=1.2)
        for x, marker, fill in level_x:
            ax.plot(x, y, marker=marker, fillstyle=fill, color=color, ms=7)
        if name not in labelled:
            labelled.add(name)
            ax.annotate(f"{short(name)}: {metric(r, 'pct_of_binding'):.0f}% of {metric(r, 'binding')}",
                        (level_x[0][0], y), xytext=(4, -10 - 8 * (len(labelled) % 3)), textcoords="offset points",
                        fontsize=6, color=color, annotation_clip=True)
    clocks = [metric(r, "sm_clock_mhz") for r in rows]
    p.note(f"clock-bound ceilings at the kernels' median SM clock, {statistics.median(clocks):.0f} MHz "
           f"({min(clocks):.0f}-{max(clocks):.0f}); markers: HBM filled, L2 square, shared memory triangle; "
           "dotted: a kernel's overlap ceiling")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(min(rates) / 2, max(rates) * 2)
    ax.set_xlabel("FLOP per byte moved at the level")
    ax.set_ylabel("TFLOP/s")
    return fig
