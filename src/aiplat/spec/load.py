"""Load a platform spec from YAML with errors that name file, line, column, field and a fix.

PyYAML's ``safe_load`` forgets where values came from, so the document is composed into
nodes first: one walk records the position of every key and value by its field path (and
rejects duplicate keys, which PyYAML would silently overwrite), the same walk builds the
plain data, and pydantic validates it. A validation error's ``loc`` is then mapped back to
the closest recorded position. Unknown keys get a "did you mean" from the fields the model at
that path accepts. Catalog references are checked afterwards (``aiplat.spec.refs``) and
reported the same way, so the user sees every problem of one file in one run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import types
import typing
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from aiplat.catalog import Catalog, load_catalog
from aiplat.catalog.models import CatalogOverlay
from aiplat.errors import InputError, SpecError, SpecIssue
from aiplat.inputs import read_bytes
from aiplat.spec.models import PATTERN_HINTS, Platform, SpecValueError
from aiplat.spec.refs import check_references

Loc = tuple[str | int, ...]
Positions = dict[Loc, tuple[int, int]]

MAX_SPEC_BYTES = 16 * 1024 * 1024
"""A spec is a few KiB; anything past this is not one (``/dev/zero``, a disk image)."""

EXAMPLE = "example"
"""Name of the built-in example platform (``aiplat plan`` without a SPEC)."""


def example_text() -> str:
    return (resources.files("aiplat") / "examples" / "platform.yaml").read_text(encoding="utf-8")


def load_platform(path: str | Path, catalog: Catalog | None = None) -> Platform:
    """Read and validate the spec at ``path``; raise ``SpecError`` listing every problem."""
    p = Path(path)
    try:
        data = read_bytes(p, "a platform spec", max_bytes=MAX_SPEC_BYTES)
    except InputError as e:
        problem = str(e).removeprefix(f"{p}: ").split(" (fix: ")[0]
        raise SpecError([SpecIssue(str(p), None, None, "", f"cannot read the spec: {problem}",
                                   "give the path of a readable UTF-8 YAML file")]) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        byte = f"0x{data[e.start]:02x}"
        raise SpecError([SpecIssue(str(p), line, col, "",
                                   f"cannot read the spec: not UTF-8 text (byte {byte})",
                                   "a spec is UTF-8 YAML: convert it (iconv -t UTF-8) or "
                                   "remove the byte")]) from None
    return parse_platform(text, str(p), catalog)


def load_catalog_overlay(path: str | Path) -> CatalogOverlay:
    """A ``--catalog FILE``: read and checked as a spec is (every problem with its line,
    field and fix, exit 2), in the packaged catalog's form (``gpus``, ``models``,
    ``nodeTypes``)."""
    p = Path(path)
    try:
        text = read_bytes(p, "a catalog file", max_bytes=MAX_SPEC_BYTES).decode("utf-8")
    except InputError as e:
        problem = str(e).removeprefix(f"{p}: ").split(" (fix: ")[0]
        raise SpecError([SpecIssue(str(p), None, None, "", f"cannot read the catalog: {problem}",
                                   "give the path of a readable UTF-8 YAML file")]) from None
    except UnicodeDecodeError:
        raise SpecError([SpecIssue(str(p), None, None, "", "cannot read the catalog: not "
                                   "UTF-8 text", "convert it to UTF-8")]) from None
    data, positions = _compose(text, str(p))
    try:
        return CatalogOverlay.model_validate(data)
    except ValidationError as e:
        raise SpecError(_issues(e.errors(), str(p), positions, CatalogOverlay)) from None


def parse_platform(text: str, filename: str, catalog: Catalog | None = None) -> Platform:
    """Validate spec ``text`` (``filename`` is only used in messages)."""
    try:
        return _parse(text, filename, catalog)
    except SpecError as e:
        # Messages quote what the user wrote; a newline there would break one-line-per-issue.
        raise SpecError([_one_line(i) for i in e.issues]) from None


def _one_line(issue: SpecIssue) -> SpecIssue:
    def clean(s: str) -> str:
        return s if s.isprintable() else "".join(
            c if c.isprintable() else ascii(c)[1:-1] for c in s
        )

    return dataclasses.replace(
        issue, path=clean(issue.path), message=clean(issue.message), hint=clean(issue.hint)
    )


def _parse(text: str, filename: str, catalog: Catalog | None) -> Platform:
    data, positions = _compose(text, filename)
    try:
        platform = Platform.model_validate(data)
    except ValidationError as e:
        raise SpecError(_issues(e.errors(), filename, positions)) from None
    problems = check_references(platform, catalog or load_catalog())
    if problems:
        raise SpecError(
            [
                SpecIssue(filename, *_position(loc, positions), _dotted(loc), msg, hint)
                for loc, msg, hint in problems
            ]
        )
    return platform


# ---------------------------------------------------------------------------- YAML with positions


_MERGE = "tag:yaml.org,2002:merge"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's composer when PyYAML was built with it: the same nodes and marks, ~10x faster."""

