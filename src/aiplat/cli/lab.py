"""``aiplat lab up|status|down``, ``aiplat lab fault add|clear|list``, ``aiplat net check``,
``aiplat diagnose``: thin commands over :mod:`aiplat.netdiag`."""

from __future__ import annotations

import re
import shlex
import sys
from typing import Any

import click
from rich.console import Console

from aiplat.cli._output import DATA_FORMATS, FORMATS, box_table, print_data
from aiplat.cli._output import console as out_console
from aiplat.cli._progress import QUIET, info, progress_bar
from aiplat.cli.cluster import cluster
from aiplat.cli.main import Finite
from aiplat.errors import InputError
from aiplat.netdiag import lab as labio
from aiplat.netdiag.faults import KINDS, NOISY_SECONDS, plan_fault
from aiplat.netdiag.lab_plan import lab_plan
from aiplat.netdiag.model import DEFAULT_PREFIX, PROM_PORT
from aiplat.netdiag.state import load_state
from aiplat.text import shown

OUTPUT = click.option("-o", "--output", type=click.Choice(FORMATS), default="table",
                      show_default=True, help="format on stdout")
PREFIX = click.option("--prefix", default=DEFAULT_PREFIX, show_default=True, envvar="LAB",
                      show_envvar=True,
                      help="lab name prefix (every host object the lab creates carries it; "
                           "`lab status -o env` prints it as LAB)")


def _console() -> Console:
    return out_console()


def _err(msg: str) -> None:
    click.echo(msg, err=True)


