"""Text from outside reaches the terminal escaped wherever aiplat prints it (issue #38): an
error message that quotes a path or name, and YAML data (which counts a bidi override as
printable and would write it raw)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat.cli.main import main
from aiplat.cli.node import node
from fixtures.nodes import l40s_4

ESC = "\x1b]0;PWNED\x07\x1b[2J"
RLO = "\u202e"


def test_an_error_quoting_a_hostile_path_is_escaped(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    path = tmp_path / f"plat{ESC}{RLO}form.yaml"
    path.write_text("apiVersion: aiplat/v1alpha1\nkind: Platform\nmetadata: {name: x}\n"
                    "pools: 3\n")
    assert main(["spec", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and RLO not in err and "\x07" not in err
    assert "plat\\x1b]0;PWNED\\x07\\x1b[2J\\u202eform.yaml" in err
    assert err.count("\n") >= 1  # a message's own lines stay lines


def test_node_inventory_yaml_escapes_a_bidi_override_in_the_hostname(tmp_path: Path) -> None:
    root = l40s_4(tmp_path)
    (root / "proc/sys/kernel/hostname").write_text(f"gpu{RLO}01\n")
    r = CliRunner().invoke(node, ["inventory", "--root", str(root), "-o", "yaml"])
    assert r.exit_code == 0, r.output
    assert RLO not in r.stdout and "\\u202E" in r.stdout
    assert yaml.safe_load(r.stdout)["host"]["hostname"] == f"gpu{RLO}01"  # the data kept


