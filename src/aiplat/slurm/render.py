"""The Slurm files for a resolved platform, in memory: {relative path: text} (pure).

``slurm_outputs(platform, catalog)`` resolves and plans the spec once and renders;
``slurm_files(resolved, deployment=...)`` is the renderer itself. Only names the spec's
grammar makes safe (DNS-1123 pools, tenants, the platform), numbers and GRES types built
here reach a config line; free text (descriptions, group names) goes only to the accounts
script, quoted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiplat.catalog import Catalog
from aiplat.errors import InputError
from aiplat.kube.facts import pool_facts
from aiplat.plan import Plan
from aiplat.plan.build import plan_resolved
from aiplat.plan.resolve import Resolved, resolve
from aiplat.slurm.accounts import accounting_tres, accounts_on, sacctmgr_script
from aiplat.slurm.nodes import SlurmPool, hostlist, slurm_pools
from aiplat.spec.models import Platform

HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
ADDRESS = re.compile(r"^[0-9A-Fa-f.:]{2,45}$")
ROOT_SWITCH = "spine"
"""The fabric above the blocks: no rack or block name (``<pool>-rack-N``) can take it."""
RESERVED = {"default"}
"""Slurm reads ``NodeName=DEFAULT`` / ``PartitionName=DEFAULT`` (any case) as defaults."""
RESERVED_ACCOUNTS = {"root"}
"""sacctmgr's own top account."""


@dataclass(frozen=True)
class SlurmOutputs:
    files: dict[str, str]
    plan: Plan


def slurm_outputs(platform: Platform, catalog: Catalog, *, controller: str = "slurmctld",
                  controller_addr: str | None = None) -> SlurmOutputs:
    """Resolve and plan the spec once; render the Slurm files for it."""
    resolved = resolve(platform, catalog)
    plan = plan_resolved(resolved)
    files = slurm_files(resolved, deployment=plan.deployment.recommendation,
                        controller=controller, controller_addr=controller_addr)
    return SlurmOutputs(files, plan)


def slurm_files(resolved: Resolved, *, deployment: str | None = None,
                controller: str = "slurmctld",
                controller_addr: str | None = None) -> dict[str, str]:
    """slurm.conf, gres.conf, topology.conf, cgroup.conf and sacctmgr.sh."""
    _check_names(resolved, controller, controller_addr)
    pools = [p for p in slurm_pools(pool_facts(resolved)) if p.nodes]
    cluster = resolved.spec.metadata.name
    return {
        "slurm.conf": slurm_conf(resolved, pools, deployment, controller, controller_addr),
        "gres.conf": gres_conf(pools),
        "topology.conf": topology_conf(pools),
        "cgroup.conf": CGROUP_CONF,
        "sacctmgr.sh": sacctmgr_script(resolved.spec, cluster, pools),
    }


def _check_names(resolved: Resolved, controller: str, addr: str | None) -> None:
    for pool in resolved.pools:
        if pool.name.lower() in RESERVED:
            raise InputError(f"pool '{pool.name}': Slurm reads PartitionName={pool.name} as "
                             "the defaults of every partition, not a partition (fix: rename "
                             "the pool)")
    for tenant in resolved.spec.tenants:
        if tenant.name in RESERVED_ACCOUNTS:
            raise InputError(f"tenant '{tenant.name}': Slurm's accounting has its own "
                             f"account {tenant.name} above all others (fix: rename the tenant)")
    if not HOST.match(controller):
        raise InputError(f"--controller {controller!r} is not a host name (fix: give the "
                         "slurmctld host's name as `hostname -s` prints it)")
    if addr is not None and not ADDRESS.match(addr):
        raise InputError(f"--controller-addr {addr!r} is not an IP address (fix: give the "
                         "address slurmd reaches slurmctld at, e.g. 10.10.0.5)")


HEADER = """\
# slurm.conf for platform {name}, rendered by `aiplat slurm render` from its spec.
# {deployment}
# One partition per pool, named after it; nodes are named as in the Kubernetes tree.
# Assumed where the spec has no fact (run `slurmd -C` on a node; correct its line if it
# differs):
#   Sockets=2 when cpuCores is even (else 1), CoresPerSocket=cpuCores/Sockets,
#   ThreadsPerCore=1: SMT threads, if any, stay unscheduled (declaring fewer CPUs than a
#   node has is safe, declaring more drains it);
#   RealMemory = memoryGiB less the OS reservation aiplat's plan keeps (max(7 GiB, 2%));
#   CoreSpecCount = the cores the plan keeps for the OS (2, plus 1 per 32 above 64);
#   SlurmctldHost and AccountingStorageHost: --controller (slurmdbd on the same host).
"""

GENERAL = """\
AuthType=auth/munge
SlurmUser=slurm
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
MpiDefault=none
ReturnToService=1
SchedulerType=sched/backfill
# Cores and memory are consumable: GPU jobs on one node do not share cores or memory.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# cgroups track every process of a job and confine it to its cores, memory and GPUs
# (cgroup.conf).
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/cgroup
# Racks and blocks (topology.conf): a job is placed under as few switches as possible.
TopologyPlugin=topology/tree

# Fair share: the accounts' shares are the tenants' weights (sacctmgr.sh); usage decays
# with a week's half-life, so last month's heavy user is not punished for ever.
PriorityType=priority/multifactor
PriorityDecayHalfLife=7-0
PriorityMaxAge=7-0
PriorityWeightFairshare=10000
PriorityWeightAge=1000
PriorityWeightQOS=1000
PriorityWeightJobSize=0
PriorityWeightPartition=0
"""


