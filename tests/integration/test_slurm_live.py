"""aiplat's Slurm files run Debian's real Slurm (22.05): slurmctld, one slurmd per node,
slurmdbd on a private MariaDB, munge; GPUs are made device nodes (char 195:N, NVIDIA's
major) that no driver answers.

One host plays every node (the "multiple slurmd" way: ``slurmd -N <node>``, each on its own
port, spool and log, all at 127.0.0.1). What the test changes in the rendered files, and
only that: host paths and ports into a temp dir, ``SlurmUser=root``, the munge socket,
``SlurmdParameters=config_overrides`` (the nodes declare a spec's cores and memory, not
this host's), NodeAddr/Port per node and gres.conf's ``File=`` into the temp dir. Every
other line (cons_tres, cgroup tracking and device confinement, the topology tree,
multifactor priority, slurmdbd accounting with associations/limits/qos enforced, the
partitions' AllowAccounts) runs as rendered, and sacctmgr.sh runs as rendered (with a
stand-in ``getent`` that puts root in every group).

Proves: sinfo shows one partition per pool with its GRES; a GPU job lands on a node of its
pool with CUDA_VISIBLE_DEVICES / SLURM_JOB_GPUS set, can open its GPU's device file and is
refused the other (cgroup devices); the accounts carry the weights and quotas; a tenant's
GRES limit holds (AssocGrpGRES) and a pool without the tenant's quota refuses it; a hostile
description in the spec stays data. Cannot prove: real GPUs, NVML, several hosts, the
topology's effect on placement across real switches, fair-share ordering under load.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from conftest import need

from aiplat.catalog import load_catalog
from aiplat.slurm import slurm_outputs
from aiplat.spec import parse_platform

pytestmark = pytest.mark.integration

TOOLS = ("slurmctld", "slurmd", "slurmdbd", "sacctmgr", "sinfo", "sbatch", "squeue",
         "munged", "mariadbd", "mariadb-install-db")
HOSTILE = "it's $(touch /tmp/aiplat-slurm-pwned) `id`"
SPEC = {
    "apiVersion": "aiplat/v1alpha1", "kind": "Platform", "metadata": {"name": "lab"},
    "site": {"powerBudgetKW": 100, "rackPowerLimitKW": 30},
    "pools": [
        {"name": "big", "node": {"gpu": {"model": "H100-SXM-80GB", "count": 2},
                                 "cpuCores": 8, "memoryGiB": 64},
         "count": 2, "topology": {"nodesPerRack": 1, "racksPerBlock": 2}},
        {"name": "small", "node": {"gpu": {"model": "L40S", "count": 1}, "cpuCores": 4,
                                   "memoryGiB": 32}, "count": 2},
    ],
    "tenants": [
        {"name": "alpha", "weight": 2, "description": HOSTILE, "users": ["alpha team"],
         "quota": {"big": {"gpus": 2, "borrowingLimit": 1}}},
        {"name": "beta", "weight": 1, "admins": ["beta-leads"],
         "quota": {"small": {"gpus": 1, "borrowingLimit": 0},
                   "big": {"gpus": 1, "borrowingLimit": 0}}},
    ],
    "workloads": [],
}
NODES = ("big-0", "big-1", "small-0", "small-1")
GPUS = {"big": 2, "small": 1}


def _missing() -> str | None:
    gone = [t for t in TOOLS if shutil.which(t) is None and not Path("/usr/sbin", t).exists()]
    if gone:
        return f"Slurm's live test needs {', '.join(gone)} (apt-get install slurmctld slurmd " \
               "slurmdbd slurm-client munge mariadb-server)"
    if os.geteuid() != 0:
        return "Slurm's live test runs its daemons as root"
    return None


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _set(text: str, key: str, value: str) -> str:
    new, n = re.subn(rf"^{key}=.*$", lambda _: f"{key}={value}", text, flags=re.M)
    return new if n else new + f"{key}={value}\n"


@dataclass
class Lab:
    root: Path
    env: dict[str, str]
    files: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, *argv: str, log: str) -> None:
        with (self.root / "log" / log).open("wb") as out:  # the child keeps its own copy
            self.procs.append(subprocess.Popen(argv, env=self.env, stdout=out, stderr=out,
                                               stdin=subprocess.DEVNULL))

    def run(self, *argv: str, timeout: float = 30) -> str:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout, check=False)
        assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def wait(self, what: str, probe: object, timeout: float = 40) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if callable(probe) and probe():
                    return
            except (AssertionError, subprocess.TimeoutExpired):
                pass
            time.sleep(0.5)
        logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
                         for p in sorted((self.root / "log").iterdir()))
        pytest.fail(f"{what} did not happen in {timeout:.0f} s\n{logs}")


def _local(files: dict[str, str], r: Path, ports: dict[str, int]) -> dict[str, str]:
    """The rendered files with this host's paths and ports (the test's only changes)."""
    conf = files["slurm.conf"]
    for key, value in {
        "SlurmUser": "root", "StateSaveLocation": f"{r}/state",
        "SlurmdSpoolDir": f"{r}/spool/%n", "SlurmctldPidFile": f"{r}/slurmctld.pid",
        "SlurmdPidFile": f"{r}/slurmd-%n.pid", "SlurmctldLogFile": f"{r}/log/slurmctld.log",
        "SlurmdLogFile": f"{r}/log/slurmd-%n.log", "SlurmctldPort": str(ports["ctld"]),
        "AuthInfo": f"socket={r}/munge/munge.sock",
        "AccountingStorageHost": "127.0.0.1", "AccountingStoragePort": str(ports["dbd"]),
        "AccountingStoragePass": f"{r}/munge/munge.sock",  # the dbd connection's munge
        "SlurmdParameters": "config_overrides",
    }.items():
        conf = _set(conf, key, value)
    node_ports = iter(ports[n] for n in NODES)

    def addressed(m: re.Match[str]) -> str:
        count = 2  # every pool here has two nodes
        first = next(node_ports)
        last = next(node_ports)
        assert last == first + 1
        here = ",".join(["127.0.0.1"] * count)
        return f"{m.group(0)} NodeAddr={here} NodeHostname={here} Port=[{first}-{last}]"

    conf = re.sub(r"^NodeName=\S+ .*$", addressed, conf, flags=re.M)
    gres = files["gres.conf"].replace("File=/dev/nvidia", f"File={r}/dev/nvidia")
    return files | {"slurm.conf": conf, "gres.conf": gres}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    need(_missing())
    r = tmp_path_factory.mktemp("slurm")
    os.chmod(r, 0o755)
    for d in ("munge", "state", "spool", "log", "dev", "etc", "db", "bin",
              *(f"spool/{n}" for n in NODES)):
        (r / d).mkdir()
    (r / "munge").chmod(0o700)
    for i in range(max(GPUS.values())):
        os.mknod(r / "dev" / f"nvidia{i}", 0o666 | 0o020000, os.makedev(195, i))
    # Consecutive ports per pool: NodeName's Port=[a-b] range.
    base = _port()
    while any(_busy(base + i) for i in range(len(NODES))):
        base = _port()
    ports = {"ctld": _port(), "dbd": _port(), "db": _port()} | {
        n: base + i for i, n in enumerate(NODES)}
    platform = parse_platform(yaml.safe_dump(SPEC), "lab.yaml", load_catalog())
    out = slurm_outputs(platform, load_catalog(), controller=socket.gethostname().split(".")[0],
                        controller_addr="127.0.0.1")
    files = _local(out.files, r, ports)
    for name, text in files.items():
        (r / "etc" / name).write_text(text)
    (r / "etc" / "slurmdbd.conf").write_text(
        f"AuthType=auth/munge\nAuthInfo=socket={r}/munge/munge.sock\nDbdHost=localhost\n"
        f"DbdAddr=127.0.0.1\nDbdPort={ports['dbd']}\nSlurmUser=root\n"
        "StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\n"
        f"StoragePort={ports['db']}\nStorageUser=slurm\nStoragePass=aiplat-test\n"
        f"LogFile={r}/log/slurmdbd.log\nPidFile={r}/slurmdbd.pid\n")
    (r / "etc" / "slurmdbd.conf").chmod(0o600)
    # Stands in for the directory: every group's one member is root (who runs the jobs).
    (r / "bin" / "getent").write_text('#!/bin/sh\n[ "$1" = group ] && echo "$2:x:4242:root"\n')
    (r / "bin" / "getent").chmod(0o755)
    (r / "munge" / "munge.key").write_bytes(os.urandom(1024))
    (r / "munge" / "munge.key").chmod(0o400)
    env = {**os.environ, "SLURM_CONF": str(r / "etc" / "slurm.conf"),
           "PATH": f"{r}/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    env.pop("SLURM_JOB_ID", None)
    lab = Lab(r, env, out.files)
    try:
        _start(lab, ports)
        yield lab
    finally:
        _stop(lab)


def _stop(lab: Lab) -> None:
    """Jobs first (a job's slurmstepd outlives its slurmd), then every daemon started here,
    then any step daemon still holding a file of this lab (found by its open files)."""
    subprocess.run(["scancel", "--full", "-u", "root"], env=lab.env, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=30, check=False)
    end = time.monotonic() + 15
    while time.monotonic() < end and any(p.poll() is None for p in lab.procs):
        done = subprocess.run(["squeue", "-h"], env=lab.env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=30, check=False)
        if done.returncode != 0 or not done.stdout.strip():
            break
        time.sleep(0.5)
    for p in reversed(lab.procs):
        p.terminate()
    for p in reversed(lab.procs):
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
    for pid in _stepds(lab.root):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _stepds(root: Path) -> list[int]:
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() != "slurmstepd":
                continue
            fds = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
        except OSError:
            continue
        if any(f.startswith(str(root)) for f in fds):
            out.append(int(proc.name))
    return out


def _busy(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _start(lab: Lab, ports: dict[str, int]) -> None:
    r = lab.root
    lab.start("munged", "-F", "--force", f"--key-file={r}/munge/munge.key",
              f"--socket={r}/munge/munge.sock", f"--pid-file={r}/munge/munged.pid",
              f"--seed-file={r}/munge/seed", f"--log-file={r}/log/munged.log",
              log="munged.out")
    lab.run("mariadb-install-db", f"--datadir={r}/db", "--user=root",
            "--auth-root-authentication-method=socket", "--skip-test-db", timeout=60)
    (r / "init.sql").write_text(
        "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'aiplat-test';\n"
        "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';\n")
    lab.start("mariadbd", "--no-defaults", f"--datadir={r}/db", f"--socket={r}/db.sock",
              f"--port={ports['db']}", "--bind-address=127.0.0.1", "--user=root",
              f"--init-file={r}/init.sql", "--skip-log-bin", log="mariadbd.out")
    lab.wait("MariaDB listening", lambda: _busy(ports["db"]))
    lab.wait("munged's socket", (r / "munge" / "munge.sock").exists)
    lab.start("slurmdbd", "-D", log="slurmdbd.out")
    lab.wait("slurmdbd listening", lambda: _busy(ports["dbd"]))
    # slurmctld first: it registers the cluster and the GPU TRES that sacctmgr.sh limits.
    lab.start("slurmctld", "-D", "-i", log="slurmctld.out")
    lab.wait("the GPU TRES in slurmdbd", lambda: "gres|gpu:l40s" in lab.run(
        "sacctmgr", "-n", "-P", "show", "tres", "format=type,name"))
    lab.run("sh", str(r / "etc" / "sacctmgr.sh"), timeout=90)
    for node in NODES:
        lab.start("slurmd", "-D", "-N", node, log=f"slurmd-{node}.out")
    lab.wait("every node idle", lambda: lab.run(
        "sinfo", "-h", "-N", "-o", "%N %T").split().count("idle") == len(NODES))


def test_sinfo_shows_a_partition_per_pool_with_its_gres(lab: Lab) -> None:
    rows = [line.split() for line in lab.run("sinfo", "-h", "-o", "%R %D %G %a").splitlines()]
    assert sorted(rows) == [["big", "2", "gpu:h100-sxm-80gb:2", "up"],
                            ["small", "2", "gpu:l40s-48gb:1", "up"]]
    topo = lab.run("scontrol", "show", "topology")
    assert "SwitchName=big-rack-1" in topo and "SwitchName=spine" in topo


def _batch(lab: Lab, *args: str) -> str:
    out = lab.root / f"job-{time.monotonic_ns()}.txt"
    script = ('echo "node=$SLURMD_NODENAME cvd=$CUDA_VISIBLE_DEVICES gpus=$SLURM_JOB_GPUS"\n'
              f'for d in {lab.root}/dev/nvidia*; do head -c1 "$d" 2>&1 || true; done\n')
    lab.run("sbatch", "--wait", "-o", str(out), *args, "--wrap", script, timeout=60)
    return out.read_text()


def test_a_gpu_job_lands_on_its_pool_and_sees_only_its_gpu(lab: Lab) -> None:
    text = _batch(lab, "-A", "alpha", "-p", "big", "--gres=gpu:1")
    node = re.search(r"node=(\S+) cvd=(\S*) gpus=(\S*)", text)
    assert node is not None, text
    assert node.group(1) in ("big-0", "big-1")
    assert node.group(2) == "0" and node.group(3) in ("0", "1"), text
    # The allocated device opens as far as the missing driver (ENXIO); the other is
    # refused by the job's devices cgroup (ConstrainDevices=yes).
    assert text.count("No such device or address") == 1, text
    assert text.count("Operation not permitted") == 1, text


def test_the_accounts_carry_weights_and_quotas_and_the_script_reruns(lab: Lab) -> None:
    rows = {r.split("|")[0]: r.split("|")[1:] for r in lab.run(
        "sacctmgr", "-n", "-P", "show", "assoc", "where", "user=",
        "format=account,fairshare,grptres").splitlines()}
    assert rows["alpha"][0] == "200" and rows["beta"][0] == "100"
    assert set(rows["alpha"][1].split(",")) == {"gres/gpu=3", "gres/gpu:h100-sxm-80gb=3"}
    assert set(rows["beta"][1].split(",")) == {
        "gres/gpu=2", "gres/gpu:h100-sxm-80gb=1", "gres/gpu:l40s-48gb=1"}
    users = lab.run("sacctmgr", "-n", "-P", "show", "assoc", "where", "user=root",
                    "format=account")
    assert {"alpha", "beta"} <= set(users.split())
    assert "beta" in lab.run("sacctmgr", "-n", "-P", "show", "account", "withcoord",
                             "format=account,coordinators")
    desc = lab.run("sacctmgr", "-n", "-P", "show", "account", "where", "name=alpha",
                   "format=description")
    assert "$(touch" in desc  # stored as text (sacctmgr may alter quotes), never run
    assert not Path("/tmp/aiplat-slurm-pwned").exists()
    lab.run("sh", str(lab.root / "etc" / "sacctmgr.sh"), timeout=90)  # idempotent


def test_a_tenants_gpu_limit_holds_and_a_pool_without_its_quota_refuses_it(lab: Lab) -> None:
    jobs = [lab.run("sbatch", "--parsable", "-o", "/dev/null", "-A", "alpha", "-p", "big",
                    f"--gres=gpu:{n}", "--wrap", "sleep 60").strip() for n in (2, 1, 1)]
    try:
        def settled() -> bool:
            states = lab.run("squeue", "-h", "-j", ",".join(jobs), "-o", "%i %T %r")
            return states.count("RUNNING") == 2 and "AssocGrpGRES" in states
        # alpha may hold 3 GPUs (quota 2 + borrowing 1): the third job waits on its limit
        lab.wait("alpha at its GPU limit", settled, timeout=30)
    finally:
        lab.run("scancel", *jobs)
    job = lab.run("sbatch", "--parsable", "-o", "/dev/null", "-A", "alpha", "-p", "small",
                  "--gres=gpu:1", "--wrap", "true").strip()
    try:
        state = lab.run("squeue", "-h", "-j", job, "-o", "%T %r")
        # sbatch takes it; the scheduler never starts it (AllowAccounts)
        assert state.startswith("PENDING") and "(small allows beta not alpha)" in state, state
    finally:
        lab.run("scancel", job)
