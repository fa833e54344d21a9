"""Collapse repeated findings: one row per distinct finding, with a count and its objects.

A run without CRDs warns "no schema for ..." once per custom resource and Kubernetes
version, some forty identical rows that bury the two findings that matter. The finding is
the same; only *where* differs. :func:`group_repeats` therefore compares rows on every column
except the ones that say where (``lists``: the object, the version), after masking those
values where the other cells quote them ("... of Kubernetes 1.34 ..."), and merges each
group into one row: a count, the key cells (quoted values shown as ``{column}``), and the
differing values listed compactly (``ClusterQueue/{batch, research}``; see :func:`compact`).

A table in which nothing repeats comes back unchanged, so producers can apply it to every
findings table without changing reports that have nothing to group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aiplat.report.document import Rich, Table, plain


def group_repeats(table: Table, lists: Sequence[str], *, count_after: str | None = None,
                  count_column: str = "count") -> Table:
    """``table`` with rows that differ only in the ``lists`` columns merged (see the module).

    ``count_after`` names the column the count follows (default: the first one). Groups keep
    the order of their first row.
    """
    listed = [_index(table, c) for c in lists]
    groups: dict[tuple[str, ...], list[list[Rich]]] = {}
    for row in table.rows:
        groups.setdefault(_key(row, listed, table.columns), []).append(row)
    if all(len(g) == 1 for g in groups.values()):
        return table
    at = _index(table, count_after) + 1 if count_after else 1
    rows = []
    for key, group in groups.items():
        merged = list(group[0]) if len(group) == 1 else _merge(key, group, listed)
        rows.append([*merged[:at], str(len(group)), *merged[at:]])
    align = table.alignment
    return table.model_copy(update={
        "columns": [*table.columns[:at], count_column, *table.columns[at:]],
        "rows": rows,
        "align": [*align[:at], "right", *align[at:]],
    })


def _index(table: Table, column: str) -> int:
    try:
        return table.columns.index(column)
    except ValueError:
        raise ValueError(f"table {table.title!r} has no column {column!r} "
                         f"(columns: {table.columns})") from None


def _key(row: Sequence[Rich], listed: Sequence[int], columns: Sequence[str]
         ) -> tuple[str, ...]:
    values = {columns[i]: plain(row[i]) for i in listed}
    return tuple("" if i in listed else _mask(plain(cell), values)
                 for i, cell in enumerate(row))


def _mask(text: str, values: dict[str, str]) -> str:
    """``text`` with each listed value it quotes as a whole word replaced by ``{column}``."""
    for column, value in values.items():
        if len(value) >= 2:
            pattern = rf"(?<![\w.]){re.escape(value)}(?!\w)"
            text = re.sub(pattern, f"{{{column}}}".replace("\\", "\\\\"), text)
    return text


def _merge(key: tuple[str, ...], group: list[list[Rich]], listed: Sequence[int]
           ) -> list[Rich]:
    out: list[Rich] = []
    for i, cell in enumerate(group[0]):
        if i in listed:
            out.append(compact([plain(row[i]) for row in group]))
        elif key[i] == plain(cell):
            out.append(cell)  # nothing masked: keep it as given (a link stays a link)
        else:
            out.append(key[i])
    return out


def compact(values: Sequence[str]) -> str:
    """Distinct values in first-seen order; those sharing all but their last ``/`` part
    (``Kind/`` or ``Kind/namespace/``) brace-grouped.

    >>> compact(["ClusterQueue/batch", "ClusterQueue/research", "1.34", "ClusterQueue/batch"])
    'ClusterQueue/{batch, research}, 1.34'
    >>> compact(["LocalQueue/team-a/q1", "LocalQueue/team-a/q2", "LocalQueue/team-b/q1"])
    'LocalQueue/team-a/{q1, q2}, LocalQueue/team-b/q1'
    """
    by_prefix: dict[str, list[str]] = {}
    for value in dict.fromkeys(v for v in values if v):
        head, slash, last = value.rpartition("/")
        # A value without "/" is its own group (keyed by itself, so it cannot merge).
        key, rest = (head + slash, last) if slash else (value, "")
        by_prefix.setdefault(key, []).append(rest)
    parts = []
    for key, rests in by_prefix.items():
        if len(rests) > 1:
            parts.append(f"{key}{{{', '.join(rests)}}}")
        else:
            parts.append(key + rests[0])
    return ", ".join(parts)
