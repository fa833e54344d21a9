"""Property tests over the leaf commands (issue 22): whatever the bad input, a command prints
no traceback, exits 0, 1 or 2, and leaves no partial output.

Each test drives ``aiplat.cli.main.main`` in-process with generated inputs: files (missing,
directories, devices, FIFOs, empty, binary, invalid UTF-8, deep nesting, random JSON/YAML
shapes), numbers for options (huge, negative, NaN, infinity, junk) and mutated example
specs. The budgets are small and derandomized for CI (about a minute on 2 cores); set
``AIPLAT_FUZZ_EXAMPLES=N`` to multiply every budget by N for a longer hunt, e.g.
``AIPLAT_FUZZ_EXAMPLES=40 pytest tests/unit/test_bad_input_fuzz.py`` (about 10 minutes).

Covered: spec validate, plan, kube render|validate|lint|why-pending|apply, sim run|compare,
matrix check|show|diff, monitoring render, runbook, accept compare|report, node baseline
compare|record, node check|inventory|placement|burnin|agent, cdi generate|validate,
runtime config, sharing plan|config|compare, accounting report, lab fault add (dry run),
lab status|fault list (a lab state file), lab exercise --check (course results), diagnose
(option checks), model pull (a bad --policy; the registry a closed port), model
ls|verify|gc (a damaged --cache), kube apply|why-pending (a bad --kubeconfig; its server a
closed port). Not covered: commands that need root, a network, a registry or a running
lab/cluster to get past their inputs (lab up|down, lab cluster *, net check, model
push|sign|tags|inspect|bench, cdi verify, accept run, node prepare, lab exercise runs) and
long burn-ins. ``COMMANDS_COVERED`` counts the distinct leaf commands driven.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from aiplat.cli.main import main
from aiplat.spec import example_text

SCALE = max(1, int(os.environ.get("AIPLAT_FUZZ_EXAMPLES", "1")))
# A failing case with megabytes of generated input warns that its repr is large: report it.
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
HANG_SECONDS = 120
"""A command still running after this long is a hang (a FIFO read, a retry loop)."""
CASES: dict[str, int] = {}
"""Cases run per leaf command in this session (printed by the last test)."""


class Hang(BaseException):
    """Raised by the alarm in :func:`run`; a BaseException, so no command swallows it."""


def _alarm(_signum: int, _frame: object) -> None:
    raise Hang

# celpy raises the recursion limit the first time a CEL environment is made; hypothesis
# refuses a test that changes it, so make one before any test runs.
celpy.Environment()


def budget(n: int) -> settings:
    # The larger profile reports a failing case as found: shrinking one whose every try
    # runs a command costs minutes (the assertion message names the command and input).
    phases = [p for p in Phase if SCALE == 1 or p is not Phase.shrink]
    return settings(max_examples=n * SCALE, deadline=None, derandomize=SCALE == 1,
                    database=None, suppress_health_check=list(HealthCheck), phases=phases)


def _leaf(argv: list[str]) -> str:
    words = [a for a in argv[:3] if not a.startswith(("-", "/", "."))]
    groups = {"spec", "kube", "sim", "matrix", "monitoring", "accept", "node", "cdi", "runtime",
              "sharing", "accounting", "lab", "model", "baseline", "fault", "net"}
    leaf = [words[0]] if words else []
    for w in words[1:]:
        if leaf[-1] not in groups:
            break
        leaf.append(w)
    return " ".join(leaf)


def run(argv: list[str]) -> tuple[int, str]:
    """One command as the console script runs it: (exit code, stderr and stdout)."""
    CASES[_leaf(argv)] = CASES.get(_leaf(argv), 0) + 1
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | str | None = main(argv)
        except SystemExit as e:  # commands that exit 1 themselves
            code = e.code
        except Hang:
            code = "hang"
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    text = err.getvalue()
    assert "Traceback" not in text + out.getvalue(), f"{argv}: {text}"
    assert code in (0, 1, 2, None), f"{argv}: exit {code!r}: {text}"
    return int(code or 0), text + out.getvalue()


def leftovers(root: Path) -> list[str]:
    """Temporary files a write left behind."""
    return [str(p) for p in root.rglob("*") if p.name.endswith((".tmp", ".old"))
            and p.name.startswith(".")]


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="aiplat-fuzz-") as d:
        old = os.getcwd()
        os.chdir(d)
        try:
            yield Path(d)
        finally:
            os.chdir(old)


# ---------------------------------------------------------------------------- bad files

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def _deep(n: int, kind: str) -> str:
    if kind == "json-list":
        return "[" * n + "]" * n
    if kind == "json-map":
        return '{"a":' * n + "1" + "}" * n
    return "".join("  " * i + "a:\n" for i in range(n)) + "  " * n + "b: 1\n"


contents = st.one_of(
    st.binary(max_size=200),
    st.builds(lambda b: b"\xff\xfe" + b, st.binary(max_size=50)),  # not UTF-8
    st.builds(lambda n, k: _deep(n, k).encode(), st.integers(60, 3000),
              st.sampled_from(["json-list", "json-map", "yaml"])),
    st.builds(lambda v: json.dumps(v).encode(), json_values),
    st.builds(lambda v: yaml.safe_dump(v).encode(), json_values),
    st.just(b""),
    st.just(b"a: &a [*a]\n"),
    st.just(b"{\"kind\": \"List\", \"items\": 5}"),
    st.just(b"{\"a\": NaN}"),
)
special = st.sampled_from(["missing", "directory", "/dev/zero", "fifo", "/proc/self/status"])

FILE_COMMANDS = [
    "spec validate {f}",
    "plan {f} -d {out}",
    "kube render {f} -d {out}",
    "sim run {f} --months 0.05",
    "matrix check {f}",
    "maintain plan {f} --pool h100 --change driver=580.95.05",
    "monitoring render {f} -d {out}",
    "runbook {f} -d {out}",
    "node baseline compare {f}",
    "node check --baseline {f} --root {root} --only gpu-count",
    "node check --image-config {f} --root {root} --only gpu-count",
    "node check --kernel-log {f} --root {root} --only gpu-count",
    "node check {f} --root {root} --only gpu-count",
    "node inventory --from smi-xml={f} --root {root}",
    "node inventory --from lstopo={f} --root {root}",
    "node placement --from topo={f} --root {root}",
    "cdi generate --inventory {f} --root {root}",
    "cdi validate {f} --no-host",
    "runtime config containerd --current {f} --version 2.0.0",
    "runtime config crio --current {f} --version 1.30.0",
    "accounting report {f}",
    "accounting report {f} --format pods",
    "kube lint {tree} --inventory {f}",
    "kube validate {fdir}",
    "kube validate {tree} --crd-dir {fdir}",
    "kube why-pending x --snapshot {fdir}",
    "sim run --kueue {f} --months 0.05",
    "accept compare {f} {f}",
    "accept report {f} -w {out}",
    "sharing plan {f} --demand 1g.10gb=1",
    "matrix diff {f} {f}",
    "model pull 127.0.0.1:{port}/m/x:1 --policy {f} --cache {out}/cache -q",
    "kube apply {small} --kubeconfig {f}",
    "kube why-pending x --kubeconfig {f}",
    "sim replay {f}",
    "sim replay {fdir}",
    "sim replay --kubeconfig {f}",
    "sharing compare {f}",
    "node prepare {f} --pool h100 -w {out}/prepare.sh",
    "model sign 127.0.0.1:{port}/m/x:1 --key {f}",
    "model push {fdir} 127.0.0.1:{port}/m/x:1 -q",
]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


PORT = _closed_port()
"""Nothing listens here: a registry or API server that refuses at once."""


def _materialise(root: Path, content: bytes | None, kind: str,
                 name: str) -> tuple[Path, Path]:
    """(the bad file, a directory holding it) for one example: ``content`` when given,
    else the ``kind`` of special path."""
    fdir = root / "in"
    fdir.mkdir()
    f = fdir / name
    if content is not None:
        f.write_bytes(content)
        for alias in ("pods.json", "workloads.json"):  # what the snapshot reader looks for
            (fdir / alias).write_bytes(content)
    elif kind == "directory":
        f.mkdir()
    elif kind == "fifo":
        os.mkfifo(f)
    elif kind != "missing":
        f = Path(kind)
    return f, fdir


@given(cmd=st.sampled_from(FILE_COMMANDS),
       content=st.none() | contents, kind=special,
       name=st.sampled_from(["x.json", "x.yaml", "x.toml", "x"]))
@budget(120)
def test_file_inputs_never_crash(cmd: str, content: bytes | None, kind: str,
                                 name: str) -> None:
    with workdir() as root:
        f, fdir = _materialise(root, content, kind, name)
        (root / "root").mkdir()
        tree = root / "tree"
        small = root / "small"
        argv = cmd.format(f=f, out=root / "out", root=root / "root", tree=tree,
                          fdir=fdir, port=PORT, small=small).split()
        if "{tree}" in cmd:
            run(["kube", "render", "-d", str(tree)])
        if "{small}" in cmd:
            small.mkdir()
            (small / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\n"
                                           "metadata: {name: fuzz}\n")
        before = {p for p in root.rglob("*") if "out" in p.parts}
        code, err = run(argv)
        assert not leftovers(root), leftovers(root)
        if code == 2:
            # an error on stderr (why-pending's NotFound is its data on stdout, exit 2)
            assert err.strip(), f"{argv}: exit 2 without a word"
            after = {p for p in root.rglob("*") if "out" in p.parts}
            assert after == before, f"{argv} wrote output and failed: {after - before}"


# ---------------------------------------------------------------------------- numbers

numbers = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1e308", "-1e308", "1e-300", "0", "-1", "-0",
                     "junk", "", "10^30", "0x10", "1_000"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**30), 10**30).map(str),
)

NUMBER_OPTIONS = [
    "node baseline record -w {out}/b.json --runs 1 --metric cpu.sha256 --scale {n}",
    "node baseline record -w {out}/b.json --scale 0.01 --metric cpu.sha256 --runs {n}",
    "node burnin --duration {n}",
    "node burnin --duration 1s --workers {n}",
    "node burnin --duration 1s --temp-limit {n}",
    "node agent --once --dry-run --root {out} --interval {n}",
    "sim run --months {n}",
    "sim run --months 0.05 --seed {n}",
    "sim run --months 0.05 --mtbf {n}",
    "sim compare --months {n}",
    "sharing plan --gpu H100-SXM-80GB --demand 1g.10gb={n}",
    "sharing plan --gpu H100-SXM-80GB --demand 1g.10gb=1 --gpus {n}",
    "sharing config mps --target dra --memory-gb {n}",
    "sharing config time-slicing --replicas {n}",
    "plan -d {out} --k8s-version {n}",
    "kube validate {out} --k8s-version {n}",
    "diagnose --prometheus {n}",
    "lab fault add loss --dry-run --value {n}",
]


@given(cmd=st.sampled_from(NUMBER_OPTIONS), n=numbers)
@budget(60)
def test_number_options_never_crash_or_pass_falsely(cmd: str, n: str) -> None:
    if cmd.startswith("node burnin --duration {n}"):
        try:  # a valid long duration would really run: only refused ones are driven
            seconds = float(n.rstrip("smh") or "x")
        except ValueError:
            seconds = float("nan")
        if seconds >= 1:
            return
    with workdir() as root:
        (root / "out").mkdir()
        code, err = run([a.format(n=n, out=root / "out") for a in cmd.split()])
        assert not leftovers(root)
        if "burnin" in cmd and code == 0:
            assert " 0 iterations" not in err, f"{cmd} {n}: a burn-in without work passed"


# ---------------------------------------------------------------------------- mutated specs

EXAMPLE: dict[str, Any] = yaml.safe_load(example_text())


def _paths(node: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


PATHS = _paths(EXAMPLE)
weird = st.one_of(
    st.sampled_from([0, -1, 1, 10**300, 10**15, 1e308, 1e-300, -1e308, 2**63, True, False,
                     None, "", "x" * 70, "V0.19.2", "NaN", [], {}, [1], {"a": 1}]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(),
    st.text(max_size=10),
)


# Most weird values stop at validation; scaling a number the example has (keeping its type)
# gets past it, into sizing, rendering and the simulator.
scaled = st.sampled_from([0, -1, 1e-9, 1e-3, 0.5, 3, 10, 1e3, 1e6, 1e12]).map(
    lambda k: ("scale", k))


def _mutate(value: Any, new: Any) -> Any:
    if isinstance(new, tuple) and new[:1] == ("scale",):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value
        out = value * new[1]
        return int(out) if isinstance(value, int) and abs(out) < 2**63 else out
    return new



@given(mutations=st.lists(st.tuples(st.sampled_from(PATHS), weird | scaled | scaled),
                          min_size=1, max_size=3),
       cmd=st.sampled_from(["plan {f} -o {out}", "sim run {f} --months 0.1",
                            "kube render {f} -d {out}", "matrix show {f} -w {out}",
                            "runbook {f} -d {out}", "monitoring render {f} -d {out}"]))
@budget(30)
def test_mutated_specs_never_crash(mutations: list[tuple[tuple[Any, ...], Any]],
                                   cmd: str) -> None:
    doc = copy.deepcopy(EXAMPLE)
    for path, value in mutations:
        cur: Any = doc
        try:
            for part in path[:-1]:
                cur = cur[part]
            cur[path[-1]] = _mutate(cur[path[-1]], value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed the place
    with workdir() as root:
        spec = root / "p.yaml"
        spec.write_text(yaml.safe_dump(doc, sort_keys=False))
        code, _ = run(cmd.format(f=spec, out=root / "out").split())
        assert not leftovers(root)
        if code == 2:
            assert not (root / "out").exists() or not any((root / "out").rglob("*"))


# ---------------------------------------------------------------------------- live inputs

KUBECONFIG: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Config", "current-context": "x",
    "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{PORT}",
                                           "certificate-authority-data": "bm90IGEgY2VydA=="}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "n"}}],
    "users": [{"name": "u", "user": {"token": "t", "client-certificate-data": "eA=="}}],
}
KUBECONFIG_PATHS = _paths(KUBECONFIG)


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    cur = doc
    try:
        for part in path[:-1]:
            cur = cur[part]
        if value is _DELETE:
            del cur[path[-1]]
        else:
            cur[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass  # an earlier change removed the place


_DELETE = object()


@given(changes=st.lists(st.tuples(st.sampled_from(KUBECONFIG_PATHS),
                                  weird | st.just(_DELETE) | st.sampled_from(
                                      ["::::", "ftp://h", "http://", "https://127.0.0.1:0",
                                       f"http://127.0.0.1:{PORT}", "!!notbase64", ""])),
                        min_size=1, max_size=3),
       cmd=st.sampled_from(["kube apply {small} --kubeconfig {f}",
                            "kube apply {small} --kubeconfig {f} --context y",
                            "kube why-pending x --kubeconfig {f}"]))
@budget(30)
def test_mutated_kubeconfigs_never_crash(changes: list[tuple[tuple[Any, ...], Any]],
                                         cmd: str) -> None:
    """Kubeconfigs one to three edits away from a valid one (its server a closed port):
    every answer is a clear error, never a traceback, a hang or a refusal per object."""
    doc = copy.deepcopy(KUBECONFIG)
    for path, value in changes:
        _set(doc, path, value)
    with workdir() as root:
        (root / "small").mkdir()
        (root / "small" / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\n"
                                                "metadata: {name: fuzz}\n")
        (root / "kc.yaml").write_text(yaml.safe_dump(doc))
        code, text = run(cmd.format(small=root / "small", f=root / "kc.yaml").split())
        assert code == 2 and text.startswith("error:"), f"{cmd} {doc}: exit {code}: {text}"


@functools.cache
def _pristine_cache() -> Path:
    """A model cache holding one pulled model (through the fake registry of the artifacts
    tests), made once per session."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from artifacts_fakes import FakeRegistry

    from aiplat.artifacts.cache import Cache
    from aiplat.artifacts.client import RegistryClient, RetryPolicy
    from aiplat.artifacts.modelpack import ModelInfo
    from aiplat.artifacts.package import package_dir
    from aiplat.artifacts.pull import pull
    from aiplat.artifacts.push import push_package
    from aiplat.artifacts.reference import parse_reference

    d = Path(tempfile.mkdtemp(prefix="aiplat-fuzz-cache-"))
    model = d / "model"
    model.mkdir()
    (model / "w.safetensors").write_bytes(os.urandom(4096))
    (model / "config.json").write_text("{}")
    client = RegistryClient("reg.test:5000", transport=FakeRegistry().transport,
                            retry=RetryPolicy(backoff=0))
    ref = parse_reference("reg.test:5000/m/a:v1")
    push_package(client, ref, package_dir(model, ModelInfo(name="a")))
    pull(client, Cache(d / "cache"), ref)
    return d / "cache"

