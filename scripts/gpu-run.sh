#!/usr/bin/env bash
# One batch on a GPU machine: build, run every test (GPU ones included), regenerate the H200
# baselines under $OUT. Usage: OUT=dir scripts/gpu-run.sh COMMIT_SHA
set -uo pipefail
cd "$(dirname "$0")/.."
sha="${1:-unknown}"
export TKPROBE_NO_INSTALL=1
{ cmake --preset default -DTKPROBE_GIT_SHA="$sha" >/dev/null && cmake --build build; } > "$OUT/build.log" 2>&1 \
  || { tail -50 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/run.log" 2>&1
ctest --test-dir build --output-on-failure -V -L gpu > "$OUT/ctest-gpu.log" 2>&1; echo "gpu ctest rc=$?" >> "$OUT/run.log"
ctest --test-dir build -LE gpu >> "$OUT/run.log" 2>&1; echo "host ctest rc=$?" >> "$OUT/run.log"
for probe in info smem-latency smem-banks all; do
  ./build/tkprobe "$probe" --json "$OUT/$probe.json" >> "$OUT/run.log" 2>&1
  echo "$probe rc=$?" >> "$OUT/run.log"
done
tail -c 6000 "$OUT/ctest-gpu.log"

# Memory errors in the probes' kernels (small configurations: memcheck is slow; under it the
# timings are meaningless, so the probes' own checks may fail: only the error summary counts).
for args in "smem-latency --quick --stride 4" "smem-banks --quick --stride 1 64"; do
  compute-sanitizer --tool memcheck ./build/tkprobe $args > "$OUT/sanitizer.tmp" 2>&1
  echo "compute-sanitizer $args: $(grep 'ERROR SUMMARY' "$OUT/sanitizer.tmp")" >> "$OUT/run.log"
done
rm -f "$OUT/sanitizer.tmp"
# Run-to-run stability: the suite's smem rows against the separate runs above.
./build/tkprobe compare "$OUT/smem-banks.json" "$OUT/all.json" > "$OUT/compare.md" 2>&1; echo "compare rc=$?" >> "$OUT/run.log"
./build/tkprobe compare "$OUT/smem-latency.json" "$OUT/all.json" >> "$OUT/compare.md" 2>&1; echo "compare rc=$?" >> "$OUT/run.log"
scripts/tkprobe list >> "$OUT/run.log" 2>&1; echo "scripts/tkprobe list rc=$?" >> "$OUT/run.log"
grep -E "rows:" "$OUT/compare.md"
grep -E "rc=|tests passed|ERROR SUMMARY" "$OUT/run.log"
