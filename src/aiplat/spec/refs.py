"""References the models cannot check alone: names of other sections and of the catalog.

Returns ``(loc, message, hint)`` triples rather than raising, so the loader can report all of
them with file positions in one run. Pure: the catalog is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiplat.catalog import Catalog, GpuModel, MigProfile, NodeType
from aiplat.catalog.models import RackScale
from aiplat.catalog.suggest import hint, suggest_node_type
from aiplat.spec.models import (
    Platform,
    PoolSpec,
    SharingStrategy,
    WorkloadSpec,
    model_layout_problem,
)

Problem = tuple[tuple[str | int, ...], str, str]


def check_references(platform: Platform, catalog: Catalog) -> list[Problem]:
    out: list[Problem] = []
    for i, pool in enumerate(platform.pools):
        out += _pool_problems(i, pool, catalog)
        out += _rack_scale_problems(i, pool, catalog, platform)
    pool_names = [p.name for p in platform.pools]
    for i, tenant in enumerate(platform.tenants):
        for pool_name in tenant.quota:
            if pool_name not in pool_names:
                out.append((("tenants", i, "quota", pool_name),
                            f"quota on pool '{pool_name}', which is not defined",
                            _suggest(pool_name, pool_names)))
    for i, w in enumerate(platform.workloads):
        out += _workload_problems(i, w, platform, catalog)
    return out


def _pool_problems(i: int, pool: PoolSpec, catalog: Catalog) -> list[Problem]:
    out: list[Problem] = []
    at = ("pools", i, "node")
    node_type = None
    if pool.node.node_type is not None:
        node_type = catalog.node_type(pool.node.node_type)
        if node_type is None:
            # Suggest only servers that carry the pool's GPU (never another GPU's).
            gpu_model = pool.node.gpu.model if pool.node.gpu else None
            out.append(((*at, "nodeType"), f"unknown node type '{pool.node.node_type}'",
                        suggest_node_type(pool.node.node_type, catalog, gpu_model)))
    if pool.node.gpu is None:
        return out
    gpu = catalog.gpu(pool.node.gpu.model)
    if gpu is None:
        if not pool.node.gpu.inline:  # a GPU outside the catalog gives its own figures
            out.append(((*at, "gpu", "model"), f"unknown GPU model '{pool.node.gpu.model}'",
                        _suggest(pool.node.gpu.model, _names(catalog.gpus),
                                 [g.name for g in catalog.gpus])
                        + "; or give it inline: memoryGB, memoryBandwidthTBps, bf16Tflops, "
                        "tdpW"))
        return out
    if node_type is not None and node_type.gpu and catalog.gpu(node_type.gpu) != gpu:
        out.append(((*at, "gpu", "model"),
                    f"node type '{node_type.name}' carries {node_type.gpu}, not {gpu.name}",
                    "make nodeType and gpu.model agree, or drop nodeType"))
    if pool.sharing.strategy is SharingStrategy.MIG and pool.sharing.mig_layout:
        out.extend(_check_mig(("pools", i, "sharing", "migLayout"), gpu,
                              pool.sharing.mig_layout))
    return out


def pool_rack_scale(pool: PoolSpec, node_type: NodeType | None) -> RackScale | None:
    """The pool's NVLink domain: the spec's ``node.rackScale``, else its node type's (the one
    place this rule lives; ``plan.resolve`` and the checks below use it)."""
    spec = pool.node.rack_scale
    if spec is not None:
        if spec.gpus % spec.nodes:
            return None  # reported by _rack_scale_problems
        return RackScale(gpus=spec.gpus, nodes=spec.nodes, racks=spec.racks,
                         switch_trays=spec.switch_trays, power_kw=spec.power_kw,
                         cooling=spec.cooling)
    return node_type.rack_scale if node_type is not None else None


def _rack_scale_problems(i: int, pool: PoolSpec, catalog: Catalog,
                         platform: Platform) -> list[Problem]:
    """A rack-scale system comes in whole domains of equal trays: a pool of a count that is
    not a multiple of the trays, trays of another GPU count, or a rack the site cannot feed
    has no plan (exit 2 with the fix, not a rounded-up guess)."""
    at = ("pools", i)
    spec = pool.node.rack_scale
    if spec is not None and spec.gpus % spec.nodes:
        return [((*at, "node", "rackScale", "nodes"),
                 f"{spec.gpus} GPUs do not split into {spec.nodes} equal trays",
                 "give the domain's GPUs and its compute trays, e.g. gpus: 72, nodes: 18")]
    node_type = catalog.node_type(pool.node.node_type) if pool.node.node_type else None
    rs = pool_rack_scale(pool, node_type)
    if rs is None:
        return []
    out: list[Problem] = []
    name = f"node type '{node_type.name}'" if spec is None and node_type else "node.rackScale"
    gpn = pool.node.gpu.count if pool.node.gpu else 0
    if gpn != rs.gpus_per_node:
        out.append(((*at, "node", "gpu", "count"),
                    f"{name} is a {rs.gpus}-GPU NVLink domain of {rs.nodes} trays: each node "
                    f"(tray) holds {rs.gpus_per_node} GPUs, not {gpn}",
                    f"set gpu.count: {rs.gpus_per_node} and count the trays as nodes"))
    sizes = [("count", pool.count)] if pool.count is not None else (
        [("autoscaling", pool.autoscaling.min), ("autoscaling", pool.autoscaling.max)]
        if pool.autoscaling else [])
    for key, n in sizes:
        if n % rs.nodes:
            whole = max(1, -(-n // rs.nodes)) * rs.nodes
            out.append(((*at, key), f"{n} nodes are not whole NVLink domains: {name} comes "
                        f"as {rs.racks} rack(s) of {rs.nodes} trays ({rs.gpus} GPUs)",
                        f"use a multiple of {rs.nodes} nodes, e.g. {whole} "
                        f"({whole // rs.nodes} domain(s), {whole * rs.gpus_per_node} GPUs)"))
            break
    rack_kw = rs.power_kw / rs.racks
    if pool.node.power_kw is None and rack_kw > platform.site.rack_power_limit_kw:
        out.append((("site", "rackPowerLimitKW"),
                    f"pool '{pool.name}': one rack of {name} draws {rack_kw:g} kW, over the "
                    f"site's {platform.site.rack_power_limit_kw:g} kW per rack, and its trays "
                    "cannot be spread over more racks",
                    f"raise rackPowerLimitKW to ≥ {rack_kw:g} (the site must feed and cool "
                    "such racks, liquid cooled) or choose a system with smaller racks"))
    return out


def _workload_problems(i: int, w: WorkloadSpec, platform: Platform,
                       catalog: Catalog) -> list[Problem]:
    out: list[Problem] = []
    wat: tuple[str | int, ...] = ("workloads", i)
    if platform.tenant(w.tenant) is None:
        out.append(((*wat, "tenant"), f"unknown tenant '{w.tenant}'",
                    _suggest(w.tenant, [t.name for t in platform.tenants])))
    out += _workload_pool_problems(wat, w, platform)
    if w.model.name is not None and catalog.model(w.model.name) is None:
        out.append(((*wat, "model"), f"unknown model '{w.model.name}'",
                    _suggest(w.model.name, _names(catalog.models),
                             [m.name for m in catalog.models])
                    + "; or give the architecture: params, layers, hidden, heads, vocab"))
    elif w.model.name is not None:
        out += _catalog_layout_problems(wat, w, catalog)
    if w.rag is not None:
        emb = catalog.model(w.rag.embedding_model)
        if emb is None or emb.embedding_dim is None:
            embedders = [m.name for m in catalog.models if m.embedding_dim]
            out.append(((*wat, "rag", "embeddingModel"),
                        f"'{w.rag.embedding_model}' is not an embedding model in the catalog",
                        _suggest(w.rag.embedding_model, embedders)))
    return out


def _catalog_layout_problems(wat: tuple[str | int, ...], w: WorkloadSpec,
                             catalog: Catalog) -> list[Problem]:
    """The parallelism a catalog model's shape rules out (pipeline stages beyond its layers,
    tensor parallelism not dividing its heads, expert parallelism on a dense model or not
    dividing its experts), at the workload's line; an inline model is checked by the spec."""
    m = catalog.model(w.model.name or "")
    if m is None:
        return []
    found = model_layout_problem(w.parallelism, layers=w.model.layers or m.layers,
                                 heads=w.model.heads or m.heads, experts=m.experts,
                                 dense=m.experts == 1)
    if found is None:
        return []
    msg, fix, path = found
    return [((*wat, *path), f"{msg} ({m.name})", fix)]