def slurm_conf(resolved: Resolved, pools: list[SlurmPool], deployment: str | None,
               controller: str, addr: str | None) -> str:
    name = resolved.spec.metadata.name
    said = (f"The plan's deployment assessment recommends: {deployment}."
            if deployment else "Rendered on request.")
    host = f"{controller}({addr})" if addr else controller
    shards = any(p.shards_per_gpu for p in pools)
    lines = [HEADER.format(name=name, deployment=said).rstrip(),
             f"ClusterName={name}", f"SlurmctldHost={host}",
             f"GresTypes=gpu{',shard' if shards else ''}", GENERAL.rstrip(), "",
             "# Accounting in slurmdbd; a job runs only under an account and within its "
             "limits.",
             "AccountingStorageType=accounting_storage/slurmdbd",
             f"AccountingStorageHost={controller}",
             "AccountingStorageEnforce=associations,limits,qos"]
    tres = accounting_tres(pools)
    if tres:  # tracked, or the accounts' GPU limits are never checked
        lines.append(f"AccountingStorageTRES={','.join(tres)}")
    lines.append("")
    for i, pool in enumerate(pools):
        lines += _pool_lines(pool, resolved, default=i == 0)
    if not pools:
        lines.append("# the spec's pools have no nodes: nothing to schedule on")
    return "\n".join(lines).rstrip() + "\n"


def _pool_lines(pool: SlurmPool, resolved: Resolved, *, default: bool) -> list[str]:
    facts = pool.facts
    what = (f"{pool.gpus_per_node} x {facts.gpu.name}" if facts.gpu and pool.gpus_per_node
            else "no GPUs")
    scaled = " (autoscaled in Kubernetes: here its planned maximum)" \
        if facts.spec.autoscaling else ""
    node = [f"NodeName={hostlist(pool.nodes)}", f"CPUs={pool.cores}",
            f"Sockets={pool.sockets}", f"CoresPerSocket={pool.cores // pool.sockets}",
            "ThreadsPerCore=1", f"RealMemory={pool.real_memory_mib}"]
    if pool.core_spec_count:
        node.append(f"CoreSpecCount={pool.core_spec_count}")
    gres = pool.gres()
    if gres:
        node.append("Gres=" + ",".join(f"{k}:{v}" for k, v in gres.items()))
    node.append("State=UNKNOWN")
    usable = pool.cores - pool.core_spec_count
    part = [f"PartitionName={pool.name}", f"Nodes={hostlist(pool.nodes)}",
            f"Default={'YES' if default else 'NO'}", "MaxTime=INFINITE", "State=UP",
            f"DefMemPerCPU={max(1, pool.real_memory_mib // usable)}"]
    if pool.gpus_per_node:  # a GPU job gets its share of the node's cores (and their memory)
        part.append(f"DefCpuPerGPU={max(1, usable // pool.gpus_per_node)}")
    accounts = accounts_on(pool, resolved.spec)
    if resolved.spec.tenants:  # as Kueue: a tenant without quota on the pool has no access
        part.append(f"AllowAccounts={','.join(accounts) if accounts else 'root'}")
    return [f"# pool {pool.name}: {len(pool.nodes)} nodes, {what}{scaled}",
            " ".join(node), " ".join(part), ""]


def gres_conf(pools: list[SlurmPool]) -> str:
    lines = ["# gres.conf: the GPU device files of each pool's nodes (rendered by aiplat).",
             "# The alternative: `AutoDetect=nvml` lets slurmd ask NVML instead; it needs a",
             "# slurmd built with NVML (Debian's is not: it has no gpu_nvml plugin).", ""]
    for pool in pools:
        n = pool.gpus_per_node
        if not n or pool.gres_type is None:
            continue
        nodes = hostlist(pool.nodes)
        if pool.facts.spec.sharing.mig_layout:
            # MIG devices are capability files under /dev/nvidia-caps, one set per instance:
            # only NVML knows which belongs to which GPU instance.
            lines += [f"# pool {pool.name}: MIG ({', '.join(pool.facts.spec.sharing.mig_layout)}"
                      " per GPU); the types must match what `slurmd -G` prints",
                      f"NodeName={nodes} AutoDetect=nvml", ""]
            continue
        files = "/dev/nvidia0" if n == 1 else f"/dev/nvidia[0-{n - 1}]"
        lines += [f"# pool {pool.name}",
                  f"NodeName={nodes} Name=gpu Type={pool.gres_type} File={files}"]
        if pool.shards_per_gpu:
            lines.append(f"NodeName={nodes} Name=shard Count={n * pool.shards_per_gpu}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def topology_conf(pools: list[SlurmPool]) -> str:
    """Rack switches over their nodes, block switches over their racks, one spine above."""
    lines = ["# topology.conf: racks and blocks as aiplat's plan laid them out (the same names",
             "# as the Kubernetes nodes' rack and block labels).", ""]
    blocks: list[str] = []
    for pool in pools:
        t = pool.facts.spec.topology
        lines.append(f"# pool {pool.name}: {pool.facts.nodes_per_rack} nodes per rack, "
                     f"{t.racks_per_block} racks per block")
        racks = pool.racks()
        for rack in racks:
            lines.append(f"SwitchName={rack.name} Nodes={hostlist(rack.nodes)}")
        for block in dict.fromkeys(r.block for r in racks):
            under = [r.name for r in racks if r.block == block]
            lines.append(f"SwitchName={block} Switches={hostlist(under)}")
            blocks.append(block)
        lines.append("")
    if blocks:
        lines.append(f"SwitchName={ROOT_SWITCH} Switches={hostlist(blocks)}")
    return "\n".join(lines).rstrip() + "\n"


CGROUP_CONF = """\
# cgroup.conf (rendered by aiplat): a job sees only its cores, its memory and its GPUs.
CgroupPlugin=autodetect
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainDevices=yes
"""
