"""The CLI's box tables fold a long name on a narrow terminal instead of cutting it to
'pretrain-…' (issue #45: names were truncated at 80 columns)."""

from __future__ import annotations

from rich.console import Console

from aiplat.cli._output import box_table

NAME = "pretrain-llama-70b-long-experiment-name"


def _render(width: int, whole: tuple[str, ...] = ()) -> str:
    t = box_table("Workloads", ("workload", "kind", "pool", "model", "GPUs", "GPU-h/month"),
                  right=("GPUs",), whole=whole)
    t.add_row(NAME, "pre-training", "h100-prod-west", "llama-3.1-405b-instruct", "1024", "5,439")
    c = Console(width=width, highlight=False, markup=False)
    with c.capture() as out:
        c.print(t)
    return out.get()


def _column(text: str, i: int) -> str:
    """Column ``i``'s cells of the body, top to bottom, joined."""
    rows = [ln.split("│")[i + 1].strip() for ln in text.splitlines() if ln.startswith("│")]
    return "".join(rows)


def test_a_long_name_folds_on_80_columns_and_every_character_is_kept() -> None:
    text = _render(80)
    assert "…" not in text
    assert _column(text, 0) == NAME
    assert _column(text, 3) == "llama-3.1-405b-instruct"
    assert max(len(ln) for ln in text.splitlines()) <= 80


def test_wide_enough_it_is_one_line_and_whole_columns_stay_on_one() -> None:
    assert NAME in _render(160)
    narrow = _render(80, whole=("workload",))
    assert f"│ {NAME} │" in narrow  # on one line, as asked; the others fold around it
