"""The runbook as a reader gets it: Markdown with every procedure, and the single-file HTML in
headless Chromium with no console errors (the ``browser`` fixture fails in CI without it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser import Browser

from aiplat.catalog import load_catalog
from aiplat.fsutil import write_tree
from aiplat.ops.runbook import procedures, runbook_document
from aiplat.plan import build_plan
from aiplat.report import render_html, render_markdown
from aiplat.spec import EXAMPLE, example_text, parse_platform

pytestmark = pytest.mark.integration


def test_runbook_markdown_and_html(browser: Browser, tmp_path: Path) -> None:
    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    spares = {p.name: p.spare_nodes for p in build_plan(platform, catalog).pools}
    doc = runbook_document(platform, "platform.yaml", spares)
    write_tree(tmp_path, {"runbook.md": render_markdown(doc), "runbook.html": render_html(doc)})
    md = (tmp_path / "runbook.md").read_text()
    html = (tmp_path / "runbook.html").read_text()
    for proc in procedures(platform):
        assert f"## {proc.title}" in md
        assert f'id="{proc.id}"' in html
    assert "kubectl drain $NODE --ignore-daemonsets" in md
    # Commands reach the HTML as escaped text, never markup.
    assert "&#34;active&#34;:false" in html or "&quot;active&quot;:false" in html
    for color_scheme in ("light", "dark"):
        page = browser.inspect(tmp_path / "runbook.html", color_scheme=color_scheme)
        assert page.problems == [], page.problems
        assert re.search(r"Runbook", page.title)
