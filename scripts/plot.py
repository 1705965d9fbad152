#!/usr/bin/env python3
"""Draws the figures a tkprobe report's readers want, one PNG per probe per report.

    scripts/plot.py REPORT.json [REPORT.json ...] --out DIR [--probes a,b]

Reads tkprobe.report/1, /2 and /3 files (results/README.md; tkreport.py decodes /3) and writes
DIR/<probe>.png for each probe present (DIR/<probe>-<report name>.png when several reports hold the
same probe). Only `ok` rows are drawn; each figure's footnote counts the skipped and failed rows it
leaves out. Every figure's title names the GPU and the commit the report was made by.

Each probe's figure lives in its folder, probes/<name>/plot.py (a command's rows' in
scripts/plots/<name>.py): SUBJECT (the figure's title) and
draw(p, report), which returns the figure of the Plot `p`'s rows; or NOT_DRAWN, why the probe has no
figure (a note on stdout when a report holds it). Its metric names come from the probe's
metrics.json (declared_metrics). A probe with no plot.py gets the same note, so a newer report
still draws what it can. This file holds what the figures share: reading reports, the drawing
helpers, writing PNGs.

Bad input (a file that is not a tkprobe report, unreadable JSON, a row without what its figure needs,
an unknown name in --probes, an --out that cannot be written) is one message on stderr naming what is
valid, exit 2, and no file: every figure is drawn in memory before the first is written, and each PNG
goes to a temporary name in DIR and is renamed, so none is ever half-written.
"""
import argparse
import collections
import functools
import importlib.util
import io
import json
import os
import re
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.modules.setdefault("plot", sys.modules[__name__])  # the probes' plot.py import their helpers from here
import tkreport  # noqa: E402 (beside this script: a report of any version as the version 2 document)

try:
    import matplotlib
    matplotlib.use("Agg")  # files only: never a display
    import matplotlib.pyplot as plt
    from PIL import Image  # matplotlib depends on Pillow
    # 3.6: the layout engine's rect, which keeps the footnote's strip free (Debian 12 has 3.6.3).
    if tuple(int(v) for v in re.findall(r"\d+", matplotlib.__version__)[:2]) < (3, 6):
        raise ImportError(f"matplotlib {matplotlib.__version__} is older than 3.6")
except ImportError as e:  # the machine, not the input, needs changing: exit 2 as setup.sh does
    print(f"plot.py: {e} for {sys.executable}: apt-get install python3-matplotlib (Debian 12's python3; "
          "scripts/setup.sh does) or python3 -m pip install 'matplotlib>=3.6'", file=sys.stderr)
    sys.exit(2)

SCHEMAS = tkreport.SCHEMAS
PROBES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "probes")
COMMAND_PLOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots")
DPI = 100
PEER_HATCH = "//"
UMASK = os.umask(0o022)  # reading the umask means setting it: put it back at once
os.umask(UMASK)


class BadInput(Exception):
    """A problem with the command line or its files: one message, exit 2."""


# ---- reading reports ----

def load_report(path):
    try:
        with open(path) as f:
            report = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadInput(f"{path}: not JSON ({e}); expected a tkprobe report ({' or '.join(SCHEMAS)})")
    schema = report.get("schema") if isinstance(report, dict) else None
    if schema not in SCHEMAS:
        raise BadInput(f"{path}: not a tkprobe report: schema is {schema!r}, expected one of {', '.join(SCHEMAS)}")
    try:
        report = tkreport.decoded(report)
    except ValueError as e:
        raise BadInput(f"{path}: {e}")
    if not isinstance(report.get("results"), list):
        raise BadInput(f"{path}: not a tkprobe report: no 'results' list")
    if "devices" in report:  # a figure is of one GPU: rows of several would be drawn as one
        raise BadInput(f"{path}: a report of several devices (--devices, {len(report['devices'])} here); plot a "
                       "report of one (tkprobe ... --device N)")
    for i, row in enumerate(report["results"]):
        if not (isinstance(row, dict) and isinstance(row.get("probe"), str) and isinstance(row.get("params"), dict)
                and isinstance(row.get("metrics"), dict) and row.get("status") in ("ok", "skipped", "failed")):
            raise BadInput(f"{path}: results[{i}] is not a tkprobe row (probe, params, status ok/skipped/failed, "
                           "metrics)")
    return report


def value(metric):
    """A metric's figure: the median of a measurement, or the plain value."""
    return metric.get("median") if isinstance(metric, dict) else metric


def metric(row, name):
    return value(row["metrics"].get(name))


def is_peer(row):
    return bool(row.get("peer"))




