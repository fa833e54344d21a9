"""Decode a CDI spec file the way the reference loader does, before any rule runs.

The reference (``tags.cncf.io/container-device-interface`` v1.1.x, ``pkg/cdi/spec.go``
``ParseSpec``) decodes every file, ``.json`` or ``.yaml``, with ``go.yaml.in/yaml/v3`` and
``KnownFields(true)`` straight into the typed structs of ``specs-go/config.go``. What a file
*means* therefore depends on the target type, not on YAML alone: ``name: 0`` is the string
``"0"``, ``major: 0x10`` is 16, ``enableMonitoring: yes`` is true, ``env: [~]`` is an empty
list, a duplicate key or a field in another case is an error. PyYAML (YAML 1.1, untyped)
gets each of those differently, so this module composes the node graph with PyYAML and
decodes it against a small type table with yaml.v3's rules (``decode.go`` ``scalar``/``null``,
``resolve.go`` ``resolve``), keeping every error with its line as the reference would.

The result is plain data in Go's terms: a struct is a dict holding the keys present (null
scalars at their zero value, null lists/maps/pointers left out), a null entry of a pointer
list is ``None``. Pure: text in, data and errors out.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from aiplat.errors import InputError

MAX_INT64 = 2**63 - 1
MAX_UINT64 = 2**64 - 1
MAX_UINT32 = 2**32 - 1

# ---------------------------------------------------------------------------- types

Str, Int64, Int, Uint32, Bool = "string", "int64", "int", "uint32", "bool"


@dataclass(frozen=True)
class ListOf:
    item: object


@dataclass(frozen=True)
class Ptr:
    to: object


@dataclass(frozen=True)
class StrMap:
    pass


@dataclass(frozen=True)
class Struct:
    name: str
    fields: dict[str, object]


# specs-go/config.go (v1.1.1), field for field
NODE = Struct("specs.DeviceNode", {
    "path": Str, "hostPath": Str, "type": Str, "major": Int64, "minor": Int64,
    "fileMode": Ptr(Uint32), "permissions": Str, "uid": Ptr(Uint32), "gid": Ptr(Uint32)})
MOUNT = Struct("specs.Mount", {"hostPath": Str, "containerPath": Str, "options": ListOf(Str),
                               "type": Str})
HOOK = Struct("specs.Hook", {"hookName": Str, "path": Str, "args": ListOf(Str),
                             "env": ListOf(Str), "timeout": Ptr(Int)})
RDT = Struct("specs.IntelRdt", {"closID": Str, "l3CacheSchema": Str, "memBwSchema": Str,
                                "schemata": ListOf(Str), "enableMonitoring": Bool})
NET = Struct("specs.LinuxNetDevice", {"hostInterfaceName": Str, "name": Str})
EDITS = Struct("specs.ContainerEdits", {
    "env": ListOf(Str), "deviceNodes": ListOf(Ptr(NODE)), "netDevices": ListOf(Ptr(NET)),
    "hooks": ListOf(Ptr(HOOK)), "mounts": ListOf(Ptr(MOUNT)), "intelRdt": Ptr(RDT),
    "additionalGids": ListOf(Uint32)})
DEVICE = Struct("specs.Device", {"name": Str, "annotations": StrMap(), "containerEdits": EDITS})
SPEC = Struct("specs.Spec", {"cdiVersion": Str, "kind": Str, "annotations": StrMap(),
                             "devices": ListOf(DEVICE), "containerEdits": EDITS})

# ---------------------------------------------------------------------------- scalars

_BOOLS = {**dict.fromkeys(("true", "True", "TRUE"), True),
          **dict.fromkeys(("false", "False", "FALSE"), False)}
_NULLS = ("", "~", "null", "Null", "NULL")
_SPECIAL_FLOATS = {**dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
                   **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
                   **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf)}
# Go's strconv.ParseInt(s, 0, 64) literal forms, and yaml.v3's yamlStyleFloat
_GO_INT = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_PLAIN = "!plain"  # the tag our resolver gives untagged plain scalars


def _go_int(s: str) -> int | None:
    m = _GO_INT.fullmatch(s)
    if not m:
        return None
    sign, body = m.groups()
    if body[:2] in ("0x", "0X", "0o", "0O", "0b", "0B"):
        v = int(body[2:], {"x": 16, "o": 8, "b": 2}[body[1].lower()])
    else:
        v = int(body, 8) if len(body) > 1 and body[0] == "0" else int(body)
    return -v if sign == "-" else v


def resolve_plain(text: str) -> tuple[str, Any]:
    """yaml.v3's ``resolve`` for an untagged plain scalar: (tag, value)."""
    if text in _NULLS:
        return "null", None
    if text in _BOOLS:
        return "bool", _BOOLS[text]
    if text in _SPECIAL_FLOATS:
        return "float", _SPECIAL_FLOATS[text]
    if text == "<<":
        return "merge", text
    head = text[0]
    if head == "." and _DOT_FLOAT.fullmatch(text):
        return "float", float(text)
    if head in "+-0123456789":
        plain = text.replace("_", "")
        v = _go_int(plain)
        if v is not None and -MAX_INT64 - 1 <= v <= MAX_INT64:
            return "int", v
        if v is not None and plain[0] not in "+-" and v <= MAX_UINT64:
            return "uint", v
        if _YAML_FLOAT.fullmatch(plain):
            return "float", float(plain)
    return "str", text


