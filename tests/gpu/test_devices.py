#!/usr/bin/env python3
"""--devices on real GPUs, through the tkprobe binary (each device's run starts the binary again, so
this cannot run inside gpu_tests): `--devices all` on every GPU of the machine, one device or many,
gives one report whose rows each name their device, as many per device as a run of one device gives,
each device's telemetry the probe's wall time, and which `compare` reads back. With two or more GPUs, `fleet` holds the devices of one report as
cards (identical cards pass) and `tkprobe all --devices all` adds p2p's rows, which name no device.
Exits 77 (skipped) without a GPU.

usage: test_devices.py TKPROBE"""
import os
import subprocess
import sys
import tempfile
import time

TKPROBE = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import tkreport  # noqa: E402

failures = []


def run(*args):
    return subprocess.run([TKPROBE, *args], capture_output=True, text=True, timeout=900)


def expect(ok, what):
    if not ok:
        failures.append(what)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        multi, one = os.path.join(tmp, "multi.json"), os.path.join(tmp, "one.json")
        r = run("smem-latency", "--quick", "--devices", "all", "--json", multi)
        if r.returncode == 3 and "no CUDA device" in r.stderr:
            print(f"skipped: no CUDA device ({r.stderr.strip()})")
            return 77
        expect(r.returncode == 0, f"smem-latency --devices all: exit {r.returncode}\n{r.stderr}")
        doc = tkreport.load(multi)
        devices = [d["device"]["index"] for d in doc.get("devices", [])]
        expect(devices == list(range(len(devices))) and devices, f"devices {devices}")
        expect("device" not in doc, "a report of several devices has no device section")
        expect(all(row.get("device") in devices for row in doc["results"]), "every row names a listed device")
        for d in doc.get("devices", []):
            took = d.get("telemetry", {}).get("smem-latency", {}).get("seconds")
            expect(took is not None, f"device {d['device']['index']}: the probe's wall time in its telemetry")
        start = time.monotonic()
        r = run("smem-latency", "--quick", "--device", "0", "--json", one)
        elapsed = time.monotonic() - start
        expect(r.returncode == 0, f"smem-latency --device 0: exit {r.returncode}\n{r.stderr}")
        single = tkreport.load(one)
        expect("devices" not in single and "device" in single, "a run of one device is as before")
        took = single["telemetry"].get("smem-latency", {}).get("seconds", -1)
        expect(0 <= took <= elapsed, f"smem-latency ran {took} s by its telemetry, within the {elapsed:.1f} s the "
               "command took")
        for d in devices:
            rows = [row for row in doc["results"] if row["device"] == d]
            expect(len(rows) == len(single["results"]), f"device {d}: {len(rows)} rows, a run of one has "
                   f"{len(single['results'])}")
        r = run("compare", multi, multi)
        expect(r.returncode == 0, f"compare of the report with itself: exit {r.returncode}\n{r.stdout}{r.stderr}")
        r = run("compare", one, multi)
        expect(r.returncode in (0, 1), f"compare of every device against one: exit {r.returncode}\n{r.stderr}")

        if len(devices) >= 2:
            r = run("fleet", multi)
            expect(r.returncode == 0, f"fleet of identical cards: exit {r.returncode}\n{r.stdout}{r.stderr}")
            suite = os.path.join(tmp, "suite.json")
            r = run("all", "--quick", "--devices", "all", "--probes", "info,p2p", "--json", suite)
            expect(r.returncode == 0, f"all --devices all --probes info,p2p: exit {r.returncode}\n{r.stderr}")
            doc = tkreport.load(suite)
            pairs = [row for row in doc["results"] if row["probe"] == "p2p"]
            expect(len(pairs) == 4 * len(devices) * (len(devices) - 1) and all("device" not in p for p in pairs),
                   f"{len(pairs)} p2p rows, each naming no device")
            expect(sum(row["probe"] == "info" for row in doc["results"]) == len(devices), "one info row per device")
        else:
            print(f"one GPU: fleet and p2p need two (this machine has {len(devices)})")
    for f in failures:
        print("FAIL:", f)
    print(f"devices: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