# ---- shared drawing helpers ----

class Plot:
    """One figure in the making: its rows (the `ok` ones), the notes its footnote will carry."""

    def __init__(self, rows):
        self.rows = [r for r in rows if r["status"] == "ok"]
        left_out = collections.Counter(r["status"] for r in rows if r["status"] != "ok")
        self.notes = [f"{len(self.rows)} rows drawn"] + [f"{n} {status} rows left out"
                                                         for status, n in sorted(left_out.items())]

    def note(self, text):
        self.notes.append(text)


def figures(rows, cols, figsize, **kw):
    """A grid of axes (always 2-D), laid out by matplotlib's constrained layout, which makes room for
    colour bars, twin axes and the title."""
    return plt.subplots(rows, cols, figsize=figsize, squeeze=False, layout="constrained", **kw)


def figure(figsize):
    fig, axes = figures(1, 1, figsize)
    return fig, axes[0][0]


def finish(fig, subject, report, source, notes):
    """The title (what, the GPU, the commit) and the footnote (the report, the rows left out)."""
    device = report.get("device", {}).get("name", "unknown GPU")
    sha = report.get("tool", {}).get("git_sha", "unknown commit")
    fig.suptitle(f"{subject}\n{device} · commit {sha}", fontsize=11)
    # About 20 characters of 7-point text per inch: narrow figures wrap their footnote.
    footnote = textwrap.wrap(f"{os.path.basename(source)}: " + "; ".join(notes), int(fig.get_figwidth() * 20))
    fig.text(0.005, 0.005, "\n".join(footnote), fontsize=7, color="0.35", ha="left", va="bottom")
    # Constrained layout does not see fig.text: keep a strip free for the footnote, 0.12 inch a line
    # (rect is left, bottom, width, height).
    strip = (0.08 + 0.12 * len(footnote)) / fig.get_figheight()
    fig.get_layout_engine().set(rect=(0, strip, 1, 1 - strip))


def png(fig):
    """The figure as PNG bytes, a 256-colour palette image: a quarter of the bytes of matplotlib's
    RGBA, the same picture to the eye."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    image = Image.open(buffer).convert("RGB").quantize(colors=256, method=Image.FASTOCTREE)
    buffer = io.BytesIO()
    image.save(buffer, format="png", optimize=True)
    return buffer.getvalue()


def write(out_dir, name, data):
    """Writes DIR/name.png whole or not at all: a temporary file in DIR, then a rename. Its path."""
    path = os.path.join(out_dir, f"{name}.png")
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".png.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~UMASK)  # mkstemp makes it private; the PNG is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def grouped_bars(ax, groups, series, height, peer=lambda s: False, labels=True):
    """Bars side by side: one cluster per group, one bar per series (height(group, series) or None
    where that pair was not measured); peers hatched. Returns each drawn bar's (rectangle, value)."""
    width = 0.8 / max(len(series), 1)
    drawn = []
    for i, s in enumerate(series):
        xs, hs = [], []
        for g, group in enumerate(groups):
            h = height(group, s)
            if h is not None:
                xs.append(g - 0.4 + width * (i + 0.5))
                hs.append(h)
        bars = ax.bar(xs, hs, width, label=s, hatch=PEER_HATCH if peer(s) else None,
                      color=f"C{i % 10}", edgecolor="white" if not peer(s) else "0.2", linewidth=0.5)
        drawn.extend(zip(bars, hs))
    ax.set_xticks(range(len(groups)))
    if labels:
        ax.set_xticklabels(groups, fontsize=8)
    return drawn


def legend_on_top(ax, **kw):
    """The legend in a strip added above the bars, so it covers none of them."""
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * 1.18)
    ax.legend(loc="upper center", ncol=4, fontsize=8, title_fontsize=8, **kw)


def label_bars(ax, drawn, fmt="{:.0f}"):
    for bar, h in drawn:
        ax.annotate(fmt.format(h), (bar.get_x() + bar.get_width() / 2, h), ha="center", va="bottom", fontsize=6,
                    xytext=(0, 1), textcoords="offset points")


# ---- the probes' figures ----

class Metrics:
    """A probe's metric names as its metrics.json declares them: `M.tbps` is "tbps"; a name it does not
    declare is an AttributeError, which a figure reports as input it cannot draw."""

    def __init__(self, probe, names):
        self._probe, self._names = probe, frozenset(names)

    def __getattr__(self, name):
        if name.startswith("_") or name not in self._names:
            raise AttributeError(f"{name!r} is not in probes/{self._probe}/metrics.json")
        return name


