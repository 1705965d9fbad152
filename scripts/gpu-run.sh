#!/usr/bin/env bash
# One batch on a GPU machine, in steps (all of them when none is named):
#   build     configure and build (TKPROBE_GIT_SHA stamps SHA: a GPU machine's copy has a stale .git);
#             with build/wheels (python/README.md's offline install), the tk_attention package
#             pip-installed into build/venv over the system's torch, the python of its GPU tests
#   quick     `tkprobe all --quick` (quick.json): the figures the GPU tests see
#   fp8       the e4m3 attention forward first: its GPU tests (the DSL's P V, the kernel against the
#             reference, the probe), the SASS check, then `tkprobe attention --dtype e4m3` quick and
#             on the D = 128 sweep (fp8-quick.json, fp8.json)
#   varlen    `tkprobe attention --varlen --pass all` on the sweep's equal lengths (vs_dense,
#             vs_dense_per_clock: the packed batch's forward against the dense one on the same
#             tensors) and two random mixes, D 64 and 128, causal and not (varlen-N.json, varlen.txt)
#   decode    the decode step: its GPU tests and the DSL gather's, memcheck over them, `tkprobe decode`
#             (decode.json), and GB/s by --splits 1..64 at four shapes (splits.txt: decision 034's sweep)
#   tests     every GPU test (ctest -L gpu), then the host tests
#   gate      scripts/gate-selftest.sh: three `tkprobe all` runs, A/A compares, the suite baseline
#             (gate/suite.json, for results/h200/suite.json), the 8%-worse check; then the first
#             run against the committed baseline (results/h200), as a CI job would hold it
#   claims    `tkprobe claims` (claims.md, claims.json, its wall time): the account's claims on this GPU,
#             judged from the gate's suite.json where the gate ran (no GPU time), else measured
#   ptx       the PTX-only build (build-ptx, CMAKE_CUDA_ARCHITECTURES=80-virtual: what a GPU newer than
#             the machine code sees): `tkprobe all` (ptx.json), compared with the gate's baseline cut to
#             the rows it measured (scripts/measured_rows.py; ptx-vs-native.md), and its gpu_tests
#   mutants   scripts/mutants.sh gpu: each GPU-side mutant must fail a GPU test
#   sanitize  scripts/sanitize.sh: memcheck, racecheck and synccheck over every probe's quick run
#             (SANITIZE_ONLY narrows it, as in sanitize.sh); each run at most 300 s
#   (mutants: MUTANTS=GLOB narrows them, as in mutants.sh)
#   peers     scripts/compare_sdpa.py: PyTorch's SDPA backends beside the DSL's attention, one process;
#             scripts/compare_based.py: fla's Based kernels beside the DSL's (skipped rows without fla);
#             scripts/compare_decode.py: FlashInfer's and cuDNN's paged decode beside the DSL's;
#             scripts/compare_fp8.py: cuDNN's fp8 SDPA beside the DSL's e4m3 forward
# Steps run in this order whatever order they are named in, the timed ones (gate) before the
# open-ended ones (sanitize, then mutants, which rebuilds); everything lands under $OUT; a step past DEADLINE (seconds since the
# start) is skipped, and the archive is always written.
# Usage: OUT=dir [DEADLINE=s] scripts/gpu-run.sh SHA [STEP...]
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder the results go to}"
archive() {  # the GPU machine returns at most 8 files: everything goes back as one archive
  tar czf /tmp/gpu-run.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/gpu-run.tgz "$OUT/"
}
trap archive EXIT  # whatever happens below, the archive is written
sha="${1:-unknown}"
shift || true
all_steps="build quick fp8 varlen decode tests gate claims ptx sanitize mutants peers"
steps=" ${*:-$all_steps} "
export TKPROBE_NO_INSTALL=1
for step in $steps; do
  case " $all_steps " in *" $step "*) ;;
    *) echo "gpu-run.sh: unknown step '$step' (valid: $all_steps)" | tee "$OUT/run.log"; exit 2 ;;
  esac
done

deadline="${DEADLINE:-1000000}"
want() {  # whether to run step $1: named, and before the deadline
  [[ "$steps" == *" $1 "* ]] || return 1
  (( SECONDS < deadline )) || { echo "skipped (past DEADLINE): $1" >> "$OUT/run.log"; return 1; }
}
left() { echo $(( deadline > SECONDS ? deadline - SECONDS : 1 )); }  # seconds a step may still take

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/run.log" 2>&1
if want build; then
  torch_python=()
  if [ -d build/wheels ]; then
    { python3 -m venv --system-site-packages build/venv &&
      build/venv/bin/python -m pip install --no-index --find-links build/wheels .; } > "$OUT/package.log" 2>&1
    rc=$?
    echo "tk_attention package install rc=$rc (package.log)" >> "$OUT/run.log"
    (( rc == 0 )) && torch_python=(-DTORCH_PYTHON="$PWD/build/venv/bin/python")
  fi
  { cmake --preset default -DTKPROBE_GIT_SHA="$sha" "${torch_python[@]}" > /dev/null && cmake --build build; } \
    > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
