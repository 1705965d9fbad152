#!/usr/bin/env bash
# The regression gate's self-test, and the recipe that makes the suite baseline (run it on the GPU
# machine the baseline is for). Three back-to-back runs of `tkprobe all`:
#   1. every pair of them must compare clean (exit 0, 0 failing rows): unchanged code passes;
#   2. `tkprobe baseline` makes DIR/suite.json from them (the kept run, each row's drift recorded),
#      and every run must compare clean against it;
#   3. a copy of the baseline with 20 judged rows (all of them where GATE_PROBES leaves fewer) made 8%
#      worse must fail exactly those rows;
#   4. it prints the share of judged rows whose noise band is at most 3%.
# Usage: [GATE_PROBES=a,b] [GATE_REJUDGE=1] scripts/gate-selftest.sh DIR [TKPROBE]
#   GATE_REJUDGE=1: keep DIR/run1..3.json where they exist (runs recorded on the GPU) and redo only the
#   judging, e.g. on a machine without a GPU after a change to compare or baseline
#   GATE_PROBES: run only these probes (tkprobe all --probes), e.g. to leave out a probe that fails on
#   the GPU until it is fixed; a baseline made so lacks that probe's rows, and the host test
#   Schema.SuiteBaselineCoversEveryProbe says so.
#   then: cp DIR/suite.json results/h200/suite.json
#         python3 scripts/plot.py results/h200/suite.json --out results/h200/plots   (the plots match it)
set -uo pipefail
dir="${1:?usage: scripts/gate-selftest.sh DIR [TKPROBE]}"
tkprobe="${2:-$(dirname "$0")/../build/tkprobe}"
mkdir -p "$dir"
failures=0
fail() { echo "SELF-TEST FAIL: $*"; failures=$((failures + 1)); }

for i in 1 2 3; do
  if [[ -n "${GATE_REJUDGE:-}" && -f "$dir/run$i.json" ]]; then
    echo "run$i: recorded ($(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tool"]; print(t["git_sha"], t["started_at"])' "$dir/run$i.json"))"
    continue
  fi
  "$tkprobe" all ${GATE_PROBES:+--probes "$GATE_PROBES"} --json "$dir/run$i.json" > "$dir/run$i.txt" \
    2> "$dir/run$i.err"
  rc=$?
  echo "run$i: tkprobe all exit $rc"
  (( rc == 0 )) || fail "run$i exited $rc (see $dir/run$i.err)"
done

# check BASE NEW NAME: compare's verdict as JSON (NAME.json), markdown (NAME.md) and JUnit (NAME.xml);
# prints the summary line and returns compare's exit code.
check() {
  "$tkprobe" compare "$1" "$2" --format json --markdown "$dir/$3.md" --junit "$dir/$3.xml" > "$dir/$3.json" \
    2> "$dir/$3.err"
  local rc=$?
  echo "$3: exit $rc: $(tail -1 "$dir/$3.md" 2>/dev/null || cat "$dir/$3.err")"
  return $rc
}

for pair in "1 2" "2 3" "1 3"; do
  set -- $pair
  check "$dir/run$1.json" "$dir/run$2.json" "aa-$1-$2" || fail "A/A: run$1 vs run$2"
done

"$tkprobe" baseline --out "$dir/suite.json" "$dir"/run{1,2,3}.json || fail "tkprobe baseline"
for i in 1 2 3; do
  check "$dir/suite.json" "$dir/run$i.json" "baseline-$i" || fail "run$i against the baseline"
done

# 20 judged rows (ok, not a peer, a primary statistic), round-robin over the probes, made 8% worse as a
# slower kernel at the same clock would be: every statistic of the row, per clock and per second alike,
# shows 8% more time or cycles (a rate divided by 1.08, so -7.4%; a time or cycle count times 1.08).
TKPROBE_SCRIPTS="$(dirname "$0")" python3 - "$dir/suite.json" "$dir/worse.report.json" "$dir/worse-rows.txt" \
  "$dir/worse-judged.txt" <<'PY' || fail "scaling rows"
import json, os, sys
sys.path.insert(0, os.environ["TKPROBE_SCRIPTS"])
import tkreport
doc = tkreport.load(sys.argv[1])  # written back as the version 2 document, which tkprobe reads too
judged = [r for r in doc["results"] if r["status"] == "ok" and not r.get("peer") and r.get("primary")
          and isinstance(r["metrics"].get(r["primary"]), dict) and r["metrics"][r["primary"]]["median"] != 0]
by_probe = {}
for r in judged:
    by_probe.setdefault(r["probe"], []).append(r)
chosen = []
while len(chosen) < 20 and any(by_probe.values()):
    for rows in by_probe.values():
        if rows and len(chosen) < 20:
            chosen.append(rows.pop(len(rows) // 2))
with open(sys.argv[3], "w") as out:
    for r in chosen:
        for stats in r["metrics"].values():
            if isinstance(stats, dict):
                factor = 1 / 1.08 if stats["better"] == "higher" else 1.08
                for k in ("median", "min", "max", "q1", "q3"):
                    stats[k] *= factor
        out.write(json.dumps({"probe": r["probe"], "params": r["params"]}, sort_keys=True) + "\n")
json.dump(doc, open(sys.argv[2], "w"))
open(sys.argv[4], "w").write(f"{len(judged)}\n")  # how many could be scaled: 20 unless GATE_PROBES leaves fewer
PY
check "$dir/suite.json" "$dir/worse.report.json" "worse"
python3 - "$dir/worse-rows.txt" "$dir/worse.json" "$dir/worse-judged.txt" <<'PY' \
  || fail "the 8%-worse rows did not fail exactly"
import json, sys
key = lambda r: json.dumps({"probe": r["probe"], "params": r["params"]}, sort_keys=True)
scaled = {line.strip() for line in open(sys.argv[1])}
failing = {key(r) for r in json.load(open(sys.argv[2]))["rows"] if r["fails"]}
print(f"8% worse: {len(scaled)} rows scaled, {len(failing)} fail, {len(scaled & failing)} of them scaled")
wanted = min(20, int(open(sys.argv[3]).read()))
sys.exit(0 if scaled and len(scaled) == wanted and failing == scaled else 1)
PY

python3 - "$dir/baseline-1.json" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["judged"] and r["verdict"] in ("same", "faster", "slower")]
tight = sum(1 for r in rows if r["band_pct"] <= 3.0)
print(f"bands: {tight} of {len(rows)} judged rows ({100 * tight / max(len(rows), 1):.1f}%) have a band of 3% or less")
PY
echo "self-test: $failures failure(s)"
exit $(( failures > 0 ))