damage = st.sampled_from(["bytes", "directory", "fifo", "dev-zero-link", "loop-link",
                          "delete", "empty"])


def _damage(target: Path, how: str, content: bytes) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.chmod(0o644) if not target.is_symlink() else None
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if how == "bytes":
        target.write_bytes(content)
    elif how == "empty":
        target.write_bytes(b"")
    elif how == "directory":
        target.mkdir()
    elif how == "fifo":
        os.mkfifo(target)
    elif how == "dev-zero-link":
        target.symlink_to("/dev/zero")
    elif how == "loop-link":
        target.symlink_to(target.name)


@given(pick=st.integers(0, 10**6), how=damage, content=contents,
       cmd=st.sampled_from(["model ls --cache {c}", "model verify --cache {c}",
                            "model verify --cache {c} --no-quarantine", "model gc --cache {c}",
                            "model gc --cache {c} --max-size 1"]))
@budget(40)
def test_damaged_caches_never_crash(pick: int, how: str, content: bytes, cmd: str) -> None:
    """A model cache with one thing damaged: any file or folder of it replaced by other
    bytes, a folder, a FIFO, a link to /dev/zero or to itself, or removed."""
    with workdir() as root:
        cache = root / "cache"
        subprocess.run(["cp", "-a", str(_pristine_cache()), str(cache)], check=True)  # links
        places = sorted(p for p in cache.rglob("*") if "locks" not in p.parts)
        _damage(places[pick % len(places)], how, content)
        run(cmd.format(c=cache).split())


