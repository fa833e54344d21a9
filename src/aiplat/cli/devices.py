"""``aiplat cdi|runtime|sharing|accounting``: thin commands over ``aiplat.devices``.

Data goes to stdout, findings and errors to stderr; exit 0 ok, 1 findings or a failed
verification, 2 bad input (raised as ``InputError`` and printed once by ``cli.main``).
"""

from __future__ import annotations

import difflib
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml

from aiplat.cli._output import DATA_FORMATS, FORMATS, OutDir, print_data, spec_argument
from aiplat.cli.main import Finite
from aiplat.devices import accounting as acct
from aiplat.devices import cdi, host, mig, runtime, sharing
from aiplat.devices.verify import PodmanOptions, remove_image, verify_spec
from aiplat.errors import AiplatError, InputError
from aiplat.findings import line
from aiplat.fsutil import atomic_write
from aiplat.text import shown, shown_lines

F = TypeVar("F", bound=Callable[..., Any])

_OUTPUT = click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]),
                       default="table", show_default=True)


def _emit(data: Any, fmt: str, table: Callable[[], str]) -> None:
    if fmt in ("json", "yaml"):
        print_data(fmt, data)
    else:  # a table quotes specs, demands and records: each line terminal-safe
        click.echo(shown_lines(table().removesuffix("\n")))


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    # cells quote specs, snapshots and records: shown terminal-safe (aiplat.text)
    cells = [[str(h) for h in headers]] + [[shown(str(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n"
                   for r in cells)


def _exit(code: int) -> None:
    if code:
        sys.exit(code)


# ---------------------------------------------------------------------------- cdi


def _source_options(f: F) -> F:
    for opt in reversed([
        click.option("--root", default="/", show_default=True,
                     help="host root to read /dev, /proc and the linker cache under"),
        click.option("--inventory", type=click.Path(dir_okay=False),
                     help="JSON with a 'gpus' list of index, uuid, minor (and mig) per GPU "
                          "(default: nvidia-smi -q -x)"),
        click.option("--char", "chars", multiple=True, metavar="KIND=NAME:PATH[=HOST][,...]",
                     help="a generic character device, e.g. example.com/acc=0:/dev/acc0"),
        click.option("--env", "env", multiple=True, metavar="K=V",
                     help="environment for every container given a --char device"),
        click.option("--mount", "mounts", multiple=True, metavar="HOST[:CONTAINER]",
                     help="read-only bind mount (e.g. a driver library) for --char devices"),
        click.option("--spec", "spec_file", type=click.Path(dir_okay=False),
                     help="platform spec: add the pool's node.charDevices"),
        click.option("--pool", "pool_name", help="with --spec: the pool (default: all pools)"),
    ]):
        f = opt(f)
    return f


def _spec_chars(spec_file: str | None, pool_name: str | None) -> list[host.CharDevice]:
    if spec_file is None:
        if pool_name:
            raise InputError("--pool needs --spec FILE")
        return []
    from aiplat.spec import load_platform

    platform = load_platform(spec_file)
    pools = [p for p in platform.pools if pool_name in (None, p.name)]
    if not pools:
        raise InputError(f"{spec_file}: no pool '{pool_name}' (fix: use one of "
                         + ", ".join(p.name for p in platform.pools) + ")")
    out, seen = [], set()
    for pool in pools:
        for d in pool.node.char_devices:
            if (d.kind, d.name) not in seen:
                seen.add((d.kind, d.name))
                out.append(host.CharDevice(d.kind, d.name, tuple((p, p) for p in d.paths)))
    return out


def _generate(root: str, inventory: str | None, chars: Sequence[str], *,
              env: Sequence[str], mounts: Sequence[str], spec_file: str | None = None,
              pool_name: str | None = None) -> dict[str, dict[str, Any]]:
    for e in env:
        if "=" not in e:
            raise InputError(f"--env '{e}' is not K=V")
    if inventory:
        gpus = host.gpus_from_inventory(host.read_json(inventory), inventory)
    else:
        gpus = host.gpus_from_nvidia_smi() if root == "/" else []
    all_chars = [host.parse_char_option(c) for c in chars] + _spec_chars(spec_file, pool_name)
    specs = host.generate(root, gpus=gpus, chars=all_chars, env=env,
                          mounts=[host.parse_mount_option(m) for m in mounts])
    if not specs:
        raise InputError("no devices found (no GPU, RDMA device or --char) (fix: pass "
                         "--inventory FILE or --char KIND=NAME:/dev/PATH)")
    return specs


def _target(text: str) -> tuple[str, str]:
    rt, sep, ver = text.partition(":")
    if not sep or rt not in runtime.RUNTIMES:
        raise InputError(f"--target-runtime '{text}' is not RUNTIME:VERSION (fix: e.g. "
                         f"podman:4.2.0 (runtimes: {', '.join(runtime.RUNTIMES)}))")
    try:
        runtime.parse_version(ver)
    except runtime.RuntimeConfigError as e:
        raise InputError(f"--target-runtime '{text}': {e}") from None
    return rt, ver


def _warn_version(doc: dict[str, Any], rt: str, ver: str) -> None:
    newest = runtime.max_cdi_version(rt, ver)
    lib = runtime.cdi_library(rt, ver)
    if newest is None or lib is None or cdi.normal_version(doc["cdiVersion"]) is None:
        return
    have = cdi.normal_version(doc["cdiVersion"]) or ""
    if tuple(int(x) for x in have.split(".")) > tuple(int(x) for x in newest.split(".")):
        why = cdi.required_version(doc)[1]
        click.echo(f"warning: {doc['kind']}: cdiVersion {have} ({why}) is newer than {rt} "
                   f"{ver} loads: it links CDI library v{'.'.join(map(str, lib))} (cdiVersion "
                   f"<= {newest}); the runtime will refuse every device of this spec (fix: "
                   f"upgrade {rt})", err=True)


@click.group("cdi")
def cdi_group() -> None:
    """Generate, validate and verify (in real containers) Container Device Interface specs."""


@cdi_group.command("generate")
@_source_options
@click.option("--kind", help="only the spec of this vendor/class")
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), default="json",
              show_default=True)
@click.option("-d", "--out-dir", "--write", "write_dir", type=OutDir(),
              help="write the specs atomically (0644) into DIR, e.g. /etc/cdi or /var/run/cdi")
@click.option("--dry-run", is_flag=True, help="with --write: show the diff, write nothing")
@click.option("--target-runtime", "targets", multiple=True, metavar="RUNTIME:VERSION",
              help="warn when this runtime's CDI library cannot load the spec's cdiVersion, "
              "e.g. podman:4.2.0 or crio:1.24.0")
def cdi_generate(*, root: str, inventory: str | None, chars: tuple[str, ...],
                 env: tuple[str, ...], mounts: tuple[str, ...], spec_file: str | None,
                 pool_name: str | None, kind: str | None,
                 output: str, write_dir: str | None, dry_run: bool,
                 targets: tuple[str, ...]) -> None:
    """Build CDI specs from the host (or --root / --inventory): one device per GPU by index
    and UUID, MIG devices, AMD, RDMA and --char devices, plus 'all'. Each spec gets the
    lowest cdiVersion its fields need.

    \b
    Examples:
      aiplat cdi generate --char example.com/acc=0:/dev/null
      aiplat cdi generate --char example.com/acc=0:/dev/null -d cdi -o yaml
    """
    checks = [_target(t) for t in targets]
    specs = _generate(root, inventory, chars, env=env, mounts=mounts,
                      spec_file=spec_file, pool_name=pool_name)
    for doc in specs.values():
        for rt, ver in checks:
            _warn_version(doc, rt, ver)
    if kind:
        specs = {f: d for f, d in specs.items() if d["kind"] == kind}
        if not specs:
            raise InputError(f"no spec of kind '{kind}' was generated")
    if "aiplat-nvidia.com-gpu.json" in specs and host.nvidia_hook_binary(root) is None:
        click.echo("warning: no nvidia-cdi-hook or nvidia-ctk under "
                   f"{Path(root) / 'usr/bin'}: the GPU spec has no update-ldcache and "
                   "create-symlinks hooks, so images whose linker does not search the host's "
                   "library directory will not find libcuda.so.1; install the NVIDIA Container "
                   "Toolkit and generate again", err=True)
    elif "aiplat-nvidia.com-gpu.json" in specs and host.toolkit_version(root) is None:
        click.echo("warning: the NVIDIA Container Toolkit's version is unknown (no dpkg "
                   "status under the root): only the hooks every nvidia-cdi-hook knows "
                   "(create-symlinks, update-ldcache) are written, not enable-cuda-compat, "
                   "disable-device-node-modification or update-application-profile", err=True)
    if write_dir is None:
        if len(specs) > 1 and output == "json":
            raise InputError(f"{len(specs)} specs ({', '.join(d['kind'] for d in specs.values())})"
                             " (fix: pick one with --kind, use -o yaml, or --write DIR)")
        click.echo("---\n".join(cdi.dumps(d, output) for d in specs.values()), nl=False)
        return
    for fname, doc in specs.items():
        path = Path(write_dir) / (fname[:-5] + ".yaml" if output == "yaml" else fname)
        new = cdi.dumps(doc, output)
        old = path.read_text() if path.exists() else ""
        if dry_run:
            diff = difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        str(path) if old else "/dev/null", str(path))
            click.echo(shown_lines(("".join(diff) or f"{path}: unchanged").removesuffix("\n")))
        else:
            atomic_write(path, new, 0o644)
            click.echo(f"wrote {shown(str(path))} ({len(doc['devices'])} devices, "
                       f"cdiVersion {doc['cdiVersion']})", err=True)


