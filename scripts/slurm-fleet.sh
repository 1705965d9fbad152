#!/usr/bin/env bash
# Every node of a Slurm allocation runs the suite on all its GPUs (`tkprobe all --devices all`: the
# node's GPUs side by side, then p2p between them), then `tkprobe fleet` names the card unlike the
# others. Slurm places the work (one task per node, holding the node's GPUs and CPUs); nothing here
# schedules, and nothing logs in to a node.
#   sbatch --nodes=4 --gpus-per-node=8 scripts/slurm-fleet.sh OUT_DIR [TKPROBE_ALL_ARGS...]
# OUT_DIR (on a file system every node sees) receives reports/NODE.json and NODE.log, fleet.md and
# fleet.json; the job exits as `tkprobe fleet` does: 0 pass, 1 an outlier, 2 bad input.
# One task per node, not one per GPU: the command is the one a user types on one machine, and only a
# run that holds every GPU of a node can measure the links between them. Each GPU's run waits on its
# kernels with a CPU core of its own (the task gets the node's CPUs), and --exclusive keeps other jobs
# off the node the suite measures. Not yet run on a cluster.
#SBATCH --job-name=tkprobe-fleet
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
set -euo pipefail
out="${1:?usage: sbatch [--nodes=N --gpus-per-node=G] scripts/slurm-fleet.sh OUT_DIR [TKPROBE_ALL_ARGS...]}"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tkprobe="${TKPROBE:-$here/build/tkprobe}"
mkdir -p "$out/reports"
# $SLURMD_NODENAME names each node's report (expanded by each task's shell). The task takes as many
# CPUs as this node has (a fleet's nodes are alike), one per GPU's run and more.
srun --kill-on-bad-exit=0 --cpus-per-task="${SLURM_CPUS_ON_NODE:-1}" bash -c \
  '"$0" all --devices all --json "$1/reports/${SLURMD_NODENAME}.json" "${@:2}" \
  > "$1/reports/${SLURMD_NODENAME}.log" 2>&1 || echo "tkprobe all exit $? on ${SLURMD_NODENAME}"' \
  "$tkprobe" "$out" "$@"
"$tkprobe" fleet "$out/reports" --markdown "$out/fleet.md" --format json > "$out/fleet.json"
