"""``aiplat model push|pull|ls|tags|inspect|verify|gc|sign|bench``: thin wrappers.

Each command parses options, calls one function of :mod:`aiplat.artifacts`, prints data on
stdout (``-o table|json|yaml``) and progress on stderr. Exit 0 ok, 1 failed check (corrupt
cache, refused signature, registry failure), 2 bad input.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from aiplat import inputs
from aiplat.artifacts import limits
from aiplat.artifacts.cache import Cache
from aiplat.artifacts.client import RegistryClient, open_client
from aiplat.artifacts.errors import ArtifactInputError, storage_error
from aiplat.artifacts.modelpack import Manifest, ModelInfo
from aiplat.artifacts.reference import parse_reference, parse_registry
from aiplat.artifacts.units import human_bytes, parse_size
from aiplat.cli._output import Existing, print_data
from aiplat.cli._progress import QUIET, info, progress_bar
from aiplat.text import shown

_OUTPUT = click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]),
                       default="table", show_default=True, help="format of the data on stdout")
_PLAIN = click.option("--plain-http/--tls", "plain_http", default=None,
                      help="force HTTP or HTTPS (default: HTTP for loopback registries only)")


def default_cache() -> str:
    env = os.environ.get("AIPLAT_MODEL_CACHE")
    if env:
        return env
    if os.geteuid() == 0:
        return "/var/lib/aiplat/models"
    return str(Path.home() / ".cache/aiplat/models")


_CACHE = click.option("--cache", "cache_dir", default=default_cache,
                      show_default="$AIPLAT_MODEL_CACHE, else /var/lib/aiplat/models as root,"
                                   " else ~/.cache/aiplat/models",
                      type=click.Path(file_okay=False),
                      help="cache directory (env AIPLAT_MODEL_CACHE)")


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [_plain(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return str(obj)


def _emit(data: Any, output: str, table: list[str]) -> None:
    if output in ("json", "yaml"):
        # a registry's config blob is its document; bench figures are named by what they time
        print_data(output, _plain(data), data_maps=("figures",), verbatim=("config",))
    else:
        for line in table:  # rows quote a registry's or the cache's names: terminal-safe
            click.echo(shown(line))


def _client(registry: str, plain_http: bool | None, concurrency: int = 4) -> RegistryClient:
    """The registry client with the auth files' credentials; a warning about them (a file
    other users can read) goes to stderr once, even with --quiet."""
    client = open_client(registry, plain_http=plain_http, concurrency=concurrency)
    for warning in client.warnings:
        click.echo(f"warning: {warning}", err=True)
    return client


@contextlib.contextmanager
def _transfer_bar(verb: str) -> Iterator[tuple[Any, Any]]:
    """(on_total, progress) callbacks for push/pull: a bar with bytes and rate on a terminal,
    nothing when stderr is a file or pipe (logs stay clean) or with --quiet."""
    with progress_bar(verb, kind="bytes") as bar:
        if not bar.shown:
            yield None, None
        else:
            yield bar.total, lambda _digest, n: bar.advance(n)


@click.group()
def model() -> None:
    """Package, sign, push, pull, cache, verify and benchmark model artifacts (OCI)."""


@model.command()
@click.argument("directory", type=Existing("the model's folder", file_okay=False))
@click.argument("ref")
@click.option("--name", help="model name in the config (default: the repository's last part)")
@click.option("--version", "version", default="", help="model version (default: the tag)")
@click.option("--mount-from", multiple=True, metavar="REPO",
              help="repository on the same registry to mount shared blobs from (repeatable)")
@click.option("--chunk-size", default="64MiB", show_default=True,
              help="blobs larger than this upload in PATCH chunks of this size")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 64))
@click.option("--sign-key", type=Existing("a private key (PEM or cosign.key)", dir_okay=False),
              help="private key (PEM, or cosign.key with COSIGN_PASSWORD): sign the pushed"
                   " manifest in cosign's format")
@_PLAIN
@QUIET
@_OUTPUT
def push(*, directory: str, ref: str, name: str | None, version: str, mount_from: tuple[str, ...],
         chunk_size: str, concurrency: int, sign_key: str | None, plain_http: bool | None,
         output: str) -> None:
    """Package DIRECTORY as a ModelPack artifact and push it to REF (HOST/REPO:TAG).

    \b
    Examples (a registry at 127.0.0.1:5000):
      aiplat samples get model-mini
      aiplat model push model-mini 127.0.0.1:5000/models/mini:1
      aiplat model push model-mini 127.0.0.1:5000/models/mini:2 --version 2.0 -o json
    """
    from aiplat.artifacts.package import package_dir
    from aiplat.artifacts.push import push_package

    r = parse_reference(ref)
    if r.digest:
        raise ArtifactInputError(f"{ref}: push to a tag, not a digest (the digest is computed)")
    key = _load_key(sign_key) if sign_key else None
    t0 = time.perf_counter()
    meta = ModelInfo(name=name or r.repository.rsplit("/", 1)[-1], version=version or r.tag or "")
    pkg = package_dir(directory, meta)
    info(f"packaged {len(pkg.layers)} layers, {human_bytes(pkg.manifest.total_size)}")
    chunk = parse_size(chunk_size, "--chunk-size")
    with (_client(r.registry, plain_http, concurrency) as client,
          _transfer_bar("push") as (on_total, progress)):
        res = push_package(client, r, pkg, mount_from=list(mount_from), chunk_size=chunk,
                           concurrency=concurrency, progress=progress, on_total=on_total)
        signature = None
        if key is not None:
            from aiplat.artifacts.signatures import sign_reference

            signature = sign_reference(client, res.reference, key).signature
    seconds = time.perf_counter() - t0
    data = {"reference": str(res.reference), "digest": res.digest, "uploaded": res.uploaded,
            "skipped": res.skipped, "mounted": res.mounted,
            "uploadedBytes": res.uploaded_bytes, "signature": signature,
            "seconds": round(seconds, 3)}
    _emit(data, output, [
        f"pushed {res.reference}",
        f"  blobs: {len(res.uploaded)} uploaded ({human_bytes(res.uploaded_bytes)}),"
        f" {len(res.skipped)} already there, {len(res.mounted)} mounted",
        *([f"  signed: {signature}"] if signature else []),
        f"  {seconds:.2f} s",
    ])


def _shown(value: object) -> str:
    """A registry's string for the table: as is when printable, else escaped (repr), so a
    manifest cannot send escape sequences to the reader's terminal."""
    text = str(value)
    return text if text.isprintable() else repr(text)


