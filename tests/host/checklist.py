"""What a host test script does with its checks (tests/CMakeLists.txt runs each as a ctest): keep
going past a failed one so that one run names every failure, print them, end with one line, and
exit 1 if any failed.

    checks = Checklist("ab")
    checks.expect(r.returncode == 2, f"bad usage: exit {r.returncode}")
    sys.exit(checks.exit_code())"""
import subprocess
import sys


def run_script(script, *args):
    """A Python script run as a user runs it, its exit code and output captured."""
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


class Checklist:
    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failures = []

    def expect(self, ok, what):
        """Records `what` as a failure unless `ok`; returns `ok`."""
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
        return ok

    def exit_code(self):
        for failure in self.failures:
            print("FAIL:", failure)
        print(f"{self.name}: {self.passed} passed, {len(self.failures)} failed")
        return 1 if self.failures else 0
