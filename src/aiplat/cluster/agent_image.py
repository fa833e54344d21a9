"""The node-agent container image: Debian packages plus the aiplat wheel, imported with Podman.

No registry and no Dockerfile: the image is a root file system made here and handed to
``podman import`` with its configuration (``--change``), in three cached steps:

1. **base**: ``debootstrap --variant=minbase`` of Debian (the suite whose ``python3`` the
   wheel targets) with ``python3``, then pruned of what a runtime image never reads (docs
   but their copyright files, man pages, translations, apt lists and caches, logs). Cached as
   ``base-<recipe key>.tar``: it changes only with the recipe.
2. **rootfs**: the base plus the agent's Python distributions, installed by the pip that
   runs aiplat into ``/usr/local/lib/python3.X/dist-packages`` (on Debian's ``sys.path``)
   for the image's interpreter and glibc (``--platform``/``--python-version``: binary wheels
   only), then the aiplat wheel itself with ``--no-deps``. Only the distributions the agent
   imports go in (``AGENT_DISTRIBUTIONS``; a unit test checks that list against what the
   agent really loads): the CRD schemas (kubernetes-validate), signing and CEL stay out.
   Cached as ``<key>/rootfs.tar`` with a manifest, keyed by the wheel's content hash and the
   recipe; the newest ``KEEP_ROOTFS`` are kept.
3. **import**: ``podman import`` with ENTRYPOINT ``aiplat node agent``, the non-root user
   the DaemonSet runs as, and a label carrying the key; skipped when the tag already holds
   the image of that key. ``--out`` saves it as an archive (``podman save``) for nodes that
   load images (``ctr images import``, ``kind load image-archive``).

Needs root (debootstrap, chroot-free but owner-preserving tar), debootstrap, tar and
Podman; ``missing()`` says what is absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from email.parser import Parser
from pathlib import Path

from aiplat import __version__
from aiplat.errors import InputError
from aiplat.kube.render_cluster import AGENT_IMAGE

Progress = Callable[[str], None]

# Bump when the steps below change what goes into an image: it is part of every cache key.
RECIPE_VERSION = 1
SUITE = "bookworm"  # python3 3.11, glibc 2.36: the interpreter aiplat supports
GLIBC = "2_36"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3",)
# What the agent imports (``aiplat node agent``, with and without a cluster client); pip
# adds their own requirements. Each must be a requirement of the wheel (checked).
AGENT_DISTRIBUTIONS = ("pydantic", "click", "PyYAML", "rich", "lightkube")
KEEP_ROOTFS = 3  # cached root file systems kept (the newest)
USER = "65534:65534"  # nobody, as the rendered DaemonSet's runAsUser
KEY_LABEL = "io.aiplat.image-key"
MANIFEST_PATH = "usr/share/aiplat/image-manifest.json"
# Pruned from the base: (directory, names kept inside it). Paths relative to the root.
PRUNE = (
    ("usr/share/doc", ("copyright",)),
    ("usr/share/man", ()),
    ("usr/share/info", ()),
    ("usr/share/locale", ()),
    ("usr/share/lintian", ()),
    ("usr/share/linda", ()),
    ("var/lib/apt/lists", ()),
    ("var/cache/apt", ()),
    ("var/cache/debconf", ("config.dat", "templates.dat", "passwords.dat")),
    ("var/log", ()),
    ("tmp", ()),
    ("var/tmp", ()),
    ("debootstrap", ()),
)


@dataclass(frozen=True)
class Recipe:
    suite: str = SUITE
    mirror: str = DEFAULT_MIRROR
    packages: tuple[str, ...] = PACKAGES
    arch: str = field(default_factory=lambda: debian_arch(platform.machine()))

    def key(self) -> str:
        text = json.dumps([RECIPE_VERSION, self.suite, self.mirror, self.packages, self.arch])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class BuildReport:
    tag: str
    key: str
    image_id: str
    size_bytes: int
    rootfs_bytes: int
    seconds: float
    built: list[str]
    cache: str
    archive: str | None
    manifest: dict[str, object]

    def as_data(self) -> dict[str, object]:
        return asdict(self)


def debian_arch(machine: str) -> str:
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if arch is None:
        raise InputError(f"no Debian architecture for machine {machine!r} (fix: build on "
                         "x86_64 or aarch64)")
    return arch


def pip_platforms(arch: str) -> list[str]:
    """The manylinux tags the image's glibc runs, newest first: pip expands only the legacy
    manylinux2014/2010 names itself, so each ``manylinux_2_N`` is listed."""
    machine = "x86_64" if arch == "amd64" else "aarch64"
    newest = int(GLIBC.split("_")[1])
    return ([f"manylinux_2_{n}_{machine}" for n in range(newest, 4, -1)]
            + [f"manylinux{tag}_{machine}" for tag in ("2014", "2010", "1")])


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aiplat" / "agent-image"


def missing() -> str | None:
    """Why an image cannot be built here, or None."""
    for tool, pkg in (("debootstrap", "debootstrap"), ("podman", "podman"), ("tar", "tar")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (fix: apt-get install {pkg})"
    if os.geteuid() != 0:
        return "debootstrap and owner-preserving tar need root (fix: run as root)"
    return None


# ------------------------------------------------------------------------- pure decisions


def wheel_key(wheel: Path, recipe: Recipe) -> str:
    """Content hash of the wheel (names and bytes of its entries, not the zip's dates) and
    the recipe: a rebuilt wheel of the same tree reuses the cached image."""
    h = hashlib.sha256(recipe.key().encode())
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            h.update(name.encode() + b"\0" + hashlib.sha256(z.read(name)).digest())
    return h.hexdigest()[:16]


def wheel_requirements(wheel: Path) -> dict[str, str]:
    """The wheel's unconditional requirements, name (normalised) -> requirement text."""
    with zipfile.ZipFile(wheel) as z:
        meta = next((n for n in z.namelist()
                     if n.endswith(".dist-info/METADATA") and n.count("/") == 1), None)
        if meta is None:
            raise InputError(f"{wheel}: not a wheel (no .dist-info/METADATA)")
        msg = Parser().parsestr(z.read(meta).decode())
    out = {}
    for req in msg.get_all("Requires-Dist") or []:
        if ";" in req:  # extras and markers: not the agent's
            continue
        name = re.split(r"[\s<>=!~\[(]", req, maxsplit=1)[0]
        out[normalise(name)] = req.strip()
    return out


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def agent_requirements(wheel: Path) -> list[str]:
    reqs = wheel_requirements(wheel)
    lost = [d for d in AGENT_DISTRIBUTIONS if normalise(d) not in reqs]
    if lost:
        raise InputError(f"{wheel}: the agent needs {', '.join(lost)} but the wheel does not "
                         "require it (fix: AGENT_DISTRIBUTIONS in aiplat/cluster/agent_image.py)")
    return [reqs[normalise(d)] for d in AGENT_DISTRIBUTIONS]


def import_changes(tag: str, key: str) -> list[str]:
    """The image configuration, as ``podman import --change`` instructions."""
    entry = json.dumps(["/usr/local/bin/aiplat", "node", "agent"])
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
    labels = {"org.opencontainers.image.title": "aiplat-node-agent",
              "org.opencontainers.image.version": __version__,
              "org.opencontainers.image.ref.name": tag, KEY_LABEL: key}
    return ([f"ENTRYPOINT {entry}", "CMD []", f"USER {USER}", "WORKDIR /"]
            + [f"ENV {k}={v}" for k, v in env.items()]
            + [f"LABEL {k}={v}" for k, v in labels.items()])


def launcher() -> str:
    """/usr/local/bin/aiplat: the console script pip --target does not write for the image."""
    return ("#!/usr/bin/python3 -s\n"
            "import sys\n\nfrom aiplat.cli.main import main\n\nsys.exit(main())\n")


def dpkg_packages(status_text: str) -> dict[str, str]:
    """Installed packages from /var/lib/dpkg/status: name -> version."""
    out = {}
    for stanza in status_text.split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", stanza, re.M))
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            out[fields["Package"]] = fields.get("Version", "")
    return dict(sorted(out.items()))


def python_distributions(site: Path) -> dict[str, str]:
    out = {}
    for meta in site.glob("*.dist-info/METADATA"):
        msg = Parser().parsestr(meta.read_text(errors="replace"), headersonly=True)
        out[msg["Name"]] = msg["Version"]
    return dict(sorted(out.items(), key=lambda kv: kv[0].lower()))


# --------------------------------------------------------------------------- the steps


def _run(args: list[str], what: str, *, env: dict[str, str] | None = None,
         cwd: Path | None = None, timeout: float = 1800) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InputError(f"{what}: {e}") from e
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-2000:]
        raise InputError(f"{what} failed (exit {done.returncode}): {tail}")
    return done.stdout


