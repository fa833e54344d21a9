"""``aiplat spec validate|schema|example`` through ``main(argv)``: exit codes and streams.

validate: exit 0 and a summary on stdout for a valid spec; exit 2, nothing on stdout and one
``file:line:col: path: message (fix: hint)`` line per issue on stderr otherwise.
schema: a JSON Schema that describes the spec the loader reads (checked here with a small
validator, since ``jsonschema`` is not installed).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.cli.main import main
from aiplat.errors import SpecError
from aiplat.spec import example_text, load_platform

BROKEN = Path(__file__).parent / "broken_specs"
BROKEN_FILES = sorted(BROKEN.glob("*.yaml"))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _issue_lines(err: str) -> list[str]:
    """The issue lines of main's error output ("error: X", or "error:" then one per line)."""
    lines = err.splitlines()
    if lines[0] == "error:":
        return lines[1:]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return [lines[0].removeprefix("error: ")]


# ---------------------------------------------------------------------------- validate


@pytest.mark.parametrize("path", BROKEN_FILES, ids=[p.stem for p in BROKEN_FILES])
def test_validate_broken_spec_exits_2_with_one_line_per_issue(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    with pytest.raises(SpecError) as info:
        load_platform(str(path))
    code, out, err = _run(capsys, "spec", "validate", str(path))
    assert code == 2
    assert out == ""
    lines = _issue_lines(err)
    assert lines == [str(i) for i in info.value.issues]
    for line in lines:
        assert re.match(rf"{re.escape(str(path))}:\d+:\d+: ", line), line
        assert "(fix: " in line
    assert "Traceback" not in err


def test_validate_example_exits_0_with_a_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "platform.yaml"
    path.write_text(example_text(), encoding="utf-8")
    code, out, err = _run(capsys, "spec", "validate", str(path))
    assert (code, err) == (0, "")
    platform = load_platform(path)
    gpus = sum(p.gpus for p in platform.pools)
    assert out == (
        f"{path}: valid ({len(platform.pools)} pools, {gpus} GPUs, "
        f"{len(platform.tenants)} tenants, {len(platform.workloads)} workloads)\n"
    )


def test_example_command_prints_a_spec_that_validates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(capsys, "spec", "example")
    assert (code, err) == (0, "")
    assert out == example_text()
    path = tmp_path / "mine.yaml"
    path.write_text(out, encoding="utf-8")
    assert _run(capsys, "spec", "validate", str(path))[0] == 0


def test_validate_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "missing.yaml"
    code, out, err = _run(capsys, "spec", "validate", str(path))
    assert (code, out) == (2, "")
    (line,) = _issue_lines(err)
    assert line.startswith(f"{path}: cannot read the spec")


def test_validate_directory_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(capsys, "spec", "validate", str(tmp_path))
    assert (code, out) == (2, "")
    assert "is a directory" in err


def test_validate_without_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "spec", "validate")
    assert (code, out) == (2, "")
    assert "Missing argument 'FILE'" in err


# ---------------------------------------------------------------------------- schema