class DecodeError(InputError):
    """YAML that the CDI loader's decoder would refuse (the message says where)."""


def _scalar(n: ScalarNode) -> tuple[str, Any]:
    """The node's resolved (tag, value); quoted, literal and folded scalars are strings."""
    if n.tag == _PLAIN:
        return resolve_plain(n.value)
    if n.tag == "tag:yaml.org,2002:binary":
        try:
            return "binary", base64.b64decode(n.value, validate=False).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            raise DecodeError("!!binary value contains invalid base64 data") from None
    if n.tag in ("tag:yaml.org,2002:str", "!", None) or n.style:
        return "str", n.value
    short = n.tag.replace("tag:yaml.org,2002:", "!!")
    tag, value = resolve_plain(n.value) if n.value else ("null", 0)
    want = short.lstrip("!")
    if want in ("int", "float", "bool", "null") and tag != want and not (
            want == "float" and tag == "int"):
        raise DecodeError(f"cannot decode !!{tag} `{n.value}` as a {short}")
    if want == "float" and tag == "int":
        return want, float(value)
    return tag, value


# ---------------------------------------------------------------------------- decoding

_MISSING = object()  # the decoder leaves the target unset (Go: the zero value stays)


@dataclass
class _Decoder:
    errors: list[str] = field(default_factory=list)

    def fail(self, n: Node, msg: str) -> object:
        self.errors.append(f"line {n.start_mark.line + 1}: {msg}")
        return _MISSING

    def terror(self, n: Node, what: str, typ: object) -> object:
        shown = f" `{n.value}`" if isinstance(n, ScalarNode) else ""
        return self.fail(n, f"cannot unmarshal !!{what}{shown} into {_type_name(typ)}")

    def decode(self, n: Node, typ: object) -> object:
        if isinstance(typ, Ptr):
            if isinstance(n, ScalarNode) and _scalar_tag(n) == "null":
                return None
            return self.decode(n, typ.to)
        if isinstance(typ, Struct):
            return self.struct(n, typ)
        if isinstance(typ, ListOf):
            return self.sequence(n, typ)
        if isinstance(typ, StrMap):
            return self.strmap(n, typ)
        return self.scalar(n, typ)

    def scalar(self, n: Node, typ: object) -> object:
        if not isinstance(n, ScalarNode):
            return self.terror(n, _kind(n), typ)
        try:
            tag, v = _scalar(n)
        except DecodeError as e:
            return self.fail(n, str(e))
        if tag == "null":
            return _MISSING
        convert: Callable[[str, Any, str], object] = _CONVERT[str(typ)]
        out = convert(tag, v, n.value)
        return self.terror(n, tag, typ) if out is _MISSING else out

    def sequence(self, n: Node, typ: ListOf) -> object:
        if isinstance(n, ScalarNode) and _scalar_tag(n) == "null":
            return _MISSING
        if not isinstance(n, SequenceNode):
            return self.terror(n, _kind(n), typ)
        out = []
        for item in n.value:
            v = self.decode(item, typ.item)
            if v is not _MISSING:  # yaml.v3 drops entries it could not set
                out.append(v)
        return out

    def pairs(self, n: MappingNode) -> list[tuple[Node, Node]]:
        """The mapping's pairs with ``<<`` merges expanded; duplicate keys are errors."""
        seen: dict[str, int] = {}
        out: list[tuple[Node, Node]] = []
        for k, v in n.value:
            if isinstance(k, ScalarNode):
                # yaml.v3 compares the keys' text, whatever their tag or quoting
                if k.value in seen:
                    self.fail(k, f'mapping key "{k.value}" already defined at line '
                                 f'{seen[k.value]}')
                    continue
                seen[k.value] = k.start_mark.line + 1
                if k.tag == _PLAIN and k.value == "<<":
                    for m in v.value if isinstance(v, SequenceNode) else [v]:
                        if isinstance(m, MappingNode):
                            out.extend(self.pairs(m))
                        else:
                            self.fail(m, "map merge requires map or sequence of maps as the "
                                         "value")
                    continue
            out.append((k, v))
        return out

    def strmap(self, n: Node, typ: StrMap) -> object:
        if isinstance(n, ScalarNode) and _scalar_tag(n) == "null":
            return _MISSING
        if not isinstance(n, MappingNode):
            return self.terror(n, _kind(n), typ)
        out: dict[str, str] = {}
        for k, v in self.pairs(n):
            key = self.scalar(k, Str)
            if key is _MISSING:
                continue
            val = self.scalar(v, Str)
            out[str(key)] = "" if val is _MISSING else str(val)
        return out

    def struct(self, n: Node, typ: Struct) -> object:
        if isinstance(n, ScalarNode) and _scalar_tag(n) == "null":
            return _MISSING  # the zero struct; dropped from a list
        if not isinstance(n, MappingNode):
            return self.terror(n, _kind(n), typ)
        out: dict[str, Any] = {}
        for k, v in self.pairs(n):
            key = self.scalar(k, Str)
            if key is _MISSING:
                continue
            ft = typ.fields.get(str(key))
            if ft is None:
                near = [f for f in typ.fields if f.lower() == str(key).lower()]
                hint = f" (did you mean '{near[0]}'? names are case-sensitive)" if near else ""
                self.fail(k, f"field {key} not found in type {typ.name}{hint}")
                continue
            val = self.decode(v, ft)
            if val is not _MISSING:
                out[str(key)] = val
            elif isinstance(ft, str) and ft in _ZERO:
                out[str(key)] = _ZERO[ft]
        return out


