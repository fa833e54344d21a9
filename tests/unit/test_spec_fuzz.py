"""Property tests: whatever the input, the loader returns a Platform or raises SpecError.

Never a traceback, never an issue without a location: every issue names a field path, or is a
whole-document problem (YAML syntax, empty, not a mapping) with a line. Budgets are small and
derandomized so CI runs the same examples every time.
"""

from __future__ import annotations

import contextlib
import copy
import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiplat.cli.main import main
from aiplat.errors import SpecError, SpecIssue
from aiplat.spec import Platform, example_text, parse_platform

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

EXAMPLE_TEXT = example_text()
EXAMPLE: dict[str, Any] = yaml.safe_load(EXAMPLE_TEXT)


def _paths(node: object, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _get(doc: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _dump(doc: object) -> str:
    # libyaml's emitter when present: the same YAML, and it keeps the budget for parsing.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(doc, Dumper=dumper, allow_unicode=True, sort_keys=False)


PATHS = _paths(EXAMPLE)
# Keys of the spec, so random documents reach past the first level of validation.
SPEC_KEYS = sorted({part for path in PATHS for part in path if isinstance(part, str)})

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(["aiplat/v1alpha1", "Platform", "h100", "H100-SXM-80GB", "mig", "3g.40gb"])
)
keys = st.sampled_from(SPEC_KEYS) | st.text(max_size=12)
documents = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
    max_leaves=30,
)


def _check(text: str, filename: str = "fuzz.yaml") -> Platform | list[SpecIssue]:
    """Parse ``text``; assert the error contract when it fails; return what came out."""
    try:
        return parse_platform(text, filename)
    except SpecError as e:
        assert e.issues, "a SpecError must carry at least one issue"
        n_lines = text.count("\n") + 1
        for issue in e.issues:
            assert issue.file == filename
            assert issue.message.strip()
            line = str(issue)
            assert "\n" not in line and "\r" not in line, line
            assert line.startswith(filename)
            if issue.line is not None:
                assert 1 <= issue.line <= n_lines + 1, (issue, n_lines)
                assert issue.column is not None and issue.column >= 1
            # Located: a field path, or a whole-document problem with a line.
            assert issue.path or issue.line is not None, issue
        return e.issues


# ---------------------------------------------------------------------------- random input


@FUZZ
@given(documents)
def test_random_yaml_data_never_crashes(data: object) -> None:
    _check(_dump(data))


@FUZZ
@given(st.dictionaries(keys, documents, max_size=8))
def test_random_mapping_with_spec_header_never_crashes(body: dict[str, object]) -> None:
    doc = {"apiVersion": "aiplat/v1alpha1", "kind": "Platform", **body}
    result = _check(_dump(doc))
    assert isinstance(result, list)  # no random body makes a valid platform


@FUZZ
@given(st.text(max_size=300))
def test_random_text_never_crashes(text: str) -> None:
    _check(text)


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("ab:-[]{},&*!|>'\"#\n\t ?<.0")), max_size=120))
def test_yaml_punctuation_soup_never_crashes(text: str) -> None:
    # Anchors, aliases, merge keys, tags, flow and block collections in random order.
    _check(text)


# ---------------------------------------------------------------------------- mutated example


MAPPING_KEYS = [p for p in PATHS if isinstance(p[-1], str)]
LIST_ITEMS = [p for p in PATHS if isinstance(p[-1], int)]
SCALARS = [p for p in PATHS if not isinstance(_get(EXAMPLE, p), (dict, list))]


@st.composite
def mutated_examples(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(EXAMPLE)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        kind = draw(st.sampled_from(["delete", "rename", "replace", "duplicate"]))
        paths = {
            "delete": MAPPING_KEYS,
            "rename": MAPPING_KEYS,
            "replace": SCALARS,
            "duplicate": LIST_ITEMS,
        }[kind]
        path = draw(st.sampled_from(paths))
        try:
            parent = _get(doc, path[:-1])
            _ = parent[path[-1]]  # an earlier mutation may have removed it
        except (KeyError, IndexError, TypeError):
            continue
        last = path[-1]
        if kind == "delete":
            del parent[last]
        elif kind == "rename":
            new = draw(st.sampled_from([f"{last}s", str(last)[:-1], str(last).lower(), "x"]))
            parent[new] = parent.pop(last)
        elif kind == "replace":
            parent[last] = draw(scalars | st.lists(scalars, max_size=2))
        else:
            parent.insert(int(last), copy.deepcopy(parent[last]))
    return doc


@FUZZ
@given(mutated_examples())
def test_mutated_example_never_crashes_and_names_a_field(doc: dict[str, Any]) -> None:
    result = _check(_dump(doc))
    if isinstance(result, list):
        # The YAML is well-formed here, so every issue is about a field.
        assert all(i.path for i in result), result


@FUZZ
@given(st.integers(min_value=0, max_value=len(EXAMPLE_TEXT)))
def test_truncated_example_never_crashes(cut: int) -> None:
    _check(EXAMPLE_TEXT[:cut])


@FUZZ
@given(st.data())
def test_line_edits_of_the_example_never_crash(data: st.DataObject) -> None:
    lines = EXAMPLE_TEXT.splitlines(keepends=True)
    i = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
    op = data.draw(st.sampled_from(["drop", "double", "dedent", "indent", "garble"]))
    if op == "drop":
        lines[i] = ""
    elif op == "double":
        lines[i] = lines[i] * 2
    elif op == "dedent":
        lines[i] = lines[i].removeprefix("  ")
    elif op == "indent":
        lines[i] = "  " + lines[i]
    else:
        pos = data.draw(st.integers(min_value=0, max_value=len(lines[i])))
        junk = data.draw(st.text(alphabet=":-[]{},'\"#&*!x ", min_size=1, max_size=3))
        lines[i] = lines[i][:pos] + junk + lines[i][pos:]
    _check("".join(lines))


def test_the_mutation_strategy_reaches_both_outcomes() -> None:
    # Guards the properties above against testing nothing: some mutations stay valid, most not.
    outcomes: set[bool] = set()

    @settings(FUZZ, max_examples=40)
    @given(mutated_examples())
    def probe(doc: dict[str, Any]) -> None:
        outcomes.add(isinstance(_check(_dump(doc)), Platform))

    probe()
    assert outcomes == {True, False}


# ---------------------------------------------------------------------------- through the CLI


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-cli")


@settings(FUZZ, max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=mutated_examples(), cut=st.none() | st.integers(min_value=0, max_value=4000))
def test_cli_validate_exits_0_or_2(spec_dir: Path, doc: dict[str, Any], cut: int | None) -> None:
    text = _dump(doc)
    path = spec_dir / "spec.yaml"
    path.write_text(text if cut is None else text[:cut], encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["spec", "validate", str(path)])
    assert code in (0, 2)
    if code == 0:
        assert "valid" in out.getvalue()
        assert err.getvalue() == ""
    else:
        assert out.getvalue() == ""
        assert "Traceback" not in err.getvalue()
        assert f"{path}:" in err.getvalue()
