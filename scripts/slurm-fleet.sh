#!/usr/bin/env bash
# Every GPU of a Slurm allocation runs the suite, then `tkprobe fleet` names the card unlike the
# others. Slurm places the work (one task per GPU, each seeing only its own card through
# --gpus-per-task); nothing here schedules, and nothing logs in to a node.
#   sbatch --nodes=4 --gpus-per-node=8 scripts/slurm-fleet.sh OUT_DIR [TKPROBE_ALL_ARGS...]
# OUT_DIR (on a file system every node sees) receives NODE-gpuN.json per card, fleet.md and
# fleet.json; the job exits as `tkprobe fleet` does: 0 pass, 1 an outlier, 2 bad input.
# The cards of a node run side by side: each run holds its own GPU and one CPU core, and the suite
# moves no data between GPUs. Not yet run on a cluster (written 2026-12-02).
#SBATCH --job-name=tkprobe-fleet
#SBATCH --ntasks-per-gpu=1
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=2
set -euo pipefail
out="${1:?usage: sbatch [--nodes=N --gpus-per-node=G] scripts/slurm-fleet.sh OUT_DIR [TKPROBE_ALL_ARGS...]}"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tkprobe="${TKPROBE:-$here/build/tkprobe}"
mkdir -p "$out"
# One task per GPU; $SLURMD_NODENAME and $SLURM_LOCALID name its report (expanded by each task's shell).
srun --kill-on-bad-exit=0 bash -c '"$0" all --json "$1/${SLURMD_NODENAME}-gpu${SLURM_LOCALID}.json" "${@:2}" \
  > "$1/${SLURMD_NODENAME}-gpu${SLURM_LOCALID}.log" 2>&1 || echo "tkprobe all exit $? on ${SLURMD_NODENAME} gpu ${SLURM_LOCALID}"' \
  "$tkprobe" "$out" "$@"
"$tkprobe" fleet "$out"/*-gpu*.json --markdown "$out/fleet.md" --format json > "$out/fleet.json"