@cdi_group.command("validate")
@click.argument("paths", nargs=-1, required=True)
@click.option("--no-host", is_flag=True, help="skip checks against this host's files and nodes")
@click.option("--root", default="/", show_default=True)
@click.option("--strict", is_flag=True, help="warnings fail too")
@_OUTPUT
def cdi_validate(paths: tuple[str, ...], no_host: bool, root: str, strict: bool,
                 output: str) -> None:
    """Check CDI spec FILEs or DIRs as the reference loader and the host would. DIRs are read
    in the order given; a device defined again in a later directory overrides (warning).
    CHECK 'spec': the reference loader rejects it too; 'host-check': aiplat's stricter checks
    (the loader accepts the file, the runtime or the host would not).

    \b
    Examples:
      aiplat cdi generate --char example.com/acc=0:/dev/null -d cdi
      aiplat cdi validate cdi
      aiplat cdi validate --no-host --strict -o json cdi
    """
    files = host.spec_files(paths)
    h = None if no_host else host.RealHost(root)
    findings: list[cdi.Finding] = []
    docs = []
    for f in files:
        doc, found = host.check_spec_file(f, h)
        docs.append((f, doc))
        findings += found
    findings += cdi.validate_set(docs, h)
    bad = [f for f in findings if f.severity == "error" or strict]
    _emit({"files": files, "findings": [f.model_dump() for f in findings]}, output,
          lambda: _table(["SEVERITY", "CHECK", "FILE", "DEVICE", "FIELD", "PROBLEM"],
                         [[f.severity, f.check, f.file, f.device or "-", f.field,
                           f.message + (f" (fix: {f.fix})" if f.fix else "")]
                          for f in findings]) if findings
          else f"{len(files)} file(s) valid\n")
    _exit(1 if bad else 0)


