"""Bounded, typed reading of the files users hand to aiplat.

Every reader here refuses, with an ``InputError`` that names the file, what it should have
been and a fix, instead of failing deep inside a parser:

- anything but a regular file (a directory, ``/dev/zero``, a FIFO, a socket), checked on the
  opened descriptor before reading, so a FIFO never blocks and a device is never drained;
- more than ``MAX_BYTES`` (checked on the size, then by reading at most one byte more, since
  ``/proc`` files report a size of 0);
- text that is not UTF-8 (the byte offset is named);
- documents nested deeper than ``MAX_DEPTH`` or expanding (YAML aliases) to more than
  ``MAX_VALUES`` values; duplicate keys in JSON and YAML mappings; ``NaN``/``Infinity`` in JSON;
- a document of the wrong shape (``mapping`` / ``sequence`` check the root).

A path of exactly ``-`` (``STDIN``) is the process's standard input, as kubectl reads
``-f -`` (issue #45): every file input of the CLI takes it (a spec, manifests, an
inventory), bounded the same way; it is read once, so a second ``-`` in one command reads
nothing.

Files inside a host's tree (``--root``: a recorded sysfs/procfs, a driver root) are read by
``read_in_tree``, which also refuses a path whose links lead out of the tree, checks the file
type with ``stat`` before opening (a FIFO would block, a device may act on open), reads at
most ``TREE_MAX_BYTES`` (or the last that many, for a log) and, unlike ``read_bytes``, lets a
plain ``OSError`` (a missing attribute) through: in a tree files come and go.

A tree may change while it is read (its recorder swapping a directory for a link to the
host's): a path is therefore never handed to the kernel whole. ``open_in_tree``,
``open_dir_in_tree`` and ``stat_in_tree`` walk it one component at a time from a descriptor
of the root, opening each directory relative to the last with ``O_NOFOLLOW``; a link is read
and followed only when it stays inside (the same walk, from where it sits, or from the root
for an absolute one). What a swap can do is make a lookup fail, never leave the tree.

The functions are plain: no CLI, no click; layers import them at their I/O edges.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from aiplat.errors import InputError

MAX_BYTES = 64 * 1024 * 1024
"""The largest input file read; every aiplat input is far smaller."""

TREE_MAX_BYTES = 16 * 1024 * 1024
"""The largest file read from a host's tree: /var/lib/dpkg/status of a full desktop install
is ~10 MiB, /proc/cpuinfo of a 1,024-thread host ~2 MiB, a sysfs attribute one page. A
recorded tree is not trusted to stop there (/dev/zero, a sparse file of terabytes)."""

MAX_DEPTH = 64
"""The deepest nesting of lists and mappings accepted; real inputs need well under 20."""

MAX_VALUES = 5_000_000
"""The most values a document may expand to (aliases repeat what they point at)."""

_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _LOADER(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader without YAML 1.1's timestamps: kubectl (sigs.k8s.io/yaml) reads an
    unquoted ``2024-01-02`` as the string it looks like, and so must every reader of
    manifests, snapshots and specs here (a date object is no string to a schema)."""

    yaml_implicit_resolvers = {  # noqa: RUF012 - PyYAML's class attribute, read by the resolver
        first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
        for first, resolvers in _BASE_LOADER.yaml_implicit_resolvers.items()}

