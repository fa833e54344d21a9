"""The reference loader oracle's pin, cache folder and the message when it is not built."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiplat.devices import oracles
from aiplat.errors import InputError


def test_the_loader_is_pinned_and_the_main_is_ours() -> None:
    assert oracles.pinned().startswith("v1.")
    assert oracles.default_cache().name == f"cdi-{oracles.pinned()}"
    main = (oracles.TOOLS / "cdi-oracle" / "main.go").read_text()
    assert "cdi.ReadSpec" in main and "recover()" in main


def test_locate_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"python -m aiplat\.devices\.oracles"):
        oracles.locate(tmp_path)
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / "cdi-oracle"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert oracles.locate(tmp_path) == exe


def test_verdicts_come_from_one_process(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "cdi-oracle"
    fake.parent.mkdir()
    # stands in for the Go main's protocol: paths on stdin, one JSON verdict a line
    fake.write_text("#!/bin/sh\nwhile read -r f; do\n"
                    "  printf '{\"file\":\"%s\",\"ok\":false,\"error\":\"x\"}\\n' \"$f\"\n"
                    "done\n")
    fake.chmod(0o755)
    got = oracles.reference_verdicts(["/a.yaml", "/b.json"], fake)
    assert [(v.file, v.ok, v.error) for v in got.values()] == [("/a.yaml", False, "x"),
                                                               ("/b.json", False, "x")]
