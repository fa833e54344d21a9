"""Lint rules for pods that start but run slower than planned because of how the node's
container runtime sets up their processes:

  rdma-memlock      a container that opens the RDMA HCAs (an ``rdma/`` resource) without
                    the IPC_LOCK capability, on a pool whose runtime memlock limit is not
                    unlimited. RDMA registers (pins) every buffer it sends from; without
                    IPC_LOCK the pinned pages count against RLIMIT_MEMLOCK, which a
                    container inherits from the runtime's service (systemd's default is
                    8 MiB). Symptom: NCCL logs 'NET/IB : ... ibv_reg_mr failed' /
                    'Cannot allocate memory' and either fails or falls back to TCP sockets,
                    so all-reduce runs several times slower than the fabric allows, without
                    an error. Sources: the Linux mlock(2) and ibv_reg_mr(3) pages
                    (RLIMIT_MEMLOCK unless CAP_IPC_LOCK), the NVIDIA network operator's RDMA
                    examples (capabilities: IPC_LOCK), Pod Security 'baseline' and
                    'restricted' refusing the capability. The inventory's
                    ``memlockUnlimited`` says a pool's runtime lifts the limit (``kube render``
                    ships the systemd drop-in for RDMA pools and sets it); only lint can show
                    this class: kwok nodes run no processes.
"""

from __future__ import annotations

from aiplat.findings import Finding
from aiplat.kube.lint.base import Context, Obj, finding, rule
from aiplat.kube.lint.objects import pod_specs, pool_of
from aiplat.kube.validate import ref

RDMA_PREFIX = "rdma/"


def _uses_rdma(container: Obj) -> bool:
    res = container.get("resources") or {}
    return any(str(k).startswith(RDMA_PREFIX)
               for part in ("requests", "limits") for k in (res.get(part) or {}))


def _has_ipc_lock(container: Obj) -> bool:
    caps = ((container.get("securityContext") or {}).get("capabilities") or {}).get("add") or []
    return "IPC_LOCK" in caps or "CAP_IPC_LOCK" in caps


def _memlock_lifted(ctx: Context, pool: str | None) -> bool:
    pools = [p for p in ctx.inventory.pools if pool is None or p.name == pool]
    rdma = [p for p in pools if any(r.startswith(RDMA_PREFIX) for r in p.capacity)] or pools
    return bool(rdma) and all(p.memlock_unlimited for p in rdma)


@rule("rdma-memlock", "RDMA containers have IPC_LOCK, or their pool's runtime no memlock "
      "limit", severities=("warning",))
def rdma_memlock(ctx: Context) -> list[Finding]:
    out = []
    for o in ctx.objects:
        for spec in pod_specs(o):
            pool = pool_of(spec)
            if _memlock_lifted(ctx, pool):
                continue
            for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
                if _uses_rdma(c) and not _has_ipc_lock(c):
                    where = f"pool {pool}" if pool else "its nodes"
                    out.append(finding(
                        "warning", "rdma-memlock", ref(o),
                        f"container {c.get('name')!r} opens the RDMA HCAs without IPC_LOCK and "
                        f"{where} keep the runtime's memlock limit: NCCL cannot register its "
                        "buffers and fails or falls back to TCP sockets (a slow run, no error)",
                        "lift the container runtime's limit on those nodes (systemd drop-in "
                        "[Service] LimitMEMLOCK=infinity for containerd or crio, as kube render "
                        "ships in cluster/nodes/<pool>/runtime-memlock.conf, then memlockUnlimited:"
                        " true in the inventory), or add capabilities: {add: [IPC_LOCK]} in a "
                        "namespace whose Pod Security level is privileged"))
    return out
