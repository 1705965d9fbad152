#!/usr/bin/env bash
# One batch on a GPU machine: build, run every test (GPU ones included), then regenerate the
# H200 baselines named on the command line under $OUT and compare each with the committed one.
# Usage: OUT=dir scripts/gpu-run.sh COMMIT_SHA [PROBE...]   (PROBE: a name from BASELINES)
set -uo pipefail
cd "$(dirname "$0")/.."
sha="${1:-unknown}"
shift || true
export TKPROBE_NO_INSTALL=1

# How each results/h200/<probe>.json baseline is made.
declare -A BASELINES=(
  [info]="info"
  [smem-latency]="smem-latency"
  [smem-banks]="smem-banks"
  [wgmma]="wgmma --sweep --dtype bf16,e4m3 --warpgroups 2,3"
  [mma-sync]="mma-sync --dtype bf16,fp16,tf32,e4m3,s8"
  [tensor-cores]="tensor-cores"
  [occupancy]="occupancy"
  [bandwidth]="bandwidth"
  [mem-latency]="mem-latency"
  [tma-swizzle]="tma-swizzle --show"
  [wgmma-layout]="wgmma-layout --show"
  [copy-engines]="copy-engines"
  [gemm]="gemm"
  [attention]="attention"
)

{ cmake --preset default -DTKPROBE_GIT_SHA="$sha" >/dev/null && cmake --build build; } > "$OUT/build.log" 2>&1 \
  || { tail -50 "$OUT/build.log"; exit 1; }
rm "$OUT/build.log"  # few files come back from the GPU machine: keep the log only when the build fails
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/run.log" 2>&1
if [[ -z "${SKIP_TESTS:-}" ]]; then
  ctest --test-dir build --output-on-failure -V -L gpu > "$OUT/ctest-gpu.log" 2>&1; echo "gpu ctest rc=$?" >> "$OUT/run.log"
  grep -E "^(ok  |FAIL)|passed|failed|\[  FAILED|Test +#" "$OUT/ctest-gpu.log" | grep -v "^ok   mma_sync" | tail -60
fi
for probe in "$@"; do
  echo "== $probe: ${BASELINES[$probe]}" >> "$OUT/probes.log"
  ./build/tkprobe ${BASELINES[$probe]} --json "$OUT/$probe.json" >> "$OUT/probes.log" 2>&1
  echo "$probe rc=$?" >> "$OUT/run.log"
  if [[ -f "results/h200/$probe.json" ]]; then
    ./build/tkprobe compare "results/h200/$probe.json" "$OUT/$probe.json" >> "$OUT/compare.md" 2>&1
    echo "compare $probe rc=$?" >> "$OUT/run.log"
  fi
done
grep -E "^  \* " "$OUT/probes.log"
if [[ -z "${SKIP_TESTS:-}" ]]; then
  ctest --test-dir build -LE gpu >> "$OUT/run.log" 2>&1; echo "host ctest rc=$?" >> "$OUT/run.log"
  # Memory errors in the probes' kernels (small configurations: under memcheck the timings mean
  # nothing, so the probes' own timing checks may fail: only the error summary counts).
  # API errors are not reported: tma-swizzle asks the driver for boxes it must refuse.
  for args in "smem-latency --quick --stride 4" "smem-banks --quick --stride 1 64" \
              "wgmma --quick --dtype bf16,s8 --a reg --warpgroups 1" "mma-sync --quick --ilp 2 --warps-per-sm 4" \
              "tma-swizzle --quick" "wgmma-layout --quick --swizzle 64B" "copy-engines --quick --box 64x64 --ctas-per-sm 2" \
              "attention --quick"; do
    compute-sanitizer --tool memcheck --report-api-errors no ./build/tkprobe $args > "$OUT/sanitizer.tmp" 2>&1
    echo "compute-sanitizer $args: $(grep 'ERROR SUMMARY' "$OUT/sanitizer.tmp")" >> "$OUT/run.log"
  done
  rm -f "$OUT/sanitizer.tmp"
fi
grep -E "rc=|tests passed|ERROR SUMMARY" "$OUT/run.log"
# The GPU machine returns at most 8 files: everything goes back as one archive.
tar czf /tmp/gpu-run.tgz -C "$OUT" . && rm -f "$OUT"/* && mv /tmp/gpu-run.tgz "$OUT/"
