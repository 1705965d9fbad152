#!/usr/bin/env python3
"""cmake/ptxas_guard.sh, every CUDA compile's launcher: with the real nvcc, a kernel whose wgmma
ptxas serialises fails its compile (naming the kernel) and a clean one passes; an allowed kernel
passes; run with no compile, it says how to use it (exit 2); with stand-in compilers, a failing
compile keeps its exit status and its output, and ptxas's other wgmma advisories (an injected
arrive, C7519) pass. The committed allow-list is well
formed: a mangled-name prefix and a reason on every line.

usage: test_ptxas_guard.py SOURCE_DIR NVCC"""
import os
import subprocess
import sys
import tempfile

SOURCE, NVCC = sys.argv[1], sys.argv[2]
GUARD = os.path.join(SOURCE, "cmake", "ptxas_guard.sh")
ALLOWED = os.path.join(SOURCE, "cmake", "ptxas_serialized_allowed.txt")
DATA = os.path.join(SOURCE, "tests", "host", "data", "ptxas_guard")
SERIALISED_KERNEL = "_Z10serialisedPfyyf"
failures = []


def check(what, ok, detail=""):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)
        print("      " + detail.replace("\n", "\n      "))


def guard(*command, allowed=None):
    env = dict(os.environ)
    if allowed is not None:
        env["PTXAS_GUARD_ALLOWED"] = allowed
    return subprocess.run(["bash", GUARD, *command], capture_output=True, text=True, env=env)


def compile_fixture(name, out_dir, allowed=None):
    return guard(NVCC, "--generate-code=arch=compute_90a,code=[sm_90a]", "-c", os.path.join(DATA, name),
                 "-o", os.path.join(out_dir, name + ".o"), allowed=allowed)


def stand_in(out_dir, text, status):
    path = os.path.join(out_dir, f"compiler-{status}.sh")
    with open(path, "w") as f:
        f.write(f"#!/usr/bin/env bash\ncat <<'END'\n{text}\nEND\nexit {status}\n")
    os.chmod(path, 0o755)
    return path


with tempfile.TemporaryDirectory() as tmp:
    r = compile_fixture("serialised.cu", tmp)
    check("a kernel whose wgmma ptxas serialises fails its compile, naming the kernel",
          r.returncode == 1 and "ptxas_guard" in r.stderr and SERIALISED_KERNEL in r.stderr.split("ptxas_guard")[1],
          f"exit {r.returncode}\n{r.stderr}")
    check("ptxas's own line is passed on", "wgmma.mma_async instructions are serialized" in r.stderr, r.stderr)

    r = compile_fixture("clean.cu", tmp)
    check("a clean wgmma kernel compiles", r.returncode == 0 and "ptxas_guard" not in r.stderr,
          f"exit {r.returncode}\n{r.stderr}")

    allowed = os.path.join(tmp, "allowed.txt")
    with open(allowed, "w") as f:
        f.write("# a comment\n\n_Z10serialised  the fixture, on purpose\n")
    r = compile_fixture("serialised.cu", tmp, allowed=allowed)
    check("an allowed kernel compiles, its advisory still shown",
          r.returncode == 0 and "serialized" in r.stderr and "ptxas_guard" not in r.stderr,
          f"exit {r.returncode}\n{r.stderr}")

    r = guard()
    check("no compile to run is a usage error", r.returncode == 2 and "usage: ptxas_guard.sh" in r.stderr,
          f"exit {r.returncode}\n{r.stderr}")

    r = guard(stand_in(tmp, "error: something else", 3))
    check("a failing compile keeps its exit status and output",
          r.returncode == 3 and "error: something else" in r.stderr, f"exit {r.returncode}\n{r.stderr}")

    arrive = ("ptxas info    : (C7519) warpgroup.arrive is injected in around line 12 by compiler to allow "
              "use of registers in GMMA in function '_Z1kv'")
    r = guard(stand_in(tmp, arrive, 0))
    check("an injected arrive (C7519) is not a serialisation", r.returncode == 0, f"exit {r.returncode}\n{r.stderr}")

with open(ALLOWED) as f:
    entries = [line.split() for line in f if line.strip() and not line.lstrip().startswith("#")]
check("every allowed entry is a mangled-name prefix with a reason",
      all(len(e) >= 2 and e[0].startswith("_Z") for e in entries), str(entries))

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
