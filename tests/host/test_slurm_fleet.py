#!/usr/bin/env python3
"""scripts/slurm-fleet.sh under a real Slurm started here: munged, slurmctld and one slurmd per node
on this host (Debian's slurm-wlm takes `slurmd -N NODE`), from a configuration in a temporary folder,
all stopped at the end whatever happens. The recipe is submitted with sbatch as the README says, from
a checkout's root (a folder whose build/tkprobe is the stand-in below), OUT_DIR relative to it; its
job, steps, node names, GPUs, output folders, `tkprobe fleet` and exit code are Slurm's and tkprobe's.

The last node's `tkprobe all` fails (exit 4): fleet.md must name it and the job fail. Where this
machine has a GPU, one other node runs the real `tkprobe all` on them all (one GPU is no fleet:
`tkprobe fleet` exits 2 saying so, and so does the job). Without one, two nodes replay real H200 rows
instead: three probes of results/h200/suite.json, once per GPU that Slurm gave the task (two per
node, /dev/null and /dev/zero standing in as their device files), each card its own UUID, node2's
card 1 10% slower on every row; `tkprobe fleet` must flag that card alone, and the job exit 1.
Exit 77 (skipped) where Slurm or munge is not installed, or not as root (slurmd must be).

usage: test_slurm_fleet.py SOURCE_DIR TKPROBE"""
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from checklist import Checklist

SOURCE, TKPROBE = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import tkreport  # noqa: E402

REPLAY_PROBES = ("gemm", "tensor-cores", "smem-latency")

# `tkprobe all` on each node: fails on the last one, replays or runs the real suite on the others.
NODE_TKPROBE = """#!/usr/bin/env python3
import copy, json, sys, os, zlib
real, node = os.environ["REAL_TKPROBE"], os.environ.get("SLURMD_NODENAME", "")
if sys.argv[1] != "all" or (not os.environ.get("CARD_REPORT") and node != os.environ["FAILING_NODE"]):
    os.execv(real, [real] + sys.argv[1:])
if node == os.environ["FAILING_NODE"]:
    print("a runtime error, as where a node's GPU is lost", file=sys.stderr)
    sys.exit(4)
out = sys.argv[sys.argv.index("--json") + 1]
card_doc = json.load(open(os.environ["CARD_REPORT"]))
doc = {"schema": card_doc["schema"], "tool": card_doc["tool"], "host": dict(card_doc["host"], hostname=node),
       "devices": [], "results": [], "findings": []}
for k, _ in enumerate(os.environ["CUDA_VISIBLE_DEVICES"].split(",")):  # the GPUs Slurm gave this task
    device = dict(card_doc["device"], index=k)
    device["uuid"] = "GPU-%08x-0000-0000-0000-000000000000" % zlib.crc32(f"{node}{k}".encode())
    doc["devices"].append({"device": device, "telemetry": card_doc["telemetry"]})
    for r in copy.deepcopy(card_doc["results"]):
        if (node, k) == ("node2", 1):  # the slow card: every statistic 10% worse
            for s in r["metrics"].values():
                if isinstance(s, dict) and "median" in s:
                    f = 1 / 1.1 if s["better"] == "higher" else 1.1
                    for key in ("median", "min", "max", "q1", "q3"):
                        s[key] *= f
        doc["results"].append({"probe": r.pop("probe"), "device": k, **r})
json.dump(doc, open(out, "w"))
"""


def skip_reason():
    tools = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "sinfo", "squeue", "scancel")
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        return f"no {', '.join(missing)}: install munge, slurmctld, slurmd and slurm-client (scripts/setup.sh does)"
    if os.geteuid() != 0:
        return "slurmd runs jobs as root only here; run as root"
    return None


def gpu_count():
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in listing.splitlines())


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def slurm_conf(tmp, nodes, gpu_files):
    ctld, slurmd, *node_ports = free_ports(2 + len(nodes))
    cpus = min(2, os.cpu_count())  # more than one for the recipe's --cpus-per-task; no more than any host has
    lines = [f"ClusterName=tkprobe-test\nSlurmctldHost=localhost\nSlurmctldPort={ctld}\nSlurmdPort={slurmd}",
             f"AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={tmp}/munge.socket",
             f"SlurmUser=root\nSlurmdUser=root\nStateSaveLocation={tmp}/state\nSlurmdSpoolDir={tmp}/spool/%n",
             f"SlurmctldPidFile={tmp}/slurmctld.pid\nSlurmdPidFile={tmp}/slurmd.%n.pid",
             "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\nMpiDefault=none",
             "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\nGresTypes=gpu"]
    lines += [f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={p} CPUs={cpus} Gres=gpu:{len(gpu_files)}"
              for n, p in zip(nodes, node_ports)]
    lines.append(f"PartitionName=fleet Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP")
    with open(os.path.join(tmp, "slurm.conf"), "w") as f:
        f.write("\n".join(lines) + "\n")
    # cgroup/v2 without systemd (a container, a VM with no dbus): slurmd sets up its cgroups itself.
    with open(os.path.join(tmp, "cgroup.conf"), "w") as f:
        f.write("CgroupAutomount=yes\nIgnoreSystemdOnFailure=yes\n")
    with open(os.path.join(tmp, "gres.conf"), "w") as f:
        f.write(f"NodeName={','.join(nodes)} Name=gpu File={','.join(gpu_files)}\n")


