"""The shape every check relies on: before a rule follows ``spec.template.spec.containers``,
each field on the way is what the object's schema says (an object, a list, a string) and
the required ones are there. ``kube validate`` reports what is not (file, object, field
path) and skips its own rules on that object; ``kube lint`` refuses the tree (an
``InputError``) rather than reason on part of it. Either way no check meets ``metadata: 5``.

Only the schema's types and required fields are checked, not enums, patterns or unknown
fields (``kube validate``'s strict check), so it is cheap and accepts what an API server
stores. The schema: the built-in kind's for the Kubernetes version; a custom resource's
CRD; for an API version neither knows, the same group's kind at another version;
and ObjectMeta for every object's metadata (a CRD's schema leaves it open).

Nulls are dropped first (``defaults.without_nulls``): the API server reads a null field as
unset (``creationTimestamp: null`` is in most generated YAML), so the checks read the same;
``readable`` also sets the defaults the server and the webhooks set (``defaults.stored``), so
lint reads an object as the cluster stores it, as ``kube validate`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from aiplat.errors import InputError
from aiplat.kube.crds import CrdIndex, packaged_crds
from aiplat.kube.defaults import stored, without_nulls
from aiplat.kube.objects import ref
from aiplat.kube.schemas import (
    OBJECT_META,
    SUPPORTED_VERSIONS,
    builtin_api_versions,
    builtin_schema,
    definitions,
    full_group,
    schema_label,
    schema_version,
)

Obj = dict[str, Any]
Problem = tuple[str, str]  # (field path, what is wrong)
LINT_VERSION = SUPPORTED_VERSIONS[0]
"""The schemas lint checks shapes with: field types do not change between minor versions."""
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_TYPE_WORDS = {"object": "an object", "array": "a list", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "true or false"}
SHOWN = 5  # problems an InputError lists before "and N more"


class _Walker:
    """Checks a value against a schema's types and required fields (JSON Schema's type,
    required, properties, additionalProperties as a map's value schema, items, allOf,
    anyOf/oneOf as "some branch fits", $ref into the schema or Kubernetes' definitions)."""

    def __init__(self, root: Any, defs: Any = None) -> None:
        self.root, self.defs = root, defs

    def _resolve(self, schema: Any) -> Any:
        for _ in range(64):  # a reference to a reference; never a loop in these files
            target = schema.get("$ref") if isinstance(schema, dict) else None
            if not isinstance(target, str):
                return schema
            doc, _, pointer = target.partition("#")
            # The definitions file refers within itself ("#/$defs/..."), a kind's schema
            # into it by name; a CRD's schema has no references.
            node = self.defs if self.defs is not None and (
                doc.endswith("_definitions.json") or not doc) else self.root
            for part in pointer.strip("/").split("/") if pointer.strip("/") else []:
                key = part.replace("~1", "/").replace("~0", "~")
                node = node.get(key) if isinstance(node, dict) else None
            schema = node if isinstance(node, dict) else {}
        return schema

    def check(self, value: Any, schema: Any, path: str, out: list[Problem]) -> None:
        schema = self._resolve(schema)
        if not isinstance(schema, dict) or value is None:
            return
        types = schema.get("type")
        if types is not None:
            wanted = [t for t in (types if isinstance(types, list) else [types])
                      if isinstance(t, str) and t in _TYPES]
            if wanted and not any(_TYPES[t](value) for t in wanted):
                out.append((path, f"must be {_words(wanted)}, not {_describe(value)}"))
                return
        for sub in _list(schema, "allOf"):
            self.check(value, sub, path, out)
        for key in ("anyOf", "oneOf"):  # one branch that fits is enough for a shape
            branches = _list(schema, key)
            if branches and not any(self._fits(value, b, path) for b in branches):
                out.append((path, f"must be {self._branch_words(branches)}, not "
                                  f"{_describe(value)}"))
                return
        if isinstance(value, dict):
            self._object(value, schema, path, out)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                self.check(item, schema["items"], f"{path}[{i}]", out)

    def _object(self, value: Obj, schema: Obj, path: str, out: list[Problem]) -> None:
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties")
        for name in _list(schema, "required"):
            if isinstance(name, str) and name not in value:
                out.append((_join(path, name), "is required but missing"))
        for k, v in value.items():
            sub = props.get(k) if k in props else extra if isinstance(extra, dict) else None
            if sub is not None:
                self.check(v, sub, _join(path, str(k)), out)

    def _fits(self, value: Any, schema: Any, path: str) -> bool:
        found: list[Problem] = []
        self.check(value, schema, path, found)
        return not found

    def _branch_words(self, branches: list[Any]) -> str:
        types: list[str] = []
        for b in branches:
            r = self._resolve(b)
            t = r.get("type") if isinstance(r, dict) else None
            types += t if isinstance(t, list) else [t] if t else []
        return _words([t for t in types if t in _TYPE_WORDS]) or "another shape"


def _list(schema: Obj, key: str) -> list[Any]:
    """A keyword's list of schemas or names (a user's CRD may hold anything)."""
    v = schema.get(key)
    return v if isinstance(v, list) else []


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _words(types: list[str]) -> str:
    return " or ".join(dict.fromkeys(_TYPE_WORDS[t] for t in types if t in _TYPE_WORDS))


