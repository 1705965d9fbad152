#!/usr/bin/env python3
"""scripts/train_check.py's rule (judge), without torch: curves within bf16 noise of SDPA's pass;
one off by more, one that went NaN, and a pair that never learned fail.

usage: test_train_check.py SOURCE_DIR
"""
import importlib.util
import os
import sys


def load_script(source_dir):
    spec = importlib.util.spec_from_file_location("train_check", os.path.join(source_dir, "scripts", "train_check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    m = load_script(sys.argv[1])
    failures = []
    sdpa = [5.5 - 0.02 * i for i in range(100)]  # falls from 5.5 to 3.5
    math_ = [x + 0.01 * (-1) ** i for i, x in enumerate(sdpa)]  # another backend: a little apart
    cases = [("the same curve", sdpa, True),
             ("1% above: within the 2% floor", [x * 1.01 for x in sdpa], True),
             ("10% above", [x * 1.1 for x in sdpa], False),
             ("NaN from step 50", sdpa[:50] + [float("nan")] * 50, False)]
    for what, ours, expected in cases:
        passed, lines = m.judge(ours, sdpa, math_, 20)
        if passed != expected:
            failures.append(f"{what}: judged {passed}:\n" + "\n".join(lines))
    flat = [5.5] * 100
    passed, lines = m.judge(flat, flat, flat, 20)
    if passed or "did not fall" not in lines[-1]:
        failures.append("flat curves passed:\n" + "\n".join(lines))
    # The noise the two SDPA backends show widens what is allowed.
    noisy_math = [x + 0.2 for x in sdpa]
    if not m.judge([x + 0.3 for x in sdpa], sdpa, noisy_math, 20)[0]:
        failures.append("a gap within 3x the measured noise failed")
    for f in failures:
        print("FAILED:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