@cdi_group.command("verify")
@click.argument("spec", required=False)
@_source_options
@click.option("--device", "devices", multiple=True, help="verify only these device names")
@click.option("--podman", default="podman", show_default=True)
@click.option("--runtime", "oci_runtime", default="runc", show_default=True,
              help="OCI runtime for podman --runtime ('' for podman's default)")
@click.option("--ulimit", "ulimits", multiple=True,
              default=("nofile=1024:1024", "nproc=1024:1024"), show_default=True)
@click.option("--podman-arg", "extra", multiple=True, help="extra argument for podman run")
@click.option("--image", default=PodmanOptions.image, show_default=True)
@click.option("--stage-dir", default="/var/run/cdi", show_default=True,
              help="CDI directory Podman reads, where a spec from elsewhere is staged")
@click.option("--allow-rw", multiple=True, help="container path whose mount may be writable")
@click.option("--remove-image", "drop_image", is_flag=True,
              help="remove the probe image afterwards")
@_OUTPUT
def cdi_verify(*, spec: str | None, root: str, inventory: str | None, chars: tuple[str, ...],
               env: tuple[str, ...], mounts: tuple[str, ...], spec_file: str | None,
               pool_name: str | None, devices: tuple[str, ...],
               podman: str, oci_runtime: str,
               ulimits: tuple[str, ...], extra: tuple[str, ...], image: str, stage_dir: str,
               allow_rw: tuple[str, ...], drop_image: bool, output: str) -> None:
    """Prove SPEC (default: what `generate` would write) in real Podman containers.

    \b
    Examples (root, Podman):
      aiplat cdi generate --char example.com/null=0:/dev/null -d cdi
      aiplat cdi verify cdi/aiplat-example.com-null.json
      aiplat cdi verify cdi/aiplat-example.com-null.json --device 0 -o json
    """
    opts = PodmanOptions(podman=podman, runtime=oci_runtime or None, ulimits=ulimits,
                         extra=extra, image=image, stage_dir=stage_dir, allow_rw=allow_rw)
    files: list[str] = []
    tmp = None
    if spec:
        files = [spec]
    else:
        tmp = tempfile.TemporaryDirectory()
        for name, doc in _generate(root, inventory, chars, env=env, mounts=mounts,
                                        spec_file=spec_file, pool_name=pool_name).items():
            p = os.path.join(tmp.name, name)
            Path(p).write_text(cdi.dumps(doc))
            files.append(p)
    try:
        runs = [verify_spec(f, opts, devices or None) for f in files]
    finally:
        if tmp is not None:
            tmp.cleanup()
        if drop_image:
            remove_image(opts)
    for v in runs:
        for f in v.findings:
            click.echo(line(f), err=True)
    data = [{"file": v.file, "kind": v.kind, "ok": v.ok,
             "results": [r.as_dict() for r in v.results]} for v in runs]
    rows = [[r.device, "pass" if r.ok else "FAIL", f"{r.seconds:.2f}s", r.reason()]
            for v in runs for r in v.results]
    _emit(data, output, lambda: _table(["DEVICE", "RESULT", "TIME", "EVIDENCE"], rows))
    _exit(0 if all(v.ok for v in runs) else 1)


