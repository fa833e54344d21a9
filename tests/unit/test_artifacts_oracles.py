"""The interop oracles' pins, cache folder and the message when they are not built."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiplat.artifacts import oracles
from aiplat.errors import InputError


def test_every_oracle_is_pinned_and_named_in_the_cache_folder() -> None:
    pins = oracles.pinned()
    assert set(pins) == {o.module for o in oracles.ORACLES}
    assert all(v.startswith("v") for v in pins.values())
    key = oracles.version_key(pins)
    assert key.startswith("cosign-v3.") and "_distribution-v3." in key
    text = (oracles.TOOLS / "go.mod").read_text()
    upstream = [o for o in oracles.ORACLES if not o.package.startswith("aiplat.local/")]
    assert all(f"\t{o.package}\n" in text for o in upstream)  # a `tool` line each
    assert (oracles.TOOLS / "referrers-registry" / "main.go").is_file()


def test_locate_names_what_is_missing_and_how_to_build_it(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "oras").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "oras").chmod(0o755)
    assert oracles.locate(tmp_path, ("oras",)) == {"oras": tmp_path / "bin" / "oras"}
    with pytest.raises(InputError, match=r"cosign, modctl, registry, referrers-registry"
                                         r" .*aiplat\.artifacts\.oracles"):
        oracles.locate(tmp_path)


def test_cache_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert oracles.default_cache().parent == tmp_path / "aiplat" / "oracles"
