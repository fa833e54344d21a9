"""``aiplat catalog gpus|models|node-types [NAME] [-o table|json|yaml]``: the built-in facts;
``aiplat catalog import CONFIG [--name NAME] [--out FILE|-]``: a model of one's own.

The names a spec may use (``gpu.model``, ``nodeType``, a workload's ``model``) are the
entries' names and aliases listed here. JSON and YAML give each entry as the catalog's data
files write it (camelCase keys, the ``source`` of every figure), so the output is valid
input for a catalog of one's own; the table shows the figures sizing uses.

``import`` reads a model's published Hugging Face ``config.json`` (a file or ``-``) and
writes the ``--catalog FILE`` overlay holding its entry: the shape and the parameters
``aiplat.catalog.hf_config`` counts from it. The overlay goes to stdout or, whole or not at
all, to ``--out FILE``; ``-o`` keeps its one meaning here, the format.
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
    """Shell completion of NAME: the entry names of the kind whose command it is."""
    kind = ctx.command.name
    if kind not in KINDS:
        return []
    names = [e.name for e in KINDS[kind][0](load_catalog())]
    return [n for n in names if n.lower().startswith(incomplete.lower())]


class _Kinds(click.Group):
    """The catalog's subcommands; a word that is none of them is a usage error listing them,
    as the KIND argument's choices were before ``import`` made the command a group."""

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            ctx.fail(f"No such command: '{args[0]}' is not one of "
                     + ", ".join(f"'{c}'" for c in self.commands) + ".")
        return super().resolve_command(ctx, args)


@click.group("catalog", cls=_Kinds)
def catalog() -> None:
    """List the built-in catalog: GPUs, models and node types.

    `gpus`, `models` and `node-types` list that kind, or the one entry NAME names. A spec
    refers to these entries by name or alias: a pool's `gpu.model` and `nodeType`, a
    workload's `model`. `import` turns a model's published config.json into an entry of a
    catalog of your own, which `aiplat --catalog FILE` puts on top of the built-in one.

    \b
    Examples:
      aiplat catalog node-types
      aiplat catalog gpus h100 -o yaml
    """


def _lister(kind: str) -> click.Command:
    @click.command(kind)
    @click.argument("name", required=False, shell_complete=_complete_names)
    @output_option()
    def listed(name: str | None, fmt: str) -> None:
        entries_of, headers, row = KINDS[kind]
        cat = load_catalog()
        entries = _select(cat, entries_of(cat), kind, name)
        data = [e.model_dump(mode="json", by_alias=True, exclude_defaults=True)
                for e in entries]
        emit(fmt, data, headers, [row(e) for e in entries])

    example = f"aiplat catalog {kind} " + {"gpus": "h100 -o yaml", "models": "llama-3.1-8b",
                                           "node-types": "-o json"}[kind]
    listed.help = f"""List the built-in {LABELS[kind]}s, or the one named NAME.

    NAME is a name or an alias, any case. JSON and YAML print each entry as the catalog's
    data files write it, with the source of its figures.

    Exit codes: 0 listed, 2 unknown NAME.

    \b
    Examples:
      {example}
    """
    return listed


for _kind in KINDS:
    catalog.add_command(_lister(_kind))


@catalog.command("import")
@click.argument("config", metavar="CONFIG")
@click.option("--name", help="the entry's name, as a spec's workload `model` will give it "
              "(default: the last part of the config's _name_or_path)")
@click.option("--alias", "aliases", multiple=True, metavar="ALIAS",
              help="another name for it, e.g. the Hugging Face repo id (repeatable)")
@click.option("--out", "out", default="-", show_default=True, metavar="FILE|-",
              help="where to write the overlay; - is stdout")
@click.option("-o", "--output", "fmt", type=click.Choice(["yaml", "json"]), default="yaml",
              show_default=True, help="format of the overlay")
def import_cmd(config: str, name: str | None, aliases: tuple[str, ...], out: str,
               fmt: str) -> None:
    """Write a catalog entry for the model whose Hugging Face config.json is CONFIG.

    CONFIG is the model's published config.json (`-`: stdin). The entry holds its shape
    (layers, hidden size, heads, KV heads, head dim, vocabulary, context, experts, latent
    attention ranks) and its parameters, total and active per token, counted from that
    shape. The overlay it writes is what `aiplat --catalog FILE` reads. An architecture
    aiplat cannot count (a multimodal wrapper, an unknown class) is refused, not guessed.

    Exit codes: 0 written, 2 a config that is not JSON, not complete, out of range or of an
    architecture aiplat cannot count.

    \b
    Examples:
      aiplat catalog import - --name tiny-llama --out tiny.yaml <<< '{"architectures": ["LlamaForCausalLM"], "hidden_size": 512, "intermediate_size": 1408, "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 32000, "max_position_embeddings": 4096}'
      aiplat --catalog tiny.yaml catalog models tiny-llama
    """  # noqa: E501 (an example line a user can paste whole)
    import hashlib
    import json

    import yaml

    from aiplat.catalog.hf_config import count, overlay
    from aiplat.fsutil import atomic_write
    from aiplat.inputs import STDIN, decode, mapping, parse_json, read_bytes

    shown_name = "(stdin)" if config == STDIN else config
    raw = read_bytes(config, "a model's config.json")
    data = mapping(parse_json(decode(raw, shown_name, "a model's config.json"), shown_name,
                              "a model's config.json"), shown_name, "a model's config.json",
                   "give the model's config.json, a JSON object")
    origin = data.get("_name_or_path")
    if name is None:
        if not isinstance(origin, str) or not origin.strip("/"):
            raise InputError(f"{shown_name}: the config names no model (no _name_or_path) "
                             "(fix: give --name NAME, the name a spec's workload `model` "
                             "will use)")
        name = origin.rstrip("/").rsplit("/", 1)[-1].lower()
    if not name or any(ch.isspace() or not ch.isprintable() for ch in name):
        raise InputError(f"--name {name!r}: a catalog name is one word (fix: give --name "
                         "NAME without spaces, e.g. qwen3-8b-site)")
    extra = [origin] if isinstance(origin, str) and "/" in origin else []
    sha = hashlib.sha256(raw).hexdigest()
    counted = count(data, name=name, aliases=[*aliases, *extra], file=shown_name,
                    provenance=f"{shown_name} (sha256 {sha[:16]})")
    document = overlay([counted.entry])
    text = (json.dumps(document, indent=2) + "\n" if fmt == "json"
            else yaml.safe_dump(document, sort_keys=False, width=100))
    if out == STDIN:
        click.echo(text, nl=False)
    else:
        atomic_write(out, text)
    active = (f", {_params(counted.active_params)} active per token"
              if counted.active_params != counted.params else "")
    click.echo(f"{name}: {_params(counted.params)} parameters{active}"
               f"{'' if out == STDIN else f', written to {out}'}", err=True)
