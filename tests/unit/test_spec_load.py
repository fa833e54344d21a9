"""The spec loader: every bad spec gives a located, one-line, fixable error; good specs load.

Hand-written broken specs live in ``broken_specs/``; each starts with a comment saying what is
wrong, and is otherwise a small valid spec (the ``MINIMAL`` one below plus a workload). The
table here pins, per file, every issue: its line, the text found at its line and column, its
field path, a fragment of the message and of the hint.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from aiplat.catalog import Catalog, load_catalog
from aiplat.errors import SpecError, SpecIssue
from aiplat.spec import Platform, example_text, load_platform, parse_platform
from aiplat.spec.models import SharingStrategy

BROKEN = Path(__file__).parent / "broken_specs"


@dataclass(frozen=True)
class Expect:
    line: int
    at: str  # the text that starts at the issue's line and column
    path: str
    message: str  # a fragment of the message
    hint: str  # a fragment of the hint ("fix: ...")


CASES: dict[str, list[Expect]] = {
    "typo_in_field": [
        Expect(
            13,
            "cpuCore:",
            "pools[0].node.cpuCore",
            "unknown field 'cpuCore'",
            "did you mean 'cpuCores'?",
        ),
    ],
    "wrong_type": [
        Expect(
            14,
            "memoryGiB: lots",
            "pools[0].node.memoryGiB",
            "'lots' is not an amount of bytes",
            "write GiB as a number, or with a unit, e.g. 2048, 2Ti",
        ),
    ],
    "unknown_pool_in_workload": [
        Expect(24, "pool: gpus", "workloads[0].pool", "unknown pool 'gpus'", "did you mean 'gpu'?"),
    ],
    "negative_count": [
        Expect(15, "count: -2", "pools[0].count", "-2 is out of range", "use a value ≥ 0"),
    ],
    "model_without_size": [
        Expect(
            25,
            "model: {params",
            "workloads[0].model",
            "the model has no size: missing layers, hidden, heads, vocab",
            "give a catalog name",
        ),
    ],
    "quota_on_missing_pool": [
        Expect(
            19,
            "gpux: {gpus: 32",
            "tenants[0].quota.gpux",
            "quota on pool 'gpux', which is not defined",
            "did you mean 'gpu'?",
        ),
    ],
    "unknown_tenant": [
        Expect(
            23,
            "tenant: team-b",
            "workloads[0].tenant",
            "unknown tenant 'team-b'",
            "did you mean 'team-a'?",
        ),
    ],
    "unknown_gpu_model": [
        Expect(
            12,
            "model: H100-SXM-80G,",
            "pools[0].node.gpu.model",
            "unknown GPU model 'H100-SXM-80G'",
            "did you mean 'H100-SXM-80GB'?",
        ),
    ],
    "unknown_model": [
        Expect(
            25,
            "model: llama-3-8",
            "workloads[0].model",
            "unknown model 'llama-3-8'",
            "did you mean 'llama-3-8b'?",
        ),
    ],
    "duplicate_pool_names": [
        # Points at the second use of the name, not at `pools:`.
        Expect(
            16, "name: gpu", "pools[1].name", "name 'gpu' is already used by entry 0", "unique name"
        ),
    ],
    "duplicate_yaml_key": [
        Expect(
            16,
            "count: 8",
            "pools[0].count",
            "key 'count' appears twice",
            "keep one of the two entries",
        ),
    ],
    "count_and_autoscaling": [
        Expect(
            16,
            "autoscaling:",
            "pools[0].autoscaling",
            "count and autoscaling are both given",
            "not both",
        ),
    ],
    "pool_without_size": [
        Expect(10, "name: gpu", "pools[0]", "the pool has no size", "add count"),
    ],
    "autoscaling_min_above_max": [
        Expect(
            15,
            "min: 5",
            "pools[0].autoscaling.min",
            "min (5) is above max (2)",
            "make min at most max",
        ),
    ],
    "mig_without_layout": [
        Expect(
            16,
            "strategy: mig}",
            "pools[0].sharing.strategy",
            "strategy 'mig' needs migLayout",
            "add migLayout",
        ),
    ],
    "time_slicing_without_replicas": [
        Expect(
            16,
            "strategy: time-slicing",
            "pools[0].sharing.strategy",
            "needs replicas",
            "add replicas",
        ),
    ],
    "mig_layout_exceeds_gpu": [
        Expect(
            18,
            "migLayout: [4g.40gb, 4g.40gb]",
            "pools[0].sharing.migLayout",
            "2 × 4g.40gb exceeds the 1 that H100-SXM-80GB allows",
            "fewer instances",
        ),
        Expect(
            18,
            "migLayout: [4g.40gb, 4g.40gb]",
            "pools[0].sharing.migLayout",
            "needs 8 compute slices; a GPU has 7",
            "drop or shrink",
        ),
    ],
    "mig_unknown_profile": [
        Expect(
            18,
            "3g.20gb]",
            "pools[0].sharing.migLayout[1]",
            "H100-SXM-80GB has no MIG profile '3g.20gb'",
            "3g.40gb",
        ),
    ],
    "lending_above_quota": [
        Expect(
            19,
            "lendingLimit: 40",
            "tenants[0].quota.gpu.lendingLimit",
            "lendingLimit 40 exceeds the nominal quota 32",
            "at most 32",
        ),
    ],
    "uppercase_name": [
        Expect(
            10,
            "name: GPU",
            "pools[0].name",
            "'GPU' is not a valid value",
            "lowercase letters, digits and '-'",
        ),
    ],
    "wrong_api_version": [
        Expect(
            2,
            "apiVersion: aiplat/v1\n",
            "apiVersion",
            "'aiplat/v1' is not allowed",
            "aiplat/v1alpha1",
        ),
    ],
    "unknown_section": [
        Expect(
            20, "workload:", "workload", "unknown field 'workload'", "did you mean 'workloads'?"
        ),
    ],
    "infinite_number": [
        Expect(7, "powerBudgetKW: .inf", "site.powerBudgetKW", "finite number", "not .inf or .nan"),
    ],
    "workload_on_cpu_pool": [
        Expect(23, "pool: gpu", "workloads[0].pool", "pool 'gpu' has no GPUs", "add node.gpu"),
    ],
    "yaml_syntax_error": [
        # PyYAML notices the unclosed `{` on the next line; the message says where it opened.
        Expect(13, ": 112", "", "not valid YAML: expected ',' or '}', but got ':'", "YAML syntax"),
    ],
    "tab_indentation": [
        Expect(13, "\tcpuCores", "", "not valid YAML: found character '\\t'", "YAML syntax"),
    ],
    "two_documents": [
        Expect(27, "---", "", "another document", "one spec per file"),
    ],
    "empty": [Expect(1, "", "", "the spec is empty", "aiplat spec example")],
    "comments_only": [Expect(1, "# Broken", "", "the spec is empty", "aiplat spec example")],
    "list_not_mapping": [
        Expect(2, "- apiVersion", "", "the spec must be a YAML mapping", "apiVersion: aiplat"),
    ],
    "scalar_not_mapping": [
        Expect(2, "platform.yaml", "", "the spec must be a YAML mapping", "apiVersion: aiplat"),
    ],
}

MINIMAL = """\
apiVersion: aiplat/v1alpha1
kind: Platform
metadata:
  name: minimal