def _workload_pool_problems(wat: tuple[str | int, ...], w: WorkloadSpec,
                            platform: Platform) -> list[Problem]:
    gpu_pools = [p.name for p in platform.pools if p.node.gpu]
    if w.pool is None:
        return [] if gpu_pools else [((*wat, "pool"), "no pool has GPUs for this workload",
                                      "add node.gpu to a pool")]
    target = platform.pool(w.pool)
    if target is None:
        return [((*wat, "pool"), f"unknown pool '{w.pool}'",
                 _suggest(w.pool, [p.name for p in platform.pools]))]
    if target.node.gpu is None:
        return [((*wat, "pool"), f"pool '{w.pool}' has no GPUs",
                 "choose one of the GPU pools: " + ", ".join(gpu_pools)
                 if gpu_pools else "add node.gpu to that pool")]
    return []


def _names(entries: Iterable[GpuModel] | Iterable[object]) -> list[str]:
    names: list[str] = []
    for e in entries:
        names.append(getattr(e, "name"))  # noqa: B009 - GpuModel and ModelArchitecture alike
        names.extend(getattr(e, "aliases", []))
    return names


def _suggest(value: str, choices: Iterable[str], listed: list[str] | None = None) -> str:
    """The hint for an unknown name: a near spelling among ``choices`` (names and aliases),
    else the ``listed`` names (the aliases buried them: 'a100, a100-80gb, ...')."""
    return hint(value, list(choices), listed)