_ZERO: dict[object, object] = {Str: "", Int64: 0, Int: 0, Uint32: 0, Bool: False}


def _to_int(tag: str, v: Any, _t: str, bits: int = 64) -> object:
    if tag == "int":
        return v
    if tag == "float" and not math.isnan(v) and v <= MAX_INT64:
        # Go converts an out-of-range float to MinInt64 on amd64
        return -MAX_INT64 - 1 if math.isinf(v) or v < -2**63 or v >= 2**63 else math.trunc(v)
    return _MISSING


def _to_uint32(tag: str, v: Any, _t: str) -> object:
    if tag in ("int", "uint") and 0 <= v <= MAX_UINT32:
        return v
    if tag == "float" and math.isfinite(v) and 0 <= math.trunc(v) <= MAX_UINT32:
        return math.trunc(v)
    return _MISSING


_YES = {"y", "Y", "yes", "Yes", "YES", "on", "On", "ON"}
_NO = {"n", "N", "no", "No", "NO", "off", "Off", "OFF"}


def _to_bool(tag: str, v: Any, _t: str) -> object:
    if tag == "bool":
        return v
    if tag == "str" and (v in _YES or v in _NO):  # yaml.v3 keeps YAML 1.1 words for bool
        return v in _YES
    return _MISSING


def _to_str(tag: str, v: Any, text: str) -> object:
    return v if tag == "binary" else text


