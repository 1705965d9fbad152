#!/usr/bin/env python3
"""Unpacks the named tools' executables (cuobjdump, nvdisasm) from NVIDIA's wheels into one folder:
scripts/setup.sh's way to give a compiler-only CUDA install the SASS checks' tools.

usage: scripts/unpack_tools.py OUT_DIR WHEEL..."""
import os
import sys
import zipfile

TOOLS = ("cuobjdump", "nvdisasm")


def main(out, wheels):
    os.makedirs(out, exist_ok=True)
    found = set()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                tool = os.path.basename(name)
                if tool in TOOLS and "/bin/" in name:
                    target = os.path.join(out, tool)
                    with open(target, "wb") as f:
                        f.write(z.read(name))
                    os.chmod(target, 0o755)
                    found.add(tool)
    missing = sorted(set(TOOLS) - found)
    if missing:
        print(f"unpack_tools.py: no {', '.join(missing)} in {', '.join(wheels)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