def find_source() -> Path:
    """The checkout this aiplat runs from (src/aiplat/../..), if it is one."""
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file() and (root / "src" / "aiplat").is_dir():
        return root
    raise InputError("no aiplat source checkout next to this installation (fix: --source "
                     "DIR of a checkout, or --wheel FILE of a built aiplat wheel)")


def build_wheel(source: Path, dest: Path) -> Path:
    """``pip wheel --no-deps`` of a copy of the tree's build inputs, so nothing is written
    into the checkout; GIT_DIR lets setup.py still record the commit."""
    if not (source / "pyproject.toml").is_file():
        raise InputError(f"{source}: no pyproject.toml (fix: --source DIR of an aiplat checkout)")
    tree = dest / "tree"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(source / "src", tree / "src", ignore=skip)
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE", "MANIFEST.in"):
        if (source / name).is_file():
            shutil.copy2(source / name, tree / name)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if (source / ".git").exists():
        env["GIT_DIR"] = str(source / ".git")
    _run([_python(), "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dest), str(tree)],
         f"pip wheel {source}", env=env)
    wheels = sorted(dest.glob("aiplat-*.whl"))
    if not wheels:
        raise InputError(f"pip wheel {source} wrote no aiplat wheel")
    return wheels[0]


def _python() -> str:
    import sys

    return sys.executable


def prune(root: Path) -> None:
    for rel, keep in PRUNE:
        top = root / rel
        if not top.is_dir():
            continue
        for p in sorted(top.rglob("*"), key=lambda q: -len(q.parts)):
            if p.is_symlink() or p.is_file():
                if p.name not in keep:
                    p.unlink()
            elif p.is_dir() and not any(p.iterdir()):
                p.rmdir()


def _tar(root: Path, out: Path) -> None:
    tmp = out.with_suffix(".tmp")
    _run(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-cf", str(tmp), "."],
         f"tar {root}")
    tmp.replace(out)


def base_rootfs(recipe: Recipe, cache: Path, progress: Progress) -> Path:
    out = cache / f"base-{recipe.key()}.tar"
    if out.is_file():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="base-") as tmp:
        root = Path(tmp) / "root"
        progress(f"debootstrap {recipe.suite} ({recipe.arch}, {', '.join(recipe.packages)})")
        _run(["debootstrap", "--variant=minbase", f"--arch={recipe.arch}",
              f"--include={','.join(recipe.packages)}", recipe.suite, str(root),
              recipe.mirror], f"debootstrap {recipe.suite} from {recipe.mirror}")
        prune(root)
        _tar(root, out)
    return out