_MAX_VALUES = 100_000
"""Aliases can make a small file expand without bound ("billion laughs"); a spec never needs
anywhere near this many values."""


def _compose_nodes(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=_LOADER)
    except (yaml.YAMLError, UnicodeError):  # libyaml cannot even encode lone surrogates
        if _LOADER is yaml.SafeLoader:
            raise
        # libyaml's messages are terse; PyYAML's own parser names the offending character
        # and where an unclosed bracket opened. Errors are rare, so parse again for them.
        return yaml.compose(text, Loader=yaml.SafeLoader)


def _compose(text: str, filename: str) -> tuple[Any, Positions]:
    positions: Positions = {}
    try:
        root = _compose_nodes(text)
        data = None if root is None else _Builder(filename, positions).build(root, ())
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        msg = f"not valid YAML: {e.problem}"
        if e.context and e.context_mark and e.context_mark.line != getattr(mark, "line", None):
            # An unclosed bracket or quote is noticed lines later: say where it started.
            msg += f" ({e.context} at line {e.context_mark.line + 1})"
        hint = "fix the YAML syntax at this position"
        if e.problem == "but found another document":
            hint = "one spec per file: remove the '---' and what follows, or split the file"
        raise SpecError([SpecIssue(filename, line, col, "", msg, hint)]) from None
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1
        col = e.position - text.rfind("\n", 0, e.position)
        code = e.character if isinstance(e.character, int) else ord(e.character)
        raise SpecError([SpecIssue(filename, line, col, "",
                                   f"not valid YAML: character U+{code:04X} is not allowed",
                                   "remove it; a spec is UTF-8 text")]) from None
    except yaml.YAMLError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SpecError([SpecIssue(filename, None, None, "", f"not valid YAML: {first}",
                                   "fix the YAML syntax")]) from None
    except RecursionError:
        raise SpecError([SpecIssue(filename, None, None, "", "the YAML is nested too deeply",
                                   "a spec needs only a few levels of nesting")]) from None
    if root is None:
        raise SpecError([SpecIssue(filename, 1, 1, "", "the spec is empty",
                                   "start from `aiplat spec example`")])
    if not isinstance(data, dict):
        raise SpecError([SpecIssue(filename, root.start_mark.line + 1, 1, "",
                                   "the spec must be a YAML mapping",
                                   "start with `apiVersion: aiplat/v1alpha1`")])
    return data, positions