# ---------------------------------------------------------------------------- runtime


@click.group("runtime")
def runtime_group() -> None:
    """Container runtime configuration for CDI and NRI."""


@runtime_group.command("config")
@click.argument("name", type=click.Choice(runtime.RUNTIMES))
@click.option("--current", type=click.Path(dir_okay=False),
              help="the existing config to merge into (default: the runtime's usual path)")
@click.option("--version", "version",
              help="runtime version (default: detected from the host, e.g. containerd --version)")
@click.option("--no-cdi", is_flag=True)
@click.option("--no-nri", is_flag=True)
@click.option("--spec-dir", "spec_dirs", multiple=True, help="CDI spec dirs (default /etc/cdi "
              "and /var/run/cdi)")
@click.option("-o", "--output", type=click.Choice(["diff", "toml", *DATA_FORMATS]), default="diff",
              show_default=True)
@click.option("--write", is_flag=True, help="write the merged file over --current (atomic; a "
              "symlink is followed: its target is updated, the link kept)")
def runtime_config(*, name: str, current: str | None, version: str | None, no_cdi: bool,
                   no_nri: bool, spec_dirs: tuple[str, ...], output: str, write: bool) -> None:
    """The minimal merge into NAME's config that enables CDI and NRI; every other setting
    and comment is kept. Merging twice changes nothing.

    \b
    Examples:
      aiplat samples get containerd-1.7.toml
      aiplat runtime config containerd --current containerd-1.7.toml --version 1.7.20
      aiplat runtime config containerd --current containerd-1.7.toml --version 1.7.20 --write
    """
    from aiplat import inputs

    path = current or runtime.DEFAULT_PATHS[name]
    if current and not os.path.lexists(current):
        raise InputError(f"{current}: no such file (fix: omit --current to start from an "
                         "empty config)")
    text = inputs.read_text(path, f"a {name} configuration file") \
        if os.path.lexists(path) else ""
    ver = version or host.runtime_version(runtime.VERSION_COMMANDS[name])
    if ver is None:
        raise InputError(f"cannot detect the {name} version on this host (fix: pass "
                         "--version X.Y.Z)")
    try:
        m = runtime.merge(name, text, ver, cdi=not no_cdi, nri=not no_nri and name != "podman",
                          spec_dirs=spec_dirs or None)
    except runtime.RuntimeConfigError as e:
        raise InputError(f"{path} ({name} {ver}): {e}") from e
    for n in m.notes:
        click.echo(f"note: {shown(n)}", err=True)
    if output in DATA_FORMATS:
        print_data(output, {"runtime": name, "version": ver, "file": path,
                            "changes": [{"key": c.key, "old": c.old, "new": c.new}
                                        for c in m.changes], "notes": m.notes})
    elif output == "toml":
        click.echo(m.after, nl=False)
    else:
        # the host's own file may hold a bidi override or zero-width character (TOML allows
        # them raw in strings and comments): the diff is for reading, shown line by line
        click.echo(shown_lines((m.diff(path) or f"{path}: no change needed").removesuffix("\n")))
    if write and m.changes:
        # A symlinked config (managed elsewhere) is updated where it lives: writing over the
        # link would leave the runtime reading the old file. Atomic next to the real file,
        # with its mode kept.
        real = os.path.realpath(path)
        mode = stat.S_IMODE(os.stat(real).st_mode) if os.path.exists(real) else 0o644
        try:
            atomic_write(real, m.after, mode)
        except OSError as e:
            raise AiplatError(f"cannot write {real}: {e.strerror}; nothing was changed. To"
                              " (fix: run as root, or free space on its file system)") from None
        via = f" (the target of the symlink {path})" if os.path.islink(path) else ""
        click.echo(f"wrote {shown(f'{real}{via}')} ({len(m.changes)} changes); restart {name} "
                   "to apply", err=True)