fi
if want quick; then
  timeout "$(left)" build/tkprobe all --quick --json "$OUT/quick.json" > "$OUT/quick.txt" 2>&1
  echo "tkprobe all --quick rc=$?" >> "$OUT/run.log"
fi
if want fp8; then
  timeout "$(left)" build/tests/gpu_tests \
    --gtest_filter='DslWarpgroup.E4m3*:AttentionE4m3.*:AttentionProbe.E4m3*' > "$OUT/fp8-tests.log" 2>&1
  echo "e4m3 GPU tests rc=$?" >> "$OUT/run.log"
  grep -E "^\[ e4m3 \]|FAILED|PASSED" "$OUT/fp8-tests.log"
  python3 tests/gpu/check_sass.py build/tkprobe | grep -E "Fp8Config|passed" | tee -a "$OUT/run.log"
  timeout "$(left)" build/tkprobe attention --dtype e4m3 --quick --json "$OUT/fp8-quick.json" > "$OUT/fp8-quick.txt" 2>&1
  echo "attention --dtype e4m3 --quick rc=$?" >> "$OUT/run.log"
  timeout "$(left)" build/tkprobe attention --dtype e4m3 --json "$OUT/fp8.json" > "$OUT/fp8.txt" 2>&1
  echo "attention --dtype e4m3 (the D = 128 sweep) rc=$?" >> "$OUT/run.log"
  cat "$OUT/fp8-quick.txt" "$OUT/fp8.txt"
fi
if want varlen; then
  n=0
  for lengths in "$(printf '1024,%.0s' {1..15})1024" 4096,4096,4096,4096 16384 random:1 random:2; do
    for d in 64 128; do
      for causal in "" --causal; do
        n=$((n + 1))
        timeout "$(left)" build/tkprobe attention --varlen "$lengths" --pass all --heads $((2048 / d)) --head-dim $d $causal \
          --json "$OUT/varlen-$n.json" >> "$OUT/varlen.txt" 2>&1
        echo "attention --varlen ${lengths:0:24} D=$d $causal rc=$?" >> "$OUT/run.log"
      done
    done
  done
fi
if want decode; then
  timeout "$(left)" build/tests/gpu_tests --gtest_filter='Decode*:DslGroup.*' > "$OUT/decode-tests.log" 2>&1
  echo "decode GPU tests rc=$?" >> "$OUT/run.log"
  timeout "$(left)" compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/gpu_tests \
    --gtest_filter='DecodeAttention.*:DslGroup.*' > "$OUT/decode-memcheck.log" 2>&1
  echo "decode memcheck rc=$?" >> "$OUT/run.log"
  timeout "$(left)" build/tkprobe decode --json "$OUT/decode.json" > "$OUT/decode.txt" 2>&1
  echo "tkprobe decode rc=$?" >> "$OUT/run.log"
  for shape in "1 8192" "1 32768" "1 131072" "16 8192"; do
    read -r batch keys <<< "$shape"
    line="B=$batch keys=$keys, GB/s by splits:"
    for splits in 1 2 4 8 16 32 64; do
      report="$OUT/splits-$batch-$keys-$splits.json"
      timeout "$(left)" build/tkprobe decode --batch "$batch" --keys "$keys" --splits "$splits" --json "$report" \
        > /dev/null 2>&1
      line+=" $splits: $(python3 -c 'import sys; sys.path.insert(0, "scripts"); import tkreport
rows = [r for r in tkreport.load(sys.argv[1])["results"] if "gbps" in r["metrics"] and "splits" in r["metrics"]]
print(round(rows[0]["metrics"]["gbps"]["median"]) if rows else "-")' "$report" 2> /dev/null || echo -)"
    done
    echo "$line" >> "$OUT/splits.txt"
  done
  cat "$OUT/decode.txt" "$OUT/splits.txt"
fi
if want tests; then
  timeout "$(left)" ctest --test-dir build --output-on-failure -V -L gpu > "$OUT/ctest-gpu.log" 2>&1
  echo "gpu ctest rc=$?" >> "$OUT/run.log"
  grep -E "^(ok  |FAIL)|passed|failed|\[  FAILED|Test +#" "$OUT/ctest-gpu.log" | grep -v "^ok   mma_sync" | tail -60
  ctest --test-dir build -LE gpu > "$OUT/ctest-host.log" 2>&1
  echo "host ctest rc=$?" >> "$OUT/run.log"
fi
if want gate; then
  timeout "$(left)" scripts/gate-selftest.sh "$OUT/gate" build/tkprobe | tee "$OUT/gate.log"
  echo "gate self-test rc=${PIPESTATUS[0]}" >> "$OUT/run.log"
  build/tkprobe compare results/h200 "$OUT/gate/run1.json" --markdown "$OUT/gate/vs-committed.md" \
    > /dev/null 2>&1
  echo "run1 vs the committed baseline rc=$?: $(tail -1 "$OUT/gate/vs-committed.md")" >> "$OUT/run.log"