def parse_duration(text: str) -> float:
    """``90s``, ``10m``, ``2h`` or plain seconds -> seconds.

    >>> parse_duration("10m"), parse_duration("45")
    (600.0, 45.0)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise InputError(f"--since {text!r} is not a duration (fix: use e.g. 90s, 10m, 1h)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


@click.group()
def lab() -> None:
    """A lab on this host: network namespaces as nodes on management, storage, service and
    hpc bridges, a model store, Prometheus; fault injection. Needs root."""


lab.add_command(cluster)


@lab.command()
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("--nodes", type=click.IntRange(1, 8), help="compute nodes [spec: network.lab.nodes]")
@click.option("--link-mbit", type=click.IntRange(10, 10000),
              help="emulated NIC rate per port [spec: network.lab.linkMbit, 1000]")
@click.option("--segment", "segments", multiple=True, help="only these segments (repeatable)")
@click.option("--prom-port", type=click.IntRange(1024, 65535), default=PROM_PORT,
              show_default=True, help="port of the lab's Prometheus on 127.0.0.1")
@PREFIX
@click.option("--dry-run", is_flag=True, help="print the commands and change nothing")
@OUTPUT
@QUIET
def up(  # noqa: PLR0917 (one parameter per click option)
    spec: str | None, nodes: int | None, link_mbit: int | None, segments: tuple[str, ...],
    prom_port: int, prefix: str, dry_run: bool, output: str,
) -> None:
    """Build the lab from SPEC's network section (default: mgmt 1500, storage 9000,
    service 1500, hpc 9000). Refuses to start when a lab subnet overlaps a host route.

    Debian packages: iproute2 iptables iperf3 iputils-ping prometheus
    prometheus-node-exporter docker-registry.

    \b
    Examples:
      aiplat lab up --dry-run
      aiplat lab up --dry-run --nodes 3 --segment mgmt --segment storage

    \b
    Examples (root, a lab):
      aiplat lab up --nodes 2
    """
    plan = lab_plan(spec, nodes, prefix, link_mbit, segments, prom_port=prom_port)
    if dry_run:
        for argv in labio.dry_run_commands(plan):
            click.echo(shlex.join(argv))
        return
    with progress_bar("lab up") as bar:
        result = labio.up(plan, progress=lambda m: bar.log(f"lab up: {m}"), steps=bar.at)
    st = labio.status(prefix) or {}
    if output in DATA_FORMATS:
        print_data(output, st | {"seconds": round(result.seconds, 2),
                    "phases": {k: round(v, 2) for k, v in result.phases.items()}})
        return
    _print_status(st)
    info(f"lab {prefix} up in {result.seconds:.1f} s ("
         + ", ".join(f"{k} {v:.1f} s" for k, v in result.phases.items()) + ")")


@lab.command()
@PREFIX
@click.option("-o", "--output", type=click.Choice([*FORMATS, "env"]), default="table",
              show_default=True, help="stdout format (env: LAB, LAB_NODE and LAB_STORE as shell "
                                      "assignments, for eval)")
def status(prefix: str, output: str) -> None:
    """Show the lab: segments, nodes, processes, active faults. Exit 1 when it is not up.

    \b
    Examples (root, a lab):
      aiplat lab status
      aiplat lab status -o json
    """
    st = labio.status(prefix)
    if st is None:
        if output in DATA_FORMATS:
            print_data(output, {"prefix": prefix, "phase": "down"})
        else:
            click.echo(f"lab {prefix}: down (no state file)", err=output == "env")
        sys.exit(1)
    if output == "env":
        state = load_state(prefix)
        for k, v in (state.plan.shell_env() if state else {}).items():
            click.echo(f"export {k}={shlex.quote(v)}")
    elif output in DATA_FORMATS:
        print_data(output, st)
    else:
        _print_status(st)


def _print_status(st: dict[str, Any]) -> None:
    c = _console()
    nodes = st["nodes"]
    t = box_table(f"Lab {st['prefix']} — {st['phase']}",
                  ("segment", "purpose", "cidr", "MTU", "VLAN", "bridge",
                   *(n["name"] for n in nodes)))
    for s in st["segments"]:
        t.add_row(s["name"], s["purpose"], s["cidr"], str(s["mtu"]), str(s["vlan"] or "-"),
                  s["bridge"] + ("" if s["present"] else " (missing)"),
                  *(n["addrs"].get(s["name"], "-") for n in nodes))
    c.print(t)
    procs = st["processes"]
    alive = sum(1 for p in procs if p["alive"])
    c.print(f"processes {alive}/{len(procs)} alive · prometheus {st['prometheus']} · "
            f"model store {st['registry']} · baseline pull "
            + ", ".join(f"{k} {v:.0f} Mbit/s" for k, v in st["baseline_pull_mbit"].items()))
    for f in st["faults"]:
        c.print(f"fault {f['id']}: {f['detail']}")
    for n in st.get("notes", []):
        c.print(f"note: {n}")


@lab.command()
@PREFIX
@OUTPUT
def down(prefix: str, output: str) -> None:
    """Remove everything the lab created (from its state file). Safe to repeat.

    \b
    Examples (root, a lab):
      aiplat lab down
      aiplat lab down -o json
    """
    r = labio.down(prefix)
    if output in DATA_FORMATS:
        print_data(output, {"prefix": prefix, "removed": r.removed, "seconds": round(r.seconds, 2)})
        return
    if not r.removed:
        click.echo(f"lab {prefix}: nothing to remove")
    else:
        click.echo(f"lab {prefix}: removed {len(r.removed)} objects in {r.seconds:.1f} s")


@lab.group()
def fault() -> None:
    """Inject, list and clear faults in the lab."""


@fault.command("add")
@click.argument("kind", type=click.Choice(KINDS))
@click.option("--node", help="lab node (slow-storage: default store)")
@click.option("--segment", help="segment name or purpose (slow-storage: default storage)")
@click.option("--value", type=Finite(0, 100_000),
              help="loss %% (20), rate Mbit/s (100), mtu bytes (1500 or 1400)")
@click.option("--seconds", type=click.IntRange(1, 600), default=NOISY_SECONDS,
              show_default=True, help="noisy: how long the flood runs")
@PREFIX
@click.option("--dry-run", is_flag=True, help="print the commands and change nothing")
@OUTPUT
def fault_add(  # noqa: PLR0917 (one parameter per click option)
    kind: str, node: str | None, segment: str | None, value: float | None,
              seconds: int, prefix: str, dry_run: bool, output: str) -> None:
    """Inject a fault of KIND at --node on --segment.

    \b
    Examples (root, a lab):
      aiplat lab fault add loss --node node-1 --segment storage --value 20
      aiplat lab fault add mtu --node node-2 --segment storage --value 1500 --dry-run
    """
    state = labio.require_up(prefix)
    fp = plan_fault(state.plan, kind, node, segment, value=value, seconds=seconds)
    if dry_run:
        for argv in fp.apply + ([fp.spawn] if fp.spawn else []):
            click.echo(shlex.join(argv))
        return
    active = labio.add_fault(prefix, fp)
    if output in DATA_FORMATS:
        print_data(output, active.model_dump())
    else:
        click.echo(f"fault {active.id}: {active.detail}")


@fault.command("clear")
@click.argument("ids", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="clear every active fault")
@PREFIX
@OUTPUT
def fault_clear(ids: tuple[str, ...], all_: bool, prefix: str, output: str) -> None:
    """Undo faults by id (see 'fault list'), or --all.

    \b
    Examples (root, a lab):
      aiplat lab fault clear loss@node-1/storage
      aiplat lab fault clear --all -o json
    """
    if not ids and not all_:
        raise InputError("name the faults to clear or pass --all (see 'aiplat lab fault list')")
    cleared = labio.clear_faults(prefix, None if all_ else list(ids))
    if output in DATA_FORMATS:
        print_data(output, {"cleared": cleared})
    else:
        click.echo("cleared " + (", ".join(cleared) or "nothing"))


@fault.command("list")
@PREFIX
@OUTPUT
def fault_list(prefix: str, output: str) -> None:
    """Active faults.

    \b
    Examples (root, a lab):
      aiplat lab fault list
      aiplat lab fault list -o json
    """
    state = load_state(prefix)
    faults = state.faults if state else []
    if output in DATA_FORMATS:
        print_data(output, [f.model_dump() for f in faults])
        return
    if not faults:
        click.echo("no active faults")
    for f in faults:
        click.echo(f"{f.id}: {f.detail}")


@click.group()
def net() -> None:
    """Network checks."""


@net.command("check")
@click.option("--segment", "segments", multiple=True, help="only these segments (repeatable)")
@click.option("--no-throughput", is_flag=True, help="skip the iperf3 transfers")
@PREFIX
@OUTPUT
def net_check(segments: tuple[str, ...], no_throughput: bool, prefix: str, output: str) -> None:
    """Between lab nodes, per segment: path MTU (DF ping sweep), loss and latency (ping
    bursts), TCP throughput (iperf3), against the segment's MTU and the lab's link rate.
    Exit 1 when there are findings.

    \b
    Examples (root, a lab):
      aiplat net check --no-throughput
      aiplat net check --segment storage -o json
    """
    from aiplat.netdiag.probes import net_check as run_check

    findings, raw = run_check(prefix, list(segments) or None, not no_throughput,
                              progress=lambda m: _err(f"net check: {m}"))
    if output in DATA_FORMATS:
        print_data(output, {"findings": [f.model_dump() for f in findings], "measurements": raw})
    else:
        c = _console()
        t = box_table(f"net check — {len(findings)} finding(s) in {raw['seconds']} s",
                      ("kind", "node", "segment", "finding", "evidence"))
        for f in findings:
            t.add_row(f.kind, f.node or "-", f.segment, f.message, "\n".join(f.evidence[:3]))
        c.print(t if findings else f"net check: no findings in {raw['seconds']} s")
    if findings:
        sys.exit(1)


def _check_url(url: str) -> None:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # raises for a port that is not a number
    except ValueError:
        ok = False
    if not ok:
        raise InputError(f"--prometheus {url!r}: not an http(s) URL (fix: e.g. "
                         "--prometheus http://prometheus:9090)")


@click.group(invoke_without_command=True)
@click.option("--since", default="10m", show_default=True,
              help="window for interface counters without a lab (e.g. 90s, 10m, 1h)")
@click.option("--prometheus", "prom_url", help="Prometheus URL [lab: its own]")
@PREFIX
@OUTPUT
@click.pass_context
def diagnose(ctx: click.Context, since: str, prom_url: str | None, prefix: str,
             output: str) -> None:
    """Rank causes of slow model pulls and network trouble from Prometheus metrics.

    With the lab up: pulls the model store's blob from every node (the symptom) and
    correlates the pulls with each node's per-segment traffic, retransmissions, carrier and
    MTU. Without a lab, --prometheus URL: interface facts over --since. Exit 1 with causes.
    'aiplat diagnose rdma DIR' ranks RDMA causes from recorded tool outputs instead.

    \b
    Examples (root, a lab):
      aiplat diagnose
      aiplat diagnose -o json

    \b
    Examples:
      aiplat samples get rdma-fabric -d rdma
      aiplat diagnose rdma rdma
    """
    if ctx.invoked_subcommand is not None:
        return
    from aiplat.netdiag.diagnose import diagnose_lab, diagnose_prometheus

    seconds = parse_duration(since)
    if prom_url is not None:
        _check_url(prom_url)
    if load_state(prefix) is not None:
        d = diagnose_lab(prefix, prom_url)
    elif prom_url:
        d = diagnose_prometheus(prom_url, seconds)
    else:
        raise InputError(f"no lab {prefix!r} is up and no --prometheus URL was given "
                         "(fix: 'aiplat lab up', or pass --prometheus http://host:9090)")
    if output in DATA_FORMATS:
        print_data(output, {"causes": [c.model_dump() for c in d.causes],
               "pulls": [w.model_dump() | {"fall": round(w.fall, 1)} for w in d.pulls],
               "window": d.window, "prometheus": d.prometheus, "notes": d.notes})
    else:
        c = _console()
        if d.pulls:
            c.print(shown("model pulls: " + ", ".join(
                f"{w.node} {w.mbit:.0f} Mbit/s (baseline {w.baseline_mbit:.0f})" for w in d.pulls)))
        t = box_table(f"diagnose — {len(d.causes)} candidate cause(s), {d.prometheus}",
                      ("#", "cause", "node", "segment", "score", "summary"))
        for i, cause in enumerate(d.causes, 1):
            t.add_row(*(shown(x) for x in (str(i), cause.kind, cause.node or "-",
                                           cause.segment or "-", f"{cause.score:.2f}",
                                           cause.summary)))
        c.print(t if d.causes else "no finding: pulls at baseline, links up, MTUs as specified")
        for cause in d.causes[:1]:
            for e in cause.evidence:
                c.print(f"  evidence: {shown(e)}")
        for n in d.notes:
            _err(f"note: {shown(n)}")
    if d.causes:
        sys.exit(1)


RDMA_HELP_LAYOUT = """\b
Layout of DIR (each file is the command's output as printed):
  DIR/<node>/ibstat.txt                 ibstat
  DIR/<node>/ib-counters.txt            grep -H . /sys/class/infiniband/*/ports/*/*counters/*
  DIR/<node>/perfquery-<dev>-<port>.txt perfquery -x  (instead of ib-counters.txt)
  DIR/<node>/ethtool-S-<if>.txt         ethtool -S <if>
  DIR/<node>/ib_write_bw-<dev>.txt      ib_write_bw/ib_read_bw/ib_*_lat client output
  DIR/<node>/nccl-<name>.txt, DIR/nccl-<name>.txt   nccl-tests output (all_reduce_perf...)
"""


@diagnose.command("rdma", epilog=RDMA_HELP_LAYOUT)
@click.argument("folder", type=click.Path(file_okay=False, path_type=str))
@click.option("--before", type=click.Path(file_okay=False, path_type=str),
              help="the same layout recorded earlier: counters become what changed since")
@click.option("--rails", type=click.IntRange(1, 64),
              help="compute rails per node for the nccl-tests bound [ibstat: the fastest "
                   "active ports]")
@click.option("--link-gbps", type=Finite(min=1, max=10_000),
              help="the rails' link rate in Gb/s [ibstat]")
@OUTPUT
def diagnose_rdma_cmd(folder: str, before: str | None, rails: int | None,
                      link_gbps: float | None, output: str) -> None:
    """Rank RDMA causes (slow rail, link flaps, bad cables, PFC storms, congestion, a
    collective below the fabric) from recorded ibstat, port counters, ethtool -S, perftest
    and nccl-tests outputs across nodes.

    Exit 0 with no cause, 1 with causes, 2 when a file does not read as its tool's output.

    \b
    Examples:
      aiplat samples get rdma-fabric -d rdma
      aiplat diagnose rdma rdma
      aiplat diagnose rdma rdma --before rdma -o json
    """
    from aiplat.netdiag.rdma_diagnose import diagnose_rdma
    from aiplat.netdiag.rdma_folder import read_folder

    nodes, runs, notes = read_folder(folder)
    earlier = read_folder(before)[0] if before is not None else None
    d = diagnose_rdma(nodes, earlier, runs, rails=rails, link_gbps=link_gbps)
    d.notes[:0] = notes
    if output in DATA_FORMATS:
        print_data(output, d.model_dump())
    else:
        c = _console()
        t = box_table(f"diagnose rdma — {len(d.causes)} candidate cause(s), "
                      f"{len(d.nodes)} node(s)",
                      ("#", "cause", "node", "port", "score", "summary"))
        for i, cause in enumerate(d.causes, 1):
            t.add_row(*(shown(x) for x in (str(i), cause.kind, cause.node or "-",
                                           cause.port or "-", f"{cause.score:.2f}",
                                           cause.summary)))
        c.print(t if d.causes else "no finding in the recorded outputs")
        for i, cause in enumerate(d.causes, 1):
            # plain lines: the fix is copied, not read in a box, and a terminal wraps it
            click.echo(f"{i}. evidence: {shown('; '.join(cause.evidence))}")
            click.echo(f"   fix: {shown(cause.fix)}")
        for n in d.notes:
            _err(f"note: {shown(n)}")
    if d.causes:
        sys.exit(1)


# `aiplat lab exercise N|all [--check]`: the lab course runs on the lab this group builds.
from aiplat.cli.course import register  # noqa: E402 - the course needs the group defined above

register(lab)
