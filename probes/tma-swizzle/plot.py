"""tma-swizzle's figure for scripts/plot.py. Where the TMA put each 16-byte chunk of the box: its index
within its 128-byte line."""
import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap
from plot import declared_metrics, figures

M = declared_metrics(__file__)
SUBJECT = "tma-swizzle: where the TMA put each 16-byte chunk"


ELEMENT_BYTES = {"fp8": 1, "bf16": 2, "fp32": 4}  # --dtype's element sizes (tma_swizzle.cpp, kElementBytes)


def swizzle_map(row):
    """(rows, chunks per row, placed[row][chunk]): for each 16-byte chunk of the box, its index within
    the 128-byte line the hardware put it in (None where no byte of it was found)."""
    placement = row.get("check", {}).get("placement")
    if isinstance(placement, dict):  # schema v2: one placed chunk (byte offset / 16) per box chunk
        rows_n, chunks = placement["rows"], placement["chunks_per_row"]
        per_line = 128 // placement.get("chunk_bytes", 16)
        flat = placement["placed_chunk"]
        return rows_n, chunks, [[None if c is None else c % per_line for c in flat[y * chunks:(y + 1) * chunks]]
                                for y in range(rows_n)]
    # Schema v1: [row, column in elements, placed byte offset] per element; a chunk's first element
    # says where the chunk went.
    size = ELEMENT_BYTES[row["params"]["dtype"]]
    placed = {}
    for y, col, byte in placement:
        placed.setdefault((y, col * size // 16), byte)
    rows_n = max(y for y, _ in placed) + 1
    chunks = max(c for _, c in placed) + 1
    return rows_n, chunks, [[None if (y, c) not in placed else placed[(y, c)] % 128 // 16 for c in range(chunks)]
                            for y in range(rows_n)]


def draw(p, report):
    order = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
    rows = sorted((r for r in p.rows if r.get("check", {}).get("placement")),
                  key=lambda r: order.get(r["params"]["mode"], 9))
    fig, axes = figures(1, max(len(rows), 1), figsize=(2.4 * max(len(rows), 1) + 1.5, 6))
    cmap = ListedColormap([plt.get_cmap("tab10")(i) for i in range(8)])
    cmap.set_bad("0.85")
    image = None
    for ax, r in zip(axes[0], rows):
        rows_n, chunks, placed = swizzle_map(r)
        grid = [[float("nan") if c is None else c for c in line] for line in placed]
        image = ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=7.5, aspect="auto", interpolation="nearest")
        ax.set_title(f"{r['params']['mode']} swizzle\n{r['params']['dtype']}, box {r['params'].get('box', '')}",
                     fontsize=9)
        ax.set_xticks(range(chunks))
        ax.set_xlabel("16-byte chunk in the box row")
        ax.set_ylabel("box row")
    if image is not None:
        bar = fig.colorbar(image, ax=axes, ticks=range(8), shrink=0.8)
        bar.set_label("chunk index within its 128-byte line, as placed")
    else:
        axes[0][0].set_axis_off()
        axes[0][0].text(0.5, 0.5, "no row carries a placement map", ha="center", transform=axes[0][0].transAxes)
    if len(rows) < len(p.rows):
        p.note(f"{len(p.rows) - len(rows)} rows without a placement map not drawn")
    return fig
