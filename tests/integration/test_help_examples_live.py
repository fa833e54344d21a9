"""Every ``--help`` example whose heading names what it needs ("Examples (root, a lab):")
runs here against the real thing: a registry, a lab, the lab cluster, Podman, the FGD trace,
the source checkout (tests/unit/test_cli_help_examples.py runs the offline ones and lists
these as skipped).

Each command's lines run in order in bash in a fresh folder, the commands in the order a
session types them (up before status, push before pull, down last), so a later command uses
what an earlier one made. Where an example names a default instance the test runs it on its
own: the registry ``127.0.0.1:5000`` becomes this test's registry, lab commands get this
test's ``--prefix`` and ``lab cluster`` commands its ``--name`` (inserted after the command
path), ``$KUBECONFIG`` names its cluster's kubeconfig, and ``$AIPLAT_MODEL_CACHE``,
``$AIPLAT_LAB_DIR``, ``$AIPLAT_CLUSTER_DIR`` and ``$COURSE`` point into a temp folder.

Root, Podman, docker-registry, debootstrap, the built cluster components and the trace data
are needed: missing, the tests skip locally and fail in CI (``CI=true``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import registry as registry_mod
from conftest import need

from aiplat.cluster import agent_image
from aiplat.cluster.assets import locate
from aiplat.devices.verify import PodmanOptions, podman_missing
from aiplat.errors import InputError
from aiplat.netdiag import lab as labio
from aiplat.netdiag.testing import lab_unavailable

ROOT = Path(__file__).resolve().parents[2]
# the unit test's parser and runner: one definition of what an example block is
sys.path.insert(0, str(ROOT / "tests" / "unit"))
import test_cli_help_examples as help_examples  # noqa: E402

pytestmark = pytest.mark.integration
PREFIX = "ahex"  # this test's lab
CLUSTER = "hex"  # this test's lab cluster
DATA = ROOT.parent / "shared" / "data"
LAB_COMMANDS = ("lab up", "lab status", "lab down", "lab fault add", "lab fault clear",
                "lab fault list", "net check", "diagnose")
CLUSTER_COMMANDS = ("lab cluster up", "lab cluster status", "lab cluster down",
                    "lab cluster kubeconfig")


@dataclass
class Session:
    """The commands (help name, lines) of one group of needs, run in ORDER."""
    needs: frozenset[str]
    order: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    subs: dict[str, str] = field(default_factory=dict)

    def lines(self, name: str) -> list[str]:
        text = help_examples.HELPS[name]
        return [line for need in sorted(self.needs) for line in
                help_examples.examples(text, need)]


GROUPS = {
    "registry": Session(frozenset({"a registry at 127.0.0.1:5000"}),
                        ("model push", "model pull", "model ls", "model tags", "model inspect",
                         "model sign", "model bench")),
    "lab": Session(frozenset({"root, a lab"}),
                   ("lab up", "lab status", "lab fault add", "lab fault list", "net check",
                    "diagnose", "lab fault clear", "lab down")),
    "cluster": Session(frozenset({"Go >= 1.26, the Go module proxy",
                                  "root, the components of aiplat lab cluster build",
                                  "a running lab cluster"}),
                       ("lab cluster build", "lab cluster up", "kube apply",
                        "lab cluster status", "kube why-pending", "sim replay",
                        "lab cluster kubeconfig", "lab cluster down")),
    "podman": Session(frozenset({"root, Podman", "root, Podman, docker-registry",
                                 "root, debootstrap, Podman"}),
                      ("cdi verify", "accept run", "accept compare", "accept report",
                       "lab cluster image")),
    "fgd": Session(frozenset({"the FGD trace in ./data, see aiplat samples get fgd-trace"}),
                   ("sim fgd",)),
    "checkout": Session(frozenset({"an aiplat source checkout; exercises 5-7: root, a lab"}),
                        ("lab exercise",)),
}




def _components() -> str | None:
    try:
        locate()
    except InputError as e:
        return str(e)
    return None


def localize(name: str, line: str, subs: dict[str, str]) -> str:
    """LINE as this test runs it: its own lab, cluster and registry for the defaults."""
    for old, new in subs.items():
        line = line.replace(old, new)
    head = f"aiplat {name}"
    if name in LAB_COMMANDS and "--prefix" not in line:
        line = line.replace(head, f"{head} --prefix {PREFIX}", 1)
    if name in CLUSTER_COMMANDS and "--name" not in line:
        line = line.replace(head, f"{head} --name {CLUSTER}", 1)
    return line


def run_session(session: Session, tmp: Path, *,
                after: Callable[[str, Session], None] | None = None,
                cwd: Path | None = None) -> dict[str, float]:
    """Run each command's lines in order (its own folder, or CWD); seconds per command."""
    seconds: dict[str, float] = {}
    for name in session.order:
        lines = [localize(name, line, session.subs) for line in session.lines(name)]
        assert lines, f"aiplat {name} has no example needing {sorted(session.needs)}"
        work = cwd or tmp / name.replace(" ", "-")
        work.mkdir(exist_ok=True)
        env = {**help_examples.example_env(work), **session.env}
        t0 = time.monotonic()
        failure = help_examples.run_examples(name, lines, work, env)
        seconds[name] = round(time.monotonic() - t0, 1)
        assert failure is None, failure
        if after is not None:
            after(name, session)
    print(f"\n{sorted(session.needs)}: {seconds}", file=sys.stderr)
    return seconds


