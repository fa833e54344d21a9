"""Bare metal means Slurm: the same pools and tenants as a Slurm cluster (pure).

Where the plan's deployment assessment recommends ``bare_metal`` (or the administrator asks),
``aiplat slurm render`` writes what Slurm reads instead of the Kubernetes tree:

- ``slurm.conf``: one NodeName line and one partition per pool (the partition is named after
  the pool: one name per concept), GRES per node, cons_tres with core and memory
  accounting, cgroup process tracking, the tree topology, multifactor fair share and
  slurmdbd accounting that enforces associations, limits and QOS;
- ``topology.conf``: the racks and blocks ``plan/`` laid out, as switches;
- ``gres.conf`` and ``cgroup.conf``;
- ``sacctmgr.sh``: an account per tenant (Fairshare from its weight, GrpTRES from its
  quotas), for review before it runs; every value from the spec is quoted by ``aiplat.shell``.

Design. The renderers read the resolved platform (``plan.resolve.Resolved``), never the raw
spec's defaults: nodes per pool, GPUs per node, nodes per rack and the OS reservation are
``plan/``'s figures. Node, rack and block names are the Kubernetes tree's
(``kube.facts.PoolFacts.node_name`` / ``rack_labels``), so ``h100-3`` is the same machine in
both. ``render.slurm_files`` returns every file in memory; the CLI writes them with
``fsutil.write_tree``. Where the spec has no fact Slurm needs (sockets, threads per core,
the controller's host name) the file says what was assumed and how to check it.
"""

from aiplat.slurm.render import SlurmOutputs, slurm_files, slurm_outputs

__all__ = ["SlurmOutputs", "slurm_files", "slurm_outputs"]