# ---------------------------------------------------------------------------- sharing


def _gpu_and_pool(spec_file: str | None, pool_name: str | None, gpu_name: str | None
                  ) -> tuple[Any, Any, Any]:
    """(GPU model, resolved platform, resolved pool): the pool named, or the one workloads
    without a pool run on; the platform and pool are None without --spec."""
    from aiplat.catalog.load import load_catalog
    from aiplat.plan.resolve import resolve
    from aiplat.spec import load_platform

    catalog = load_catalog()
    resolved = pool = None
    if spec_file:
        resolved = resolve(load_platform(spec_file), catalog)
        if pool_name:
            if resolved.spec.pool(pool_name) is None:
                raise InputError(f"{spec_file}: no pool '{pool_name}' (fix: use one of "
                                 + ", ".join(p.name for p in resolved.pools) + ")")
            pool = resolved.pool(pool_name)
        else:
            pool = resolved.default_pool
        if pool is None or pool.gpu is None:
            raise InputError(f"{spec_file}: no GPU pool (fix: pass --pool with node.gpu)")
        gpu_name = gpu_name or pool.gpu.name
    if not gpu_name:
        raise InputError("no GPU model (fix: pass --gpu MODEL or SPEC [--pool NAME])")
    gpu = catalog.gpu(gpu_name)
    if gpu is None:
        raise InputError(f"unknown GPU model '{gpu_name}' (fix: use one of "
                         + ", ".join(g.name for g in catalog.gpus) + ")")
    return gpu, resolved, pool


