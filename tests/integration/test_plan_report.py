"""The real `aiplat plan` report, opened in headless Chromium (Debian's chromium)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from browser import Browser

pytestmark = pytest.mark.integration


def test_report_html_renders_its_charts_without_console_errors(
    tmp_path: Path, browser: Browser
) -> None:
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "aiplat.cli.main", "plan", "-d", str(out)],
                   check=True, capture_output=True)
    # The engineers' sections open folded (their charts hidden until a tap); opened, every
    # chart lays out.
    folded = browser.inspect(out / "report.html")
    assert not any(s.visible for s in folded.svgs if s.id == "gpu-demand")
    page = browser.inspect(out / "report.html", open_details=True)
    assert page.problems == []
    assert page.title == "Platform plan: example"
    ids = {s.id for s in page.svgs}
    assert {"gpu-demand", "memory-breakdown", "power-by-pool"} <= ids
    for svg in page.svgs:
        assert svg.visible and svg.width > 50 and svg.height > 50, svg
        assert svg.shapes > 0, svg
    assert page.dangling_refs == ()
