#!/usr/bin/env python3
"""scripts/setup.sh's tool checks, against stand-in cmake and nvcc that report the versions a fresh
machine might have: too old a CMake or nvcc is one clear message naming what to install, exit 2.
CMake's own check (cmake/require_nvcc.cmake, which `pip install .` meets first) likewise."""
import os
import shutil
import subprocess
import sys
import tempfile

from checklist import Checklist

ROOT = sys.argv[1]


def stand_in(bin_dir, tool, text):
    """An executable `tool` that prints `text` (None: fails as a missing command would)."""
    path = os.path.join(bin_dir, tool)
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nprintf '{text}'\n" if text else "#!/bin/sh\nexit 127\n")
    os.chmod(path, 0o755)


def nvcc_says(version):
    return version and f"Cuda compilation tools, release {version}, V{version}.1\n"


def check(cmake, nvcc):
    """Sources setup.sh with stand-ins reporting these versions (None: absent); (exit code, stderr)."""
    with tempfile.TemporaryDirectory() as bin_dir:
        stand_in(bin_dir, "cmake", cmake and f"cmake version {cmake}\n")
        stand_in(bin_dir, "nvcc", nvcc_says(nvcc))
        env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin", TKPROBE_NO_INSTALL="1", TKPROBE_CHECK_ONLY="1")
        run = subprocess.run(["bash", "-c", f"source '{ROOT}/scripts/setup.sh'"], env=env, capture_output=True,
                             text=True)
        return run.returncode, run.stderr


def configure(nvcc):
    """Configures the package build with only a stand-in nvcc of this version on PATH (None: no nvcc);
    (exit code, stderr with CMake's line breaks undone)."""
    with tempfile.TemporaryDirectory() as tmp:
        if nvcc:
            stand_in(tmp, "nvcc", nvcc_says(nvcc))
        env = {k: v for k, v in os.environ.items() if k not in ("CUDACXX", "CUDA_PATH")}
        run = subprocess.run([shutil.which("cmake"), "-S", ROOT, "-B", os.path.join(tmp, "build"),
                              "-DTKPROBE_PACKAGE_ONLY=ON"], env=dict(env, PATH=tmp), capture_output=True, text=True)
        return run.returncode, " ".join(run.stderr.split())


checks = Checklist("setup")
expect = checks.expect


code, err = check("3.22.1", "13.0")  # Ubuntu 22.04's apt CMake
expect(code == 2, f"old cmake: exit {code}")
expect("cmake 3.22.1 is older than 3.25" in err and "pip install 'cmake>=3.25'" in err, f"old cmake: {err!r}")
expect(err.count("\n") == 1, f"one line: {err!r}")

code, err = check("3.25.1", "11.8")
expect(code == 2 and "nvcc 11.8 is older than 12.1" in err, f"old nvcc: exit {code}, {err!r}")

code, err = check("3.18.4", None)  # Debian 11's CMake, no toolkit: both in one message
expect(code == 2 and "cmake 3.18.4" in err and "nvcc not found" in err and err.count("\n") == 1,
       f"both: exit {code}, {err!r}")

code, err = check("3.25.1", "13.0")
expect(code == 0 and err == "", f"new enough: exit {code}, {err!r}")

code, err = check("4.4.0", "12.1")  # version order is numeric, not textual
expect(code == 0, f"cmake 4.4 and nvcc 12.1 are new enough: exit {code}, {err!r}")

code, err = configure(None)
expect(code != 0 and "nvcc not found: install the CUDA Toolkit 12.1 or newer" in err and "CUDACXX=" in err,
       f"cmake without nvcc: exit {code}, {err!r}")
code, err = configure("11.8")
expect(code != 0 and "nvcc 11.8" in err and "is older than 12.1" in err, f"cmake with nvcc 11.8: exit {code}, {err!r}")

sys.exit(checks.exit_code())