def _check_mig(loc: tuple[str | int, ...], gpu: GpuModel, layout: list[str]) -> list[Problem]:
    if not gpu.mig_profiles:
        return [(loc, f"{gpu.name} does not support MIG", "use time-slicing or mps, or exclusive")]
    by_name = {p.name: p for p in gpu.mig_profiles}
    profiles: list[MigProfile] = []
    out: list[Problem] = []
    for j, name in enumerate(layout):
        prof = by_name.get(name)
        if prof is None:
            out.append(((*loc, j), f"{gpu.name} has no MIG profile '{name}'",
                        "use one of: " + ", ".join(by_name)))
        else:
            profiles.append(prof)
    if out:
        return out
    for prof in by_name.values():
        n = sum(p is prof for p in profiles)
        if n > prof.max_instances:
            out.append((loc, f"{n} × {prof.name} exceeds the {prof.max_instances} that "
                        f"{gpu.name} allows", "use fewer instances of that profile"))
    compute = sum(p.compute_slices for p in profiles)
    if compute > 7:
        out.append((loc, f"the layout needs {compute} compute slices; a GPU has 7",
                    "drop or shrink instances"))
    if not out and not _placeable(profiles):
        out.append((loc, "the profiles cannot all be placed in the GPU's 8 memory slices",
                    "use `aiplat sharing plan` layouts, or fewer/smaller instances"))
    return out


def _placeable(profiles: list[MigProfile]) -> bool:
    """Exact check by backtracking over the allowed start slices (at most 7 instances)."""
    order = sorted(profiles, key=lambda p: -p.memory_slices)

    def place(k: int, used: int) -> bool:
        if k == len(order):
            return True
        p = order[k]
        for start in p.placements:
            mask = ((1 << p.memory_slices) - 1) << start
            if start + p.memory_slices <= 8 and not used & mask and place(k + 1, used | mask):
                return True
        return False

    return place(0, 0)
