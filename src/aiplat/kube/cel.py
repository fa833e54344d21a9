"""CEL for DRA selectors, with the Kubernetes extensions cel-python lacks.

Kubernetes evaluates DeviceClass and claim selectors in an environment with one variable,
``device`` (``driver``, ``attributes[domain].name``, ``capacity[domain].name``), plus its
library functions. This module supplies the ones DRA selectors use:

- ``quantity(s)``, ``isQuantity(s)``; Quantity methods ``compareTo``, ``isGreaterThan``,
  ``isLessThan``, ``add``, ``sub``, ``asInteger``, ``asApproximateFloat``, ``isInteger``,
  ``sign``;
- ``semver(s)``, ``isSemver(s)``; Semver methods ``major``, ``minor``, ``patch``,
  ``compareTo``, ``isGreaterThan``, ``isLessThan``.

cel-python dispatches a method call ``x.f(y)`` to the function ``f(x, y)``, so a method shared
by both types (``compareTo``) dispatches on the receiver's type. ``check()`` is the static
part (parse, only known variables and functions, literal arguments of ``quantity()`` and
``semver()`` valid, size limit); ``matches()`` evaluates against one ResourceSlice device, so
lint can tell whether a selector matches any device a pool has.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from aiplat.errors import InputError
from aiplat.kube.celparser import environment
from aiplat.kube.quantity import QuantityError, parse_quantity

MAX_EXPRESSION_BYTES = 10 * 1024
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
# ``cel`` is the namespace of Kubernetes' ``cel.bind(name, value, expr)`` macro: valid in a
# selector, but cel-python cannot evaluate it (evaluate() reports that as an error).
VARIABLES = frozenset({"device", "cel"})


class CelError(InputError):
    """A CEL selector that does not compile or evaluate (the message says which)."""


@dataclass(frozen=True, order=True)
class Quantity:
    value: Decimal

    def __str__(self) -> str:
        return f"quantity({self.value})"


@dataclass(frozen=True)
class Semver:
    major: int
    minor: int
    patch: int
    text: str

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)


def parse_semver(text: str) -> Semver:
    m = _SEMVER.match(text)
    if not m:
        raise CelError(f"{text!r} is not a semantic version (e.g. '580.95.5', no leading zeros)")
    return Semver(int(m.group(1)), int(m.group(2)), int(m.group(3)), text)


def _quantity(s: Any) -> Quantity:
    try:
        return Quantity(parse_quantity(str(s)))
    except QuantityError as e:
        raise CelError(str(e)) from e


def _is_quantity(s: Any) -> celtypes.BoolType:
    try:
        parse_quantity(str(s))
    except QuantityError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _is_semver(s: Any) -> celtypes.BoolType:
    return celtypes.BoolType(bool(_SEMVER.match(str(s))))


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return (a.key > b.key) - (a.key < b.key)
    raise CelError(f"no compareTo between {type(a).__name__} and {type(b).__name__}")


def _compare_to(a: Any, b: Any) -> celtypes.IntType:
    return celtypes.IntType(_cmp(a, b))


def _greater(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_cmp(a, b) > 0)


def _less(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_cmp(a, b) < 0)


def _q_only(a: Any) -> Quantity:
    if not isinstance(a, Quantity):
        raise CelError(f"expected a Quantity, got {type(a).__name__}")
    return a


def _semver_part(index: int) -> Any:
    def part(a: Any) -> celtypes.IntType:
        if not isinstance(a, Semver):
            raise CelError(f"expected a Semver, got {type(a).__name__}")
        return celtypes.IntType(a.key[index])
    return part


def _as_quantity(x: Any) -> Quantity:
    return x if isinstance(x, Quantity) else Quantity(Decimal(int(x)))


FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": lambda s: parse_semver(str(s)),
    "isSemver": _is_semver,
    "compareTo": _compare_to,
    "isGreaterThan": _greater,
    "isLessThan": _less,
    "add": lambda a, b: Quantity(_q_only(a).value + _as_quantity(b).value),
    "sub": lambda a, b: Quantity(_q_only(a).value - _as_quantity(b).value),
    "asInteger": lambda a: celtypes.IntType(int(_q_only(a).value)),
    "asApproximateFloat": lambda a: celtypes.DoubleType(float(_q_only(a).value)),
    "isInteger": lambda a: celtypes.BoolType(_q_only(a).value == int(_q_only(a).value)),
    "sign": lambda a: celtypes.IntType((_q_only(a).value > 0) - (_q_only(a).value < 0)),
    "major": _semver_part(0),
    "minor": _semver_part(1),
    "patch": _semver_part(2),
}
# CEL's standard functions and macros that selectors may use besides ours.
STANDARD = frozenset({
    "size", "contains", "startsWith", "endsWith", "matches", "has", "all", "exists",
    "exists_one", "map", "filter", "int", "uint", "double", "string", "bool", "type",
    "lowerAscii", "upperAscii", "bind",
})

@functools.lru_cache(maxsize=4096)
def _compile(expression: str) -> Any:
    try:
        return environment().compile(expression)
    except CELParseError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "syntax error"
        raise CelError(f"does not parse: {first}") from e


@functools.lru_cache(maxsize=4096)
def _program(expression: str) -> Any:
    return environment().program(_compile(expression), functions=FUNCTIONS)


def _walk(tree: Any) -> list[Any]:
    out = [tree]
    for child in getattr(tree, "children", []):
        out.extend(_walk(child))
    return out


_MACROS = frozenset({"bind", "all", "exists", "exists_one", "map", "filter"})


def _macro_variables(nodes: list[Any]) -> set[str]:
    """Names introduced by macros: ``x`` in ``list.all(x, ...)`` or ``cel.bind(x, v, e)``."""
    out: set[str] = set()
    for node in nodes:
        if getattr(node, "data", None) != "member_dot_arg" or len(node.children) < 3:
            continue
        if str(node.children[1]) not in _MACROS:
            continue
        args = getattr(node.children[2], "children", [])
        if args:
            first = next((n for n in _walk(args[0]) if getattr(n, "data", None) == "ident"),
                         None)
            if first is not None:
                out.add(str(first.children[0]))
    return out


def check(expression: str) -> list[str]:
    """Static problems of a DRA selector expression (empty list = fine)."""
    problems: list[str] = []
    if len(expression.encode()) > MAX_EXPRESSION_BYTES:
        problems.append(f"longer than {MAX_EXPRESSION_BYTES} bytes")
    try:
        tree = _compile(expression)
    except CelError as e:
        return [*problems, str(e)]
    nodes = _walk(tree)
    bound = _macro_variables(nodes)
    for node in nodes:
        data = getattr(node, "data", None)
        if data == "ident":
            name = str(node.children[0])
            if name not in VARIABLES and name not in bound:
                problems.append(f"unknown variable '{name}' (DRA selectors see only 'device')")
        elif data in ("ident_arg", "member_dot_arg"):
            idx = 0 if data == "ident_arg" else 1
            fname = str(node.children[idx])
            if fname not in FUNCTIONS and fname not in STANDARD:
                problems.append(f"unknown function '{fname}'")
            args = node.children[idx + 1] if len(node.children) > idx + 1 else None
            if fname in ("quantity", "semver") and args is not None:
                for leaf in _walk(args):
                    if getattr(leaf, "type", None) == "STRING_LIT":
                        literal = str(leaf)[1:-1]
                        try:
                            (_quantity if fname == "quantity" else parse_semver)(literal)
                        except CelError as e:
                            problems.append(f"{fname}({literal!r}): {e}")
    return problems


def _cel_value(v: Any) -> Any:
    if isinstance(v, dict):
        if "string" in v:
            return celtypes.StringType(v["string"])
        if "int" in v:
            return celtypes.IntType(v["int"])
        if "bool" in v:
            return celtypes.BoolType(v["bool"])
        if "version" in v:
            return parse_semver(v["version"])
        if "value" in v:
            return _quantity(v["value"])
    raise CelError(f"unsupported attribute value {v!r}")


def device_activation(driver: str, device: dict[str, Any]) -> dict[str, Any]:
    """The ``device`` variable for one ResourceSlice device (resource.k8s.io/v1 shape)."""
    attrs: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("attributes") or {}).items():
        domain, _, short = name.rpartition("/")
        attrs.setdefault(domain or driver, {})[short] = _cel_value(value)
    caps: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("capacity") or {}).items():
        domain, _, short = name.rpartition("/")
        caps.setdefault(domain or driver, {})[short] = _cel_value(value)

    def cmap(d: dict[str, Any]) -> celtypes.MapType:
        return celtypes.MapType({celtypes.StringType(k): v for k, v in d.items()})

    return {"device": celtypes.MapType({
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("attributes"): cmap({k: cmap(v) for k, v in attrs.items()}),
        celtypes.StringType("capacity"): cmap({k: cmap(v) for k, v in caps.items()}),
    })}


def evaluate(expression: str, driver: str, device: dict[str, Any]) -> bool:
    """True when the selector selects the device; ``CelError`` on a runtime error (which
    Kubernetes also treats as an allocation error, not as 'no match')."""
    program = _program(expression)
    try:
        result = program.evaluate(device_activation(driver, device))
    except (CELEvalError, CelError) as e:
        raise CelError(f"evaluation failed: {e.args[0] if e.args else e}") from e
    if isinstance(result, CELEvalError):
        raise CelError(f"evaluation failed: {result.args[0] if result.args else result}")
    if not isinstance(result, celtypes.BoolType):
        raise CelError(f"returns {type(result).__name__}, not bool")
    return bool(result)
