#!/usr/bin/env bash
# One batch on a GPU machine: build, regenerate the H200 baselines named on the command line under
# $OUT and compare each with the committed one, then run every test (GPU ones included). With
# `attention`, scripts/compare_sdpa.py also writes attention-peers.json: PyTorch's SDPA backends
# and the DSL's kernels timed in one process. The baselines come first, so a run cut short by the
# machine's time limit still returns them; DEADLINE (seconds since the start) skips the steps
# that would start after it and stops the long ones at it, so the archive is always written.
# Usage: OUT=dir [DEADLINE=s] scripts/gpu-run.sh COMMIT_SHA [PROBE...]   (PROBE: a name from BASELINES)
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

deadline="${DEADLINE:-1000000}"
in_time() { (( SECONDS < deadline )) || { echo "skipped (past DEADLINE): $*" >> "$OUT/run.log"; return 1; }; }
left() { echo $(( deadline > SECONDS ? deadline - SECONDS : 1 )); }  # seconds a step may still take
archive() {  # the GPU machine returns at most 8 files: everything goes back as one archive
  tar czf /tmp/gpu-run.tgz -C "$OUT" . && rm -f "$OUT"/* && mv /tmp/gpu-run.tgz "$OUT/"
}

{ cmake --preset default -DTKPROBE_GIT_SHA="$sha" >/dev/null && cmake --build build; } > "$OUT/build.log" 2>&1 \
  || { tail -50 "$OUT/build.log"; exit 1; }
rm "$OUT/build.log"  # few files come back from the GPU machine: keep the log only when the build fails
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/run.log" 2>&1
if [[ -z "${SKIP_TESTS:-}" ]]; then  # the DSL's own tests first: quick, and everything else stands on them
  timeout "$(left)" ./build/tests/gpu_tests --gtest_filter='Dsl*' > "$OUT/dsl-tests.log" 2>&1
  echo "dsl gpu tests rc=$?" >> "$OUT/run.log"
  grep -E "^\[  (PASSED|FAILED) " "$OUT/dsl-tests.log"
fi
for probe in "$@"; do
  in_time "$probe" || continue
  echo "== $probe: ${BASELINES[$probe]}" >> "$OUT/probes.log"
  timeout "$(left)" ./build/tkprobe ${BASELINES[$probe]} --json "$OUT/$probe.json" >> "$OUT/probes.log" 2>&1
  echo "$probe rc=$?" >> "$OUT/run.log"
  if [[ -f "results/h200/$probe.json" ]]; then
    ./build/tkprobe compare "results/h200/$probe.json" "$OUT/$probe.json" >> "$OUT/compare.md" 2>&1
    echo "compare $probe rc=$?" >> "$OUT/run.log"
  fi
done
if [[ " $* " == *" attention "* ]] && in_time compare_sdpa; then
  TKPROBE_GIT_SHA="$sha" timeout "$(left)" python3 scripts/compare_sdpa.py --out "$OUT/attention-peers.json" --tk-lib build/kernels/libtk_attention_c.so \
    > "$OUT/peers.md" 2> "$OUT/peers.log"
  echo "compare_sdpa rc=$?" >> "$OUT/run.log"
fi
grep -E "^  \* " "$OUT/probes.log"
[[ -f "$OUT/peers.md" ]] && cat "$OUT/peers.md"
if [[ -z "${SKIP_TESTS:-}" ]] && in_time gpu tests; then
  timeout "$(left)" ctest --test-dir build --output-on-failure -V -L gpu > "$OUT/ctest-gpu.log" 2>&1
  echo "gpu ctest rc=$?" >> "$OUT/run.log"
  grep -E "^(ok  |FAIL)|passed|failed|\[  FAILED|Test +#" "$OUT/ctest-gpu.log" | grep -v "^ok   mma_sync" | tail -60
fi
if [[ -z "${SKIP_TESTS:-}" ]] && in_time host tests and memcheck; then
  ctest --test-dir build -LE gpu >> "$OUT/run.log" 2>&1; echo "host ctest rc=$?" >> "$OUT/run.log"
  # Memory errors in the probes' kernels (small configurations: under memcheck the timings mean
  # nothing, so the probes' own timing checks may fail: only the error summary counts).
  # API errors are not reported: tma-swizzle asks the driver for boxes it must refuse.
  for args in "attention --quick" "smem-latency --quick --stride 4" "smem-banks --quick --stride 1 64" \
              "wgmma --quick --dtype bf16,s8 --a reg --warpgroups 1" "mma-sync --quick --ilp 2 --warps-per-sm 4" \
              "tma-swizzle --quick" "wgmma-layout --quick --swizzle 64B" "copy-engines --quick --box 64x64 --ctas-per-sm 2"; do
    in_time "memcheck $args" || break
    timeout "$(left)" compute-sanitizer --tool memcheck --report-api-errors no ./build/tkprobe $args > "$OUT/sanitizer.tmp" 2>&1
    echo "compute-sanitizer $args: $(grep 'ERROR SUMMARY' "$OUT/sanitizer.tmp")" >> "$OUT/run.log"
  done
  rm -f "$OUT/sanitizer.tmp"
fi
grep -E "rc=|tests passed|ERROR SUMMARY|skipped" "$OUT/run.log"
archive