@given(content=contents, kind=special,
       cmd=st.sampled_from(["lab status --prefix fz", "lab status --prefix fz -o env",
                            "lab fault list --prefix fz", "lab down --prefix fz",
                            "lab fault clear --all --prefix fz", "net check --prefix fz",
                            "diagnose --prefix fz"]))
@budget(20)
def test_bad_lab_state_files_never_crash(content: bytes, kind: str, cmd: str) -> None:
    with workdir() as root:
        state = root / "labs" / "fz" / "state.json"
        state.parent.mkdir(parents=True)
        if kind == "directory":
            state.mkdir()
        elif kind == "fifo":
            os.mkfifo(state)
        else:
            state.write_bytes(content)
        old = os.environ.get("AIPLAT_LAB_DIR")
        os.environ["AIPLAT_LAB_DIR"] = str(root / "labs")
        try:
            code, text = run(cmd.split())
        finally:
            if old is None:
                del os.environ["AIPLAT_LAB_DIR"]
            else:
                os.environ["AIPLAT_LAB_DIR"] = old
        assert code in (1, 2), f"{cmd}: a bad state file gave exit {code}: {text}"


@given(files=st.dictionaries(st.sampled_from([
    "ex1/plan/plan.json", "ex2/inventory.json", "ex2/check.json", "ex3/validate.json",
    "ex3/why-pending.json", "ex4/sim-fair.json", "ex5/lab.json", "ex5/pull-cold.json",
    "ex6/diagnose-fault.json", "ex7/baseline/acceptance.json", "ex7/compare.json"]),
    st.none() | contents, min_size=1, max_size=4), which=st.sampled_from(["all", "5", "7"]))
