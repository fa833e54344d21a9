"""``aiplat catalog gpus|models|node-types [NAME] [-o table|json|yaml]``: the built-in facts.

The names a spec may use (``gpu.model``, ``nodeType``, a workload's ``model``) are the
entries' names and aliases listed here. JSON and YAML give each entry as the catalog's data
files write it (camelCase keys, the ``source`` of every figure), so the output is valid
input for a catalog of one's own; the table shows the figures sizing uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from aiplat.catalog import Catalog, GpuModel, ModelArchitecture, NodeType, load_catalog
from aiplat.catalog.suggest import closest, one_of, suggest_node_type
from aiplat.cli._output import emit, output_option
from aiplat.errors import InputError

Entry = GpuModel | ModelArchitecture | NodeType


def _num(x: float | None, unit: str = "") -> str:
    return "-" if x is None else f"{x:g}{unit}"


def _params(n: float | None) -> str:
    if n is None:
        return "-"
    return f"{n / 1e9:.3g}B" if n >= 1e9 else f"{n / 1e6:.3g}M"


def _gpu_row(g: GpuModel) -> Sequence[object]:
    return (g.name, g.vendor, g.architecture, g.form_factor, _num(g.memory_gb),
            _num(g.memory_bandwidth_tbps), _num(g.bf16_tflops), _num(g.fp8_tflops),
            _num(g.tdp_w), len(g.mig_profiles) or "-", ",".join(g.aliases) or "-")


def _model_row(m: ModelArchitecture) -> Sequence[object]:
    experts = f"{m.experts_per_token}/{m.experts}" if m.experts > 1 else "-"
    return (m.name, m.family, _params(m.params), _params(m.active_params), m.layers, m.hidden,
            m.heads, m.kv_heads, m.max_context, experts)


def _node_row(n: NodeType) -> Sequence[object]:
    rs = n.rack_scale
    domain = f"{rs.gpus} GPUs/{rs.racks} rack{'s' if rs.racks > 1 else ''}" if rs else "-"
    return (n.name, n.gpu or "-", n.gpus, n.cpu_cores, n.memory_gib,
            _num(n.system_power_kw), n.rack_units, domain)


KINDS: dict[str, tuple[Callable[[Catalog], Sequence[Entry]], Sequence[str],
                       Callable[[Any], Sequence[object]]]] = {
    # kind: (entries, table headers, table row)
    "gpus": (lambda c: c.gpus,
             ("name", "vendor", "arch", "form", "memory-gb", "hbm-tb/s", "bf16-tflops",
              "fp8-tflops", "tdp-w", "mig-profiles", "aliases"), _gpu_row),
    "models": (lambda c: c.models,
               ("name", "family", "params", "active", "layers", "hidden", "heads",
                "kv-heads", "context", "experts"), _model_row),
    "node-types": (lambda c: c.node_types,
                   ("name", "gpu", "gpus", "cpu-cores", "memory-gib", "power-kw", "rack-u",
                    "rack-scale"),
                   _node_row),
}


LABELS = {"gpus": "GPU", "models": "model", "node-types": "node type"}


def _select(cat: Catalog, entries: Sequence[Entry], kind: str,
            name: str | None) -> Sequence[Entry]:
    if name is None:
        return entries
    key = name.lower()
    found = [e for e in entries if e.name.lower() == key or key in getattr(e, "aliases", [])]
    if found:
        return found
    if kind == "node-types":  # never a server with another GPU (catalog.suggest)
        hint = suggest_node_type(name, cat)
    else:
        names = [e.name for e in entries]
        near = closest(name, names + [a for e in entries for a in getattr(e, "aliases", [])])
        hint = f"did you mean '{near}'?" if near else one_of(names)
    if "aiplat catalog" not in hint:
        hint += f"; `aiplat catalog {kind}` lists them all"
    raise InputError(f"no {LABELS[kind]} '{name}' in the catalog (fix: {hint})")


def _complete_names(ctx: click.Context, _param: click.Parameter,
                    incomplete: str) -> list[str]:
    """Shell completion of NAME: the entry names of the KIND already typed."""
    kind = ctx.params.get("kind")
    if kind not in KINDS:
        return []
    names = [e.name for e in KINDS[kind][0](load_catalog())]
    return [n for n in names if n.lower().startswith(incomplete.lower())]


@click.command("catalog")
@click.argument("kind", type=click.Choice(list(KINDS)))
@click.argument("name", required=False, shell_complete=_complete_names)
@output_option()
def catalog(kind: str, name: str | None, fmt: str) -> None:
    """List the built-in catalog: GPUs, models and node types.

    KIND is gpus, models or node-types; NAME (a name or an alias, any case) shows that entry
    only. A spec refers to these entries by name or alias: a pool's `gpu.model` and
    `nodeType`, a workload's `model`. JSON and YAML print each entry as the catalog's data
    files write it, with the source of its figures.

    Exit codes: 0 listed, 2 unknown KIND or NAME.

    \b
    Examples:
      aiplat catalog node-types
      aiplat catalog gpus h100 -o yaml
    """
    entries_of, headers, row = KINDS[kind]
    cat = load_catalog()
    entries = _select(cat, entries_of(cat), kind, name)
    data = [e.model_dump(mode="json", by_alias=True, exclude_defaults=True) for e in entries]
    emit(fmt, data, headers, [row(e) for e in entries])