def _walker(api: str, kind: str, version: str, crds: CrdIndex) -> tuple[_Walker | None, bool]:
    """(walker, built in) for an object's schema; (None, False) when no schema has its
    kind."""
    found = _builtin(version, api, kind)
    if found is not None:
        return found, True
    # Another version of the same group's kind, never another group's: Volcano's
    # batch.volcano.sh Job is not batch/v1's Job (no schema here: not checked).
    group = api.rpartition("/")[0]
    s = crds.schema(api, kind)
    if s is None:
        same_kind = sorted(k for k in crds.schemas if k[0] == group and k[2] == kind)
        s = crds.schemas[same_kind[0]] if same_kind else None
    if s is not None:
        return _Walker(s), False
    label = schema_label(group)
    for other in builtin_api_versions(version).get(kind.lower(), ()):
        at, _, ver = other.rpartition("/")
        found = _builtin(version, f"{group}/{ver}" if group else ver, kind) \
            if at == label else None
        if found is not None:
            return found, True
    return None, False


@functools.cache
def _builtin(version: str, api: str, kind: str) -> _Walker | None:
    schema = builtin_schema(version, api, kind)
    return None if schema is None else _Walker(schema, _defs(version))


def _defs(version: str) -> Any:
    return definitions(schema_version(version)).contents


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return f"{type(value).__name__} {str(value)[:40]}"


def value_problems(value: Any, schema: Obj, path: str = "") -> list[Problem]:
    """Where ``value`` (nulls dropped) is not the shape a JSON schema gives: for documents
    no Kubernetes schema covers (Kueue's Configuration in its ConfigMap, lint's inventory).
    ``$ref`` to ``_definitions.json#/$defs/NAME`` reaches Kubernetes' own types."""
    found: list[Problem] = []
    _Walker(schema, _defs(LINT_VERSION)).check(without_nulls(value), schema, path, found)
    return list(dict.fromkeys(found))


def problems(o: Obj, version: str = LINT_VERSION, crds: CrdIndex | None = None
             ) -> list[Problem]:
    """Where ``o`` (nulls dropped) is not the shape its schema gives: (field path, what is
    wrong), e.g. ``("spec.template", "must be an object, not the string 'x'")``. ``crds``
    defaults to aiplat's packaged ones."""
    o = without_nulls(o)
    api, kind = o.get("apiVersion"), o.get("kind")
    bad = [(f, "must be a string") for f, v in (("apiVersion", api), ("kind", kind))
           if not isinstance(v, str) or not v]
    if bad:
        return bad
    assert isinstance(api, str) and isinstance(kind, str)
    walker, builtin = _walker(api, kind, version, crds or packaged_crds())
    found: list[Problem] = []
    if walker is not None:
        walker.check(o, walker.root, "", found)
    if not builtin and "metadata" in o:
        defs = _defs(version)
        _Walker(defs, defs).check(o["metadata"], defs["$defs"][OBJECT_META], "metadata", found)
    return list(dict.fromkeys(found))


def schema_known(o: Obj) -> bool:
    """Whether aiplat has a schema for ``o``'s kind (built in, or a CRD it packages); another
    kind is a custom resource whose effects (the pods its operator makes) aiplat cannot see."""
    walker, _ = _walker(str(o.get("apiVersion", "")), str(o.get("kind", "")), LINT_VERSION,
                        packaged_crds())
    return walker is not None


def foreign_kind(o: Obj, version: str = LINT_VERSION) -> tuple[str, ...]:
    """The API groups whose ``kind`` aiplat reads, when ``o`` has that kind's name in another
    group (Volcano's ``batch.volcano.sh`` Job is not batch/v1's; rules that go by kind must
    not read it as one); () for an object of one of those groups or of a kind aiplat knows
    in no group."""
    api, kind = str(o.get("apiVersion", "")), str(o.get("kind", ""))
    homes = {full_group(a.rpartition("/")[0])
             for a in builtin_api_versions(version).get(kind.lower(), ())}
    homes |= {g for g, k in packaged_crds().sources if k == kind}
    group = api.rpartition("/")[0]
    return () if not homes or group in homes else tuple(sorted(homes))


def readable(items: list[tuple[str, Obj]], version: str = LINT_VERSION) -> list[Obj]:
    """The objects of (file, object) pairs as the API server stores them (``defaults.stored``:
    nulls dropped, the CRD's and the webhooks' defaults set), or an ``InputError`` naming each
    file, object and field that is not the shape its schema gives."""
    crds = packaged_crds()
    objects = [(file, stored(o, crds) if isinstance(o, dict) else o) for file, o in items]
    bad = [(file, o, p, m) for file, o in objects for p, m in problems(o, version)]
    if bad:
        lines = [f"{file + ': ' if file else ''}{ref(o)} at {p}: {m}"
                 for file, o, p, m in bad[:SHOWN]]
        more = f"; and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
        raise InputError("; ".join(lines) + more + " (fix: give each field the type its "
                         "schema has, e.g. `kubectl explain KIND.FIELD`; `aiplat kube "
                         "validate DIR` lists every schema error)")
    return [o for _f, o in objects]
