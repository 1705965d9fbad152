#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck and synccheck over a quick run of every probe, on a GPU
# machine. Under a sanitizer the timings mean nothing (a probe's own timing bounds may fail), so only
# each tool's summary counts: it must read 0 errors (racecheck: 0 hazards, 0 warnings). API errors are
# not reported: tma-swizzle asks the driver for boxes it must refuse. Racecheck reports hazards inside
# cuBLASLt's own kernels (nvjet_*, the gemm probe's peer; measured on the H200: 8, none in ours), and
# leaving them out of instrumentation (--kernel-name-exclude) crashes the sanitizer, so racecheck runs
# the gemm probe with --no-peer: the DSL's GEMM alone, checked against host dot products. Racecheck
# of bandwidth's shared-memory row ran past 9 minutes on the H200 (every one of its 4096 trips of
# shared loads instrumented); that row runs smem-banks' kernel, which the smem-banks run checks, so
# racecheck measures bandwidth's HBM and L2 levels only. Exit 1 on any error or warning, a run without
# a summary, or a missing tool.
# Usage: scripts/sanitize.sh [TKPROBE] [LOGDIR]
#   SANITIZE_ONLY="racecheck:gemm synccheck:gemm"  only these tool:probe runs
#   SANITIZE_PARALLEL=1                             runs side by side, as many as there are CPU cores (one
#                                                   GPU; each is slow, not busy; 54 at once on 16 cores
#                                                   starved racecheck of smem-banks and attention past 300 s)
#   SANITIZE_TIMEOUT=S                              seconds per run (default 300)
set -uo pipefail
tkprobe="${1:-$(dirname "$0")/../build/tkprobe}"
logs="${2:-/tmp/tkprobe-sanitize}"
mkdir -p "$logs"
command -v compute-sanitizer > /dev/null || { echo "sanitize: compute-sanitizer not found on PATH"; exit 1; }

# Small configurations: each launch is far slower under a sanitizer. The backward runs a shape per
# head dimension and mask, each apart (on the H200, --quick's four shapes in one racecheck run
# took more than 300 s beside the other runs; one small shape takes about 35 s). smem-banks runs 4
# warps an SM, not its 32: every shared load is instrumented, and racecheck of the full grid ran past
# 300 s beside 15 others (108 s alone, 6f93987); the kernel and its addressing are the same.
RUNS=(
  "info"
  "smem-latency --quick --stride 4"
  "smem-banks --quick --stride 1 64 --warps 4"
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
  "attention --quick --pass fwd"
  "attention --pass bwd --batch 1 --heads 2 --seq 1000 --head-dim 64"
  "attention --pass bwd --batch 1 --heads 2 --seq 1000 --head-dim 64 --causal"
  "attention --pass bwd --batch 1 --heads 2 --seq 1000 --head-dim 128"
  "attention --pass bwd --batch 1 --heads 2 --seq 1000 --head-dim 128 --causal"
  "attention --pass bwd --batch 1 --heads 2 --seq 1000 --head-dim 128 --causal --dq reduce"
  "attention --quick --pass fwd --dtype e4m3"
  "attention --varlen 1,0,300,129,77 --pass all --heads 4 --kv-heads 2 --head-dim 64 --causal"
  "attention --varlen 1,0,300,129,77 --pass all --heads 4 --kv-heads 2 --head-dim 128 --dq deterministic"
  "based --quick"
  "overlap --quick --filler ex2 --warpgroups 1"
  "quadrants --quick --warps 1,4"
  "tma-reduce --quick"
  "cluster --quick --sizes 2"
  "l2 --quick"
)
TOOLS=(memcheck racecheck synccheck)

chosen() { [[ -z "${SANITIZE_ONLY:-}" || " $SANITIZE_ONLY " == *" $1:$2 "* ]]; }
log_of() {  # tool, args: one log per run (attention runs twice, a pass each)
  local name="${2// /}"
  echo "$logs/$1-${name//-/}.log" | tr -d "'"
}

# The command line `tool` runs for a probe's entry in RUNS: each measurement stops after its first
# samples (--timeout; the figures mean nothing under a sanitizer, and every launch is slow).
args_for() {  # tool, args
  case "$1 $2" in
    "racecheck gemm"*) echo "$2 --no-peer --timeout 0.01" ;;
    "racecheck bandwidth"*) echo "$2 --level hbm,l2 --timeout 0.01" ;;
    *) echo "$2 --timeout 0.01" ;;
  esac
}

run_one() {  # tool, args
  timeout "${SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool "$1" --report-api-errors no "$tkprobe" $2 \
    > "$(log_of "$1" "$2")" 2>&1
  echo "exit $?" >> "$(log_of "$1" "$2")"
}

for tool in "${TOOLS[@]}"; do
  for args in "${RUNS[@]}"; do
    chosen "$tool" "${args%% *}" || continue
    args=$(args_for "$tool" "$args")
    if [[ -n "${SANITIZE_PARALLEL:-}" ]]; then
      while (( $(jobs -rp | wc -l) >= $(nproc) )); do wait -n; done
      run_one "$tool" "$args" &
    else
      run_one "$tool" "$args"
    fi
  done
done
wait

clean_summary=': 0 (errors|hazards displayed \(0 errors, 0 warnings\))$'
bad=0
for tool in "${TOOLS[@]}"; do
  for args in "${RUNS[@]}"; do
    chosen "$tool" "${args%% *}" || continue
    log="$(log_of "$tool" "$(args_for "$tool" "$args")")"
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
    if [[ -z "$summary" ]]; then
      summary="no summary ($(tail -1 "$log"); 124: past SANITIZE_TIMEOUT)"
      bad=$((bad + 1))
    elif ! [[ "$summary" =~ $clean_summary ]]; then
      bad=$((bad + 1))
    fi
    echo "$tool $(args_for "$tool" "$args"): $summary"
  done
done
# The attention backward's ring alone (tests/gpu/ring_racecheck.cu), released four ways: `all`
# (every reading thread arrives, as the dK/dV consumers release) must be clean and counts above; the
# others are shown for comparison (14 hazards each on the H200, 2026-12-02).
ring="$(dirname "$tkprobe")/tests/ring_racecheck"
if [[ -x "$ring" ]]; then
  for variant in lane0 syncwarp fence all; do
    log="$logs/racecheck-ring-$variant.log"
    timeout "${SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool racecheck "$ring" "$variant" > "$log" 2>&1
    summary=$(grep -h "RACECHECK SUMMARY" "$log")
    echo "ring $variant: $(grep -h "ring_racecheck $variant" "$log") $summary"
    if [[ "$variant" == all ]] && ! [[ "$summary" =~ $clean_summary && -n "$summary" ]]; then bad=$((bad + 1)); fi
  done
fi
echo "sanitize: $bad run(s) with errors, warnings or no summary"
exit $(( bad > 0 ))
