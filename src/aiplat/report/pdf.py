"""A report as PDF, printed by headless Chromium from the report's own HTML.

Why Chromium and not a Python PDF library: the HTML report is the artefact people open, and
Chromium is what the test harness already renders it with (tests/integration/browser.py):
printing the same page with the same engine gives a PDF that matches what was checked, with
the report's print CSS (light colours, no split figures or rows, every section open), inline
SVG charts and drawings as vectors, and system fonts. WeasyPrint (the usual Python choice) is
not installed here, needs Pango/cairo system libraries, and implements its own subset of CSS
(no CSS grid, which the summary cards and the phone layout use), so the PDF would drift from
the page. ``--print-to-pdf`` is Chromium's own command-line printing: no driver, no script.

The engine is found as ``$AIPLAT_CHROMIUM``, else ``chromium``, ``chromium-browser``,
``google-chrome`` or ``google-chrome-stable`` on PATH. It runs with a throw-away profile, no
first-run or background networking, and the page references no URL, so printing reads
nothing but the file. Missing, it is an :class:`~aiplat.errors.InputError` naming the fix
(exit 2), raised before anything is written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from aiplat.errors import AiplatError, InputError

ENGINES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIMEOUT_S = 120.0


def find_engine() -> str:
    """The Chromium to print with, or an InputError that says how to get one."""
    chosen = os.environ.get("AIPLAT_CHROMIUM")
    if chosen:
        if shutil.which(chosen) is None:
            raise InputError(f"--pdf: AIPLAT_CHROMIUM={chosen} is not an executable (fix: "
                             "point it at a Chromium or Chrome binary, or unset it)")
        return chosen
    for name in ENGINES:
        found = shutil.which(name)
        if found:
            return found
    raise InputError("--pdf: no headless Chromium to print with (fix: install it, e.g. "
                     "`apt-get install chromium` on Debian/Ubuntu or `dnf install chromium`, "
                     "or set AIPLAT_CHROMIUM=/path/to/chrome; report.html prints the same "
                     "from any browser)")


def html_to_pdf(html: str, engine: str | None = None) -> bytes:
    """Print ``html`` (a self-contained page) to PDF bytes with headless Chromium."""
    exe = engine or find_engine()
    with tempfile.TemporaryDirectory(prefix="aiplat-pdf-") as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(html, encoding="utf-8")
        out = Path(tmp) / "report.pdf"
        cmd = [exe, "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
               "--disable-background-networking", "--disable-extensions", "--no-sandbox",
               f"--user-data-dir={tmp}/profile", "--no-pdf-header-footer",
               f"--print-to-pdf={out}", page.as_uri()]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                                 check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise AiplatError(f"--pdf: {exe} did not print the report ({e})") from e
        if run.returncode != 0 or not out.exists() or out.stat().st_size == 0:
            tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
            raise AiplatError(f"--pdf: {exe} exited {run.returncode} without a PDF: "
                              + " / ".join(tail))
        return out.read_bytes()