def _load_key(path: str) -> Any:
    from aiplat.artifacts.signing import load_private_key

    password = os.environ.get("COSIGN_PASSWORD")
    return load_private_key(inputs.read_bytes(path, "a private key (PEM)"), path,
                            None if password is None else password.encode())


@model.command()
@click.argument("ref")
@_CACHE
@click.option("--policy", type=Existing("a TrustPolicy file", dir_okay=False),
              help="TrustPolicy file: refuse models it does not accept")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 64),
              help="blobs downloaded in parallel")
@click.option("--max-rate", help="bandwidth cap, bytes/s with units (e.g. 500M)")
@click.option("--max-cache-size", help="evict least recently used snapshots above this size")
@click.option("--pin", is_flag=True, help="pin the snapshot: eviction never removes it")
@click.option("--link", type=click.Path(),
              help="also point this symlink at the snapshot (a stable path for a server's "
                   "arguments, e.g. vllm serve /models/NAME); replaced atomically")
@_PLAIN
@QUIET
@_OUTPUT
def pull(*, ref: str, cache_dir: str, policy: str | None, concurrency: int, max_rate: str | None,
         max_cache_size: str | None, pin: bool, link: str | None, plain_http: bool | None,
         output: str) -> None:
    """Pull REF into the cache and print the model directory (a snapshot of hard links).

    \b
    Examples (a registry at 127.0.0.1:5000):
      aiplat model pull 127.0.0.1:5000/models/mini:1
      aiplat model pull 127.0.0.1:5000/models/mini:1 --pin --link mini -o json
    """
    from aiplat.artifacts.pull import pull as do_pull
    from aiplat.artifacts.signing import parse_policy

    r = parse_reference(ref)
    pol = parse_policy(inputs.read_text(policy, "a TrustPolicy file"), policy) \
        if policy else None
    rate = parse_size(max_rate, "--max-rate") if max_rate else None
    limit = parse_size(max_cache_size, "--max-cache-size") if max_cache_size else None
    cache = Cache(cache_dir)
    with (_client(r.registry, plain_http, concurrency) as client,
          _transfer_bar("pull") as (on_total, progress)):
        res = do_pull(client, cache, r, policy=pol, concurrency=concurrency, max_rate=rate,
                      max_cache_bytes=limit, progress=progress, on_total=on_total)
    if link:
        from aiplat.artifacts.cache import link_snapshot

        try:
            link_snapshot(res.path, Path(link))
        except OSError as e:
            raise storage_error(e, f"pulled {res.path} but cannot link it at", Path(link)) \
                from None
    if pin:
        try:
            cache.pin(res.digest, str(r))
        except OSError as e:
            raise storage_error(e, f"pulled {res.path} but cannot pin it in",
                                cache.root / "pins") from None
    for note in res.notes:
        info(f"warning: {note}")
    speed = res.bytes_downloaded / res.seconds if res.seconds and not res.warm else 0.0
    if res.warm:
        info(f"warm pull of {res.reference} in {res.seconds:.3f} s: snapshot already in the"
              f" cache, nothing downloaded; {res.trust}")
    else:
        info(f"cold pull of {res.reference} in {res.seconds:.3f} s: {len(res.downloaded)}"
              f" blobs downloaded ({human_bytes(res.bytes_downloaded)}"
              f"{f', {human_bytes(speed)}/s' if speed else ''}), {len(res.shared)} already"
              f" cached; {res.trust}")
    data = {"reference": str(res.reference), "digest": res.digest, "path": str(res.path),
            "warm": res.warm, "trust": res.trust, "downloaded": res.downloaded,
            "bytesDownloaded": res.bytes_downloaded, "bytesResumed": res.bytes_resumed,
            "totalBytes": res.total_bytes, "seconds": round(res.seconds, 4)}
    _emit(data, output, [str(res.path)])


