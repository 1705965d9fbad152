"""What the one-process peer comparisons share (compare_decode.py, compare_fp8.py): the rows (one per
kernel and shape, timed in turns, checked against bounds; the peers' marked so `tkprobe compare`
reports and never judges them), findings, report, table, options and the run's frame. It imports no
torch: the run takes the caller's."""
import gc
import json
import os
import sys

import compare_based as based  # the telemetry section, plural, NaN as null
import compare_sdpa as sdpa  # statistics, the SM clock's telemetry
import tkreport  # the report's rounding, as tkprobe writes

class PeerTable:
    """One script's table: its probe name, our kernel and the peers, each row's params and words, the
    rate its findings rank by ((metric, unit, format)), and the check: its text and bounds (relative
    error, worst row, and LSE where a kernel gives one)."""

    def __init__(self, probe, ours, peers, params, describe, rate, check_what, bounds):
        self.probe, self.ours, self.peers, self.kernels = probe, ours, tuple(peers), (ours, *peers)
        self.params, self.describe, self.rate, self.check_what = params, describe, rate, check_what
        self.max_rel, self.max_row, self.max_lse = bounds

    def passed(self, errors):
        """Within every bound; False on NaN (an element left unwritten)."""
        lse = errors.get("lse_error")
        return errors["rel_error"] < self.max_rel and errors["worst_row_error"] < self.max_row and \
            (lse is None or lse < self.max_lse)

    def check_of(self, errors):
        number = based.number
        check = {"what": self.check_what, "value": number(errors["rel_error"]), "max": self.max_rel,
                 "worst_row_error": number(errors["worst_row_error"]), "worst_row_max": self.max_row}
        if errors.get("lse_error") is not None:
            check.update(lse_error=number(errors["lse_error"]), lse_max=self.max_lse)
        check["passed"] = self.passed(errors)
        return check

    def measured_row(self, kernel, shape, seconds, rates, errors, ratios=None, span=(None, None), clocks=()):
        """A timed, checked row: ms per launch (`seconds`: each timed launch's) and the script's `rates`
        (metrics), the checked launch's errors ({rel_error, worst_row_error, lse_error where given}),
        for a peer ours' paired speed over it, NVML's throttling and the SM clock under its launches."""
        metrics = {"ms": sdpa.summarize([s * 1e3 for s in seconds], "ms", "lower"), **rates,
                   "rel_error": based.number(errors["rel_error"]),
                   "worst_row_error": based.number(errors["worst_row_error"])}
        if errors.get("lse_error") is not None:
            metrics["lse_error"] = based.number(errors["lse_error"])
        if ratios is not None:
            metrics["ratio"] = sdpa.summarize(ratios, "x", "higher")  # ours over this peer: above 1, ours is faster
        row = {"probe": self.probe, "params": self.params(kernel, shape),
               "status": "ok" if self.passed(errors) else "failed", "metrics": metrics, "primary": self.rate[0],
               "check": self.check_of(errors)}
        telemetry = sdpa.with_clock(based.row_telemetry(*span) or {}, clocks)
        if telemetry:
            row["telemetry"] = telemetry
        return self.as_peer_where_due(kernel, row)

    def skipped_row(self, kernel, shape, reason):
        return self.as_peer_where_due(kernel, {"probe": self.probe, "params": self.params(kernel, shape),
                                               "status": "skipped", "reason": reason, "metrics": {}})

    def as_peer_where_due(self, kernel, row):
        """The peers' rows: `tkprobe compare` reports them and never judges them."""
        if kernel in self.peers:
            row["peer"] = True
        return row

    def kernel_findings(self, kernel, rows):
        """A line of the kernel's rate over the shapes, and for a peer one of ours' paired speed over it."""
        median = lambda r, m: r["metrics"][m]["median"]
        metric, unit, form = self.rate
        mine = [r for r in rows if r["params"]["kernel"] == kernel]
        timed = [r for r in mine if metric in r["metrics"]]
        skipped = [r for r in mine if r["status"] == "skipped"]
        if not timed:
            return [f"{kernel}: skipped ({based.plural(len(skipped), 'shape')}): {skipped[0]['reason']}"] if skipped \
                else []
        best, worst = (f(timed, key=lambda r: median(r, metric)) for f in (max, min))
        failed = sum(1 for r in timed if r["status"] == "failed")
        lines = [f"{kernel}: {form.format(median(worst, metric))}..{form.format(median(best, metric))} {unit} over "
                 f"{based.plural(len(timed), 'shape')}; best {self.describe(best['params'])} = "
                 f"{median(best, 'ms'):.4f} ms; slowest {self.describe(worst['params'])}; {failed} failed the check, "
                 f"{len(skipped)} skipped"]
        ratios = [median(r, "ratio") for r in timed if "ratio" in r["metrics"]]
        if ratios:
            lines.append(f"{self.ours} over {kernel}, paired launch by launch: {min(ratios):.2f}x..{max(ratios):.2f}x "
                         f"over {based.plural(len(ratios), 'shape')} (above 1: {self.ours} is faster)")
        return lines

    def report(self, tool, host, device, rows, spans):
        """The tkprobe.report/2 document. `spans`: the NVML readings (before, after) of each measured row."""
        rows = json.loads(json.dumps(rows))  # the caller's rows stay whole
        tkreport.drop_repeated_check_texts(rows)
        findings = [{"probe": self.probe, "text": text} for kernel in self.kernels
                    for text in self.kernel_findings(kernel, rows)]
        doc = {"schema": based.SCHEMA, "tool": dict(tool, probes=[self.probe]), "host": host, "device": device,
               "telemetry": {self.probe: based.probe_telemetry(spans)}, "results": rows, "findings": findings}
        return tkreport.round_significant(doc)


    def markdown(self, doc, columns):
        """A line a row: shape, kernel, ms, then `columns` ((header, cell of the metrics) each), the
        errors, ours' paired speed over the peer's, status."""
        heads = [name for name, _ in columns]
        lines = ["| shape | kernel | ms | " + " | ".join(heads) + f" | rel. error | worst row | {self.ours} / it "
                 "(paired) | status |", "|---|---|" + "---:|" * (len(columns) + 4) + "---|"]
        error = lambda m, name: "-" if name not in m else ("NaN" if m[name] is None else f"{m[name]:.2e}")
        for r in doc["results"]:
            p, m = r["params"], r["metrics"]
            status = {"ok": "ok", "failed": "FAILED"}.get(r["status"]) or f"skipped: {r.get('reason', '')}"
            if self.rate[0] not in m:
                lines.append(f"| {self.describe(p)} | {p['kernel']} |" + " - |" * (len(columns) + 4) + f" {status} |")
                continue
            ratio = f"{m['ratio']['median']:.3f}" if "ratio" in m else "-"
            cells = [cell(m) for _, cell in columns]
            lines.append(f"| {self.describe(p)} | {p['kernel']} | {m['ms']['median']:.4f} | " + " | ".join(cells) +
                         f" | {error(m, 'rel_error')} | {error(m, 'worst_row_error')} | {ratio} | {status} |")
        return "\n".join(lines) + "\n"