@click.group("sharing")
def sharing_group() -> None:
    """GPU sharing: strategies, MIG layout plans, device plugin / DRA configs, comparison."""


@sharing_group.command("strategies")
@_OUTPUT
def sharing_strategies(output: str) -> None:
    """The isolation each sharing strategy gives, as documented.

    \b
    Examples:
      aiplat sharing strategies
      aiplat sharing strategies -o yaml
    """
    rows = sharing.strategies_table()
    _emit(rows, output, lambda: _table(
        ["STRATEGY", "MEMORY", "FAULTS", "BANDWIDTH", "COMPUTE", "PARTITIONS", "RECONFIGURE"],
        [[r["name"], "yes" if r["memory_protection"] else "no",
          "yes" if r["fault_isolation"] else "no", "yes" if r["bandwidth_qos"] else "no",
          r["compute"], r["max_partitions"], r["reconfiguration"]] for r in rows]))


MAX_DEMAND = 100_000
"""The most MIG instances one --demand asks for (7 per GPU: more than 14,000 GPUs)."""


def _demand(items: Sequence[str]) -> dict[str, dict[str, int]]:
    """``[TENANT:]PROFILE=COUNT`` → tenant → profile → count (tenant '-' when not given)."""
    out: dict[str, dict[str, int]] = {}
    for it in items:
        spec, _, n = it.partition("=")
        tenant, _, prof = spec.rpartition(":")
        if not n.isdigit() or not prof:
            raise InputError(f"--demand '{it}': expected [TENANT:]PROFILE=COUNT, e.g. "
                             "team-a:1g.10gb=10")
        if not 0 < int(n) <= MAX_DEMAND:
            raise InputError(f"--demand '{it}': COUNT must be 1 to {MAX_DEMAND:,} instances "
                             "(fix: give the instances one pool needs)")
        per = out.setdefault(tenant or "-", {})
        per[prof] = per.get(prof, 0) + int(n)
    return out


@sharing_group.command("plan")
@click.option("--gpu", "gpu_name", help="catalog GPU model, e.g. H100-SXM-80GB")
@spec_argument()
@click.option("--pool", "pool_name")
@click.option("--demand", "demand", multiple=True, required=True,
              metavar="[TENANT:]PROFILE=N",
              help="MIG instances wanted, e.g. --demand team-a:1g.10gb=10 --demand 3g.40gb=2")
@click.option("--gpus", "available", type=click.IntRange(1, 100_000),
              help="GPUs available (default: the pool's)")
@click.option("--gpus-per-node", type=click.IntRange(1, 64), default=None,
              help="for the MIG manager config")
