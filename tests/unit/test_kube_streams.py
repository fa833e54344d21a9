"""Streams (issue #45): ``-`` for every spec and manifest input, and ``aiplat kube render -o
yaml`` (or ``-d -``) streaming the whole tree as one multi-document YAML, so ``aiplat kube
render SPEC -o yaml | kubectl apply -f -`` works. Bad input: exit 2, a clear error, nothing
written, no traceback. Run as a user runs them: the installed CLI, real pipes."""

from __future__ import annotations

import functools
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.errors import InputError
from aiplat.inputs import read_bytes, read_stdin
from aiplat.kube import render
from aiplat.kube.render import part_of
from aiplat.spec import EXAMPLE, example_text, parse_platform


@functools.cache
def counts() -> tuple[int, int]:
    """(every object the example renders, those streamed and applied by default: the
    examples are opt-in), counted from the renderer, which other tests hold to the golden
    tree."""
    r = render(parse_platform(example_text(), EXAMPLE, load_catalog()), load_catalog())
    return len(r.objects()), sum(len(objs) for path, objs in r.manifests.items()
                                 if part_of(path, {}) != "examples")


def run(cwd: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    cp = subprocess.run([sys.executable, "-m", "aiplat.cli.main", *args], cwd=cwd,
                        input=stdin, capture_output=True, timeout=300, check=False)
    assert b"Traceback" not in cp.stdout + cp.stderr, cp.stderr.decode()
    return cp


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """``aiplat kube render -o yaml`` of the example, run in an empty folder."""
    cwd = tmp_path_factory.mktemp("render")
    cp = run(cwd, "kube", "render", "-o", "yaml")
    assert cp.returncode == 0, cp.stderr.decode()
    return cwd, cp.stdout


def test_render_streams_the_tree_in_apply_order_and_writes_nothing(
        stream: tuple[Path, bytes]) -> None:
    cwd, out = stream
    assert list(cwd.iterdir()) == []  # no out/kube without an explicit -d
    docs = list(yaml.safe_load_all(out))
    assert len(docs) == counts()[1] < counts()[0]
    assert out.startswith(b"---\n# Source: cluster/")
    assert "JobSet" not in {d["kind"] for d in docs}  # the examples are opt-in
    # kubectl apply -f - creates each Namespace before what lives in it
    made = {d["metadata"]["name"]: i for i, d in enumerate(docs) if d["kind"] == "Namespace"}
    assert all(made[d["metadata"]["namespace"]] < i for i, d in enumerate(docs)
               if d["metadata"].get("namespace") in made)


def test_the_stream_piped_into_validate_and_lint_has_no_errors(
        stream: tuple[Path, bytes]) -> None:
    cwd, out = stream
    cp = run(cwd, "kube", "validate", "-", stdin=out)
    assert cp.returncode == 0, cp.stdout.decode()
    assert cp.stdout.decode().strip() == \
        f"Kubernetes 1.34: {counts()[1]} objects, 0 errors, 0 warnings"
    cp = run(cwd, "kube", "lint", "-", stdin=out)
    assert cp.returncode == 0 and f"{counts()[1]} objects, 0 errors" in cp.stdout.decode()


def test_spec_from_stdin_and_dash_d_make_no_folder_named_dash(
        tmp_path: Path, stream: tuple[Path, bytes]) -> None:
    spec = example_text().encode()
    cp = run(tmp_path, "kube", "render", "-", "-d", "-", stdin=spec)
    assert cp.returncode == 0, cp.stderr.decode()
    assert cp.stdout == stream[1]  # the same tree: spec on stdin, the example's text
    assert list(tmp_path.iterdir()) == []
    cp = run(tmp_path, "kube", "render", "-o", "json", "-d", "kube")
    listed = json.loads(cp.stdout)
    assert listed["kind"] == "List" and len(listed["items"]) == counts()[1]
    assert (tmp_path / "kube" / "kustomization.yaml").is_file()  # -d given: written too


def test_spec_validate_lint_and_plan_read_a_spec_on_stdin(tmp_path: Path) -> None:
    spec = example_text().encode()
    cp = run(tmp_path, "spec", "validate", "-", stdin=spec)
    assert cp.returncode == 0
    assert cp.stdout.decode() == "-: valid (2 pools, 72 GPUs, 3 tenants, 5 workloads)\n"
    cp = run(tmp_path, "kube", "lint", "-", stdin=spec)  # a spec: every object, in memory
    assert cp.returncode == 0 and f"{counts()[0]} objects, 0 errors" in cp.stdout.decode()
    cp = run(tmp_path, "plan", "-", "-d", "plan", "-o", "json", stdin=spec)
    assert cp.returncode == 0, cp.stderr.decode()
    assert json.loads(cp.stdout)["platform"] and (tmp_path / "plan" / "plan.json").is_file()


@pytest.mark.parametrize(("args", "stdin", "says"), [
    (("kube", "render", "-", "-o", "yaml"), b"bad: [", b"-:1:7: not valid YAML"),
    (("kube", "render", "-", "-d", "kube"), b"kind: Nope\n", b"kind: 'Nope' is not allowed"),
    (("kube", "render", "-", "-d", "kube"), b"\xff\xfe", b"not UTF-8"),
    (("plan", "-", "-d", "plan"), b"", b"-:1:1: the spec is empty"),
    (("spec", "validate", "-"), b"pools: 3\n", b"-:1:1"),
    (("plan", "-d", "-"), b"", b"-d -: the plan is many files"),
    (("kube", "validate", "-"), b"- a\n- b\n", b"a manifest must be a mapping"),
    (("kube", "lint", "-"), b"kind: Kustomization\napiVersion: kustomize.config.k8s.io/v1\n",
     b"cannot apply it"),
])
def test_bad_input_on_stdin_is_exit_2_and_writes_nothing(
        tmp_path: Path, args: tuple[str, ...], stdin: bytes, says: bytes) -> None:
    cp = run(tmp_path, *args, stdin=stdin)
    assert cp.returncode == 2 and cp.stdout == b"", cp.stderr
    assert says in cp.stderr and cp.stderr.startswith(b"error:")
    assert list(tmp_path.iterdir()) == []


def test_stdin_is_bounded() -> None:
    assert read_stdin(stream=io.BytesIO(b"abc"), max_bytes=3) == b"abc"
    with pytest.raises(InputError, match=r"^\(stdin\): cannot read it: larger than 0 KiB"):
        read_stdin(stream=io.BytesIO(b"abcd"), max_bytes=3)


def test_read_bytes_of_dash_is_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stdin:
        buffer = io.BytesIO(b"pools: []\n")

    monkeypatch.setattr(sys, "stdin", Stdin)
    assert read_bytes("-", "a spec") == b"pools: []\n"
    assert read_bytes("-", "a spec") == b""  # read once


def test_apply_dry_run_client_reads_the_stream_and_asks_no_cluster(
        tmp_path: Path, stream: tuple[Path, bytes]) -> None:
    """kubectl's --dry-run=client: every object in the order apply sends it; no kubeconfig."""
    env_less = run(tmp_path, "kube", "apply", "-", "--dry-run=client", "-o", "json",
                   stdin=stream[1])
    assert env_less.returncode == 0, env_less.stderr.decode()
    outcomes = json.loads(env_less.stdout)
    assert len(outcomes) == counts()[1] and {o["action"] for o in outcomes} == {"would apply"}
    assert outcomes[0]["object"].startswith("Namespace ")
    cp = run(tmp_path, "kube", "apply", "-", "--dry-run=client", "--diff", stdin=stream[1])
    assert cp.returncode == 2 and b"--diff compares with the live objects" in cp.stderr


def test_spec_validate_json_gives_ci_every_error(tmp_path: Path) -> None:
    bad = b"apiVersion: aiplat/v1alpha1\nkind: Platform\nmetadata: {name: x}\npools: 3\n"
    cp = run(tmp_path, "spec", "validate", "-", "-o", "json", stdin=bad)
    assert cp.returncode == 2 and cp.stderr == b""
    got = json.loads(cp.stdout)
    assert got["valid"] is False
    assert {"file": "-", "line": 4, "column": 1, "path": "pools",
            "message": "Input should be a valid list", "fix": "give a list (- item), not 3"} \
        in got["errors"]
    cp = run(tmp_path, "spec", "validate", "-", "-o", "json", stdin=example_text().encode())
    assert cp.returncode == 0 and json.loads(cp.stdout)["valid"] is True