@model.command(name="ls")
@click.argument("registry", required=False)
@_CACHE
@_PLAIN
@_OUTPUT
def ls(registry: str | None, cache_dir: str, plain_http: bool | None, output: str) -> None:
    """List repositories of REGISTRY (HOST[:PORT]), or the cache's snapshots without it.

    \b
    Examples:
      aiplat model ls
      aiplat model ls -o json

    \b
    Examples (a registry at 127.0.0.1:5000):
      aiplat model ls 127.0.0.1:5000
    """
    if registry:
        with _client(parse_registry(registry), plain_http) as client:
            repos = client.catalog()
        _emit({"registry": registry, "repositories": repos}, output, repos)
        return
    snaps = Cache(cache_dir).snapshots()
    rows = [f"{'DIGEST':<19} {'SIZE':>11}  {'LAST USED':<19} PIN  REFS"]
    for s in sorted(snaps, key=lambda s: -s.last_used):
        used = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.last_used))
        rows.append(f"{s.digest[:19]} {human_bytes(s.size):>11}  {used:<19} "
                    f"{'yes' if s.pinned else 'no ':<4} {', '.join(s.refs)}")
    _emit({"cache": cache_dir, "snapshots": snaps}, output, rows)


@model.command()
@click.argument("repository")
@_PLAIN
@_OUTPUT
def tags(repository: str, plain_http: bool | None, output: str) -> None:
    """List the tags (versions) of REPOSITORY (HOST/REPO); signature tags are hidden.

    \b
    Examples (a registry at 127.0.0.1:5000):
      aiplat model tags 127.0.0.1:5000/models/mini
      aiplat model tags 127.0.0.1:5000/models/mini -o json
    """
    r = parse_reference(repository)
    with _client(r.registry, plain_http) as client:
        all_tags = client.tags(r.repository)
    versions = [t for t in all_tags if not t.endswith(".sig")]
    _emit({"repository": r.name, "tags": versions}, output, versions)


@model.command()
@click.argument("ref")
@_PLAIN
@_OUTPUT
def inspect(ref: str, plain_http: bool | None, output: str) -> None:
    """Show REF's digest, config and layers, and whether it carries signatures.

    \b
    Examples (a registry at 127.0.0.1:5000):
      aiplat model inspect 127.0.0.1:5000/models/mini:1
      aiplat model inspect 127.0.0.1:5000/models/mini:1 -o json
    """
    from aiplat.artifacts.signatures import find_signatures

    r = parse_reference(ref)
    with _client(r.registry, plain_http) as client:
        body, digest, media = client.get_manifest(r.repository, r.identifier)
        m = Manifest.from_bytes(body, str(r))
        raw = client.get_blob_bytes(r.repository, m.config.digest)
        sigs = len(find_signatures(client, r.repository, digest))
    try:
        config = limits.peer_json(raw)
    except ValueError as e:
        config = {"unreadable": f"the config blob {m.config.digest} is not JSON ({e})"}
    layers = [{"mediaType": x.media_type, "digest": x.digest, "size": x.size,
               "path": x.filepath or x.annotations.get("org.opencontainers.image.title", "")}
              for x in m.layers]
    data = {"reference": str(r.with_digest(digest)), "mediaType": media,
            "artifactType": m.artifact_type, "modelpack": m.is_model,
            "totalBytes": m.total_size, "config": config, "layers": layers,
            "signatures": sigs}
    table = [f"{r.with_digest(digest)}",
             f"  artifactType {_shown(m.artifact_type)}"
             f" ({'ModelPack' if m.is_model else 'not ModelPack'})",
             f"  {len(m.layers)} layers, {human_bytes(m.total_size)}, {sigs} signature(s)"]
    table += [f"  {x['size']:>14,}  {str(x['digest'])[:19]}  {_shown(x['path'])}"
              f"  ({_shown(x['mediaType'])})" for x in layers]
    _emit(data, output, table)


