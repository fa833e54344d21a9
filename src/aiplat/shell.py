"""Shell text assembled in one place: every value aiplat did not write itself is quoted.

aiplat writes shell for people to review and run as root (``node prepare``'s script, the
runbook's commands, the label-and-taint script). The spec's strings (versions, module and
group names, file paths given on the command line) reach that text. Two defences, both
needed: the spec refuses what cannot be a module name, a version or a group name when it
is loaded (``spec/models.py``, a located error with the fix), and every value is quoted
here, at the one place commands are assembled, so a grammar that lets something through
still cannot turn data into code.

``sh("apt-get install -y {pkgs}", pkgs=[...])`` fills each ``{name}`` with the value quoted
by :func:`shlex.quote` (a list or tuple becomes one quoted word each); the template itself is
aiplat's own shell and is kept as written, so ``$NODE`` and pipes stay shell. A plain word
(``580.95.05``, ``platform.yaml``) stays unquoted, so the output reads as a person would
write it. :func:`heredoc` feeds text to a command through a here-document whose delimiter
never occurs in the text and whose content is never expanded.
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Iterable

_FORMATTER = string.Formatter()


def quote(value: object) -> str:
    """One shell word holding ``str(value)`` exactly."""
    return shlex.quote(str(value))


def words(values: Iterable[object]) -> str:
    """Each value one quoted word, joined by spaces."""
    return " ".join(quote(v) for v in values)


def sh(template: str, /, **values: object) -> str:
    """``template`` with each ``{name}`` replaced by ``values[name]`` quoted (lists and
    tuples: one word per item). ``{{`` and ``}}`` are literal braces. A format spec or
    conversion in a field is refused: it would bypass the quoting."""
    out: list[str] = []
    for literal, field, spec, conversion in _FORMATTER.parse(template):
        out.append(literal)
        if field is None:
            continue
        if spec or conversion or field not in values:
            raise ValueError(f"sh(): field {{{field}}} must be a plain name given as a value")
        value = values[field]
        out.append(words(value) if isinstance(value, list | tuple) else quote(value))
    return "".join(out)


def heredoc(command: str, content: str, delimiter: str = "AIPLAT_EOF") -> str:
    """``command <<'DELIM'`` then ``content`` then ``DELIM``: the quoted delimiter keeps the
    shell from expanding anything in ``content``, and a delimiter that occurs as a line of
    ``content`` is made longer until it does not (the text cannot end the document early)."""
    body = content.rstrip()
    lines = set(body.split("\n"))  # bash ends a here-document on a line equal to DELIM
    n = 0
    delim = delimiter
    while delim in lines:
        n += 1
        delim = f"{delimiter}_{n}"
    return f"{command} <<'{delim}'\n{body}\n{delim}"
