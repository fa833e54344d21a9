"""Status words (pass, fail, error, warning, info, skip ...) and how reports mark them.

Producers keep writing the plain word in a cell ("error", "pass") or at the head of a note
("warning: ..."); the HTML renderer asks :func:`status_of` and draws the word as a badge:
a colour from the Okabe–Ito palette (distinguishable with the common colour-vision
deficiencies) *and* a glyph, next to the word itself, so the status never rests on colour
alone and survives greyscale printing. Markdown keeps the plain word.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

StatusKind = Literal["good", "bad", "warn", "info", "skip"]


class Status(NamedTuple):
    kind: StatusKind
    glyph: str
    word: str  # as written in the document
    rest: str  # what followed "word:" in a note, else ""


_WORDS: dict[str, StatusKind] = {
    **dict.fromkeys(("pass", "passed", "ok", "fits", "ready"), "good"),
    **dict.fromkeys(("fail", "failed", "error", "errors", "exceeded", "violated"), "bad"),
    **dict.fromkeys(("warning", "warn", "warnings", "degraded"), "warn"),
    **dict.fromkeys(("info", "note"), "info"),
    **dict.fromkeys(("skip", "skipped", "n/a"), "skip"),
}

GLYPHS: dict[StatusKind, str] = {
    "good": "\u2713",  # ✓
    "bad": "\u2717",  # ✗
    "warn": "\u25b2",  # ▲ (a geometric shape: no emoji font turns it into a picture)
    "info": "i",
    "skip": "\u2013",  # –
}


def status_of(text: str, *, prefix: bool = False) -> Status | None:
    """The status ``text`` is (the whole of it), or with ``prefix`` starts with ("error: ...").

    Case and surrounding spaces are ignored; anything else is not a status, so "ok to
    proceed" or "error budget" in a cell stay text.
    """
    word, colon, rest = text.partition(":") if prefix else (text, "", "")
    kind = _WORDS.get(word.strip().lower())
    if kind is None or (prefix and not colon):
        return None
    return Status(kind, GLYPHS[kind], word.strip(), rest.strip())