@pytest.fixture
def schema(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = _run(capsys, "spec", "schema")
    assert (code, err) == (0, "")
    doc: dict[str, Any] = json.loads(out)
    return doc


def _walk(node: object) -> list[dict[str, Any]]:
    """Every JSON object in the document."""
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for v in node.values():
            out += _walk(v)
    elif isinstance(node, list):
        for v in node:
            out += _walk(v)
    return out


def test_schema_is_a_json_schema_of_the_platform(schema: dict[str, Any]) -> None:
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    props = schema["properties"]
    assert {"apiVersion", "kind", "metadata", "pools", "tenants", "workloads"} <= set(props)
    assert props["apiVersion"]["const"] == "aiplat/v1alpha1"
    assert set(schema["required"]) == {"apiVersion", "kind", "metadata", "site", "pools", "tenants"}


def test_every_model_in_the_schema_forbids_extra_properties(schema: dict[str, Any]) -> None:
    models = [s for s in _walk(schema) if s.get("type") == "object" and "properties" in s]
    assert len(models) >= 30
    for s in models:
        assert s.get("additionalProperties") is False, s.get("title")


def test_schema_references_resolve_and_required_fields_exist(schema: dict[str, Any]) -> None:
    defs = schema["$defs"]
    refs = [s["$ref"] for s in _walk(schema) if "$ref" in s]
    assert refs
    for ref in refs:
        assert ref.startswith("#/$defs/")
        assert ref.removeprefix("#/$defs/") in defs
    for s in _walk(schema):
        if isinstance(s.get("required"), list):
            assert set(s["required"]) <= set(s["properties"])


def test_schema_uses_the_keys_users_write(schema: dict[str, Any]) -> None:
    names = {
        k for s in _walk(schema) if isinstance(s.get("properties"), dict) for k in s["properties"]
    }
    assert {"memoryGiB", "powerBudgetKW", "rateGbps", "migLayout", "lendingLimit"} <= names
    assert not [n for n in names if "_" in n]


# A small JSON Schema validator: enough of draft 2020-12 for what pydantic emits here.
def _errors(value: Any, s: dict[str, Any], root: dict[str, Any], at: str = "") -> list[str]:
    if "$ref" in s:
        return _errors(value, root["$defs"][s["$ref"].removeprefix("#/$defs/")], root, at)
    if "anyOf" in s:
        branches = [_errors(value, b, root, at) for b in s["anyOf"]]
        return [] if any(not b for b in branches) else [f"{at}: no anyOf branch: {branches}"]
    if "const" in s and value != s["const"]:
        return [f"{at}: {value!r} is not {s['const']!r}"]
    if "enum" in s and value not in s["enum"]:
        return [f"{at}: {value!r} not in {s['enum']}"]
    types: dict[str, type | tuple[type, ...]] = {
        "object": dict,
        "array": list,
        "string": str,
        "boolean": bool,
        "null": type(None),
        "integer": int,
        "number": (int, float),
    }
    t = s.get("type")
    if t and (
        not isinstance(value, types[t]) or (t in ("integer", "number") and isinstance(value, bool))
    ):
        return [f"{at}: {value!r} is not {t}"]
    out: list[str] = []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for key, ok in (
            ("minimum", value >= s.get("minimum", value)),
            ("maximum", value <= s.get("maximum", value)),
            ("exclusiveMinimum", "exclusiveMinimum" not in s or value > s["exclusiveMinimum"]),
            ("exclusiveMaximum", "exclusiveMaximum" not in s or value < s["exclusiveMaximum"]),
        ):
            if not ok:
                out.append(f"{at}: {value} breaks {key}")
    if isinstance(value, str):
        if "pattern" in s and not re.search(s["pattern"], value):
            out.append(f"{at}: {value!r} does not match {s['pattern']}")
        if len(value) > s.get("maxLength", len(value)) or len(value) < s.get("minLength", 0):
            out.append(f"{at}: {value!r} has the wrong length")
    if isinstance(value, list):
        if len(value) < s.get("minItems", 0):
            out.append(f"{at}: fewer than {s['minItems']} items")
        for i, item in enumerate(value):
            out += _errors(item, s.get("items", {}), root, f"{at}[{i}]")
    if isinstance(value, dict):
        props = s.get("properties", {})
        out += [f"{at}.{k}: required" for k in s.get("required", []) if k not in value]
        for k, v in value.items():
            if k in props:
                out += _errors(v, props[k], root, f"{at}.{k}")
                continue
            pattern = next((p for p in s.get("patternProperties", {}) if re.search(p, k)), None)
            if pattern is not None:
                out += _errors(v, s["patternProperties"][pattern], root, f"{at}.{k}")
            elif s.get("additionalProperties") is False:
                out.append(f"{at}.{k}: not allowed")
            elif isinstance(s.get("additionalProperties"), dict):
                out += _errors(v, s["additionalProperties"], root, f"{at}.{k}")
    return out


def test_schema_accepts_the_example(schema: dict[str, Any]) -> None:
    # An editor using the schema must not flag the built-in example (e.g. `model: llama-3-8b`,
    # the shorthand for `model: {name: llama-3-8b}`).
    assert _errors(yaml.safe_load(example_text()), schema, schema) == []


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("typo_in_field", ".pools[0].node.cpuCore"),
        ("wrong_type", ".pools[0].node.memoryGiB"),
        ("negative_count", ".pools[0].count"),
        ("uppercase_name", ".pools[0].name"),
        ("wrong_api_version", ".apiVersion"),
        ("unknown_section", ".workload"),
    ],
)
def test_schema_rejects_what_the_loader_rejects(
    schema: dict[str, Any], name: str, where: str
) -> None:
    doc = yaml.safe_load((BROKEN / f"{name}.yaml").read_text(encoding="utf-8"))
    errors = _errors(doc, schema, schema)
    assert any(e.startswith(where) for e in errors), errors
