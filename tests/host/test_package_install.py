#!/usr/bin/env python3
"""The tk_attention package as a user installs it (python/README.md), without torch or a GPU: a fresh
virtual environment, the build backend's wheels fetched with `pip download` (the step a machine with
no package index is given the wheels by), then `pip install --no-index --find-links WHEELS SOURCE_DIR`
builds the CUDA library and installs it inside the package. Then, in that environment:
test_dropin_checks.py --installed (the checks, and the library the package carries answering its C
interface) and the package's version against CMakeLists.txt's. Exits 77 (skipped) when the wheels
cannot be fetched (no package index).

usage: test_package_install.py SOURCE_DIR WORK_DIR   (WORK_DIR is emptied first)
"""
import os
import re
import shutil
import subprocess
import sys
import time

from checklist import Checklist

# The build backend and what it may ask for: ninja where the machine has none.
BUILD_WHEELS = ["scikit-build-core", "ninja"]


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def tail(r, lines=30):
    return "\n".join((r.stdout + r.stderr).splitlines()[-lines:])


def main():
    source_dir, work_dir = sys.argv[1:3]
    shutil.rmtree(work_dir, ignore_errors=True)
    venv, wheels = os.path.join(work_dir, "venv"), os.path.join(work_dir, "wheels")
    made = run([sys.executable, "-m", "venv", venv])
    if made.returncode != 0:
        print(f"FAIL: {sys.executable} -m venv could not make an environment (Debian: apt-get install "
              f"python3-venv):\n{tail(made)}")
        return 1
    python = os.path.join(venv, "bin", "python")
    fetched = run([python, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", wheels, *BUILD_WHEELS])
    if fetched.returncode != 0:
        print(f"test_package_install.py: skipped: pip download {' '.join(BUILD_WHEELS)} failed (no package index?): "
              f"{tail(fetched, 3)}")
        return 77
    start = time.monotonic()
    installed = run([python, "-m", "pip", "install", "--no-index", "--find-links", wheels, source_dir])
    print(f"pip install built and installed the package in {time.monotonic() - start:.0f} s")

    checks = Checklist("package_install")
    if not checks.expect(installed.returncode == 0, f"pip install failed:\n{tail(installed)}"):
        return checks.exit_code()
    has_torch = run([python, "-c", "import torch"]).returncode == 0
    checks.expect(not has_torch, "the environment has torch: the checks below would not show they need none")
    dropin = run([python, os.path.join(source_dir, "tests", "host", "test_dropin_checks.py"), "--installed"])
    checks.expect(dropin.returncode == 0, f"the installed package's checks:\n{tail(dropin)}")
    with open(os.path.join(source_dir, "CMakeLists.txt")) as f:
        project_version = re.search(r"project\(tkprobe VERSION ([0-9.]+)", f.read()).group(1)
    version = run([python, "-c", "import importlib.metadata; print(importlib.metadata.version('tk_attention'))"])
    checks.expect(version.stdout.strip() == project_version,
                  f"package version {version.stdout.strip()!r} {version.stderr}, CMakeLists.txt's {project_version}")
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