@model.command()
@_CACHE
@click.option("--no-quarantine", is_flag=True, help="only report; move nothing")
@_OUTPUT
def verify(cache_dir: str, no_quarantine: bool, output: str) -> None:
    """Re-hash every cached blob; quarantine corrupt ones (exit 1 when any).

    \b
    Examples:
      aiplat model verify
      aiplat model verify --no-quarantine -o json
    """
    t0 = time.perf_counter()
    res = Cache(cache_dir).verify(quarantine=not no_quarantine)
    s = time.perf_counter() - t0
    _emit(res, output, [
        f"checked {res.checked} blobs ({human_bytes(res.bytes)}) in {s:.2f} s:"
        f" {'clean' if res.clean else 'NOT clean'}",
        *(f"  the cache folder {f} was writable by others: its contents are not"
          " trusted (tightened now)" for f in res.untrusted_folders),
        *(f"  corrupt blob {d}" for d in res.corrupt),
        *(f"  modified snapshot {d}" for d in res.modified_snapshots),
        *(f"  quarantined {p}" for p in res.quarantined),
        *(f"  removed snapshot {d} (pull again)" for d in res.removed_snapshots),
    ])
    if not res.clean:
        sys.exit(1)


@model.command()
@_CACHE
@click.option("--max-size", help="also evict least recently used unpinned snapshots to this size")
@_OUTPUT
def gc(cache_dir: str, max_size: str | None, output: str) -> None:
    """Remove blobs no snapshot uses and stale partial downloads (waits for running pulls).

    \b
    Examples:
      aiplat model gc
      aiplat model gc --max-size 500G -o json
    """
    cache = Cache(cache_dir)
    evicted = cache.evict(parse_size(max_size, "--max-size"), blocking=True) if max_size else None
    res = cache.gc()
    removed = (evicted.removed_snapshots if evicted else [])
    freed = res.freed_bytes + (evicted.freed_bytes if evicted else 0)
    blobs = res.removed_blobs + (evicted.removed_blobs if evicted else [])
    _emit({"evictedSnapshots": removed, "removedBlobs": blobs,
           "removedPartials": res.removed_partials, "freedBytes": freed}, output,
          [f"evicted {len(removed)} snapshots, removed {len(blobs)} blobs and"
           f" {len(res.removed_partials)} partial downloads, freed {human_bytes(freed)}"])


@model.command()
@click.argument("ref", required=False)
@click.option("--key", type=Existing("a private key (PEM or cosign.key)", dir_okay=False),
              help="private key to sign REF with: PEM (ECDSA, Ed25519, RSA), or a cosign.key"
                   " (password in COSIGN_PASSWORD)")
@click.option("--generate-key", type=click.Path(dir_okay=False),
              help="write a new ECDSA P-256 private key here (0600) and its public key to"
                   " FILE.pub (what `cosign verify --key` reads)")
