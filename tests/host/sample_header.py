"""What the peers scripts' host tests share: the tool, host and device sections they build their
sample reports with (an H200 as tkprobe describes one, from a test run), NVML readings, the script
loaded as a module, and the checks of its report as tkprobe reads it and of its bad options."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from checklist import Checklist

TOOL = {"version": "test", "git_sha": "0000000", "command_line": "test", "started_at": "2026-01-01T00:00:00Z",
        "seed": 1}
HOST = {"hostname": "test", "driver": "unavailable", "cuda_runtime": "13.0"}
DEVICE = {"index": 0, "name": "NVIDIA H200", "cc": "9.0", "sms": 132, "l2_bytes": 62914560, "smem_per_sm": 233472,
          "smem_per_block_optin": 232448, "sm_clock_max_mhz": 1980, "mem_clock_mhz": 3201, "power_limit_w": 700.0}


def reading(sm, power, temp, reasons):
    """One NVML reading as the scripts take it."""
    return {"sm": sm, "power": power, "temp": temp, "reasons": reasons}


def load_script(source_dir, name):
    """scripts/NAME.py as a module (importing it needs no torch)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(source_dir, "scripts", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_written_report(text, tools, source_dir, checks, kernel):
    """A report's text as the script writes it: version 3 columns, tkprobe's schema, and `tkprobe
    compare` reading it (exit 1: the sample holds failed rows; 2 would be a refused report) and
    naming `kernel`. Returns the written JSON, or None without tools (the checks did not run)."""
    if tools is None:
        print("no VALIDATE_REPORT and TKPROBE given: the schema and reader checks did not run")
        return None
    validate, tkprobe = tools
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "peers.json")
        with open(path, "w") as f:
            f.write(text)
        written = json.loads(text)
        checks.expect(written["schema"] == "tkprobe.report/3", "written as tkprobe writes: version 2 in columns")
        v = subprocess.run([validate, os.path.join(source_dir, "results", "report.schema.json"), path],
                           capture_output=True, text=True)
        checks.expect(v.returncode == 0, f"validate_report: {v.stderr}")
        c = subprocess.run([tkprobe, "compare", path, path], capture_output=True, text=True)
        checks.expect(c.returncode == 1 and kernel in c.stdout, f"tkprobe compare: {c.returncode} {c.stderr}")
        return written


def check_bad_options(script, cases, checks):
    """Each (arguments, words) of `cases` exits 2 with the words on stderr."""
    for bad, says in cases:
        r = subprocess.run([sys.executable, script, *bad], capture_output=True, text=True)
        checks.expect(r.returncode == 2 and says in r.stderr, f"{bad}: exit {r.returncode} {r.stderr}")


def check_without_torch(script, args, out, checks):
    """A valid run where torch is missing exits 3 naming PyTorch, and writes no report at `out`."""
    if importlib.util.find_spec("torch") is not None:  # a valid run would measure
        return
    r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    checks.expect(r.returncode == 3 and "PyTorch" in r.stderr and not os.path.exists(out),
                  f"no torch: exit 3 and no report: {r.returncode} {r.stderr}")


def check_run_options(script, kernels, peer, checks):
    """The refusals of the options every peers script takes from peer_table (kernels: the valid
    --kernels, comma-separated; peer: one of them that needs no library), then a valid run without
    torch."""
    with tempfile.TemporaryDirectory() as tmp:
        check_bad_options(script, (
            (["--kernels", "flash-attn"], f"give some of {kernels}"),
            (["--kernels", "tk,tk"], "each once"),
            (["--reps", "10"], "--reps 10: give 20 or more"),
            (["--rounds", "7"], "--rounds 7: give a divisor of --reps"),
            (["--warmup", "-1"], "--warmup -1: give 0 or more"),
            (["--seed", "-1"], "--seed -1: give a non-negative integer"),
            (["--tk-lib", os.path.join(tmp, "none.so")], "no such file"),
            (["--kernels", peer, "--json", os.path.join(tmp, "no", "x.json")], "its folder does not exist")), checks)
        out = os.path.join(tmp, "x.json")
        check_without_torch(script, ["--kernels", peer, "--quick", "--json", out, "--tk-lib",
                                     os.path.join(tmp, "none.so")], out, checks)


def main(name, usage, check):
    """A peers test's entry point: SOURCE_DIR [VALIDATE_REPORT TKPROBE] from the command line (else
    `usage` on stderr and exit 2), scripts/NAME.py loaded, check(module, source_dir, tools or None,
    checks) run; the checks' exit code."""
    if len(sys.argv) not in (2, 4):
        print(usage, file=sys.stderr)
        return 2
    source_dir, tools = sys.argv[1], (sys.argv[2:4] if len(sys.argv) == 4 else None)
    checks = Checklist(name)
    check(load_script(source_dir, name), source_dir, tools, checks)
    return checks.exit_code()