@budget(20)
def test_bad_course_results_never_crash(files: dict[str, bytes | None], which: str) -> None:
    """``lab exercise --check`` on results of any content (None: a FIFO in its place)."""
    with workdir() as root:
        for rel, content in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            if content is None:
                os.mkfifo(root / rel)
            else:
                (root / rel).write_bytes(content)
        code, text = run(["lab", "exercise", which, "--check", "--course", str(root)])
        assert code == 1 and "NOT done" in text, text


NO_INPUT = ["spec example", "spec schema", "sharing strategies", "catalog gpus", "version"]


def test_commands_without_input_run() -> None:
    for cmd in NO_INPUT:
        assert run(cmd.split())[0] == 0, cmd


COMMANDS_COVERED = sorted({_leaf(c.split()) for c in [
    *FILE_COMMANDS, *NUMBER_OPTIONS, *NO_INPUT, "plan", "sim run", "kube render",
    "matrix show", "runbook", "monitoring render", "kube apply", "kube why-pending",
    "model ls", "model verify", "model gc", "lab status", "lab fault list", "lab down",
    "lab fault clear", "net check", "diagnose", "lab exercise"]})


def test_zz_report_the_cases_run() -> None:
    """Runs last (pytest keeps file order): how many cases each leaf command got."""
    total = sum(CASES.values())
    print(f"\nfuzz: {len(CASES)} leaf commands driven ({len(COMMANDS_COVERED)} listed), "
          f"{total} command runs")
    for leaf, n in sorted(CASES.items()):
        print(f"  {n:6d}  {leaf}")
    assert total > 0