class _Builder:
    """Turn composed nodes into plain data, recording each value's position by field path.

    Keys are the text the user wrote (as sigs.k8s.io/yaml does: ``1:`` is the key "1"), merge
    keys (``<<: *base``) are applied, and aliases that contain themselves or expand beyond
    ``_MAX_VALUES`` are rejected instead of recursing or growing without bound.
    """

    def __init__(self, filename: str, positions: Positions) -> None:
        self.filename = filename
        self.positions = positions
        self.constructor = yaml.constructor.SafeConstructor()
        self.active: set[int] = set()
        self.values = 0

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        self.positions.setdefault(loc, (node.start_mark.line + 1, node.start_mark.column + 1))
        self.values += 1
        if self.values > _MAX_VALUES:
            raise _at(self.filename, node, loc,
                      f"the document expands to more than {_MAX_VALUES} values",
                      "aliases (*name) repeat what they point at; write the values out")
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, loc)
        with self._inside(node, loc):
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, loc)
            assert isinstance(node, yaml.SequenceNode)
            return [self.build(item, (*loc, i)) for i, item in enumerate(node.value)]

    @contextlib.contextmanager
    def _inside(self, node: yaml.Node, loc: Loc) -> Iterator[None]:
        """Mark ``node`` as being built; meeting it again inside itself is an alias cycle."""
        if id(node) in self.active:
            raise _at(self.filename, node, loc, "an alias refers to a value that contains it",
                      "aliases (*name) must point at a value defined before and outside them")
        self.active.add(id(node))
        try:
            yield
        finally:
            self.active.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[str, Any]:
        out: dict[str, Any] = {}
        own: set[str] = set()
        for key_node, value_node, merged in self._pairs(node, loc):
            if not isinstance(key_node, yaml.ScalarNode):
                raise _at(self.filename, key_node, loc, "a mapping key must be a scalar",
                          "use a plain name as the key")
            key = key_node.value
            if not merged:
                if key in own:
                    raise _at(self.filename, key_node, (*loc, key),
                              f"key '{key}' appears twice", "keep one of the two entries")
                own.add(key)
            # A key's own position is where errors about it (unknown field) point.
            self.positions[(*loc, key)] = (key_node.start_mark.line + 1,
                                           key_node.start_mark.column + 1)
            out[key] = self.build(value_node, (*loc, key))
        return out

    def _pairs(self, node: yaml.MappingNode, loc: Loc) -> list[tuple[yaml.Node, yaml.Node, bool]]:
        """The mapping's entries, merged ones first so the mapping's own entries win."""
        merged: list[tuple[yaml.Node, yaml.Node, bool]] = []
        own: list[tuple[yaml.Node, yaml.Node, bool]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE:
                own.append((key_node, value_node, False))
                continue
            seq = isinstance(value_node, yaml.SequenceNode)
            sources = value_node.value if seq else [value_node]
            # Earlier sources take precedence: add them last.
            for src in reversed(sources):
                if not isinstance(src, yaml.MappingNode):
                    raise _at(self.filename, src, loc, "'<<' merges only mappings",
                              "write '<<: *name' where &name marks a mapping")
                with self._inside(src, loc):
                    merged.extend((k, v, True) for k, v, _ in self._pairs(src, loc))
        return merged + own

    def _scalar(self, node: yaml.ScalarNode, loc: Loc) -> Any:
        if node.tag == _MERGE:  # a plain `<<` as a value, not as a key: just text
            return node.value
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as e:
            raise _at(self.filename, node, loc, f"unsupported YAML tag '{node.tag}'",
                      "remove the tag") from e
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as e:
            # e.g. `2024-13-45` (resolves as a date), `!!int x`, an int of 5000 digits
            kind = node.tag.rsplit(":", 1)[-1]
            raise _at(self.filename, node, loc,
                      f"'{_short(node.value)}' is not a valid {kind}",
                      "quote it to make it text, or correct the value") from e


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _at(filename: str, node: yaml.Node, loc: Loc, msg: str, hint: str = "") -> SpecError:
    line, col = node.start_mark.line + 1, node.start_mark.column + 1
    return SpecError([SpecIssue(filename, line, col, _dotted(loc), msg, hint)])


# ---------------------------------------------------------------------------- errors


def _position(loc: Loc, positions: Positions) -> tuple[int | None, int | None]:
    for n in range(len(loc), -1, -1):
        if loc[:n] in positions:
            return positions[loc[:n]]
    return None, None


def _dotted(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _clean_loc(loc: Sequence[str | int], positions: Positions) -> Loc:
    # pydantic inserts markers for dict keys and validator functions ("[key]",
    # "function-after[...]"); the user never wrote them, unless the document has that key.
    out: list[str | int] = []
    for p in loc:
        if isinstance(p, str) and "[" in p and (*out, p) not in positions:
            continue
        out.append(p)
    return tuple(out)


def _issues(errors: list[ErrorDetails], filename: str, positions: Positions,
            root: type[BaseModel] | None = None) -> list[SpecIssue]:
    issues = [_issue(err, filename, positions, root or Platform) for err in errors]
    # A misspelt required key is reported as unknown (with "did you mean") and as missing;
    # the second says nothing new, so drop it.
    meant = set()
    for err, issue in zip(errors, issues, strict=True):
        if err["type"] == "extra_forbidden" and issue.hint.startswith("did you mean '"):
            loc = _clean_loc(err["loc"], positions)
            meant.add(_dotted((*loc[:-1], issue.hint.split("'")[1])))
    return [i for i in issues if not (i.message == "required field is missing" and i.path in meant)]


def _issue(err: ErrorDetails, filename: str, positions: Positions,
           root: type[BaseModel]) -> SpecIssue:
    loc = _clean_loc(err["loc"], positions)
    kind = err["type"]
    msg = err["msg"].removeprefix("Value error, ")
    hint = ""
    ctx = err.get("ctx") or {}
    if isinstance(ctx.get("error"), SpecValueError):
        exc = ctx["error"]
        loc, hint = (*loc, *exc.at), exc.hint
    elif kind == "extra_forbidden" and loc:
        allowed = _fields_at(loc[:-1], root)
        msg = f"unknown field '{loc[-1]}'"
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
        if close:
            hint = f"did you mean '{close[0]}'?"
        elif allowed:
            hint = "remove it; allowed here: " + ", ".join(allowed)
    elif kind == "missing":
        msg = "required field is missing"
        hint = f"add '{loc[-1]}'" if loc else ""
    elif kind in _BOUND_ERRORS:
        op, bound = next(((_OPS[k], v) for k, v in ctx.items() if k in _OPS), ("in", "range"))
        msg = f"{err['input']!r} is out of range"
        hint = f"use a value {op} {bound}"
    elif kind == "finite_number":
        hint = "use a finite number (not .inf or .nan)"
    elif kind == "string_pattern_mismatch":
        hint = _pattern_hint(err)
        what = PATTERN_HINTS.get(str(ctx.get("pattern", "")), ("a valid value here", ""))[0]
        msg = f"{err['input']!r} is not {what}"
    elif kind in ("literal_error", "enum"):
        msg = f"'{err['input']}' is not allowed"
        expected = (err.get("ctx") or {}).get("expected", "")
        hint = f"use one of {expected}" if expected else ""
    elif kind.endswith(("_parsing", "_type", "_from_float")):
        expected = next((v for k, v in _EXPECTED.items() if kind.startswith(k)), "another type")
        hint = f"give {expected}, not {_short(repr(err['input']))}"
    elif kind == "too_short":
        hint = "add at least one entry"
    elif kind == "ip_v4_network":
        hint = "give a network like 10.0.0.0/24 (host bits zero)"
    elif kind in ("string_too_long", "too_long"):
        hint = f"use at most {ctx.get('max_length', 'fewer')} characters or entries"
    line, col = _position(loc, positions)
    return SpecIssue(filename, line, col, _dotted(loc), msg, hint)


_EXPECTED = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "string": "text (quote it: \"...\")",
    "list": "a list (- item)",
    "dict": "a mapping (key: value)",
    "model": "a mapping (key: value)",
}
_BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
_OPS = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}


