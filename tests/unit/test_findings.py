"""aiplat's one Finding and its one text and table form (issue #39)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from aiplat.findings import Finding, counts, line, ordered, table
from aiplat.text import shown


def test_line_leaves_out_what_is_empty() -> None:
    assert line(Finding(severity="warning", subject="pool a", message="m", fix="f",
                        source="r")) == "warning: [r] pool a: m (fix: f)"
    assert line(Finding(severity="info", subject="pool a", message="m")) == "info: pool a: m"
    assert line(Finding(severity="error", subject="", message="m")) == "error: m"


@pytest.mark.parametrize(("raw", "escaped"), [
    ("a\x1b[2Jb", "a\\x1b[2Jb"),      # clear the screen
    ("x\u202eedoc", "x\\u202eedoc"),   # right-to-left override
    ("a\x9bb", "a\\x9bb"),             # C1 CSI
    ("a\nb\rc\x7f", "a\\x0ab\\x0dc\\x7f"),
    ("pool h100 — ok", "pool h100 — ok"),
])
def test_text_from_outside_cannot_drive_the_terminal(raw: str, escaped: str) -> None:
    assert shown(raw) == escaped
    f = Finding(severity="error", subject=raw, message=raw, fix=raw, source=raw)
    assert line(f).count(escaped) == 4
    assert all(c.isprintable() for c in line(f))


def test_only_three_severities() -> None:
    with pytest.raises(ValidationError):
        Finding(severity="warn", subject="s", message="m")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Finding(severity="fail", subject="s", message="m")  # type: ignore[arg-type]


def test_order_counts_and_table() -> None:
    fs = [Finding(severity="info", subject="b", message="1"),
          Finding(severity="error", subject="z", message="2"),
          Finding(severity="warning", subject="a", message="3"),
          Finding(severity="error", subject="a", message="4"),
          Finding(severity="error", subject="a", message="5")]
    assert [f.message for f in ordered(fs)] == ["4", "5", "2", "3", "1"]
    assert counts(fs) == {"error": 3, "warning": 1, "info": 1}
    cols, rows = table(fs)
    assert cols == ["severity", "subject", "finding", "fix"]  # no finding has a source
    assert rows[0] == ["error", "a", "4", ""]
    cols, rows = table([*fs, Finding(severity="info", subject="c", message="6", source="r")])
    assert cols == ["severity", "source", "subject", "finding", "fix"]
    assert rows[-1] == ["info", "r", "c", "6", ""]