fi
if want claims; then
  start=$SECONDS
  from=()
  [ -f "$OUT/gate/suite.json" ] && from=(--from "$OUT/gate/suite.json")
  timeout "$(left)" build/tkprobe claims "${from[@]}" --format markdown --json "$OUT/claims.json" > "$OUT/claims.md" \
    2> "$OUT/claims.err"
  echo "tkprobe claims rc=$? in $((SECONDS - start)) s" >> "$OUT/run.log"
  cat "$OUT/claims.md"
fi
if want ptx; then
  { cmake --preset default -B build-ptx -DCMAKE_CUDA_ARCHITECTURES=80-virtual -DTKPROBE_GIT_SHA="$sha" > /dev/null &&
    cmake --build build-ptx --target tkprobe gpu_tests; } > "$OUT/ptx-build.log" 2>&1
  timeout "$(left)" build-ptx/tkprobe all --json "$OUT/ptx.json" > "$OUT/ptx.txt" 2> "$OUT/ptx.err"
  echo "PTX-only tkprobe all rc=$?" >> "$OUT/run.log"
  native="$OUT/gate/suite.json"
  if [ ! -f "$native" ]; then
    native="$OUT/native.json"
    timeout "$(left)" build/tkprobe all --json "$native" > /dev/null 2>&1
  fi
  python3 scripts/measured_rows.py "$native" "$OUT/ptx.json" "$OUT/native-measured.json" >> "$OUT/run.log"
  build/tkprobe compare "$OUT/native-measured.json" "$OUT/ptx.json" --markdown "$OUT/ptx-vs-native.md" > /dev/null 2>&1
  echo "PTX-only against native rc=$?: $(tail -1 "$OUT/ptx-vs-native.md")" >> "$OUT/run.log"
  timeout "$(left)" build-ptx/tests/gpu_tests > "$OUT/ptx-gpu-tests.log" 2>&1
  echo "PTX-only gpu_tests rc=$?" >> "$OUT/run.log"
fi
if want sanitize; then
  # Side by side, one run per CPU core (sanitize.sh): each is slow under instrumentation but far from
  # filling the GPU; racecheck is CPU-bound, and 54 at once on 16 cores ran two past 300 s.
  SANITIZE_PARALLEL=1 SANITIZE_TIMEOUT="$(( $(left) < 300 ? $(left) : 300 ))" scripts/sanitize.sh build/tkprobe "$OUT/sanitize" \
    | tee "$OUT/sanitize.log"
  echo "sanitize rc=${PIPESTATUS[0]}" >> "$OUT/run.log"
fi
if want mutants; then
  # mutants.sh applies each patch to a clean tree; this copy's .git is stale, so commit the copy first.
  git add -A > /dev/null && git -c user.name=gpu-run -c user.email=gpu-run@localhost commit -qm "copy of $sha"
  timeout "$(left)" scripts/mutants.sh gpu build | tee "$OUT/mutants.log"
  echo "mutants rc=${PIPESTATUS[0]}" >> "$OUT/run.log"
  cp /tmp/mutant-*.log "$OUT/" 2> /dev/null
fi
if want peers; then
  TKPROBE_GIT_SHA="$sha" timeout "$(left)" python3 scripts/compare_sdpa.py --pass all --out "$OUT/attention-peers.json" \
    --tk-lib build/kernels/libtk_attention_c.so > "$OUT/peers.md" 2> "$OUT/peers.log"
  echo "compare_sdpa rc=$?" >> "$OUT/run.log"
  cat "$OUT/peers.md"
  TKPROBE_GIT_SHA="$sha" timeout "$(left)" python3 scripts/compare_based.py --out "$OUT/based-peers.json" \
    --tk-lib build/kernels/libtk_based_c.so > "$OUT/based-peers.md" 2> "$OUT/based-peers.log"
  echo "compare_based rc=$?" >> "$OUT/run.log"
  cat "$OUT/based-peers.md"
  TKPROBE_GIT_SHA="$sha" timeout "$(left)" python3 scripts/compare_decode.py --json "$OUT/decode-peers.json" \
    --tk-lib build/kernels/libtk_attention_c.so > "$OUT/decode-peers.md" 2> "$OUT/decode-peers.log"
  echo "compare_decode rc=$?" >> "$OUT/run.log"
  cat "$OUT/decode-peers.md"
  TKPROBE_GIT_SHA="$sha" timeout "$(left)" python3 scripts/compare_fp8.py --json "$OUT/fp8-peers.json" \
    --tk-lib build/kernels/libtk_attention_c.so > "$OUT/fp8-peers.md" 2> "$OUT/fp8-peers.log"
  echo "compare_fp8 rc=$?" >> "$OUT/run.log"
  cat "$OUT/fp8-peers.md"
fi
cat "$OUT/run.log"
