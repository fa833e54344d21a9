"""One grammar for every command (issue #45 item 4), held by walking the click tree (as the
group loads it), so a new command is held to it without being listed here:

- JSON field names as the spec spells them (camelCase): every command that offers
  ``-o json`` and runs offline is run with it, on the example spec, its rendered tree and the
  packaged samples, and no key in its output holds an ``_`` unless the key is data
  (``DATA``: a Kubernetes object's own fields, a device name such as ``mlx5_0``). A command
  that offers ``-o json`` and is not run here (it needs root, a lab cluster, a registry or a
  node's benchmarks) is listed with why in ``NOT_RUN``; a command in neither list fails.

What this cannot show: the output of the commands in ``NOT_RUN`` (they print through the same
``print_data``, which ``test_every_json_printer_goes_through_print_data`` checks by source).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from test_cli_exit_codes import LEAVES

from aiplat.cli import _output
from aiplat.cli.main import main
from aiplat.spec import example_text

CLI = Path(_output.__file__).parent


def _offers(cmd: click.Command, fmt: str) -> bool:
    return any("-o" in getattr(p, "opts", ()) and isinstance(p.type, click.Choice)
               and fmt in p.type.choices for p in cmd.params)


JSON_COMMANDS = sorted(n for n, c in LEAVES.items() if _offers(c, "json"))

# How each command runs offline; {spec}: the example spec, {tree}: its rendered tree,
# {s}: the folder the samples were fetched into, {tmp}: an empty scratch folder.
RUN: dict[str, list[str]] = {
    "catalog gpus": ["catalog", "gpus"],
    "catalog models": ["catalog", "models"],
    "catalog node-types": ["catalog", "node-types"],
    "catalog import": ["catalog", "import", "{fixtures}/hf_configs/Qwen--Qwen3-30B-A3B.json",
                       "--name", "qwen3-30b"],
    "kube render": ["kube", "render", "{spec}"],
    "cdi generate": ["cdi", "generate", "--char", "example.com/acc=0:/dev/null"],
    "cdi validate": ["cdi", "validate", "--no-host", "{s}/cdi"],
    "kube lint": ["kube", "lint", "{tree}"],
    "kube why-pending": ["kube", "why-pending", "finetune", "-n", "research", "--snapshot",
                         "{s}/snapshot-quota-exhausted"],
    "matrix check": ["matrix", "check", "{spec}"],
    "matrix diff": ["matrix", "diff", "{spec}", "--set", "driver=570.1"],
    "matrix show": ["matrix", "show", "{spec}"],
    "maintain plan": ["maintain", "plan", "{spec}", "--pool", "l40s", "--change",
                      "kernel=6.8.0-60"],
    "model gc": ["model", "gc", "--cache", "{tmp}/cache"],
    "model verify": ["model", "verify", "--cache", "{tmp}/cache"],
    "node inventory": ["node", "inventory", "--root", "{s}/node-hgx-h100"],
    "node check": ["node", "check", "{spec}", "--root", "{s}/node-hgx-h100",
                   "--pool", "h100"],
    "node placement": ["node", "placement", "--root", "{s}/node-hgx-h100"],
    "plan": ["plan", "{spec}", "-d", "{tmp}/plan"],
    "runtime config": ["runtime", "config", "containerd", "--current",
                       "{s}/containerd-1.7.toml", "--version", "1.7.20"],
    "samples list": ["samples", "list"],
    "sharing compare": ["sharing", "compare", "{spec}"],
    "sharing plan": ["sharing", "plan", "--gpu", "H100-SXM-80GB", "--demand", "1g.10gb=10"],
    "sharing strategies": ["sharing", "strategies"],
    "sim compare": ["sim", "compare", "{spec}"],
    "sim replay": ["sim", "replay", "{s}/snapshot-quota-exhausted"],
    "sim run": ["sim", "run", "{spec}"],
    "spec validate": ["spec", "validate", "{spec}"],
    "version": ["version"],
    "diagnose rdma": ["diagnose", "rdma", "{s}/rdma-fabric"],
    "accounting report": ["accounting", "report", "{tmp}/usage.csv", "--since",
                          "2026-01-01T00:00:00Z"],
    "lab exercise": ["lab", "exercise", "all", "--check", "--course", "{tmp}/course"],
    "model sign": ["model", "sign", "--generate-key", "{tmp}/release.key"],
}
NOT_RUN = {
    "accept compare": "reads two acceptance records, which accept run makes as root on a node",
    "accept run": "runs the acceptance suite: root on a node",
    "kube apply": "needs a cluster",
    "kube validate": "needs the lab's kubectl and API server",
    "lab cluster build": "builds the lab's Go binaries (minutes)",
    "lab cluster image": "builds a node image (root, minutes)",
    "lab cluster status": "needs a lab cluster",
    "lab down": "root: network namespaces", "lab fault add": "root: a lab",
    "lab fault clear": "root: a lab", "lab fault list": "root: a lab",
    "lab status": "root: a lab", "lab up": "root: network namespaces",
    "maintain resume": "needs a maintenance run's state on a cluster",
    "maintain rollback": "needs a cluster", "maintain run": "needs a cluster",
    "maintain status": "needs a maintenance run's state on a cluster",
    "model bench": "needs a registry", "model inspect": "needs a registry",
    "model ls": "needs a registry", "model pull": "needs a registry",
    "model push": "needs a registry", "model tags": "needs a registry",
    "net check": "root: a lab", "node baseline compare": "runs the node's benchmarks",
    "node burnin": "loads every CPU for its duration", "sim fgd": "needs the 13 MB trace",
    "cdi verify": "needs the node's devices (/dev/nvidia*)",
}
# Keys that hold an "_" and are data, not field names, as (path regex, why).
DATA = [
    (r"\.items\[\]\..*", "a Kubernetes object's own fields"),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("grammar")
    spec, tree, s = base / "platform.yaml", base / "tree", base / "samples"
    s.mkdir()
    for name, where in [("node-hgx-h100", "node-hgx-h100"), ("rdma-fabric", "rdma-fabric"),
                        ("snapshot-quota-exhausted", "snapshot-quota-exhausted"),
                        ("containerd-1.7.toml", "containerd-1.7.toml")]:
        assert main(["samples", "get", name, "-d", str(s / where)]) == 0
    spec.write_text(example_text())
    assert main(["kube", "render", str(spec), "-d", str(tree)]) == 0
    assert main(["cdi", "generate", "--char", "example.com/acc=0:/dev/null",
                 "-d", str(s / "cdi")]) == 0
    (base / "usage.csv").write_text("tenant,start,end,count,profile\n"
                                    "research,2026-01-01T00:00:00Z,2026-01-01T10:00:00Z,2,1g.10gb\n")
    return {"spec": str(spec), "tree": str(tree), "s": str(s), "tmp": str(base),
            "fixtures": str(Path(__file__).parents[1] / "fixtures")}


def _run(args: list[str]) -> int | str | None:
    try:
        return main(args)
    except SystemExit as e:  # the checks exit 0 or 1 themselves, after their data
        return e.code


def test_every_json_command_is_run_or_says_why_not() -> None:
    assert set(RUN) & set(NOT_RUN) == set()
    assert sorted(set(JSON_COMMANDS) - set(RUN) - set(NOT_RUN)) == []


def _underscored(data: Any, path: str = "") -> list[str]:
    out: list[str] = []
    if isinstance(data, dict):
        for k, v in data.items():
            p = f"{path}.{k}"
            if "_" in str(k) and not any(re.fullmatch(rx, p) for rx, _ in DATA):
                out.append(p)
            out += _underscored(v, p)
    elif isinstance(data, list):
        for v in data:
            out += _underscored(v, f"{path}[]")
    return out


@pytest.mark.parametrize("name", sorted(RUN))
def test_json_field_names_are_camel_case(name: str, inputs: dict[str, str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    if name not in JSON_COMMANDS:
        pytest.skip(f"no `aiplat {name}` offering -o json in this tree")
    capsys.readouterr()
    code = _run([a.format(**inputs) for a in RUN[name]] + ["-o", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err  # 1: the command found something, and still prints its data
    data = json.loads(out)
    assert data not in ({}, []), out  # something to look at
    assert _underscored(data) == [], f"snake_case keys in `aiplat {name} -o json`"


def test_data_keys_keep_their_spelling() -> None:
    """A key that is data is printed as it came: a device name, an environment variable, a
    label key, a Kubernetes object, a field named as a data map or verbatim."""
    data = {"gpu_hours": 1, "mlx5_0": {"link_layer": "IB"}, "NCCL_IB_HCA": "x",
            "example.com/node_pool": "a",
            "obj": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a_b": "1"}},
            "by_user": {"jane_doe": {"gpu_hours": 2}}, "config": {"hidden_size": 4096}}
    assert _output.camel(data, data_maps=("byUser",), verbatim=("config",)) == {
        "gpuHours": 1, "mlx5_0": {"linkLayer": "IB"}, "NCCL_IB_HCA": "x",
        "example.com/node_pool": "a",
        "obj": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a_b": "1"}},
        "byUser": {"jane_doe": {"gpuHours": 2}}, "config": {"hidden_size": 4096}}


def test_every_json_printer_goes_through_print_data() -> None:
    """No command prints JSON itself (``json.dumps`` or ``yaml`` to stdout): what it prints
    goes through ``print_data``, which spells the fields. Files a command writes (plan.json,
    acceptance.json) and the JSON Schema of ``spec schema`` are documents of their own."""
    allowed = {("kube.py", "_stream"),  # kube render -o json: a v1 List, as kubectl's
               ("spec.py", "schema"),  # a JSON Schema
               ("node.py", "agent"), ("node.py", "emit"),  # the agent's patches, a log
               ("handover.py", "_emit_record"),  # acceptance.json, the record's file
               ("catalog.py", "import_cmd"),  # a catalog overlay, in the spec's spelling
               ("devices.py", "sharing_config")}  # a device plugin's config file
    found = []
    for path in sorted(CLI.glob("*.py")):
        if path.name == "_output.py":
            continue
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in ("dumps", "safe_dump")
                        and isinstance(node.func.value, ast.Name)
                        and node.func.value.id in ("json", "yaml")):
                    found.append((path.name, fn.name))
    assert sorted(set(found) - allowed) == []


# SPEC, the platform spec, is the command's argument (`aiplat plan SPEC`, as most took it).
# cdi generate and cdi verify keep --spec: their argument is a CDI spec, and the platform
# spec is one more source of devices there, beside --root, --inventory and --char.
SPEC_OPTION_KEPT = {"cdi generate", "cdi verify"}


def test_spec_is_the_argument_everywhere() -> None:
    shown_spec_option = sorted(
        name for name, cmd in LEAVES.items() for p in cmd.params
        if isinstance(p, click.Option) and "--spec" in p.opts and not p.hidden
        and name not in SPEC_OPTION_KEPT)
    assert shown_spec_option == []
    assert set(LEAVES) >= SPEC_OPTION_KEPT


def test_the_output_folder_is_dash_d_everywhere() -> None:
    """A folder a command writes files into is ``-d DIR`` (``OutDir``); ``--dir`` and
    ``--workdir`` elsewhere are scratch folders a benchmark measures, not outputs."""
    odd = sorted(f"{name} {p.opts}" for name, cmd in LEAVES.items() for p in cmd.params
                 if isinstance(p, click.Option) and isinstance(p.type, _output.OutDir)
                 and "-d" not in p.opts)
    assert odd == []
    outdirs = {name for name, cmd in LEAVES.items() for p in cmd.params
               if isinstance(p, click.Option) and "-d" in p.opts}
    assert {"plan", "kube render", "accept run", "matrix show", "slurm render"} <= outdirs


def test_the_old_spec_option_still_works_with_a_note(
        inputs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    root = f"{inputs['s']}/node-hgx-h100"
    capsys.readouterr()
    assert _run(["node", "check", inputs["spec"], "--pool", "h100", "--root", root,
                 "-o", "json"]) == 0
    new, err = capsys.readouterr()
    assert "deprecated" not in err
    assert _run(["node", "check", "--spec", inputs["spec"], "--pool", "h100", "--root", root,
                 "-o", "json"]) == 0
    old, err = capsys.readouterr()
    assert "warning: --spec FILE is deprecated" in err
    assert json.loads(old)["status"] == json.loads(new)["status"] == "pass"
    assert _run(["node", "check", inputs["spec"], "--spec", inputs["spec"], "--pool", "h100",
                 "--root", root]) == 2
    assert "SPEC given twice" in capsys.readouterr().err


def test_a_required_spec_is_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sharing", "compare", "--pool", "h100"]) == 2
    assert "Missing argument 'SPEC'" in capsys.readouterr().err


# A string literal's text where a fix hint is not written "WHAT (fix: HOW)" (issue #45 item 4:
# one fix-hint format), with why it may stay. Keyed by file (under src/aiplat) and the
# literal's text (an f-string's fields as {}).
FIX_HINT_ALLOWED = {
    ("cli/lab.py", "   fix: {}"): "the RDMA diagnosis prints each cause as an indented block of "
                                   "labelled lines (evidence, fix), as the README tour shows: a "
                                   "report layout, not an error's hint",
}


def _literals(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string literal but docstrings (they are not printed), an f-string as one text
    with ``{}`` for its fields (implicit concatenation is already one node)."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    out = []
    for n in ast.walk(tree):
        if id(n) in docs or id(n) in parts:
            continue
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.append((n.lineno, n.value))
        elif isinstance(n, ast.JoinedStr):
            out.append((n.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}"
                                          for v in n.values)))
    return out


def test_every_fix_hint_has_one_form() -> None:
    """Errors, warnings and notes tell the fix one way, ``WHAT (fix: HOW)``, as ``Finding``
    lines and spec errors print it (README: ``... (fix: did you mean 'cpuCores'?)``): any
    ``fix:`` in a string literal of src/aiplat not right after ``(`` fails ('; fix: ...',
    '. To fix: ...', a bare 'fix: ...' line), unless ``FIX_HINT_ALLOWED`` says why. A
    message several lines long gives its fix on a last line ``(fix: HOW)``. Spec errors need no
    exception: they print as ``file:line:col: field: problem (fix: HOW)`` already.

    What this cannot show: a hint built from pieces at run time (``"fix" + ":"``) or one that
    says 'fix' without the colon; the message tests check texts the users see."""
    root = CLI.parent
    odd = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for line, text in _literals(ast.parse(path.read_text(), str(path))):
            if (re.search(r"(?<!\()fix:", text, re.IGNORECASE)
                    and (rel, text) not in FIX_HINT_ALLOWED):
                odd.append(f"{rel}:{line}: {text[:90]!r}")
    assert odd == [], "\n".join(odd)


# The JSON files offline commands write, as (command, the folder or file it writes); the
# files in it that are another tool's format keep that tool's spelling (path regex, why).
FILE_WRITERS: dict[str, list[str]] = {
    "plan": ["plan", "{spec}", "-d", "{tmp}/files/plan"],
    "node baseline record": ["node", "baseline", "record", "--metric", "cpu.sha256", "--runs",
                             "1", "--scale", "0.01", "-w", "{tmp}/files/baseline.json"],
    "catalog import": ["catalog", "import", "{fixtures}/hf_configs/Qwen--Qwen3-30B-A3B.json",
                       "--name", "qwen3-30b", "-o", "json", "--out",
                       "{tmp}/files/catalog.json"],
    "cdi generate": ["cdi", "generate", "--char", "example.com/acc=0:/dev/null",
                     "-d", "{tmp}/files/cdi"],
}
OTHER_FORMATS = [
    (r"plan/monitoring/grafana/dashboards/.*\.json", "Grafana's dashboard model"),
]


def test_json_files_commands_write_spell_fields_as_the_spec(
        inputs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """JSON field names as the spec spells them in the files too (issue #45 item 4): every
    offline writer in ``FILE_WRITERS`` is run and each JSON file it writes that is aiplat's
    own document (plan.json, simulation.json, kube-check.json, a node baseline, a catalog
    overlay, ...) holds no snake_case key but data (``DATA``); a file in another tool's
    format is named with why in ``OTHER_FORMATS``.

    What this cannot show: acceptance.json, which `accept run` writes as root on a node and
    the course writes on a lab (``Record.dump``, tested in test_ops_acceptance.py), and the
    writers' output on other specs."""
    files = Path(inputs["tmp"]) / "files"
    for name, args in FILE_WRITERS.items():
        code = _run([a.format(**inputs) for a in args])
        assert code in (0, None), f"aiplat {name}: {capsys.readouterr().err}"
    written = sorted(p.relative_to(files).as_posix() for p in files.rglob("*.json"))
    assert {"plan/plan.json", "plan/simulation.json", "plan/kube-check.json",
            "baseline.json", "catalog.json"} <= set(written), written
    bad = {}
    for rel in written:
        if any(re.fullmatch(rx, rel) for rx, _ in OTHER_FORMATS):
            continue
        keys = _underscored(json.loads((files / rel).read_text()))
        if keys:
            bad[rel] = keys[:5]
    assert bad == {}, "snake_case keys in the files commands write"
