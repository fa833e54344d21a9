"""``aiplat maintain plan`` (issue #42's first step): the rollout decided and shown before it
runs — a canary alone, then batches within the pool's spares that never empty a block, each
node going through its owner's apply (never the operator's pods by hand)."""

from __future__ import annotations

import json
import shlex
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from aiplat.catalog import load_catalog
from aiplat.cli.main import cli
from aiplat.errors import AiplatError
from aiplat.maintain.plan import SKIP_LABEL, Change, plan
from aiplat.plan.resolve import resolve
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform


def _platform(edit: Any = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data), "t.yaml", load_catalog())


def _pool(platform: Platform, name: str = "h100") -> Any:
    return next(p for p in resolve(platform, load_catalog()).pools if p.name == name)


def _sixteen(data: dict[str, Any]) -> None:
    data["pools"][0]["count"] = 16  # racks of 2, blocks of 3 racks: blocks of 6, 6 and 4


def test_canary_alone_then_batches_within_blocks() -> None:
    platform = _platform(_sixteen)
    p = plan(platform, _pool(platform), Change("driver", "580.95.05"), max_unavailable=4)
    first, *rest = p.batches
    assert first.canary and first.nodes == ["h100-0"]
    assert not any(b.canary for b in rest)
    order = [n for b in p.batches for n in b.nodes]
    assert order == [f"h100-{i}" for i in range(16)]  # rack order, each node once
    assert all(len(b.nodes) <= 4 and len(b.blocks) == 1 for b in rest)
    # h100-block-0 is h100-0..5: after the canary, 5 nodes in batches of 4 and 1; no batch
    # takes a whole block, so a block-sized gang always has a block to wait for.
    sizes = {b.blocks[0]: [] for b in p.batches}
    for b in p.batches:
        sizes[b.blocks[0]].append(len(b.nodes))
    assert sizes == {"h100-block-0": [1, 4, 1], "h100-block-1": [4, 2],
                     "h100-block-2": [3, 1]}


def test_default_batch_is_the_pools_spares() -> None:
    platform = _platform(_sixteen)
    pool = _pool(platform)
    p = plan(platform, pool, Change("driver", "580.95.05"))
    assert p.max_unavailable == max(1, pool.spares.spare_nodes)
    assert any("spare nodes" in n for n in p.notes)


def test_host_owned_driver_goes_through_node_prepare_with_the_approved_entry() -> None:
    platform = _platform()
    p = plan(platform, _pool(platform), Change("driver", "580.95.05"))
    assert p.owner == "host"
    steps = [s.step for s in p.steps]
    assert steps == ["cordon", "drain", "apply", "gate", "uncordon"]
    apply = next(s for s in p.steps if s.step == "apply")
    assert "node prepare" in apply.command and "--entry r580-k8s134" in apply.command
    # each step's aiplat command is one the CLI takes (it printed `node prepare SPEC`)
    for step in p.steps:
        if step.command.startswith("aiplat "):
            argv = shlex.split(step.command.replace("SPEC", "platform.yaml"))[1:]
            ctx = cli.make_context("aiplat", argv[:1])
            group = cli.get_command(ctx, argv[0])
            assert isinstance(group, click.Group), argv
            sub = group.get_command(ctx, argv[1])
            assert sub is not None, argv
            sub.make_context(argv[1], argv[2:], parent=ctx)  # a usage error raises


def test_operator_owned_driver_releases_nodes_to_the_upgrade_controller() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["kubernetes"]["components"] = {"driver": "operator"}

    platform = _platform(edit)
    p = plan(platform, _pool(platform), Change("driver", "580.95.05"))
    assert p.owner == "operator"
    apply = next(s for s in p.steps if s.step == "apply")
    assert apply.command == f'kubectl label node "$NODE" {SKIP_LABEL}-'
    assert any(SKIP_LABEL in n for n in p.notes)
    # gpu-operator#901: never the operator's pods by hand
    assert not any("delete pod" in s.command for s in p.steps)


def test_kernel_is_always_the_hosts() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["kubernetes"]["components"] = {"driver": "operator", "toolkit": "operator"}

    platform = _platform(edit)
    p = plan(platform, _pool(platform), Change("kernel", "6.8.0-60"))
    assert p.owner == "host"


def _run(*args: str) -> tuple[int, str]:
    """Exit code as ``aiplat``'s main() maps it (an InputError exits 2), and the output."""
    r = CliRunner().invoke(cli, ["maintain", "plan", *args])
    if isinstance(r.exception, AiplatError):
        return r.exception.exit_code, str(r.exception)
    return r.exit_code, r.output


def test_cli_table_and_json() -> None:
    code, out = _run("--pool", "h100", "--change", "driver=580.95.05")
    assert code == 0, out
    assert "0 (canary)  h100-0" in out and "through the host" in out
    code, out = _run("--pool", "h100", "--change", "driver=580.95.05", "-o", "json")
    data = json.loads(out)
    assert data["batches"][0] == {"index": 0, "canary": True, "nodes": ["h100-0"],
                                  "blocks": ["h100-block-0"]}


@pytest.mark.parametrize(("args", "words"), [
    (["--change", "driver=580.105.08"], "no versions.approved entry has driver 580.105.08"),
    (["--change", "gpu=1"], "not KIND=VERSION"),
    (["--change", "driver=$(reboot)"], "is not a version"),
    (["--change", "driver=580.95.05", "--nodes", "a,a"], "names a node twice"),
    (["--change", "driver=580.95.05", "--nodes", "Node_1"], "is not a node name"),
])
def test_bad_input_is_exit_2_with_the_fix(args: list[str], words: str) -> None:
    code, out = _run("--pool", "h100", *args)
    assert code == 2, out
    assert words in out and "fix:" in out


@settings(max_examples=60, deadline=None)
@given(count=st.integers(1, 40), per_rack=st.integers(1, 4), racks=st.integers(1, 4),
       cap=st.integers(1, 8))
def test_every_plan_covers_each_node_once_and_never_empties_a_block(
        count: int, per_rack: int, racks: int, cap: int) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["pools"][0]["count"] = count
        data["pools"][0]["topology"] = {"nodesPerRack": per_rack, "racksPerBlock": racks}

    platform = _platform(edit)
    pool = _pool(platform)
    p = plan(platform, pool, Change("kernel", "6.8.0-60"), max_unavailable=cap)
    order = [n for b in p.batches for n in b.nodes]
    assert sorted(order) == sorted(f"h100-{i}" for i in range(count)) and len(set(order)) == count
    assert p.batches[0].canary and len(p.batches[0].nodes) == 1
    block = pool.nodes_per_rack * racks
    members: dict[str, int] = {}
    for i in range(count):
        key = f"h100-block-{i // block}"
        members[key] = members.get(key, 0) + 1
    for b in p.batches:
        assert len(b.nodes) <= cap and len(b.blocks) == 1
        if members[b.blocks[0]] > 1:
            assert len(b.nodes) < members[b.blocks[0]]