def test_every_example_that_needs_a_service_is_run_here() -> None:
    """The unit test skips these; a new need or a new command with one must land here."""
    wanted = {(name, need) for name, text in help_examples.HELPS.items()
              for need, _ in help_examples.example_blocks(text) if need is not None}
    covered = {(name, need) for s in GROUPS.values() for name in s.order for need in s.needs
               if help_examples.examples(help_examples.HELPS[name], need)}
    assert wanted == covered
    for s in GROUPS.values():  # and every command listed has such an example
        assert all(s.lines(name) for name in s.order), s.order


def test_registry_examples(registry: registry_mod.Registry, tmp_path: Path) -> None:
    session = GROUPS["registry"]
    session.subs = {"127.0.0.1:5000": registry.host}
    session.env = {"AIPLAT_MODEL_CACHE": str(tmp_path / "cache")}  # one cache: pull, then ls
    run_session(session, tmp_path)


def test_lab_examples(tmp_path: Path) -> None:
    need(lab_unavailable())
    session = GROUPS["lab"]
    session.env = {"AIPLAT_LAB_DIR": str(tmp_path / "labs")}
    os.environ["AIPLAT_LAB_DIR"] = session.env["AIPLAT_LAB_DIR"]
    try:
        run_session(session, tmp_path)
    finally:
        labio.down(PREFIX)  # whatever a failing example left
        del os.environ["AIPLAT_LAB_DIR"]
    assert labio.leftovers(PREFIX) == []


def test_cluster_examples(tmp_path: Path) -> None:
    need(_components())
    session = GROUPS["cluster"]
    session.env = {"AIPLAT_CLUSTER_DIR": str(tmp_path / "runs"), "NO_COLOR": "1"}
    base = {**os.environ, **session.env}

    def after(name: str, s: Session) -> None:
        if name == "lab cluster up":  # $KUBECONFIG, as `lab cluster kubeconfig` prints it
            cp = subprocess.run([sys.executable, "-m", "aiplat.cli.main", "lab", "cluster",
                                 "kubeconfig", "--name", CLUSTER], env=base,
                                capture_output=True, text=True, check=True, timeout=60)
            s.env["KUBECONFIG"] = cp.stdout.strip()

    try:
        run_session(session, tmp_path, after=after)
    finally:
        subprocess.run([sys.executable, "-m", "aiplat.cli.main", "lab", "cluster", "down",
                        "--name", CLUSTER], env=base, capture_output=True, timeout=300,
                       check=False)
        session.env.pop("KUBECONFIG", None)


def test_podman_examples(tmp_path: Path) -> None:
    need(podman_missing(PodmanOptions()) or agent_image.missing()
          or registry_mod.missing())
    run_session(GROUPS["podman"], tmp_path)


def test_fgd_examples(tmp_path: Path) -> None:
    need(None if (DATA / "traces").is_dir() else f"trace data missing at {DATA}")
    work = tmp_path / "fgd"
    work.mkdir()
    (work / "data").symlink_to(DATA)
    run_session(GROUPS["fgd"], tmp_path, cwd=work)


def test_course_examples_from_the_checkout(tmp_path: Path) -> None:
    session = GROUPS["checkout"]
    session.env = {"COURSE": str(tmp_path / "course")}
    run_session(session, tmp_path, cwd=ROOT)
