#!/usr/bin/env bash
# The mutation check: the suite built with one deliberate defect at a time (tests/mutants/*.patch,
# never part of a normal build), and the tests that must catch it. Every mutant must make at least
# one test fail ("killed"); one that passes them all ("survived") means the tests cannot see that
# defect. Each patch names its tests on a `# kills:` line: `host` (every host test) or
# `gpu GTEST_FLAGS` (the GPU tests, on a GPU machine). The tree must be clean; each mutant is
# reverted before the next, and on exit.
# Usage: [MUTANTS=GLOB] scripts/mutants.sh [host|gpu|all] [BUILD_DIR]   (BUILD_DIR configured, default
# build; MUTANTS=based-* tries only the patches whose names match)
set -uo pipefail
cd "$(dirname "$0")/.."
which="${1:-host}"
build="${2:-build}"
case "$which" in host | gpu | all) ;; *) echo "mutants.sh: give host, gpu or all (got '$which')"; exit 2 ;; esac
[[ -f "$build/build.ninja" || -f "$build/Makefile" ]] || { echo "mutants.sh: no configured build in $build"; exit 2; }
git diff --quiet HEAD -- . || { echo "mutants.sh: the tree has uncommitted changes; commit or stash them first"; exit 2; }

applied=""
restore() { [[ -n "$applied" ]] && git apply -R "$applied" && applied=""; }
trap restore EXIT

survived=0
for patch in tests/mutants/${MUTANTS:-*}.patch; do
  name=$(basename "$patch" .patch)
  kind=$(sed -n 's/^# kills: \([a-z]*\).*/\1/p' "$patch")
  args=$(sed -n 's/^# kills: [a-z]* *//p' "$patch")
  [[ "$which" == all || "$which" == "$kind" ]] || continue
  git apply "$patch" && applied="$patch" || { echo "$name: does not apply"; survived=$((survived + 1)); continue; }
  log="/tmp/mutant-$name.log"
  if [[ "$kind" == host ]]; then
    cmake --build "$build" --target host_tests > "$log" 2>&1 &&
      ctest --test-dir "$build" -LE gpu -E host.mutants_apply >> "$log" 2>&1
  else
    cmake --build "$build" --target gpu_tests > "$log" 2>&1 && "$build/tests/gpu_tests" $args >> "$log" 2>&1
  fi
  rc=$?
  # Killed by a test that failed, or by a test's static_assert that stopped it compiling.
  failing=$( { grep -hE "^\[  FAILED  \] [A-Za-z_]+\.[A-Za-z_]+ \(|^[[:space:]]+[0-9]+ - .*\(Failed\)" "$log" |
               sed -E 's/^\[  FAILED  \] //; s/ \(.*//; s/^[[:space:]]+[0-9]+ - //'
             grep -hoE "tests/[a-z/_]+\.(cpp|cu):[0-9]+:[0-9]+: error: static assertion failed" "$log" |
               sed -E 's/:[0-9]+: error: static assertion failed/ (static_assert)/'; } | sort -u | head -5 | paste -sd, -)
  if (( rc != 0 )) && [[ -n "$failing" ]]; then
    echo "$name: killed by $failing"
  else
    echo "$name: SURVIVED (exit $rc; log /tmp/mutant-$name.log)"
    survived=$((survived + 1))
  fi
  restore
done
cmake --build "$build" > /dev/null 2>&1  # back to the unmutated binaries
echo "mutants: $survived survived"
exit $(( survived > 0 ))