@_OUTPUT
def sharing_plan(*, gpu_name: str | None, spec: str | None, pool_name: str | None,
                 demand: tuple[str, ...], available: int | None, gpus_per_node: int | None,
                 output: str) -> None:
    """MIG layouts per GPU for the demand on as few GPUs as possible, with the MIG manager
    (mig-parted) config; explains when the demand cannot be met (exit 1).

    \b
    Examples:
      aiplat sharing plan --gpu H100-SXM-80GB --demand 1g.10gb=10 --demand 3g.40gb=2
      aiplat spec example > platform.yaml
      aiplat sharing plan platform.yaml --pool h100 --demand team-a:1g.10gb=14 -o json
    """
    gpu, _platform, pool = _gpu_and_pool(spec, pool_name, gpu_name)
    if available is None and pool is not None:
        available = pool.gpus
    per_node = gpus_per_node or (pool.gpus_per_node if pool is not None else 8)
    by_tenant = _demand(demand)
    total: dict[str, int] = {}
    for wants in by_tenant.values():
        for prof, n in wants.items():
            total[prof] = total.get(prof, 0) + n
    try:
        p = mig.plan(gpu, total, available)
        assignments = mig.assign(p, by_tenant)
    except mig.MigPlanError as e:
        click.echo(f"cannot meet the demand: {shown(str(e))}", err=True)
        sys.exit(1)
    config, nodes = mig.mig_parted_config(p, per_node)
    data = {"gpu": p.gpu, "demand": p.demand, "gpus": p.gpus, "lowerBound": p.lower_bound,
            "available": available,
            "layouts": [{"gpus": n, "instances": [str(x) for x in lay.placements]}
                        for lay, n in p.grouped()],
            "migManagerConfig": config, "nodesPerConfig": nodes,
            "assignments": [{"gpu": i, "instance": str(pl), "tenant": t}
                            for i, pl, t in assignments]}
    tenants: dict[str, set[int]] = {}
    for i, _pl, t in assignments:
        tenants.setdefault(t, set()).add(i)

    def table() -> str:
        head = (f"{p.gpus} × {p.gpu} (lower bound {p.lower_bound}"
                + (f", {available} available" if available is not None else "") + ")\n")
        body = _table(["GPUS", "LAYOUT (profile@memory-slice)"],
                      [[n, " ".join(str(x) for x in lay.placements)] for lay, n in p.grouped()])
        if set(tenants) != {"-"}:
            body += "".join(f"tenant {t}: {sum(by_tenant[t].values())} instances on "
                            f"{len(g)} GPU(s)\n" for t, g in tenants.items())
        return head + body
    _emit(data, output, table)


@sharing_group.command("config")
@click.argument("strategy", type=click.Choice(["exclusive", "mig", "time-slicing", "mps"]))
@click.option("--target", type=click.Choice(["device-plugin", "dra"]), default="device-plugin",
              show_default=True)
@click.option("--replicas", type=click.IntRange(0, 1024), default=0)
@click.option("--rename-by-default", is_flag=True)
@click.option("--interval", default="Default", help="DRA time-slicing interval")
@click.option("--memory-gb", type=Finite(0, 4096, min_open=True),
              help="DRA MPS: GPU memory to divide among clients")
def sharing_config(*, strategy: str, target: str, replicas: int, rename_by_default: bool,
                   interval: str, memory_gb: float | None) -> None:
    """The NVIDIA device plugin config or the DRA driver's GpuConfig for STRATEGY (YAML).

    \b
    Examples:
      aiplat sharing config time-slicing --replicas 4
      aiplat sharing config mps --target dra --memory-gb 40
    """
    try:
        if target == "dra":
            doc = sharing.dra_gpu_config(strategy, interval=interval, replicas=replicas or 2,
                                         memory_gb=memory_gb)
        else:
            doc = sharing.device_plugin_config(strategy, replicas,
                                               rename_by_default=rename_by_default)
    except ValueError as e:
        raise InputError(str(e)) from e
    click.echo(yaml.safe_dump(doc, sort_keys=False), nl=False)


@sharing_group.command("compare")
@spec_argument(required=True)
@click.option("--pool", "pool_name")
@click.option("--replicas", type=click.IntRange(1, 1024),
              help="replicas per GPU for MPS/time-slicing")
@_OUTPUT
def sharing_compare(spec: str, pool_name: str | None, replicas: int | None,
                    output: str) -> None:
    """Compare strategies for the pool's workloads and tenants; end with a recommendation.

    \b
    Examples:
      aiplat spec example > platform.yaml
      aiplat sharing compare platform.yaml --pool h100
      aiplat sharing compare platform.yaml --pool h100 --replicas 4 -o json
    """
    _gpu, resolved, pool = _gpu_and_pool(spec, pool_name, None)
    c = sharing.compare(resolved, pool, replicas=replicas)

    def table() -> str:
        rows = [[o.strategy, f"{o.units_per_gpu:g}", f"{o.capacity:g}",
                 "-" if o.memory_per_unit_gb is None else f"{o.memory_per_unit_gb:g}",
                 o.isolation, o.interference if o.fits else o.why_not] for o in c.options]
        return (_table(["STRATEGY", "UNITS/GPU", "UNITS", "MEM/UNIT GB", "ISOLATES",
                        "INTERFERENCE"], rows)
                + f"\nrecommended for pool {c.pool} ({c.gpus} × {c.gpu}): {c.recommended}\n"
                + "".join(f"  - {r}\n" for r in c.reasons))
    _emit(c.as_dict(), output, table)