site:
  powerBudgetKW: 100
  rackPowerLimitKW: 30
pools:
  - name: gpu
    node:
      gpu: {model: H100-SXM-80GB, count: 8}
      cpuCores: 112
      memoryGiB: 2048
    count: 4
tenants:
  - name: team-a
    quota:
      gpu: {gpus: 32, lendingLimit: 8}
"""

ARCHITECTURE_WORKLOAD = """\
workloads:
  - name: in-house-model
    kind: online-inference
    tenant: team-a
    model:
      params: 1.3e+10
      layers: 40
      hidden: 5120
      heads: 40
      kvHeads: 8
      vocab: 65536
    slo: {queriesPerSecond: 2}
"""


def _at(text: str, issue: SpecIssue) -> str:
    assert issue.line is not None
    assert issue.column is not None
    lines = text.splitlines(keepends=True) or [""]
    return lines[issue.line - 1][issue.column - 1 :]


def _raises(text: str, filename: str = "spec.yaml", catalog: Catalog | None = None) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_platform(text, filename, catalog)
    return info.value


# ---------------------------------------------------------------------------- broken specs


def test_every_broken_spec_file_has_expectations() -> None:
    files = {p.stem for p in BROKEN.glob("*.yaml")}
    assert files == set(CASES)
    assert len(files) >= 20


@pytest.mark.parametrize("name", sorted(CASES))
def test_broken_spec_names_line_field_and_fix(name: str) -> None:
    path = BROKEN / f"{name}.yaml"
    text = path.read_text(encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_platform(path)
    issues = info.value.issues
    expected = CASES[name]
    assert [(i.line, i.path) for i in issues] == [(e.line, e.path) for e in expected]
    for issue, exp in zip(issues, expected, strict=True):
        assert issue.file == str(path)
        assert _at(text, issue).startswith(exp.at), (_at(text, issue), exp.at)
        assert exp.message in issue.message
        assert exp.hint in issue.hint
        line = str(issue)
        assert "\n" not in line
        assert line.startswith(f"{path}:{exp.line}:{issue.column}: ")
        assert line.endswith(f"(fix: {issue.hint})")
    assert str(info.value) == "\n".join(str(i) for i in issues)


def test_broken_specs_are_one_edit_from_the_minimal_spec() -> None:
    # Keeps the table honest: the files differ from a spec that is known to be valid.
    parse_platform(MINIMAL, "minimal.yaml")
    typo = (BROKEN / "typo_in_field.yaml").read_text(encoding="utf-8")
    fixed = typo.replace("cpuCore:", "cpuCores:").split("\n", 1)[1]
    assert parse_platform(fixed, "fixed.yaml").pools[0].node.cpu_cores == 112


def test_every_model_level_problem_is_reported_in_one_run() -> None:
    text = MINIMAL.replace("count: 4", "count: -1").replace("name: team-a", "name: Team-A")
    issues = _raises(text).issues
    assert [(i.line, i.path) for i in issues] == [(14, "pools[0].count"), (16, "tenants[0].name")]


def test_issue_renders_as_one_located_line() -> None:
    issue = SpecIssue("p.yaml", 3, 5, "pools[0].count", "-1 is out of range", "use a value ≥ 0")
    assert str(issue) == "p.yaml:3:5: pools[0].count: -1 is out of range (fix: use a value ≥ 0)"
    assert str(SpecIssue("p.yaml", None, None, "", "cannot read")) == "p.yaml: cannot read"


# ---------------------------------------------------------------------------- good specs


def test_builtin_example_is_valid() -> None:
    platform = parse_platform(example_text(), "example.yaml")
    # It shows both ways of sizing a pool and uses every section that references another.
    scaled = [p for p in platform.pools if p.autoscaling is not None]
    assert scaled
    assert any(p.count is not None for p in platform.pools)
    assert all(p.nodes == p.autoscaling.max for p in scaled if p.autoscaling)
    assert platform.workloads
    assert all(platform.pool(w.pool) for w in platform.workloads if w.pool)
    assert all(platform.pool(name) for t in platform.tenants for name in t.quota)


def test_packaged_example_file_loads_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "platform.yaml"
    path.write_text(example_text(), encoding="utf-8")
    assert load_platform(path) == parse_platform(example_text(), "other-name.yaml")


def test_minimal_spec_is_valid_and_filled_with_defaults() -> None:
    platform = parse_platform(MINIMAL, "minimal.yaml")
    assert isinstance(platform, Platform)
    assert platform.workloads == []
    (pool,) = platform.pools
    assert (pool.nodes, pool.gpus) == (4, 32)
    assert pool.sharing.strategy is SharingStrategy.EXCLUSIVE
    assert platform.tenants[0].quota["gpu"].lending_limit == 8
    assert platform.kubernetes.version == "1.34"


def test_model_given_by_architecture_is_valid() -> None:
    platform = parse_platform(MINIMAL + ARCHITECTURE_WORKLOAD, "arch.yaml")
    (w,) = platform.workloads
    assert w.model.name is None
    assert (w.model.params, w.model.layers, w.model.kv_heads) == (1.3e10, 40, 8)
    assert w.pool is None  # the first GPU pool is used


def test_architecture_with_inconsistent_heads_points_at_kv_heads() -> None:
    text = MINIMAL + ARCHITECTURE_WORKLOAD.replace("kvHeads: 8", "kvHeads: 7")
    (issue,) = _raises(text).issues
    assert (issue.line, issue.path) == (28, "workloads[0].model.kvHeads")
    assert "multiple of kvHeads" in issue.message
    assert issue.hint


def test_anchors_merge_keys_and_empty_values_load() -> None:
    text = MINIMAL.replace(
        "    count: 4\n",
        "    count: 4\n"
        "  - name: cpu\n"
        "    node: &cpu-node {cpuCores: 64, memoryGiB: 256, gpu: }\n"
        "    count: 2\n"
        "  - name: cpu-big\n"
        "    node: {<<: *cpu-node, memoryGiB: 1024}\n"
        "    count: 1\n",
    )
    platform = parse_platform(text, "anchors.yaml")
    cpu, big = platform.pools[1:]
    assert cpu.node.gpu is None
    assert (big.node.cpu_cores, big.node.memory_gib) == (64, 1024)


def test_keys_are_the_text_written() -> None:
    # As in Kubernetes' YAML handling, `8:` is the key "8", so a pool named 8 can take quota.
    text = MINIMAL.replace("name: gpu", "name: '8'").replace("      gpu: {gpus", "      8: {gpus")
    platform = parse_platform(text, "numbers.yaml")
    assert platform.tenants[0].quota["8"].gpus == 32


def test_catalog_can_be_injected() -> None:
    full = load_catalog()
    no_h100 = Catalog(
        gpus=[g for g in full.gpus if g.name != "H100-SXM-80GB"],
        models=full.models,
        node_types=full.node_types,
    )
    (issue,) = _raises(MINIMAL, catalog=no_h100).issues
    assert (issue.line, issue.path) == (11, "pools[0].node.gpu.model")
    assert "unknown GPU model" in issue.message


# ---------------------------------------------------------------------------- hostile YAML


@pytest.mark.parametrize(
    ("edit", "line", "path", "message", "hint"),
    [
        pytest.param(
            ("kind: Platform", "kind: !foo Platform"),
            2,
            "kind",
            "unsupported YAML tag '!foo'",
            "remove the tag",
            id="custom-tag",
        ),
        pytest.param(
            ("kind: Platform", "kind: !!python/object:os.system ls"),
            2,
            "kind",
            "unsupported YAML tag",
            "remove the tag",
            id="python-tag",
        ),
        pytest.param(
            ("name: minimal", "name: 2024-13-45"),
            4,
            "metadata.name",
            "'2024-13-45' is not a valid timestamp",
            "quote it",
            id="impossible-date",
        ),
        pytest.param(
            ("count: 4", "count: " + "9" * 5000),
            14,
            "pools[0].count",
            "is not a valid int",
            "quote it",
            id="int-of-5000-digits",
        ),
        pytest.param(
            ("count: 4", "count: !!bool maybe"),
            14,
            "pools[0].count",
            "'maybe' is not a valid bool",
            "correct the value",
            id="bad-explicit-bool",
        ),
        pytest.param(
            ("count: 4", "count: 1\n    1: x"),
            15,
            "pools[0].1",
            "unknown field '1'",
            "remove it; allowed here",
            id="number-as-key",
        ),
        pytest.param(
            ("count: 4", "count: 4\n    null: x"),
            15,
            "pools[0].null",
            "unknown field 'null'",
            "remove it",
            id="null-as-key",
        ),
        pytest.param(
            ("count: 4", "count: 4\n    ? [a, b]\n    : x"),
            15,
            "pools[0]",
            "a mapping key must be a scalar",
            "plain name",
            id="list-as-key",
        ),
        pytest.param(
            ("count: 4", "count: 4\n    <<: 3"),
            15,
            "pools[0]",
            "'<<' merges only mappings",
            "<<: *name",
            id="merge-of-scalar",
        ),
        pytest.param(
            ("kind: Platform", "kind: <<"),
            2,
            "kind",
            "'<<' is not allowed",
            "Platform",
            id="merge-sign-as-value",
        ),
        pytest.param(
            ("powerBudgetKW: 100", "powerBudgetKW: .nan"),
            6,
            "site.powerBudgetKW",
            "finite number",
            "not .inf or .nan",
            id="nan",
        ),
        pytest.param(
            ("count: 4", "count: 4.5"),
            14,
            "pools[0].count",
            "valid integer",
            "give a whole number, not 4.5",
            id="fractional-count",
        ),
        pytest.param(
            ("  name: minimal", '  name: minimal\n  "a\\nb": 1'),
            5,
            "metadata.a\\nb",
            "unknown field 'a\\nb'",
            "remove it",
            id="newline-in-key",
        ),
    ],
)
def test_hostile_yaml_gives_a_located_issue(
    edit: tuple[str, str], line: int, path: str, message: str, hint: str
) -> None:
    old, new = edit
    assert MINIMAL.count(old) == 1
    (issue,) = _raises(MINIMAL.replace(old, new)).issues
    assert (issue.line, issue.path) == (line, path)
    assert message in issue.message
    assert hint in issue.hint
    assert "\n" not in str(issue)


def test_alias_that_contains_itself_is_an_error_not_a_recursion() -> None:
    (issue,) = _raises("apiVersion: &a [*a]\n").issues
    assert (issue.line, issue.path) == (1, "apiVersion[0]")
    assert "contains it" in issue.message
    (issue,) = _raises("metadata: &m {<<: *m}\n").issues
    assert issue.line == 1
    assert "contains it" in issue.message


def test_billion_laughs_is_refused_quickly() -> None:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]
    start = time.process_time()
    (issue,) = _raises("\n".join(lines) + "\n").issues
    assert time.process_time() - start < 5
    assert "expands to more than" in issue.message
    assert issue.line is not None
    assert issue.hint


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a: " + "[" * 5000 + "]" * 5000, id="flow-lists"),
        pytest.param("a: " + "{b: " * 5000 + "}" * 5000, id="flow-mappings"),
        pytest.param("a:\n" + "".join("  " * i + "- \n" for i in range(3000)), id="block-lists"),
    ],
)
def test_deep_nesting_is_an_error_not_a_recursion(text: str) -> None:
    (issue,) = _raises(text).issues
    assert issue.message == "the YAML is nested too deeply"
    assert issue.hint


@pytest.mark.parametrize(
    ("char", "code"), [("\x00", "U+0000"), ("\x07", "U+0007"), ("\ud800", "U+D800")]
)
def test_unprintable_character_is_located_on_one_line(char: str, code: str) -> None:
    text = MINIMAL.replace("name: minimal", f"name: mini{char}mal")
    (issue,) = _raises(text).issues
    assert (issue.line, issue.column) == (4, 13)
    assert code in issue.message
    assert "\n" not in str(issue)


def test_value_with_a_newline_is_quoted_on_one_line() -> None:
    text = MINIMAL.replace("model: H100-SXM-80GB", 'model: "H100\\nSXM"')
    (issue,) = _raises(text).issues
    assert issue.path == "pools[0].node.gpu.model"
    assert "'H100\\nSXM'" in issue.message
    assert "\n" not in str(issue)


# ---------------------------------------------------------------------------- reading files


def test_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(SpecError) as info:
        load_platform(path)
    (issue,) = info.value.issues
    assert issue.file == str(path)
    assert "cannot read the spec" in issue.message
    assert "readable UTF-8 YAML file" in issue.hint
    assert "\n" not in str(issue)


def test_directory_and_binary_file_are_spec_errors(tmp_path: Path) -> None:
    binary = tmp_path / "spec.yaml"
    binary.write_bytes(b"apiVersion: \xff\xfe\x00")
    for path in (tmp_path, binary):
        with pytest.raises(SpecError) as info:
            load_platform(path)
        (issue,) = info.value.issues
        assert "cannot read the spec" in issue.message


@pytest.mark.parametrize("value", ["true", "167772160", "[10.0.0.0/24]"])
def test_network_cidr_must_be_written_as_text(value: str) -> None:
    # ipaddress would read `cidr: 167772160` as 10.0.0.0/32 and warn about `true`.
    text = (
        MINIMAL
        + f"network:\n  segments:\n    - {{name: mgmt, purpose: management, cidr: {value}}}\n"
    )
    (issue,) = _raises(text).issues
    assert (issue.line, issue.path) == (21, "network.segments[0].cidr")
    assert "is not a network" in issue.message
    assert "10.0.0.0/24" in issue.hint


def test_unknown_key_with_brackets_is_named_as_written() -> None:
    # pydantic's own loc markers contain '[' ("[key]", "function-after[...]"); a key the user
    # wrote with brackets must not be mistaken for one (it used to crash with IndexError).
    issues = _raises(MINIMAL + "extra[1]: 2\n").issues
    assert [(i.line, i.path, i.message) for i in issues] == [
        (19, "extra[1]", "unknown field 'extra[1]'")
    ]
