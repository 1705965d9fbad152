#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck and synccheck over a quick run of every probe, on a GPU
# machine. Under a sanitizer the timings mean nothing (a probe's own timing bounds may fail), so only
# each tool's error summary counts: every line must read "0 errors" and nothing may warn. API errors are
# not reported: tma-swizzle asks the driver for boxes it must refuse. Exit 1 on any error, warning or
# missing tool.  Usage: scripts/sanitize.sh [TKPROBE] [LOGDIR]
set -uo pipefail
tkprobe="${1:-$(dirname "$0")/../build/tkprobe}"
logs="${2:-/tmp/tkprobe-sanitize}"
mkdir -p "$logs"
command -v compute-sanitizer > /dev/null || { echo "sanitize: compute-sanitizer not found on PATH"; exit 1; }

# Small configurations: each launch is far slower under a sanitizer.
RUNS=(
  "info"
  "smem-latency --quick --stride 4"
  "smem-banks --quick --stride 1 64"
  "wgmma --quick --dtype bf16,s8 --a reg --warpgroups 1"
  "mma-sync --quick --ilp 2 --warps-per-sm 4"
  "tensor-cores --quick"
  "occupancy --quick"
  "bandwidth --quick"
  "mem-latency --quick"
  "tma-swizzle --quick"
  "wgmma-layout --quick --swizzle 64B"
  "copy-engines --quick --box 64x64 --ctas-per-sm 2"
  "gemm --quick"
  "attention --quick"
)
bad=0
for tool in memcheck racecheck synccheck; do
  for args in "${RUNS[@]}"; do
    log="$logs/$tool-${args%% *}.log"
    timeout "${SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool "$tool" --report-api-errors no "$tkprobe" $args \
      > "$log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
    if [[ -z "$summary" ]]; then
      summary="no summary (exit $rc; 124: past SANITIZE_TIMEOUT)"
      bad=$((bad + 1))
    elif ! [[ "$summary" =~ ": 0 (errors|hazards)" ]] || grep -qE "[1-9][0-9]* warnings?" <<< "$summary"; then
      bad=$((bad + 1))
    fi
    echo "$tool $args: $summary"
  done
done
echo "sanitize: $bad run(s) with errors, warnings or no summary"
exit $(( bad > 0 ))
