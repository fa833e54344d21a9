"""Tenants as Slurm accounts: fair share from weights, limits from quotas (pure).

Kueue and Slurm say the same things in other words:

- a tenant's ``weight`` (Kueue's fair-sharing weight) is the account's ``Fairshare``
  (shares), ``round(weight x 100)``: 2, 1 and 0.5 become 200, 100 and 50; the multifactor
  priority plugin then favours the account furthest below its share;
- a tenant's quota on a pool caps what the account may hold at once (``GrpTRES``): the
  nominal quota plus its ``borrowingLimit`` (what Kueue lets it reach), or the pool's
  capacity where the limit is unset (Kueue: the whole cohort). Slurm has no lending limit
  and preempts nothing here, so the nominal quota itself is carried only by the shares.
  A pool is a GPU type to Slurm's accounting (``gres/gpu:<type>``); pools sharing one GPU
  type share its limit, which is then their sum. Shared GPUs count in shards
  (``gres/shard``), MIG devices as GPUs of their profile's type;
- a tenant without quota on a pool has no ClusterQueue entry for it in Kueue: here the
  pool's partition does not list its account (``AllowAccounts``, ``accounts_on``).

``sacctmgr_script`` writes the accounts as a shell script an administrator reviews and
runs; each value from the spec is quoted where the script is assembled (``aiplat.shell``),
so no tenant description or group name reaches the shell as code.
"""

from __future__ import annotations

import math

from aiplat.shell import sh
from aiplat.slurm.nodes import SlurmPool, mig_type
from aiplat.spec.models import Platform, SharingStrategy, TenantSpec

SHARES_PER_WEIGHT = 100


def fairshare(weight: float) -> int:
    """Slurm's integer shares for a Kueue weight (a positive weight keeps at least 1)."""
    shares = round(weight * SHARES_PER_WEIGHT)
    return max(1, shares) if weight > 0 else 0


def pool_tres(pool: SlurmPool) -> list[str]:
    """The trackable resources a tenant's quota on ``pool`` is counted in."""
    if pool.gres_type is None:
        return []
    if pool.sharing is SharingStrategy.MIG:
        profiles = dict.fromkeys(pool.facts.spec.sharing.mig_layout or [])
        return [f"gres/gpu:{mig_type(p)}" for p in profiles]
    if pool.shards_per_gpu:
        return ["gres/shard"]
    return [f"gres/gpu:{pool.gres_type}"]


def tenant_tres(tenant: TenantSpec, pools: list[SlurmPool]) -> dict[str, int]:
    """``GrpTRES`` of the tenant's account: per type its ceiling (nominal + borrowing
    limit, within the pool), and ``gres/gpu`` their sum over whole-GPU and MIG types."""
    by_name = {p.name: p for p in pools}
    out: dict[str, int] = {}
    for pool_name, quota in tenant.quota.items():
        pool = by_name.get(pool_name)
        if pool is None or not pool_tres(pool):
            continue
        capacity = _capacity(pool)
        ceiling = quota.gpus + quota.borrowing_limit if quota.borrowing_limit is not None \
            else capacity
        tres = pool_tres(pool)
        for key in tres:  # a MIG pool's quota spread over its profiles, as Kueue splits it
            share = math.floor(min(ceiling, capacity) / len(tres) + 1e-9)
            out[key] = out.get(key, 0) + share
    gpus = sum(v for k, v in out.items() if k.startswith("gres/gpu:"))
    return ({"gres/gpu": gpus} if gpus else {}) | dict(sorted(out.items()))


def _capacity(pool: SlurmPool) -> float:
    """The pool's units in the quota's terms: GPUs, MIG devices or shards."""
    return float(len(pool.nodes) * sum(pool.gres().values()))


def accounts_on(pool: SlurmPool, platform: Platform) -> list[str]:
    """The accounts that may run on the pool's partition: tenants with quota there."""
    return [t.name for t in platform.tenants if pool.name in t.quota]


