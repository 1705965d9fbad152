# Sourced by scripts/tkprobe and scripts/test: installs what is missing, configures, builds.
# Everything it prints goes to stderr, so a command's stdout carries only its result.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
PACKAGES=(cmake ninja-build g++ python3 libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libbenchmark-dev
          python3-matplotlib python3-venv  # matplotlib: scripts/plot.py; venv: the package's install test
          munge slurmctld slurmd slurm-client)  # host.slurm_fleet starts a Slurm

log() { echo "[tkprobe setup] $*" >&2; }

install_missing_packages() {
  [ -n "${TKPROBE_NO_INSTALL:-}" ] && return 0  # machines that cannot reach a package registry
  command -v dpkg-query >/dev/null || return 0
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Tools may come from elsewhere (pip's cmake, ninja and matplotlib, a toolkit's compiler).
  local wanted=()
  for p in "${missing[@]}"; do
    case "$p" in
      cmake) command -v cmake >/dev/null || wanted+=("$p") ;;
      ninja-build) command -v ninja >/dev/null || wanted+=("$p") ;;
      g++) command -v g++ >/dev/null || wanted+=("$p") ;;
      python3) command -v python3 >/dev/null || wanted+=("$p") ;;
      python3-matplotlib) python3 -c "import matplotlib" 2>/dev/null || wanted+=("$p") ;;
      python3-venv) python3 -c "import ensurepip" 2>/dev/null || wanted+=("$p") ;;
      *) wanted+=("$p") ;;
    esac
  done
  [ ${#wanted[@]} -eq 0 ] && return 0
  # sudo resets the environment, so the variable goes through env; -n: fail, never prompt (CI has no tty).
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo -n)
  log "installing: ${wanted[*]}"
  if ! { "${sudo[@]}" apt-get update -qq &&
         "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wanted[@]}"; } >&2; then
    log "warning: could not install ${wanted[*]}; configuring with what is here"
  fi
}

# The oldest versions the build takes: CMake 3.25 (CMakeLists.txt), nvcc 12.1 (C++20 device code; PTX ISA 8.1
# for tma-reduce's red.global.{min,max}.v2.bf16).
MIN_CMAKE=3.25
MIN_NVCC=12.1

version_at_least() {  # have, want: dotted versions
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# One message naming everything too old or missing, and how to get it; exit 2 (a usage error: the
# machine, not the code, needs changing).
require_tools() {
  local problems=()
  local cmake_version nvcc_version
  cmake_version=$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p' || true)
  if [ -z "$cmake_version" ]; then
    problems+=("cmake not found: install CMake $MIN_CMAKE or newer (python3 -m pip install 'cmake>=$MIN_CMAKE')")
  elif ! version_at_least "$cmake_version" "$MIN_CMAKE"; then
    problems+=("cmake $cmake_version is older than $MIN_CMAKE (Ubuntu 22.04's apt has 3.22): python3 -m pip install 'cmake>=$MIN_CMAKE', or Kitware's apt repository")
  fi
  nvcc_version=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p' || true)
  if [ -z "$nvcc_version" ]; then
    problems+=("nvcc not found: install the CUDA Toolkit $MIN_NVCC or newer and put nvcc on PATH")
  elif ! version_at_least "$nvcc_version" "$MIN_NVCC"; then
    problems+=("nvcc $nvcc_version is older than $MIN_NVCC (C++20 device code): install CUDA Toolkit $MIN_NVCC or newer")
  fi
  [ ${#problems[@]} -eq 0 ] && return 0
  log "error: this machine cannot build tkprobe yet: $(IFS=';'; echo "${problems[*]}" | sed 's/;/; /g')"
  exit 2
}

find_cuda() {  # nvcc on PATH, or the toolkit's usual places
  command -v nvcc >/dev/null && return 0
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$d/nvcc" ]; then
      export PATH="$d:$PATH"
      return 0
    fi
  done
}

# The SASS checks (tests/gpu/check_sass.py, ctest host.sass) read the binary with cuobjdump, which
# needs nvdisasm beside it. A toolkit on a GPU machine has both; a compiler-only one (CI's) has
# neither, so they come from NVIDIA's wheels on PyPI, unpacked into the build folder (the test
# finds them there; without them it says skipped).
SASS_TOOLS=(nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37)
SASS_TOOLS_DIR="$BUILD/tools/bin"
fetch_sass_tools() {
  [ -n "${TKPROBE_NO_INSTALL:-}" ] && return 0
  command -v cuobjdump >/dev/null && command -v nvdisasm >/dev/null && return 0
  [ -x "$SASS_TOOLS_DIR/cuobjdump" ] && [ -x "$SASS_TOOLS_DIR/nvdisasm" ] && return 0
  log "fetching cuobjdump and nvdisasm for the SASS checks: ${SASS_TOOLS[*]}"
  local wheels="$BUILD/tools/wheels"
  if ! { python3 -m pip download -q --no-deps --only-binary=:all: -d "$wheels" "${SASS_TOOLS[@]}" >&2 &&
         python3 "$ROOT/scripts/unpack_tools.py" "$SASS_TOOLS_DIR" "$wheels"/*.whl; }; then
    log "warning: could not fetch them; the SASS checks will say skipped"
  fi
}

configure_and_build() {
  if [ ! -f "$BUILD/build.ninja" ]; then
    log "configuring in $BUILD"
    cmake --preset default -S "$ROOT" >&2
  fi
  log "building"
  cmake --build "$BUILD" >&2
}

install_missing_packages
find_cuda
require_tools
[ -n "${TKPROBE_CHECK_ONLY:-}" ] && return 0 2>/dev/null  # scripts/test's own test of the checks above
fetch_sass_tools
configure_and_build