_CONVERT: dict[str, Callable[[str, Any, str], object]] = {
    Str: _to_str, Int64: _to_int, Int: _to_int, Uint32: _to_uint32, Bool: _to_bool}


def _kind(n: Node) -> str:
    return "map" if isinstance(n, MappingNode) else "seq" if isinstance(n, SequenceNode) \
        else (_scalar(n)[0] if isinstance(n, ScalarNode) else "node")


def _scalar_tag(n: ScalarNode) -> str:
    try:
        return _scalar(n)[0]
    except DecodeError:
        return "str"


def _type_name(typ: object) -> str:
    if isinstance(typ, Struct):
        return typ.name
    if isinstance(typ, ListOf):
        return f"[]{_type_name(typ.item)}"
    if isinstance(typ, Ptr):
        return f"*{_type_name(typ.to)}"
    if isinstance(typ, StrMap):
        return "map[string]string"
    return str(typ)


class _Resolver(yaml.resolver.BaseResolver):
    """Tags untagged plain scalars ``!plain`` (resolved later, by target type)."""

    def resolve(self, kind: type, value: Any, implicit: Any) -> str:
        if kind is ScalarNode and implicit[0]:
            return _PLAIN
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call,no-any-return]


_CParser: Any = getattr(yaml, "CParser", None)  # libyaml: composes ~10x faster

if _CParser is not None:
    class _Loader(_CParser, _Resolver):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            _Resolver.__init__(self)
else:  # pragma: no cover - PyYAML built without libyaml
    class _Loader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser,  # type: ignore[no-redef]
                  yaml.composer.Composer, _Resolver):
        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            _Resolver.__init__(self)


@dataclass(frozen=True)
class Decoded:
    doc: dict[str, Any] | None  # None: nothing the loader could use
    errors: tuple[str, ...]
    # The 1-based line where a second document starts (None: none): the loader never reads
    # it, so the devices it names do not exist for the runtime.
    ignored_from: int | None = None


TOO_DEEP = "YAML nested too deeply to decode (a CDI spec is a few levels deep)"


def decode_spec(text: str) -> Decoded:
    """The first YAML document of ``text`` decoded into ``specs.Spec`` (later documents
    are ignored, as ``yaml.Decoder.Decode`` reads one; where the second starts is kept so
    the caller can say so)."""
    try:
        # The reader checks the characters as it is built: a control character fails here.
        loader = _Loader(text)
    except yaml.YAMLError as e:
        return Decoded(None, (f"YAML syntax: {e}".replace("\n", " "),))
    try:
        if not loader.check_node():
            return Decoded(None, ("EOF: no YAML document",))
        node = loader.get_node()
        ignored_from = _next_document(loader)
    except yaml.YAMLError as e:
        return Decoded(None, (f"YAML syntax: {e}".replace("\n", " "),))
    except RecursionError:
        return Decoded(None, (TOO_DEEP,))
    finally:
        loader.dispose()
    if node is None or (isinstance(node, ScalarNode) and _scalar_tag(node) == "null"):
        return Decoded(None, ("no Spec data",))
    d = _Decoder()
    try:
        out = d.decode(node, SPEC)
    except RecursionError:
        return Decoded(None, (TOO_DEEP,))
    doc = out if isinstance(out, dict) else None
    return Decoded(doc, tuple(d.errors), ignored_from)


def _next_document(loader: Any) -> int | None:
    """The line where a document after the first holds something, if one does. yaml.v3's
    Decode stops at the first, so what follows is not even parsed by the loader: a syntax
    error there is still "a second document", not a failure of the first. Empty documents
    (the trailing ``---`` helm and kustomize print) hold no devices."""
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None and not (isinstance(node, ScalarNode)
                                         and _scalar_tag(node) == "null"):
                return int(node.start_mark.line) + 1
    except yaml.MarkedYAMLError as e:  # something follows that is not even YAML
        mark = e.problem_mark or e.context_mark
        return int(mark.line) + 1 if mark is not None else None
    except (yaml.YAMLError, RecursionError):
        return None
    return None
    return None