def accounting_tres(pools: list[SlurmPool]) -> list[str]:
    """``AccountingStorageTRES``: every GRES the accounts limit must be tracked, or the
    limit is never checked."""
    keys = ["gres/gpu"] if any(p.gres_type for p in pools) else []
    for p in pools:
        keys += [k for k in pool_tres(p) if k not in keys]
    return keys


PRELUDE = """\
#!/bin/sh
# Slurm accounts for the tenants of {platform} (aiplat slurm render).
# Review, then run where sacctmgr reaches slurmdbd, as root or SlurmUser: sh sacctmgr.sh
# Run it after slurmctld has started once with slurm.conf: that registers the cluster and
# the GPU TRES (AccountingStorageTRES) GrpTRES names.
# Re-running is safe: what exists is modified, not added twice.
#   Fairshare = the tenant's weight x {shares} (Kueue's fair-sharing weight as shares)
#   GrpTRES   = per GPU type the nominal quota plus the borrowing limit (Kueue's ceiling),
#               or the pool's capacity where the limit is unset; gres/gpu is their sum
# Users: each member of the tenant's groups (getent group) gets an association; the
# admins' groups' members also become the account's coordinators.
set -eu

# has ENTITY FORMAT WHERE...: sacctmgr lists at least one such record (stdin closed:
# sacctmgr asks questions on a terminal and loops on end of input).
has() {{
  entity=$1 format=$2
  shift 2
  [ -n "$(sacctmgr -n -P show "$entity" where "$@" format="$format" </dev/null)" ]
}}

# members GROUP: the group's listed members, one per line (primary-group members are not
# listed by getent; add them by hand).
members() {{
  getent group "$1" | cut -d: -f4 | tr ',' '\\n' | sed '/^$/d'
}}
"""


def sacctmgr_script(platform: Platform, cluster: str, pools: list[SlurmPool]) -> str:
    out = [PRELUDE.format(platform=_comment(platform.metadata.name), shares=SHARES_PER_WEIGHT),
           sh("has cluster cluster name={c} || sacctmgr -i add cluster {c}", c=cluster), ""]
    for tenant in platform.tenants:
        out += _tenant(tenant, platform, cluster, pools)
    return "\n".join(out).rstrip() + "\n"


def _tenant(tenant: TenantSpec, platform: Platform, cluster: str,
            pools: list[SlurmPool]) -> list[str]:
    tres = tenant_tres(tenant, pools)
    limits = ",".join(f"{k}={v}" for k, v in tres.items()) or "gres/gpu=-1"
    acct = tenant.name
    lines = [
        f"# tenant {acct}",
        sh("has assoc account account={a} cluster={c} || sacctmgr -i add account {a} "
           "cluster={c} description={d} organization={o}",
           a=acct, c=cluster, d=tenant.description or acct, o=platform.metadata.name),
        sh("sacctmgr -i modify account where name={a} cluster={c} set fairshare={f} "
           "grptres={t} >/dev/null", a=acct, c=cluster, f=fairshare(tenant.weight), t=limits),
    ]
    for group in dict.fromkeys([*tenant.users, *tenant.admins]):
        lines += [
            sh("for u in $(members {g}); do", g=group),
            sh('  has assoc user user="$u" account={a} cluster={c} || '
               'sacctmgr -i add user "$u" account={a} cluster={c}', a=acct, c=cluster),
            "done",
        ]
    for group in dict.fromkeys(tenant.admins):
        lines += [
            sh("for u in $(members {g}); do", g=group),
            # adding a coordinator twice is refused: the error is the only record of it
            sh('  sacctmgr -i add coordinator account={a} names="$u" >/dev/null 2>&1 || true',
               a=acct),
            "done",
        ]
    return [*lines, ""]


def _comment(text: str) -> str:
    """A DNS-1123 name (the spec's grammar for it) on a comment line; anything else is
    dropped so no line break can end the comment."""
    return "".join(c for c in text if c.isalnum() or c in "-.")
