#!/usr/bin/env bash
# Every node of a Slurm allocation runs the suite on all its GPUs (`tkprobe all --devices all`: the
# node's GPUs side by side, then p2p between them), then `tkprobe fleet` names the card unlike the
# others. Slurm places the work (one task per node, holding the node's GPUs and CPUs); nothing here
# schedules, and nothing logs in to a node.
#   sbatch --nodes=4 --gpus-per-node=8 scripts/slurm-fleet.sh OUT_DIR [TKPROBE_ALL_ARGS...]
# OUT_DIR (on a file system every node sees) receives reports/NODE.json, NODE.log and NODE.exit,
# fleet.md and fleet.json. The job exits as `tkprobe fleet` does (0 pass, 1 an outlier, 2 bad input),
# and at least 1 where a node's run failed or never ran: fleet.md's last lines name each such node.
# One task per node, not one per GPU: the command is the one a user types on one machine, and only a
# run that holds every GPU of a node can measure the links between them. Each GPU's run waits on its
# kernels with a CPU core of its own (the task gets the node's CPUs), and --exclusive keeps other jobs
# off the node the suite measures. Run under Slurm 22.05 by host.slurm_fleet (results/README.md).
#SBATCH --job-name=tkprobe-fleet
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
set -euo pipefail
out="${1:?usage: sbatch [--nodes=N --gpus-per-node=G] scripts/slurm-fleet.sh OUT_DIR [TKPROBE_ALL_ARGS...]}"
shift
# sbatch runs a copy of this script from the node's spool folder: the checkout is where it was submitted.
here="${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
tkprobe="${TKPROBE:-$here/build/tkprobe}"
if [ ! -x "$tkprobe" ]; then
  echo "slurm-fleet: no tkprobe at $tkprobe: submit from the checkout, or set TKPROBE" >&2
  exit 2
fi
mkdir -p "$out/reports"
rm -f "$out"/reports/*.exit  # a node whose task never runs leaves none
# $SLURMD_NODENAME names each node's files (expanded by each task's shell). The task takes as many
# CPUs as this node has (a fleet's nodes are alike), one per GPU's run and more.
srun --kill-on-bad-exit=0 --cpus-per-task="${SLURM_CPUS_ON_NODE:-1}" bash -c \
  '"$0" all --devices all --json "$1/reports/${SLURMD_NODENAME}.json" "${@:2}" \
  > "$1/reports/${SLURMD_NODENAME}.log" 2>&1; echo $? > "$1/reports/${SLURMD_NODENAME}.exit"' \
  "$tkprobe" "$out" "$@" || true  # a node that failed is named below, from the allocation's list
failed=()
for node in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
  rc=$(cat "$out/reports/$node.exit" 2>/dev/null || echo "none (its task never ran)")
  [ "$rc" = 0 ] || failed+=("$node: tkprobe all exit $rc (reports/$node.log)")
done
status=0
"$tkprobe" fleet "$out/reports" --markdown "$out/fleet.md" --format json > "$out/fleet.json" || status=$?
if [ ${#failed[@]} -gt 0 ]; then
  { echo; echo "**FAILED** nodes, each missing from the fleet or judged on what it wrote:"
    printf -- '- %s\n' "${failed[@]}"; } | tee -a "$out/fleet.md" >&2
  [ $status -ne 0 ] || status=1
fi
exit $status
