# Sourced by scripts/tkprobe and scripts/test: installs what is missing, configures, builds.
# Everything it prints goes to stderr, so a command's stdout carries only its result.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
PACKAGES=(cmake ninja-build g++ python3 libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libbenchmark-dev)

log() { echo "[tkprobe setup] $*" >&2; }

install_missing_packages() {
  [ -n "${TKPROBE_NO_INSTALL:-}" ] && return 0  # machines that cannot reach a package registry
  command -v dpkg-query >/dev/null || return 0
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Tools may come from elsewhere (pip's cmake and ninja, a toolkit's compiler).
  local wanted=()
  for p in "${missing[@]}"; do
    case "$p" in
      cmake) command -v cmake >/dev/null || wanted+=("$p") ;;
      ninja-build) command -v ninja >/dev/null || wanted+=("$p") ;;
      g++) command -v g++ >/dev/null || wanted+=("$p") ;;
      python3) command -v python3 >/dev/null || wanted+=("$p") ;;
      *) wanted+=("$p") ;;
    esac
  done
  [ ${#wanted[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  log "installing: ${wanted[*]}"
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${wanted[@]}"; } >&2; then
    log "warning: could not install ${wanted[*]}; configuring with what is here"
  fi
}

find_cuda() {
  command -v nvcc >/dev/null && return 0
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$d/nvcc" ]; then
      export PATH="$d:$PATH"
      return 0
    fi
  done
  log "error: nvcc not found; install the CUDA Toolkit (12.0 or newer) and put nvcc on PATH"
  exit 2
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
configure_and_build
