"""The README tour's matcher (tests/fixtures/readme_tour.py) can fail: a changed figure, a lost
line, lines out of order, unshown trailing output; and it forgives only what it says it does."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures.readme_tour import compare, normalise, steps

ROOT = Path(__file__).resolve().parents[2]

RUN = """\
Pools
┏━━━━━━┳━━━━━━━┓
┃ pool ┃ nodes ┃
┡━━━━━━╇━━━━━━━┩
│ h100 │     6 │
└──────┴───────┘
wrote plan.json (71 files) to out in 1.30 s
"""


def test_the_same_output_agrees() -> None:
    assert compare(tuple(RUN.splitlines()), RUN) == []


def test_a_changed_figure_is_caught() -> None:
    shown = tuple(RUN.replace("│     6 │", "│     7 │").splitlines())
    assert compare(shown, RUN) == ["not in the output: '│ h100 │     7 │'"]


def test_durations_digests_and_table_widths_are_not_figures() -> None:
    shown = tuple(RUN.replace("1.30 s", "0.98 s").replace("━━━━━━━┓", "━━━┓")
                  .replace("│ h100 │     6 │", "│ h100 │ 6 │").splitlines())
    assert compare(shown, RUN) == []
    assert normalise("pushed ref@sha256:f26fd4ce505f in 0.94 s, pid 7607") == \
        normalise("pushed ref@sha256:0123456789ab in 12 s, pid 1")
    assert normalise("serving/Pod/assistant-7ffc8656f7-ww78p on h100-5, job-eval-b9dc5") == \
        normalise("serving/Pod/assistant-5c9d7b8f4d-hmvkn on h100-5, job-eval-54c28")
    assert normalise("the h100-pool") != normalise("the h100-pools")


def test_host_numbers_mask_every_figure_only_when_asked() -> None:
    shown = ("cpu.sha256  542.0 MiB/s  ±63.0 (MAD)  sha256, one thread",)
    run = "cpu.sha256  601.3 MiB/s  ±12.5 (MAD)  sha256, one thread\n"
    assert compare(shown, run) != []
    assert compare(shown, run, numbers=True) == []
    assert compare(shown, run.replace("one thread", "two threads"), numbers=True) != []


def test_a_host_figure_may_be_a_range() -> None:
    """``aiplat diagnose`` says "fell 10x" on one run and "fell 9-10x" on the next."""
    shown = ("capped near 99 Mbit/s while pull throughput fell 10x on every node",)
    assert compare(shown, "capped near 100 Mbit/s while pull throughput fell 9-10x on every "
                   "node", numbers=True) == []
    assert compare(shown, "capped near 100 Mbit/s while pull throughput fell 9-10x on every "
                   "node") != []


def test_elisions_and_order() -> None:
    run = "a\nb\nc\nd\n"
    assert compare(("a", "...", "d"), run) == []
    assert compare(("a", "c"), run) != []  # not consecutive without "..."
    assert compare(("...", "c", "d"), run) == []
    assert compare(("a", "b"), run) != []  # the run prints more than is shown
    assert compare(("a", "b", "…"), run) == []
    assert compare(("d", "...", "a"), run) != []  # order
    assert compare(("a … here",), "a word here\n") == []
    assert compare(("a … here",), "a word gone\n") != []


def test_no_output_shown_means_none_printed() -> None:
    assert compare((), "") == []
    assert compare((), "something\n") != []  # shown without output: it prints nothing
    assert compare(("...",), "something\n") == []


def test_the_readme_tour_parses_into_steps() -> None:
    tour = steps((ROOT / "README.md").read_text())
    assert tour[0].command == "aiplat plan -d out"
    assert tour[0].shown[0] == "Workloads — example"
    assert all(s.section for s in tour)
    assert len(tour) > 50