def _pattern_hint(err: ErrorDetails) -> str:
    pattern = str((err.get("ctx") or {}).get("pattern", ""))
    if pattern.startswith("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"):
        return "use lowercase letters, digits and '-' (a DNS label of at most 63 characters)"
    if pattern in PATTERN_HINTS:
        return PATTERN_HINTS[pattern][1]
    return f"must match {pattern}"


def _fields_at(loc: Loc, root: type[BaseModel]) -> list[str]:
    """The keys the model at ``loc`` accepts (by alias), walking ``root``'s field types."""
    ann: Any = root
    for part in loc:
        ann = _step(ann, part)
        if ann is None:
            return []
    ann = _unwrap(ann)
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return sorted(f.alias or name for name, f in ann.model_fields.items())
    return []


def _unwrap(ann: Any) -> Any:
    """Strip ``Annotated`` and ``X | None`` down to the one type the user wrote."""
    while True:
        origin = typing.get_origin(ann)
        if origin is typing.Annotated:
            ann = typing.get_args(ann)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(ann) if a is not type(None)]
            if len(args) == 1:
                ann = args[0]
                continue
        return ann


def _step(ann: Any, part: str | int) -> Any:
    ann = _unwrap(ann)
    origin = typing.get_origin(ann)
    if origin is list and isinstance(part, int):
        return typing.get_args(ann)[0]
    if origin is dict and isinstance(part, str):
        return typing.get_args(ann)[1]
    if isinstance(ann, type) and issubclass(ann, BaseModel) and isinstance(part, str):
        for name, f in ann.model_fields.items():
            if part in (f.alias, name):
                return f.annotation
    return None
