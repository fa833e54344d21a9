"""Every aiplat command the runbook prints runs as written (issue 22: ``matrix diff A B`` and
``why-pending`` without ``--kubeconfig`` did not).

The runbook's commands are taken from the generated procedures (steps, rollbacks and the
texts of their expectations), the shell variables filled in as an operator would, and:

- in one working directory, in the runbook's order, with the spec at ``platform.yaml`` and
  the spec before the change at ``platform.yaml.previous``, every one is parsed by the real
  command tree (a usage error fails the test: unknown option, missing argument, a value of
  the wrong type, a path an earlier step did not create);
- those that can run on this host without a cluster, a GPU, containers or hours run through
  ``aiplat.cli.main.main`` and must exit 0.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import warnings
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.main import cli, main
from aiplat.ops.runbook import Procedure, procedures
from aiplat.spec import EXAMPLE, example_text, parse_platform

SHARED = Path(__file__).parents[2].parent / "shared"
KUEUE_CRDS = SHARED / "schemas" / "kueue-v0.19.2"

VARS = {"POOL": "h100", "NODE": "h100-node-1", "NS": "research", "WL": "job-train-1",
        "TENANT": "research", "VERSION": "0.19.2", "TARGET": "1.35"}

# Need a cluster, containers, the spec's GPUs, hours or recordings from the nodes: parsed only.
PARSE_ONLY = ("kube why-pending", "cdi verify", "node burnin", "node check",
              "node baseline", "node inventory", "maintain", "diagnose rdma")


def _expand(text: str, env: dict[str, str]) -> str:
    """``$VAR`` and ``${VAR:-default}`` as bash expands them (defaults expanded too)."""
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        default = m.group(2)
        value = env.get(name, "")
        return value if value or default is None else _expand(default, env)

    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)", sub, text)


def aiplat_commands(procs: list[Procedure]) -> list[str]:
    """Each ``aiplat ...`` segment of the procedures' shell lines, in order."""
    out: list[str] = []
    for p in procs:
        for step in (*p.steps, *p.rollback):
            for text in (step.command, step.expect):
                for part in re.split(r"&&|;|\|\|?", text):
                    seg = part.split(">")[0].strip()  # a redirect is the shell's
                    if "aiplat " in seg:  # also "... explain it with aiplat ..."
                        out.append(seg[seg.index("aiplat "):])
    return out


def _rest(ctx: click.Context) -> list[str]:
    with warnings.catch_warnings():  # click 8.2 deprecates protected_args, still fills it
        warnings.simplefilter("ignore", DeprecationWarning)
        return [*ctx.protected_args, *ctx.args]


def _parse(argv: list[str]) -> None:
    """Resolve and parse ``argv`` as click does before it runs the command (the group's
    invoke, without the callbacks)."""
    ctx = cli.make_context("aiplat", list(argv))
    cmd: click.Command = cli
    while isinstance(cmd, click.Group):
        name, sub, args = cmd.resolve_command(ctx, _rest(ctx))
        assert sub is not None, f"{argv}: no command {name}"
        ctx = sub.make_context(name or "", list(args), parent=ctx)
        cmd = sub


@contextlib.contextmanager
def _in(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # commands that exit 1 themselves (a violated fact)
            code = int(e.code or 0)
    return code, err.getvalue() + out.getvalue()


@pytest.fixture(scope="module")
def commands() -> list[str]:
    platform = parse_platform(example_text(), EXAMPLE, load_catalog())
    return aiplat_commands(procedures(platform, "platform.yaml"))


def test_the_runbook_prints_the_commands_issue_22_found_broken(commands: list[str]) -> None:
    assert "aiplat matrix diff platform.yaml.previous platform.yaml" in commands
    pending = [c for c in commands if "why-pending" in c]
    assert pending and all("--kubeconfig" in c for c in pending), pending
    assert len(commands) >= 25, commands


@pytest.mark.skipif(not KUEUE_CRDS.is_dir(), reason=f"{KUEUE_CRDS} not checked out")
def test_runbook_commands_parse_and_run_as_written(commands: list[str], tmp_path: Path) -> None:
    (tmp_path / "platform.yaml").write_text(example_text())
    previous = yaml.safe_load(example_text())
    previous["versions"]["approved"][-1]["driver"] = "575.57.08"
    (tmp_path / "platform.yaml.previous").write_text(yaml.safe_dump(previous, sort_keys=False))
    (tmp_path / f"kueue-{VARS['VERSION']}-crds").symlink_to(KUEUE_CRDS)
    ran = []
    with _in(tmp_path):
        for c in commands:
            argv = shlex.split(_expand(c, {**VARS, "HOME": str(tmp_path)}))[1:]
            try:
                _parse(argv)
            except click.UsageError as e:
                pytest.fail(f"{c!r} does not parse as written: {e.format_message()}")
            if " ".join(argv).startswith(PARSE_ONLY):
                continue
            code, text = _run(argv)
            assert code == 0, f"{c!r} exited {code}: {text}"
            ran.append(" ".join(argv[:2]))
    # The matrix diff of the spec before and after the change shows the driver change.
    assert {"matrix diff", "matrix check", "kube render", "kube validate", "kube lint",
            "node prepare", "monitoring render", "runbook platform.yaml",
            "plan platform.yaml", "spec validate"} <= set(ran), ran


def test_matrix_diff_of_two_specs_compares_their_last_entries(tmp_path: Path) -> None:
    (tmp_path / "new.yaml").write_text(example_text())
    old = yaml.safe_load(example_text())
    old["versions"]["approved"][-1]["driver"] = "575.57.08"
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(old, sort_keys=False))
    code, text = _run(["matrix", "diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"),
                       "--today", "2026-11-29"])
    assert code == 0, text
    assert re.search(r"driver\s+575\.57\.08 -> 580\.95\.05", text), text
    assert "gone  error: cuda 13.0" in text  # the old driver was below CUDA 13's floor
    back, text = _run(["matrix", "diff", str(tmp_path / "new.yaml"), str(tmp_path / "old.yaml"),
                       "--today", "2026-11-29"])
    assert back == 1 and "new   error: cuda 13.0" in text, text
    both, text = _run(["matrix", "diff", str(tmp_path / "old.yaml"),
                       str(tmp_path / "new.yaml"), "--set", "driver=1"])
    assert both == 2 and "not both" in text
    none, text = _run(["matrix", "diff"])
    assert none == 2 and "nothing to compare" in text and "--set" in text
    missing, text = _run(["matrix", "diff", str(tmp_path / "old.yaml"),
                          str(tmp_path / "new.yaml"), "--entry", "nope"])
    assert missing == 2 and "old.yaml: no approved entry 'nope'" in text, text
