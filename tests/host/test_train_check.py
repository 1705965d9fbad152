#!/usr/bin/env python3
"""scripts/train_check.py's rule (judge), without torch: curves within bf16 noise of SDPA's pass;
one off by more, one that went NaN, and a pair that never learned fail.

usage: test_train_check.py SOURCE_DIR
"""
import importlib.util
import os
import sys

from checklist import Checklist


def load_script(source_dir):
    spec = importlib.util.spec_from_file_location("train_check", os.path.join(source_dir, "scripts", "train_check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    m = load_script(sys.argv[1])
    checks = Checklist("train_check")
    sdpa = [5.5 - 0.02 * i for i in range(100)]  # falls from 5.5 to 3.5
    math_ = [x + 0.01 * (-1) ** i for i, x in enumerate(sdpa)]  # another backend: a little apart
    cases = [("the same curve", sdpa, True),
             ("1% above: within the 2% floor", [x * 1.01 for x in sdpa], True),
             ("10% above", [x * 1.1 for x in sdpa], False),
             ("NaN from step 50", sdpa[:50] + [float("nan")] * 50, False)]
    for what, ours, expected in cases:
        passed, lines = m.judge(ours, sdpa, math_, 20)
        checks.expect(passed == expected, f"{what}: judged {passed}:\n" + "\n".join(lines))
    flat = [5.5] * 100
    passed, lines = m.judge(flat, flat, flat, 20)
    checks.expect(not passed and "did not fall" in lines[-1], "flat curves passed:\n" + "\n".join(lines))
    # The noise the two SDPA backends show widens what is allowed.
    noisy_math = [x + 0.2 for x in sdpa]
    checks.expect(m.judge([x + 0.3 for x in sdpa], sdpa, noisy_math, 20)[0], "a gap within 3x the measured noise failed")
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
