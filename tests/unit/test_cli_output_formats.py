"""``-o`` on every command that prints data, with the same choices (issue #45 item 4), held by
walking the click tree as the group loads it, so a new command is held to it unlisted:

- a command that prints data offers ``-o table|json|yaml`` (a few add a format of their own:
  ``csv``, ``env``, ``diff``/``toml``); JSON and YAML are the same data, so one is never
  offered without the other;
- a command without ``-o`` is listed in ``NO_DATA`` with what it prints instead (a file it
  writes, a script, a document in a format of its own).

What this cannot show: that each command prints the same data for ``-o yaml`` as for
``-o json`` — ``test_cli_grammar`` runs the JSON side; both go through ``print_data``.
"""

from __future__ import annotations

import json

import click
import pytest
import yaml
from click.testing import CliRunner
from test_cli_exit_codes import LEAVES

from aiplat.cli.main import cli

NO_DATA = {
    "accept report": "writes acceptance.md/html from a recorded acceptance.json",
    "completion": "prints a shell completion script",
    "lab cluster down": "stops the lab cluster; one status line",
    "lab cluster kubeconfig": "prints a kubeconfig file",
    "lab cluster up": "starts the lab cluster; `lab cluster status -o json|yaml` is the data",
    "model policy": "prints a TrustPolicy document (YAML, the file `model pull --policy` reads)",
    "monitoring render": "writes the monitoring files",
    "node agent": "the node agent: runs, patches its Node, logs",
    "node baseline record": "writes the baseline document (JSON) to -w FILE or stdout",
    "node prepare": "prints a shell script",
    "runbook": "writes the runbook",
    "samples get": "writes the sample's files",
    "sharing config": "prints a device plugin's config file",
    "slurm render": "writes Slurm's configuration files",
    "spec example": "prints the example spec (YAML)",
    "spec schema": "prints the spec's JSON Schema",
}


def _choices(cmd: click.Command) -> tuple[str, ...] | None:
    for p in cmd.params:
        if "-o" in getattr(p, "opts", ()) and isinstance(p.type, click.Choice):
            return tuple(p.type.choices)
    return None


def test_every_command_prints_data_with_o_or_says_what_it_prints() -> None:
    unlisted = sorted(n for n, c in LEAVES.items() if _choices(c) is None and n not in NO_DATA)
    assert unlisted == [], "give these -o table|json|yaml, or say in NO_DATA what they print"
    assert sorted(n for n in NO_DATA if n in LEAVES and _choices(LEAVES[n])) == []
    assert set(NO_DATA) <= set(LEAVES), set(NO_DATA) - set(LEAVES)


def test_json_and_yaml_come_together() -> None:
    odd = sorted(f"{n}: {ch}" for n, c in LEAVES.items() if (ch := _choices(c))
                 and ("json" in ch) != ("yaml" in ch))
    assert odd == []


@pytest.mark.parametrize("args", [
    ["spec", "validate", "-"],
    ["maintain", "plan", "-", "--pool", "l40s", "--change", "kernel=6.8.0-60"],
    ["sim", "compare", "-", "--serving"],
])
def test_yaml_is_the_json_data(args: list[str]) -> None:
    from aiplat.spec import example_text

    runs = {fmt: CliRunner().invoke(cli, [*args, "-o", fmt], input=example_text())
            for fmt in ("json", "yaml")}
    for fmt, run in runs.items():
        assert run.exit_code == 0, (fmt, run.output)
    assert yaml.safe_load(runs["yaml"].stdout) == json.loads(runs["json"].stdout)