# ---------------------------------------------------------------------------- accounting


@click.group("accounting")
def accounting_group() -> None:
    """GPU-hours and weighted slice-hours per tenant."""


@accounting_group.command("report")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["records", "pods", "claims"]),
              default="records", show_default=True,
              help="records: CSV/JSON rows tenant,start,end,count,profile; pods/claims: a "
                   "kubectl get -o json snapshot")
@click.option("--since", help="window start (ISO 8601)")
@click.option("--until", help="window end (ISO 8601; default now)")
@click.option("--replicas", type=click.IntRange(1, 1024), default=1,
              help="replicas per GPU for 'shared' slices")
@click.option("--tenant-label", help="pod label naming the tenant (default: namespace)")
@click.option("-o", "--output", type=click.Choice([*FORMATS, "csv"]), default="table",
              show_default=True)
def accounting_report(*, source: str, fmt: str, since: str | None, until: str | None,
                      replicas: int, tenant_label: str | None, output: str) -> None:
    """Sum allocations per tenant over the window.

    \b
    Examples:
      aiplat samples get snapshot-quota-exhausted -d snap
      aiplat accounting report snap/pods.json --format pods --since 2026-01-01T00:00:00Z
      aiplat accounting report snap/resourceclaims.json --format claims -o csv
    """
    from datetime import UTC, datetime

    from aiplat import inputs

    try:
        end = acct.parse_time(until, "--until") if until else datetime.now(UTC)
        start = acct.parse_time(since, "--since") if since else None
        text = inputs.read_text(source, "allocation records")
        if fmt == "records" and source.endswith(".csv"):
            allocs = acct.read_csv(text, source)
        else:
            doc = inputs.parse_json(text, source, "allocations (JSON)")
            if fmt in ("pods", "claims"):
                what = f"a `kubectl get {fmt if fmt == 'pods' else 'resourceclaims'} -o json`"
                inputs.mapping(doc, source, f"{what} list")
                try:
                    allocs = acct.from_pods(doc, end, tenant_label) if fmt == "pods" \
                        else acct.from_claims(doc, end)
                except (AttributeError, TypeError, KeyError) as e:
                    raise InputError(f"{source}: not the shape of {what} list ({e}) (fix: "
                                     f"pass the output of {what[2:]})") from e
            else:
                rows = doc.get("allocations", []) if isinstance(doc, dict) else doc
                inputs.sequence(rows, source, "a list of allocation records",
                                "give a JSON list of {tenant, start, end, count} records")
                if not all(isinstance(r, dict) for r in rows):
                    raise InputError(f"{source}: every allocation record must be a mapping "
                                     "(fix: give {tenant, start, end, count} records)")
                allocs = acct.from_records(rows, source)
        usage = acct.summarize(allocs, start, end, replicas)
    except (OSError, ValueError) as e:
        raise InputError(str(e) if str(e).startswith(source) else f"{source}: {e}") from e
    if output == "csv":
        click.echo(acct.to_csv(usage), nl=False)
    elif output in DATA_FORMATS:
        print_data(output, [u.__dict__ for u in usage])
    else:
        click.echo(_table(["TENANT", "ALLOCATIONS", "GPU-HOURS", "SLICE-HOURS",
                           "WEIGHTED GPU-HOURS"],
                          [[u.tenant, u.allocations, f"{u.gpu_hours:.2f}",
                            f"{u.slice_hours:.2f}", f"{u.weighted_gpu_hours:.2f}"]
                           for u in usage]), nl=False)