def _python_site(root: Path) -> tuple[str, Path]:
    found = sorted(root.glob("usr/lib/python3.[0-9]*/os.py"))
    if not found:
        raise InputError(f"{root}: the base has no python3 (fix: keep python3 in PACKAGES)")
    version = found[-1].parent.name.removeprefix("python")
    return version, root / "usr/local/lib" / f"python{version}" / "dist-packages"


def install_python(root: Path, wheel: Path, recipe: Recipe, progress: Progress) -> Path:
    version, site = _python_site(root)
    site.mkdir(parents=True, exist_ok=True)
    pip = [_python(), "-m", "pip", "install", "-q", "--no-warn-script-location",
           "--disable-pip-version-check", "--target", str(site), "--python-version", version,
           *[a for p in pip_platforms(recipe.arch) for a in ("--platform", p)],
           "--only-binary=:all:"]
    reqs = agent_requirements(wheel)
    progress(f"pip install {', '.join(reqs)} for python {version}")
    _run([*pip, *reqs], "pip install (the agent's requirements)")
    _run([*pip, "--no-deps", str(wheel)], f"pip install {wheel.name}")
    shutil.rmtree(site / "bin", ignore_errors=True)
    script = root / "usr/local/bin/aiplat"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(launcher())
    script.chmod(0o755)
    return site


def make_rootfs(wheel: Path, recipe: Recipe, key: str, cache: Path,
                progress: Progress) -> tuple[Path, dict[str, object]]:
    """The image's root file system as a tar, and its manifest (cached by ``key``)."""
    out = cache / key / "rootfs.tar"
    manifest_file = out.with_name("manifest.json")
    if out.is_file() and manifest_file.is_file():
        return out, json.loads(manifest_file.read_text())
    base = base_rootfs(recipe, cache, progress)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix="rootfs-") as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        _run(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-xf", str(base)],
             f"tar -x {base}")
        site = install_python(root, wheel, recipe, progress)
        manifest = _manifest(root, site, recipe, key)
        (root / MANIFEST_PATH).parent.mkdir(parents=True, exist_ok=True)
        (root / MANIFEST_PATH).write_text(json.dumps(manifest, indent=2) + "\n")
        _tar(root, out)
    manifest_file.write_text(json.dumps(manifest, indent=2) + "\n")
    prune_cache(cache, keep=out.parent)
    return out, manifest


