#!/usr/bin/env python3
"""The SASS checks' tools without a network: scripts/unpack_tools.py must take cuobjdump and nvdisasm
out of wheels laid out as NVIDIA's (nvidia/cu13/bin/...) into one folder, executable; say which tool a
set of wheels lacks (exit 1) and give its usage without arguments (exit 2). tests/gpu/check_sass.py
must say skipped (exit 77) when neither PATH nor its second argument holds a cuobjdump.

usage: test_sass_tools.py SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile
import zipfile

from checklist import Checklist

SOURCE = sys.argv[1]
UNPACK = os.path.join(SOURCE, "scripts", "unpack_tools.py")
CHECK_SASS = os.path.join(SOURCE, "tests", "gpu", "check_sass.py")


def wheel(path, tool):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"nvidia/cu13/bin/{tool}", f"#!/bin/sh\necho {tool}\n")
        z.writestr(f"nvidia_cuda_{tool}-13.5.37.dist-info/METADATA", "Name: x\n")


def run(*args, env=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)


def main():
    checks = Checklist("sass_tools")
    with tempfile.TemporaryDirectory() as tmp:
        wheels = [os.path.join(tmp, f"{t}.whl") for t in ("cuobjdump", "nvdisasm")]
        for w, t in zip(wheels, ("cuobjdump", "nvdisasm")):
            wheel(w, t)
        out = os.path.join(tmp, "bin")
        r = run(UNPACK, out, *wheels)
        checks.expect(r.returncode == 0, f"both wheels: exit {r.returncode} {r.stderr}")
        checks.expect(sorted(os.listdir(out)) == ["cuobjdump", "nvdisasm"], f"unpacked: {sorted(os.listdir(out))}")
        checks.expect(all(os.access(os.path.join(out, t), os.X_OK) for t in os.listdir(out)), "executable")
        r = run(UNPACK, os.path.join(tmp, "one"), wheels[0])
        checks.expect(r.returncode == 1 and "no nvdisasm" in r.stderr, f"nvdisasm missing: exit {r.returncode} {r.stderr}")
        r = run(UNPACK)
        checks.expect(r.returncode == 2 and "usage:" in r.stderr, f"no arguments: exit {r.returncode} {r.stderr}")
        bare = dict(os.environ, PATH=tmp)  # no cuobjdump on PATH
        r = run(CHECK_SASS, os.path.join(tmp, "tkprobe"), os.path.join(tmp, "missing", "cuobjdump"), env=bare)
        checks.expect(r.returncode == 77 and r.stdout.startswith("skipped: cuobjdump not found"),
                      f"no cuobjdump: exit {r.returncode} {r.stdout}")
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