class Slurm:
    """munged, slurmctld and a slurmd per node, in the foreground as this process's children."""

    def __init__(self, tmp, nodes, env):
        self.tmp, self.nodes, self.env, self.daemons = tmp, nodes, env, []

    def __enter__(self):
        try:
            self.start_all()
        except BaseException:
            self.__exit__()
            raise
        return self

    def start_all(self):
        key = os.path.join(self.tmp, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        self.start("munged", "-F", "-f", f"--socket={self.tmp}/munge.socket", f"--key-file={key}",
                   f"--pid-file={self.tmp}/munged.pid", f"--log-file={self.tmp}/munged.log",
                   f"--seed-file={self.tmp}/munged.seed")
        self.wait_for(lambda: os.path.exists(f"{self.tmp}/munge.socket"), "munged's socket")
        conf = os.path.join(self.tmp, "slurm.conf")
        self.start("slurmctld", "-D", "-f", conf)
        for node in self.nodes:
            os.makedirs(os.path.join(self.tmp, "spool", node))
            self.start("slurmd", "-D", "-f", conf, "-N", node)
        self.wait_for(self.nodes_idle, f"nodes {','.join(self.nodes)} idle")

    def start(self, *argv):
        log = open(os.path.join(self.tmp, f"{argv[0]}.{len(self.daemons)}.out"), "w")
        self.daemons.append(subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                             start_new_session=True))

    def wait_for(self, ready, what, seconds=60):
        deadline = time.time() + seconds
        while not ready():
            if time.time() > deadline or any(d.poll() is not None for d in self.daemons):
                raise RuntimeError(f"no {what} within {seconds} s\n{self.logs()}")
            time.sleep(0.5)

    def nodes_idle(self):
        states = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True, text=True)
        return states.stdout.split() == ["idle"] * len(self.nodes)

    def no_jobs(self):
        jobs = subprocess.run(["squeue", "-h"], env=self.env, capture_output=True, text=True)
        return jobs.returncode != 0 or not jobs.stdout.strip()

    def logs(self):
        text = ""
        for name in sorted(os.listdir(self.tmp)):
            if name.endswith(".out"):
                text += f"--- {name}\n" + open(os.path.join(self.tmp, name), errors="replace").read()[-3000:]
        return text

    # Jobs first (their steps outlive slurmd), then each daemon's process group, forcibly if it lingers.
    def __exit__(self, *_):
        subprocess.run(["scancel", "--full", "--partition=fleet"], env=self.env, capture_output=True)
        deadline = time.time() + 20
        while not self.no_jobs() and time.time() < deadline:
            time.sleep(0.5)
        for d in reversed(self.daemons):
            if d.poll() is not None:
                continue
            os.killpg(d.pid, signal.SIGTERM)
            try:
                d.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(d.pid, signal.SIGKILL)
                d.wait()


@contextlib.contextmanager
def stepd_slice(cgroup_root="/sys/fs/cgroup"):
    """On cgroup v2, slurmd places its step daemons under system.slice, which systemd makes at boot. Where no
    systemd made it (a container or VM without one) it is made here, and removed with what slurmd put in it."""
    slice_dir = os.path.join(cgroup_root, "system.slice")
    made = os.path.exists(os.path.join(cgroup_root, "cgroup.controllers")) and not os.path.isdir(slice_dir)
    if made:
        try:
            os.mkdir(slice_dir)
        except OSError:  # a read-only cgroup mount: slurmd's log then says what it lacks
            made = False
    try:
        yield
    finally:
        if made:
            for folder, _, _ in os.walk(slice_dir, topdown=False):
                with contextlib.suppress(OSError):  # a cgroup folder goes once empty of processes
                    os.rmdir(folder)


def job_state(env, job):
    shown = subprocess.run(["scontrol", "-o", "show", "job", job], env=env, capture_output=True, text=True).stdout
    fields = dict(f.split("=", 1) for f in shown.split() if "=" in f)
    return fields.get("JobState", "UNKNOWN"), fields.get("ExitCode", "?")