def declared_metrics(plot_file):
    """The metric names of the probe whose probes/<name>/plot.py is `plot_file`."""
    folder = os.path.dirname(os.path.abspath(plot_file))
    with open(os.path.join(folder, "metrics.json")) as f:
        return Metrics(os.path.basename(folder), json.load(f)["metrics"])


@functools.cache
def probe_plots():
    """probe -> its figure's module: probes/<name>/plot.py for a probe, scripts/plots/<name>.py for the
    rows a command makes (roofline)."""
    paths = {name: os.path.join(PROBES, name, "plot.py") for name in os.listdir(PROBES)}
    paths.update({name[:-3]: os.path.join(COMMAND_PLOTS, name) for name in os.listdir(COMMAND_PLOTS)
                  if name.endswith(".py")})
    plots = {}
    for name, path in sorted(paths.items()):
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location(f"probe_plot_{name.replace('-', '_')}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            plots[name] = module
    return plots


def drawn(probe):
    """Whether `probe` has a figure (its plot.py has draw)."""
    return hasattr(probe_plots().get(probe), "draw")


# ---- the command ----

def parse_args(argv):
    parser = argparse.ArgumentParser(description="Draw a tkprobe report's figures as PNG files.")
    parser.add_argument("reports", nargs="+", metavar="REPORT.json")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder the PNGs go to (created if missing)")
    known = list(probe_plots())
    parser.add_argument("--probes", metavar="a,b", help=f"only these probes (of: {', '.join(known)})")
    args = parser.parse_args(argv)
    if args.probes is not None:
        args.probes = [p.strip() for p in args.probes.split(",") if p.strip()]
        unknown = [p for p in args.probes if p not in known]
        if unknown or not args.probes:
            raise BadInput(f"--probes: unknown probe {', '.join(map(repr, unknown)) or '(none given)'}; "
                           f"valid: {', '.join(known)}")
    return args


def prepare_out(out):
    """Creates DIR if missing and proves a file can be written there."""
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise BadInput(f"--out {out}: cannot write there ({e.strerror}); give a folder you can write to")


def figure_names(reports, wanted):
    """(report index, probe, file name) for every figure: <probe>, or <probe>-<report name> when
    several reports hold that probe."""
    holders = collections.defaultdict(list)
    for i, (path, report) in enumerate(reports):
        for probe in dict.fromkeys(r["probe"] for r in report["results"]):
            if wanted is None or probe in wanted:
                holders[probe].append(i)
    names, taken = [], set()
    for probe, indices in holders.items():
        for i in indices:
            stem = os.path.splitext(os.path.basename(reports[i][0]))[0]
            # A name from a report never leaves DIR or hides: letters, digits, '.', '_' and '-' only.
            base = re.sub(r"[^A-Za-z0-9._-]", "_", probe if len(indices) == 1 else f"{probe}-{stem}").lstrip(".")
            name, n = base, 1
            while name in taken:  # two reports with one file name
                n += 1
                name = f"{base}-{n}"
            taken.add(name)
            names.append((i, probe, name))
    return names


def render(reports, wanted):
    """Every figure as PNG bytes by file name, and a note for each probe that gets none. Nothing is
    written yet, so a report that cannot be drawn leaves no file behind."""
    notes = [f"{probe}: no rows in the reports given; no figure"
             for probe in sorted((wanted or set()) - {r["probe"] for _, report in reports for r in report["results"]})]
    pngs = {}
    for i, probe, name in figure_names(reports, wanted):
        path, report = reports[i]
        source = os.path.basename(path)
        if not drawn(probe):
            why = getattr(probe_plots().get(probe), "NOT_DRAWN", "this script has no plot for it")
            notes.append(f"{probe} ({source}): no figure ({why})")
            continue
        rows = [r for r in report["results"] if r["probe"] == probe]
        p = Plot(rows)
        if not p.rows:
            notes.append(f"{probe} ({source}): no ok rows ({len(rows)} skipped or failed); no figure")
            continue
        module = probe_plots()[probe]
        try:
            fig = module.draw(p, report)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise BadInput(f"{path}: cannot draw {probe}: {type(e).__name__} {e} (a row lacks what "
                           f"results/README.md says a {probe} row carries?)")
        finish(fig, module.SUBJECT, report, path, p.notes)
        pngs[name] = png(fig)
    return pngs, notes


def main(argv):
    try:
        args = parse_args(argv)
        reports = [(path, load_report(path)) for path in args.reports]
        pngs, notes = render(reports, set(args.probes) if args.probes else None)
        prepare_out(args.out)
    except BadInput as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    for name, data in pngs.items():
        print(write(args.out, name, data))
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