def prune_cache(cache: Path, keep: Path, entries: int = KEEP_ROOTFS) -> list[Path]:
    """Drop all but the newest ``entries`` root file systems: each commit's wheel is a new
    key (~240 MB each); the base tars stay. Returns what was removed."""
    dirs = sorted((d for d in cache.iterdir() if d.is_dir() and d != keep
                   and re.fullmatch(r"[0-9a-f]{16}", d.name)),
                  key=lambda d: d.stat().st_mtime, reverse=True)
    gone = dirs[max(entries - 1, 0):]
    for d in gone:
        shutil.rmtree(d, ignore_errors=True)
    return gone


def _du(paths: Iterable[Path]) -> int:
    total = 0
    for top in paths:
        for p in [top, *top.rglob("*")] if top.is_dir() else [top]:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
    return total


def _manifest(root: Path, site: Path, recipe: Recipe, key: str) -> dict[str, object]:
    pydists = python_distributions(site)
    return {
        "key": key, "recipe": {"suite": recipe.suite, "arch": recipe.arch,
                               "mirror": recipe.mirror, "packages": list(recipe.packages)},
        "aiplat": pydists.get("aiplat"),
        "debian": dpkg_packages((root / "var/lib/dpkg/status").read_text()),
        "python": pydists,
        "bytes": {"total": _du([root]), "python-distributions": _du([site]),
                  "debian": _du([root]) - _du([site])},
    }


def _podman(*args: str, what: str) -> str:
    return _run(["podman", *args], what)


def _image_key(tag: str) -> str | None:
    done = subprocess.run(["podman", "image", "inspect", "--format",
                           "{{index .Labels \"" + KEY_LABEL + "\"}}", tag],
                          capture_output=True, text=True, timeout=120, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def build_image(*, source: Path | None = None, wheel: Path | None = None,
                tag: str = AGENT_IMAGE, out: Path | None = None, cache: Path | None = None,
                recipe: Recipe | None = None, force: bool = False,
                progress: Progress = lambda _m: None) -> BuildReport:
    """Build (what the cache lacks), import as ``tag``, optionally save to ``out``."""
    reason = missing()
    if reason is not None:
        raise InputError(f"cannot build the node-agent image: {reason}")
    t0 = time.monotonic()
    recipe = recipe or Recipe()
    cache = cache or cache_root()
    built: list[str] = []
    with tempfile.TemporaryDirectory(prefix="aiplat-wheel-") as tmp:
        if wheel is None:
            progress("pip wheel --no-deps (aiplat)")
            wheel = build_wheel(source or find_source(), Path(tmp))
        elif not wheel.is_file():
            raise InputError(f"{wheel}: no such wheel (fix: pip wheel --no-deps DIR)")
        key = wheel_key(wheel, recipe)
        if force:
            shutil.rmtree(cache / key, ignore_errors=True)
            (cache / f"base-{recipe.key()}.tar").unlink(missing_ok=True)
        had_base = (cache / f"base-{recipe.key()}.tar").is_file()
        had_rootfs = (cache / key / "rootfs.tar").is_file()
        rootfs, manifest = make_rootfs(wheel, recipe, key, cache, progress)
        built += ([] if had_base else ["base"]) + ([] if had_rootfs else ["rootfs"])
    if force or _image_key(tag) != key:
        progress(f"podman import {tag}")
        changes = [a for c in import_changes(tag, key) for a in ("--change", c)]
        _podman("import", "--quiet", *changes, str(rootfs), tag, what=f"podman import {tag}")
        built.append("image")
    info = json.loads(_podman("image", "inspect", tag, what=f"podman image inspect {tag}"))[0]
    if out is not None:
        progress(f"podman save {tag} -> {out}")
        tmp_out = out.with_name(out.name + ".tmp")
        tmp_out.unlink(missing_ok=True)
        _podman("save", "--quiet", "--format", "docker-archive", "-o", str(tmp_out), tag,
                what=f"podman save {tag}")
        tmp_out.replace(out)
    return BuildReport(tag=tag, key=key, image_id=info["Id"], size_bytes=int(info["Size"]),
                       rootfs_bytes=rootfs.stat().st_size,
                       seconds=round(time.monotonic() - t0, 1), built=built, cache=str(cache),
                       archive=str(out) if out else None, manifest=manifest)