def run_job(slurm, env, nodes, gpus, checkout, seconds):
    """The README's sbatch line, from the checkout; returns the job's exit code and its output."""
    job_out = os.path.join(checkout, "job.out")
    submit = subprocess.run(["sbatch", "--parsable", f"--nodes={len(nodes)}", f"--gpus-per-node={gpus}",
                             f"--output={job_out}", os.path.join(SOURCE, "scripts", "slurm-fleet.sh"), "fleet-out"],
                            env=env, cwd=checkout, capture_output=True, text=True)
    if submit.returncode != 0:
        raise RuntimeError(f"sbatch refused the job: {submit.stderr}\n{slurm.logs()}")
    job = submit.stdout.strip()
    terminal = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}
    slurm.wait_for(lambda: job_state(env, job)[0] in terminal, f"end of job {job}", seconds)
    state, exit_code = job_state(env, job)
    return int(exit_code.split(":")[0]), f"job {job} {state}\n" + open(job_out).read()


def replay_report(tmp):
    doc = tkreport.load(os.path.join(SOURCE, "results", "h200", "suite.json"))
    doc["results"] = [r for r in doc["results"] if r["probe"] in REPLAY_PROBES]
    path = os.path.join(tmp, "card.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def read_text(path):
    return open(path).read() if os.path.exists(path) else ""


def read_json(path):
    """The document, or {} where the job left none (the checks then say what is missing)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def check_fleet(checks, out, job_log, nodes, gpus, replay):
    """Replayed: node2's card 1 flagged alone. Real: one GPU is no fleet (`tkprobe fleet` exits 2 saying
    so); more are judged, whatever the verdict. Either way the failing node is named and the job fails."""
    reports = sorted(f for f in os.listdir(os.path.join(out, "reports")) if f.endswith(".json"))
    checks.expect(reports == [f"{n}.json" for n in nodes[:-1]], f"node reports {reports}, not {nodes[:-1]}'s")
    for node in nodes[:-1]:
        status = read_text(os.path.join(out, "reports", f"{node}.exit")).strip() or "missing"
        checks.expect(status == "0", f"{node}'s tkprobe all exit {status}: see its log")
    text = read_text(os.path.join(out, "fleet.md"))
    checks.expect(f"- {nodes[-1]}: tkprobe all exit 4" in text, f"fleet.md does not name {nodes[-1]} as failed")
    if not replay and gpus == 1:
        checks.expect("two or more cards" in job_log, "the job does not say one card is no fleet")
        return 2
    fleet = read_json(os.path.join(out, "fleet.json"))
    cards = fleet.get("gpus", [])
    checks.expect(len(cards) == gpus * (len(nodes) - 1), f"{len(cards)} cards, not {gpus * (len(nodes) - 1)}")
    if replay:
        flagged = {cards[g]["source"] for r in fleet.get("rows", []) for g in r["outliers"]}
        want = {"fleet-out/reports/node2.json device 1"}
        checks.expect(flagged == want, f"flagged {sorted(flagged)}, not {sorted(want)}")
        checks.expect("**OUTLIER**" in text, "fleet.md does not mark the outlier")
    return 1


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # ctest's timeout: the daemons still stop
    reason = skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 77
    gpus = gpu_count()
    replay = gpus == 0
    nodes = ["node1", "node2", "node3"] if replay else ["node1", "node2"]
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "state"))
        gpu_files = ["/dev/null", "/dev/zero"] if replay else [f"/dev/nvidia{k}" for k in range(gpus)]
        slurm_conf(tmp, nodes, gpu_files)
        checkout = os.path.join(tmp, "checkout")
        os.makedirs(os.path.join(checkout, "build"))
        node_tkprobe = os.path.join(checkout, "build", "tkprobe")
        with open(node_tkprobe, "w") as f:
            f.write(NODE_TKPROBE)
        os.chmod(node_tkprobe, 0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
        env.update(SLURM_CONF=os.path.join(tmp, "slurm.conf"), REAL_TKPROBE=TKPROBE,
                   FAILING_NODE=nodes[-1], CARD_REPORT=replay_report(tmp) if replay else "")
        out = os.path.join(checkout, "fleet-out")
        print(f"{len(nodes)} nodes, {len(gpu_files)} GPUs each, "
              + ("H200 rows replayed" if replay else "the real `tkprobe all`") + f", {nodes[-1]} failing")
        with stepd_slice(), Slurm(tmp, nodes, env) as slurm:
            exit_code, job_log = run_job(slurm, env, nodes, len(gpu_files), checkout, 120 if replay else 3000)
            print(job_log)
            checks = Checklist("slurm-fleet")
            want = check_fleet(checks, out, job_log, nodes, len(gpu_files), replay)
            checks.expect(exit_code == want, f"job exit {exit_code}, not {want}")
            if checks.failures:
                print(slurm.logs())
            return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
