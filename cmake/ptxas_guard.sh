#!/usr/bin/env bash
# Every CUDA compile's launcher (CMAKE_CUDA_COMPILER_LAUNCHER): runs the compile, passes its output
# on, and fails it when ptxas says it serialised a kernel's wgmma instructions ("Potential
# Performance Loss: wgmma.mma_async instructions are serialized due to ..."). ptxas prints that as
# an info line, which no nvcc flag turns into an error, yet every wgmma of the kernel then waits
# for the one before: the tensor-core overlap the kernel was written for is gone, and only a
# timing would show it. Kernels named in ptxas_serialized_allowed.txt (a mangled-name prefix a
# line, with the reason) pass. kernels/tk/DESIGN.md ("When ptxas serialises wgmma") says what
# causes it.
# Usage: ptxas_guard.sh COMPILER ARGS...
set -uo pipefail
if (( $# == 0 )); then
  echo "usage: ptxas_guard.sh COMPILER ARGS... (CMake's CUDA compiler launcher: give the compile to run)" >&2
  exit 2
fi
allowed="${PTXAS_GUARD_ALLOWED:-$(dirname "$0")/ptxas_serialized_allowed.txt}"
output=$("$@" 2>&1)
status=$?
if [[ -n "$output" ]]; then printf '%s\n' "$output" >&2; fi
(( status == 0 )) || exit "$status"
serialized=$(grep -F "wgmma.mma_async instructions are serialized" <<< "$output")
[[ -n "$serialized" ]] || exit 0
patterns=$(grep -v '^[[:space:]]*#' "$allowed" | awk 'NF { print $1 }')
if [[ -n "$patterns" ]]; then serialized=$(grep -v -F "$patterns" <<< "$serialized"); fi
[[ -n "$serialized" ]] || exit 0
echo "ptxas_guard: ptxas serialised the wgmma instructions of these kernels:" >&2
printf '%s\n' "$serialized" | sed -n "s/.*in the function '\([^']*\)'.*/  \1/p" >&2
echo "ptxas_guard: fix the kernel (kernels/tk/README.md, \"When ptxas serialises wgmma\"), or add its" \
     "mangled name with the reason to cmake/ptxas_serialized_allowed.txt" >&2
exit 1