# ---- the run (torch and a GPU) ----

def start(torch, args, load_kernels):
    """The GPU session, the kernels (load_kernels(names, library) -> ({kernel: (module or None, why)},
    versions); each that did not load said on stderr), the report's tool section with the versions,
    and the SM clock's bracket."""
    if not torch.cuda.is_available():
        no_device("no CUDA device for PyTorch")
    gpu = sdpa.GpuSession(torch, args.seed)
    loaded, versions = load_kernels(args.kernels, args.tk_lib)
    script = os.path.basename(sys.argv[0])
    for kernel, (module, why) in loaded.items():
        if module is None:
            print(f"{script}: {kernel} skipped: {why}", file=sys.stderr)
    tool = gpu.tool(f"{script} (torch {torch.__version__}" + "".join(f", {v}" for v in versions) + ")")
    return gpu, loaded, tool, sdpa.sm_clock(torch, args.tk_lib)


def load_tk_attention(path):
    """This checkout's tk_attention package (not an installed one) on the library at `path`."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    import tk_attention
    tk_attention.load(path)
    return tk_attention


def measure_all(torch, shapes, measure_shape):
    """Every shape's rows and NVML spans (measure_shape(shape) -> (rows, spans)), a line a row on
    stderr as it is made, the GPU's memory let go between shapes."""
    rows, spans = [], []
    for shape in shapes:
        more, more_spans = measure_shape(shape)
        rows += more
        spans += more_spans
        for row in more:
            print(json.dumps(row["params"]), row["status"], row.get("reason", ""), file=sys.stderr)
        gc.collect()
        torch.cuda.empty_cache()
    return rows, spans


# ---- options ----

def parse_kernels(parser, text, kernels):
    chosen = text.split(",")
    if any(k not in kernels for k in chosen) or len(set(chosen)) != len(chosen):
        parser.error(f"--kernels {text}: give some of {','.join(kernels)}, comma-separated, each once")
    return chosen


def add_run_options(parser, kernels, default_lib, lib_help):
    """--kernels, --tk-lib and the timing: --reps, --rounds, --warmup."""
    parser.add_argument("--kernels", default=",".join(kernels), help=f"of {','.join(kernels)}, comma-separated")
    parser.add_argument("--tk-lib", default=default_lib, help=lib_help)
    parser.add_argument("--reps", type=int, default=50, help="timed launches per kernel and shape (>= 20)")
    parser.add_argument("--rounds", type=int, default=25, help="turns the kernels' launches are split into")
    parser.add_argument("--warmup", type=int, default=5, help="untimed launches first")


def check_run_options(parser, args, ours, kernels):
    """--kernels, the timing and --seed; the library where ours runs; --json's folder."""
    args.kernels = parse_kernels(parser, args.kernels, kernels)
    based.check_timing_options(parser, args)
    if ours in args.kernels and not os.path.isfile(args.tk_lib):
        parser.error(f"--tk-lib {args.tk_lib}: no such file (build it: cmake --build build; or leave {ours} out of "
                     "--kernels)")
    if args.json and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        parser.error(f"--json {args.json}: its folder does not exist")


def no_device(why):
    """tkprobe's exit code 3: nothing here to measure with."""
    print(f"{os.path.basename(sys.argv[0])}: {why}", file=sys.stderr)
    sys.exit(3)


def main(args, run_all, markdown):
    """Measures (run_all(args) -> the report), writes --json whole or not at all, prints the table.
    Exit 0; 1 where a row failed its check; 3 without PyTorch; 4 on a CUDA error."""
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        no_device("needs PyTorch with CUDA (e.g. pip install torch)")
    return based.reported(run_all, args, markdown, args.json)