_KINDS = [(stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket")]


STDIN = "-"
"""The path that names standard input."""


def read_stdin(what: str = "an input file", *, max_bytes: int = MAX_BYTES,
               stream: Any = None) -> bytes:
    """At most ``max_bytes`` of standard input (``stream``, default the process's binary
    stdin); more is an error."""
    data: bytes = (stream or sys.stdin.buffer).read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_big("(stdin)", what, max_bytes, f"give {what} as a file; no aiplat input "
                       "is that large")
    return data


def _fail(name: str | Path, what: str, problem: str, fix: str) -> InputError:
    return InputError(f"{name}: {problem} (fix: {fix or f'give {what}'})")


def read_bytes(path: str | Path, what: str = "an input file", *,
               max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (``-``: standard input); ``what`` names it in
    errors ("a CDI spec")."""
    name = str(path)
    if name == STDIN:
        return read_stdin(what, max_bytes=max_bytes)
    try:
        _regular(os.stat(name), name, what, f"give the path of {what}")
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        raise _fail(name, what, "cannot read it: no such file",
                    f"give the path of {what}") from None
    except OSError as e:
        raise _fail(name, what, f"cannot read it: {e.strerror or e}",
                    f"give the path of {what} you can read") from None
    try:
        return _read_fd(fd, name, what, max_bytes, f"give {what}; no aiplat input is that "
                        "large")
    except OSError as e:
        raise _fail(name, what, f"cannot read it: {e.strerror or e}",
                    f"give the path of {what} you can read") from None
    finally:
        os.close(fd)


def _regular(st: os.stat_result, name: str, what: str, fix: str) -> None:
    """Refuse anything but a regular file (before opening it: see the module doc)."""
    if not stat.S_ISREG(st.st_mode):
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
        raise _fail(name, what, f"cannot read it: {kind}, not a regular file", fix)


def _read_fd(fd: int, name: str, what: str, max_bytes: int, fix: str, *,
             tail: bool = False) -> bytes:
    """At most ``max_bytes`` of the open regular file ``fd`` (its last ones with ``tail``);
    more is an error, whatever the size says (/proc files say 0)."""
    st = os.fstat(fd)
    _regular(st, name, what, fix)  # again, on what was opened: a swap in between
    if st.st_size > max_bytes:
        if not tail:
            raise _too_big(name, what, max_bytes, fix)
        os.lseek(fd, st.st_size - max_bytes, os.SEEK_SET)
    os.set_blocking(fd, True)
    chunks, total = [], 0
    while total <= max_bytes:
        chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    data = b"".join(chunks)
    if total > max_bytes:
        if not tail:
            raise _too_big(name, what, max_bytes, fix)
        data = data[-max_bytes:]
    return data


def _too_big(name: str, what: str, max_bytes: int, fix: str) -> InputError:
    size = f"{max_bytes // (1024 * 1024)} MiB" if max_bytes >= 1 << 20 else \
        f"{max_bytes // 1024} KiB"
    return _fail(name, what, f"cannot read it: larger than {size}", fix)


# ---------------------------------------------------------------------------- host trees


def inside(root: str | Path, path: str | Path) -> Path:
    """``path`` with every link resolved, when that stays under ``root`` (resolved too); an
    ``InputError`` naming where the link leads when it leaves the tree. For a path handed on
    to a reader that is not ours (a runtime binding it later): reading goes through
    ``open_in_tree``, which a swap mid-lookup cannot lead out."""
    top = os.path.realpath(root)
    real = os.path.realpath(path)
    if top not in (os.sep, real) and not real.startswith(top + os.sep):
        raise _link_out(root, path, real)
    return Path(real)


def _link_out(root: str | Path, path: str | Path, to: str) -> InputError:
    return _fail(path, "a file of the tree", f"a link out of the tree {root} (to {to}): "
                 "not followed", "record the tree with links relative inside it (sysfs's "
                 "own are), or copy the file in")


_TREE_FIX = "replace it with the file it stands for, or remove it from the tree"

MAX_LINKS = 40
"""Links followed in one lookup: the kernel's own limit (MAXSYMLINKS); a loop ends there."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
_T = TypeVar("_T")


def _below(top: str, path: str) -> list[str] | None:
    """The components of the absolute ``path`` below ``top`` (None when not under it)."""
    if top == os.sep:
        return path.split("/")
    if path == top or path.startswith(top + os.sep):
        return path[len(top):].split("/")
    return None


def _components(root: str | Path, path: str | Path) -> list[str]:
    """``path``'s components below ``root`` (given as the root joined with them, or the
    root's real path joined with them)."""
    where = os.path.abspath(path)
    for top in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
        parts = _below(top, where)
        if parts is not None:
            return parts
    raise _fail(path, "a file of the tree", f"not inside the tree {root}",
                "name a path under the root")


def _link_target(dir_fd: int, name: str, failure: OSError) -> str | None:
    """The target of the link ``name``; None when it is a directory again (swapped back
    since: look it up once more); ``failure`` again when it is neither (a file where a
    directory was expected)."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        try:
            again = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            raise failure from None
        if stat.S_ISDIR(again.st_mode) or stat.S_ISLNK(again.st_mode):
            return None
        raise failure from None


def _lookup(root: str | Path, path: str | Path, last: Callable[[int, str], _T]) -> _T:
    """``last(dir_fd, name)`` on ``path``'s final component, reached from the root one
    directory descriptor at a time (see the module doc). ``last`` raises ``OSError(ELOOP)``
    on a link, which is then followed here when it stays inside."""
    top = os.path.realpath(root)
    todo = list(reversed(_components(root, path)))
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]  # the admin's root
    where: list[str] = []  # the names fds[-1] lies at, for messages
    links = 0
    try:
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if len(fds) == 1:
                    raise _link_out(root, path, os.path.normpath(top + "/.."))
                os.close(fds.pop())
                where.pop()
                continue
            try:
                if todo:
                    fds.append(os.open(name, _DIR_FLAGS, dir_fd=fds[-1]))
                    where.append(name)
                    continue
                return last(fds[-1], name)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                target = _link_target(fds[-1], name, e)
            links += 1  # a retry after a swap counts too: a swapping tree ends here
            if links > MAX_LINKS:
                raise OSError(errno.ELOOP, "too many links", str(path))
            if target is None:
                todo.append(name)
                continue
            parts = target.split("/")
            if target.startswith("/"):
                inner = _below(top, os.path.normpath(target))
                if inner is None:
                    raise _link_out(root, path, os.path.normpath(target))
                while len(fds) > 1:
                    os.close(fds.pop())
                where.clear()
                parts = inner
            todo.extend(reversed(parts))
        return last(fds[-1], ".")
    finally:
        for fd in fds:
            os.close(fd)


def _no_link(st: os.stat_result, name: str) -> os.stat_result:
    if stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, "a link", name)
    return st


def stat_in_tree(root: str | Path, path: str | Path) -> os.stat_result:
    """``os.stat`` of ``path`` inside the tree ``root``, its links followed only inside it:
    ``InputError`` when one leads out, ``OSError`` when missing."""
    return _lookup(root, path, lambda fd, name: _no_link(
        os.stat(name, dir_fd=fd, follow_symlinks=False), name))


def open_dir_in_tree(root: str | Path, path: str | Path) -> int:
    """A descriptor of the directory ``path`` inside the tree ``root`` (the caller closes
    it); ``InputError`` when a link leads out, ``OSError`` when missing or no directory."""
    return _lookup(root, path, lambda fd, name: os.open(name, _DIR_FLAGS, dir_fd=fd))


def open_in_tree(root: str | Path, path: str | Path, what: str = "a file of the tree") -> int:
    """A descriptor of the regular file ``path`` inside the tree ``root`` (non-blocking; the
    caller closes it). Its type is checked with ``stat`` before it is opened: anything but a
    regular file is an ``InputError`` (see the module doc); missing: ``OSError``."""
    def open_file(fd: int, name: str) -> int:
        _regular(_no_link(os.stat(name, dir_fd=fd, follow_symlinks=False), name), str(path),
                 what, _TREE_FIX)
        return os.open(name, _FILE_FLAGS, dir_fd=fd)

    return _lookup(root, path, open_file)


def read_in_tree(root: str | Path, path: str | Path, what: str = "a file of the tree", *,
                 max_bytes: int = TREE_MAX_BYTES, tail: bool = False) -> bytes:
    """The bytes of the regular file ``path`` inside the tree ``root``, at most ``max_bytes``
    (``tail``: its last ``max_bytes``, for a log). ``InputError`` when refused (see the module
    doc); a plain ``OSError`` when missing or unreadable."""
    fd = open_in_tree(root, path, what)
    try:
        return _read_fd(fd, str(path), what, max_bytes,
                        f"{_TREE_FIX}; no such file is that large", tail=tail)
    finally:
        os.close(fd)


_DECIMAL = re.compile(r"-?[0-9]{1,20}")
_HEX = re.compile(r"(?:0x)?([0-9a-fA-F]{1,16})")


def ascii_int(text: str, base: int = 10) -> int | None:
    """``text`` as the kernel writes a number: ASCII decimal digits (a ``-`` allowed), or for
    ``base=16`` hex digits after an optional ``0x``; None for anything else, and past 64 bits
    (no attribute of a host holds more). ``int()`` and ``str.isdigit`` go by Unicode:
    ``int('٣')`` is 3, ``'²'.isdigit()`` is True yet ``int('²')`` fails; a tree's number in
    other digits is unknown, not a number."""
    if base == 16:
        m = _HEX.fullmatch(text)
        return int(m.group(1), 16) if m else None
    return int(text) if _DECIMAL.fullmatch(text) else None


def decode(data: bytes, name: str | Path, what: str = "an input file") -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(name, what, f"not UTF-8 text (byte {e.start} is 0x{data[e.start]:02x})",
                    f"give {what} as UTF-8 text, not a binary file") from None


def read_text(path: str | Path, what: str = "an input file", *,
              max_bytes: int = MAX_BYTES) -> str:
    return decode(read_bytes(path, what, max_bytes=max_bytes), path, what)


# ---------------------------------------------------------------------------- JSON


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"key '{_short(k)}' appears twice")
        out[k] = v
    return out


def parse_json(text: str, name: str | Path, what: str = "a JSON file") -> Any:
    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise _fail(f"{name}:{e.lineno}:{e.colno}", what, f"not JSON ({e.msg})",
                    "fix the JSON syntax there") from None
    except ValueError as e:
        raise _fail(name, what, f"not valid JSON: {e}", "fix the JSON") from None
    except RecursionError:
        raise _nested(name, what) from None
    check_tree(data, name, what)
    return data


def load_json(path: str | Path, what: str = "a JSON file") -> Any:
    return parse_json(read_text(path, what), path, what)


# ---------------------------------------------------------------------------- YAML


def _yaml_error(e: yaml.YAMLError, name: str | Path, what: str) -> InputError:
    if isinstance(e, yaml.MarkedYAMLError) and "nesting depth" in str(e.problem):
        return _nested(name, what)  # libyaml's own limit, below ours
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else str(name)
        return _fail(where, what, f"not valid YAML ({e.problem or e.context})",
                     "fix the YAML syntax there")
    if isinstance(e, yaml.reader.ReaderError):
        return _fail(name, what, f"not valid YAML: a character that YAML does not allow at "
                                 f"position {e.position}", "remove it; YAML is UTF-8 text")
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    return _fail(name, what, f"not valid YAML: {first}", "fix the YAML syntax")


def parse_yaml_all(text: str, name: str | Path, what: str = "a YAML file") -> list[Any]:
    """Every document of ``text`` (``---`` separated), empty ones dropped."""
    try:
        loader = _LOADER(text)
    except (yaml.YAMLError, UnicodeError) as e:
        raise _fail(name, what, f"not valid YAML: {e}", "fix the YAML") from None
    try:
        docs = []
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            _check_nodes(node, name, what)
            docs.append(loader.construct_document(node))
        for d in docs:
            check_tree(d, name, what)
        return [d for d in docs if d is not None]
    except yaml.YAMLError as e:
        raise _yaml_error(e, name, what) from None
    except UnicodeError:
        raise _fail(name, what, "not valid YAML: text that cannot be encoded",
                    "give UTF-8 text") from None
    except RecursionError:
        raise _nested(name, what) from None
    except (ValueError, TypeError, OverflowError) as e:  # e.g. a date of 2024-13-45
        raise _fail(name, what, f"a value YAML cannot read: {e}",
                    "quote it to make it text, or correct it") from None
    finally:
        loader.dispose()


def embedded_mappings(text: str, name: str, what: str = "Kueue's Configuration"
                      ) -> list[dict[str, Any]]:
    """The mapping documents of YAML embedded in another object (a ConfigMap's
    ``controller_manager_config.yaml``, Helm values' ``controllerManagerConfigYaml``), under
    the same bounds as a file: its text came with the file, so an alias bomb there is one."""
    return [d for d in parse_yaml_all(text, name, what) if isinstance(d, dict)]


def parse_yaml(text: str, name: str | Path, what: str = "a YAML file") -> Any:
    """The one document of ``text`` (None when empty)."""
    docs = parse_yaml_all(text, name, what)
    if len(docs) > 1:
        raise _fail(name, what, f"holds {len(docs)} YAML documents, one was expected",
                    "remove the '---' and what follows, or split the file")
    return docs[0] if docs else None


def load_yaml(path: str | Path, what: str = "a YAML file") -> Any:
    return parse_yaml(read_text(path, what), path, what)


def load_yaml_all(path: str | Path, what: str = "a YAML file") -> list[Any]:
    return parse_yaml_all(read_text(path, what), path, what)


def parse_data(text: str, name: str | Path, what: str = "a YAML or JSON file") -> Any:
    """JSON when the text starts like JSON or the name ends in .json, else YAML."""
    if str(name).endswith(".json") or text.lstrip()[:1] in ("{", "["):
        return parse_json(text, name, what)
    return parse_yaml(text, name, what)


def load_data(path: str | Path, what: str = "a YAML or JSON file") -> Any:
    return parse_data(read_text(path, what), path, what)


def _check_nodes(root: yaml.Node, name: str | Path, what: str) -> None:
    """Alias cycles, expansion, nesting and duplicate keys, on the composed nodes.

    The expanded size is counted per distinct node (memoised by identity), so a "billion
    laughs" document is measured without being expanded.
    """
    sizes: dict[int, int] = {}
    depth_of: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            depth_of[key] = 1 + max((depth_of[id(c)] for c in children), default=0)
            if sizes[key] > MAX_VALUES:
                raise _fail(name, what, f"expands to more than {MAX_VALUES} values "
                            f"(line {node.start_mark.line + 1})",
                            "aliases (*name) repeat what they point at; write values out")
            if depth_of[key] > MAX_DEPTH:
                raise _nested(name, what)
            continue
        if key in sizes:
            continue
        if key in active:
            raise _fail(name, what, f"an alias refers to a value that contains it "
                        f"(line {node.start_mark.line + 1})",
                        "aliases (*name) must point at a value outside them")
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for k, _ in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                    if k.value in seen:
                        raise _fail(name, what, f"key '{_short(k.value)}' appears twice "
                                    f"(line {k.start_mark.line + 1})",
                                    "keep one of the two entries")
                    seen.add(k.value)
        active.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node))
        if len(active) > MAX_DEPTH + 1:
            raise _nested(name, what)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


# ---------------------------------------------------------------------------- TOML


def parse_toml(text: str, name: str | Path, what: str = "a TOML file") -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:  # duplicate keys are refused by the parser itself
        raise _fail(name, what, f"not valid TOML: {e}", "fix the TOML syntax there") from None
    except RecursionError:
        raise _nested(name, what) from None
    check_tree(data, name, what)
    return data


def load_toml(path: str | Path, what: str = "a TOML file") -> dict[str, Any]:
    return parse_toml(read_text(path, what), path, what)


# ---------------------------------------------------------------------------- shapes


def check_tree(data: Any, name: str | Path, what: str, *, max_depth: int = MAX_DEPTH) -> None:
    """Refuse documents nested deeper than ``max_depth`` (iteratively: no recursion)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise _fail(name, what, f"holds more than {MAX_VALUES} values",
                        f"give {what} of a sensible size")
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            raise _nested(name, what, max_depth)
        stack.extend((c, depth + 1) for c in children)


def _nested(name: str | Path, what: str, limit: int = MAX_DEPTH) -> InputError:
    return _fail(name, what, f"is nested more than {limit} levels deep",
                 f"give {what}; it needs only a few levels")


def _type_name(value: Any) -> str:
    if value is None:
        return "empty"
    return {dict: "a mapping", list: "a list", str: "text", bool: "true/false",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def mapping(data: Any, name: str | Path, what: str, fix: str = "") -> dict[str, Any]:
    """``data`` when it is a mapping (an object), else an error naming what it is."""
    if not isinstance(data, dict):
        raise _fail(name, what, f"is {_type_name(data)}, but {what} is a mapping "
                    "(an object of named fields)", fix or f"give {what}")
    return data


def sequence(data: Any, name: str | Path, what: str, fix: str = "") -> list[Any]:
    if not isinstance(data, list):
        raise _fail(name, what, f"is {_type_name(data)}, but {what} is a list",
                    fix or f"give {what}")
    return data


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