@_PLAIN
@_OUTPUT
def sign(ref: str | None, key: str | None, generate_key: str | None,
         plain_http: bool | None, output: str) -> None:
    """Sign REF's manifest digest in cosign's format, or generate a key pair.

    The signature is cosign's simple-signing payload in a manifest that refers to REF's
    (OCI 1.1 referrers, where the registry serves them; else the tag sha256-<hex>.sig), so
    `cosign verify --key FILE.pub` checks it; `pull --policy` checks cosign's signatures too.

    A TrustPolicy file for `pull --policy` looks like:

    \b
      apiVersion: aiplat/v1alpha1
      kind: TrustPolicy
      keys:
        release: {publicKey: "-----BEGIN PUBLIC KEY-----\\n...\\n-----END PUBLIC KEY-----\\n"}
      rules:                               # first match wins; no match is refused
        - repositories: ["registry.example:5000/prod/*"]
          require: signed
          keys: [release]
        - repositories: ["registry.example:5000/scratch/*"]
          require: none

    \b
    Examples:
      aiplat model sign --generate-key release.key

    \b
    Examples (a registry at 127.0.0.1:5000):
      aiplat model sign --generate-key release.key
      aiplat model sign 127.0.0.1:5000/models/mini:1 --key release.key
      aiplat model sign 127.0.0.1:5000/models/mini:1 --key release.key -o json
    """
    from aiplat.artifacts.signing import generate_key as new_key
    from aiplat.artifacts.signing import key_id, private_pem, public_pem

    data: dict[str, dict[str, str]] = {}
    if generate_key:
        from aiplat.fsutil import atomic_write

        if Path(generate_key).exists():
            raise ArtifactInputError(f"{generate_key} exists; choose a new file for the key")
        new = new_key()
        try:
            atomic_write(generate_key, private_pem(new), mode=0o600)
            try:
                atomic_write(generate_key + ".pub", public_pem(new.public_key()))
            except BaseException:
                Path(generate_key).unlink(missing_ok=True)  # a pair or nothing
                raise
        except OSError as e:
            raise storage_error(e, "cannot write the key pair", generate_key,
                                fix="free space there or choose another path; nothing was"
                                    " written") from None
        data["key"] = {"keyId": key_id(new.public_key()), "privateKey": generate_key,
                       "publicKey": f"{generate_key}.pub"}
        if output == "table":
            click.echo(f"{key_id(new.public_key())} {generate_key} {generate_key}.pub")
        if not ref:
            if output != "table":
                print_data(output, data)
            return
        key = generate_key
    if not ref or not key:
        raise ArtifactInputError("give REF and --key FILE (or --generate-key FILE)")
    from aiplat.artifacts.signatures import sign_reference

    r = parse_reference(ref)
    private = _load_key(key)
    with _client(r.registry, plain_http) as client:
        signed = sign_reference(client, r, private)
    # The digest hashed from the manifest's bytes: what the signature covers.
    if output != "table":
        data["signed"] = {"reference": str(r), "digest": signed.digest,
                          "keyId": key_id(private.public_key()), "signature": signed.signature}
        print_data(output, data)
        return
    click.echo(f"signed {r.name}@{signed.digest} ({r}) with {key_id(private.public_key())}:"
               f" signature {signed.signature}")


@model.command()
@click.argument("ref")
@click.option("--workdir", type=click.Path(file_okay=False),
              help="scratch directory on the cache's file system (default: a temp dir)")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 64))
@click.option("--rounds", default=2, show_default=True, type=click.IntRange(1, 10))
@click.option("--oras/--no-oras", "with_oras", default=True,
              help="also time the oras-py client (when installed)")
@_PLAIN
@_OUTPUT
def bench(*, ref: str, workdir: str | None, concurrency: int, rounds: int, with_oras: bool,
          plain_http: bool | None, output: str) -> None:
    """Time cold pull, warm pull and load of REF against same-run ceilings (GB/s).

    \b
    Examples (a registry at 127.0.0.1:5000):
      aiplat model bench 127.0.0.1:5000/models/mini:1 --rounds 1
    """
    import shutil
    import tempfile

    from aiplat.artifacts.bench import format_report, run_bench, verdicts

    r = parse_reference(ref)
    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="aiplat-bench-"))
    try:
        with _client(r.registry, plain_http, concurrency) as client:
            report = run_bench(client, r, work / "run", concurrency=concurrency, rounds=rounds,
                               with_oras=with_oras, log=info)
    finally:
        shutil.rmtree(work / "run" if workdir else work, ignore_errors=True)
    data = {"reference": report.reference, "totalBytes": report.total_bytes,
            "concurrency": report.concurrency,
            "figures": {k: {"name": f.name, "kind": f.kind, "bytes": f.bytes,
                            "seconds": round(f.seconds, 4), "GBps": round(f.gbps, 3),
                            "note": f.note} for k, f in report.figures.items()},
            "verdicts": [{"check": t, "value": v, "target": m, "pass": ok}
                         for t, v, m, ok in verdicts(report)]}
    _emit(data, output, format_report(report))


from aiplat.cli.model_policy import policy as _policy  # noqa: E402 (its own module)

model.add_command(_policy)
