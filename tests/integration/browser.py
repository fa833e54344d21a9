"""A real browser for tests: open a local HTML file in headless Debian Chromium and report
what a reader would get.

Why a real browser: string checks on HTML cannot tell whether an inline SVG actually lays
out at a visible size, whether its internal references (hatch patterns) resolve
once several charts share one page, or whether the page logs errors. Chromium can, and
Debian ships it with a matching chromedriver, so this runs offline.

Design:

- Binaries are explicit (``/usr/bin/chromium``, ``/usr/bin/chromedriver``; override with
  ``AIPLAT_CHROMIUM`` / ``AIPLAT_CHROMEDRIVER``). Because the ``Service`` gets a driver path,
  Selenium never runs Selenium Manager, so it never tries to download a driver or browser.
- The browser runs with a throw-away profile and every background network feature off, so a
  run neither reads the user's profile nor reaches out anywhere.
- :meth:`Browser.inspect` returns plain, frozen data (:class:`PageReport`): console entries,
  one :class:`SvgInfo` per ``<svg>``, references that point at no element, and the title,
  so tests assert on values and failures print readably.
- :meth:`Browser.layout` loads a page at an exact viewport width (CSS pixels, through the
  DevTools device-metrics override, as a phone would report it) and measures what a reader
  on that screen gets (:class:`LayoutReport`): whether anything needs a sideways scroll, the
  smallest rendered size of chart text, and a full-page PNG screenshot.
- :func:`missing` says why the browser cannot run (or ``None``); the conftest fixture turns
  that into a skip locally and a failure in CI, where integration tests must run.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

DEFAULT_CHROMIUM = "/usr/bin/chromium"
DEFAULT_CHROMEDRIVER = "/usr/bin/chromedriver"
PROBLEM_LEVELS = frozenset({"SEVERE", "WARNING"})

ColorScheme = Literal["light", "dark"]

_INSPECT_JS = """
const svgs = [];
for (const svg of document.querySelectorAll('svg')) {
  const box = svg.getBoundingClientRect();
  svgs.push({
    id: svg.id || '',
    width: box.width,
    height: box.height,
    paths: svg.querySelectorAll('path').length,
    rects: svg.querySelectorAll('rect').length,
    visible: svg.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}),
    background: getComputedStyle(svg).backgroundColor,
  });
}
const dangling = [];
for (const el of document.querySelectorAll('svg *')) {
  for (const attr of el.attributes) {
    let target = null;
    if (attr.localName === 'href' && attr.value.startsWith('#')) {
      target = attr.value.slice(1);
    } else {
      const ref = /url\\(#([^)]+)\\)/.exec(attr.value);
      if (ref) target = ref[1];
    }
    if (target !== null && document.getElementById(target) === null) dangling.push(target);
  }
}
const background = getComputedStyle(document.body).backgroundColor;
return {svgs: svgs, dangling: dangling, background: background};
"""

# Rendered font size of SVG text = its font-size in user units x the scale of its screen
# transform (hypot of the CTM's first column: the same under rotation). Only text that is
# actually drawn counts (a layout hidden by a media query is not).
_LAYOUT_JS = """
const texts = [];
for (const t of document.querySelectorAll('svg text')) {
  if (!t.checkVisibility() || t.getClientRects().length === 0) continue;
  const m = t.getScreenCTM();
  if (!m) continue;
  const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
  texts.push([px, t.textContent]);
}
texts.sort((a, b) => a[0] - b[0]);
const overflowing = [];
for (const el of document.querySelectorAll('body *')) {
  if (!el.checkVisibility()) continue;
  const box = el.getBoundingClientRect();
  const scrolls = el.scrollWidth > el.clientWidth + 1 &&
      ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  if (box.right > innerWidth + 1 || scrolls) {
    overflowing.push(el.tagName.toLowerCase() + (el.className ? '.' + el.className : '') +
                     ' right=' + Math.round(box.right) + ' scrollWidth=' + el.scrollWidth);
  }
}
return {viewport: innerWidth, scrollWidth: document.scrollingElement.scrollWidth,
        smallest: texts.slice(0, 5), charts: texts.length, overflowing: overflowing.slice(0, 20),
        height: document.scrollingElement.scrollHeight};
"""


@dataclass(frozen=True)
class LayoutReport:
    """What a reader gets at one viewport width."""

    viewport: int
    scroll_width: int  # of the document: > viewport means the page scrolls sideways
    smallest_chart_text: tuple[tuple[float, str], ...]  # (px, text), smallest first
    chart_texts: int  # drawn <text> elements in SVGs
    overflowing: tuple[str, ...]  # elements past the viewport or scrolling sideways themselves
    screenshot: bytes  # full-page PNG
    page_height: int = 0  # CSS pixels of the whole page at this width
    first_screen: bytes = b""  # PNG of what the reader sees before scrolling

    @property
    def min_chart_font_px(self) -> float:
        return self.smallest_chart_text[0][0] if self.smallest_chart_text else float("inf")


@dataclass(frozen=True)
class ConsoleEntry:
    """One browser console entry: level is SEVERE, WARNING, INFO or DEBUG."""

    level: str
    message: str
    source: str = ""


@dataclass(frozen=True)
class SvgInfo:
    """Layout and content of one ``<svg>`` element as rendered."""

    id: str
    width: float
    height: float
    paths: int
    rects: int
    visible: bool
    background: str

    @property
    def shapes(self) -> int:
        return self.paths + self.rects


@dataclass(frozen=True)
class PageReport:
    """What a page produced once loaded."""

    url: str
    title: str
    console: tuple[ConsoleEntry, ...]
    svgs: tuple[SvgInfo, ...]
    dangling_refs: tuple[str, ...]
    background: str

    @property
    def problems(self) -> list[ConsoleEntry]:
        """Console entries at SEVERE or WARNING level."""
        return [e for e in self.console if e.level in PROBLEM_LEVELS]


def binaries() -> tuple[Path, Path]:
    """The Chromium binary and its chromedriver, honouring the environment overrides."""
    return (
        Path(os.environ.get("AIPLAT_CHROMIUM", DEFAULT_CHROMIUM)),
        Path(os.environ.get("AIPLAT_CHROMEDRIVER", DEFAULT_CHROMEDRIVER)),
    )


def missing() -> str | None:
    """Why headless Chromium cannot run here, or ``None`` when it can."""
    absent = [str(p) for p in binaries() if not (p.is_file() and os.access(p, os.X_OK))]
    if not absent:
        return None
    return (
        f"headless Chromium is not available ({', '.join(absent)} missing or not executable)"
        " (fix: apt-get install chromium chromium-driver, or point AIPLAT_CHROMIUM and"
        " AIPLAT_CHROMEDRIVER at the binaries)"
    )


class Browser:
    """One headless Chromium session; use it as a context manager and reuse it across pages."""

    def __init__(self, *, width: int = 1280, height: int = 1024, timeout_s: float = 30.0) -> None:
        chromium, chromedriver = binaries()
        self._profile = tempfile.mkdtemp(prefix="aiplat-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = str(chromium)
        for argument in (
            "--headless=new",
            "--no-sandbox",  # root in containers has no usable sandbox
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
        ):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # An explicit driver path: Selenium skips Selenium Manager, so nothing is downloaded.
        service = Service(executable_path=str(chromedriver))
        try:
            self._driver = webdriver.Chrome(service=service, options=options)
        except BaseException:
            shutil.rmtree(self._profile, ignore_errors=True)
            raise
        self._driver.set_page_load_timeout(timeout_s)

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._driver.quit()
        finally:
            shutil.rmtree(self._profile, ignore_errors=True)

    def inspect(self, path: Path, *, color_scheme: ColorScheme = "light",
                open_details: bool = False) -> PageReport:
        """Load ``path`` (a local file) and report its console, SVGs and title;
        ``open_details`` first opens every ``<details>`` (folded sections, chart data)."""
        # Drop entries left over from the previous page.
        self._driver.get_log("browser")  # type: ignore[no-untyped-call]
        self._driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": color_scheme}]},
        )
        url = path.resolve().as_uri()
        self._driver.get(url)  # returns once the load event fired
        if open_details:
            self._driver.execute_script(
                "for (const d of document.querySelectorAll('details')) d.open = true;")
        found: dict[str, Any] = self._driver.execute_script(_INSPECT_JS)
        console = tuple(
            ConsoleEntry(
                level=str(e.get("level", "")),
                message=str(e.get("message", "")),
                source=str(e.get("source", "")),
            )
            for e in self._driver.get_log("browser")  # type: ignore[no-untyped-call]
        )
        return PageReport(
            url=url,
            title=str(self._driver.title),
            console=console,
            svgs=tuple(
                SvgInfo(
                    id=str(s["id"]),
                    width=float(s["width"]),
                    height=float(s["height"]),
                    paths=int(s["paths"]),
                    rects=int(s["rects"]),
                    visible=bool(s["visible"]),
                    background=str(s["background"]),
                )
                for s in found["svgs"]
            ),
            dangling_refs=tuple(str(d) for d in found["dangling"]),
            background=str(found["background"]),
        )

    @contextlib.contextmanager
    def _viewport(self, width: int | None, height: int) -> Iterator[None]:
        """An exact viewport in CSS pixels for the block (widths under 600 emulate a mobile
        device, so the page's viewport meta applies as on a phone)."""
        if width is None:
            yield
            return
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1,
                   "mobile": width < 600}
        self._driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        try:
            yield
        finally:
            self._driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def _media(self, color_scheme: ColorScheme, media: str = "") -> None:
        self._driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"media": media,
             "features": [{"name": "prefers-color-scheme", "value": color_scheme}]},
        )

    def layout(self, path: Path, width: int, *, height: int = 900,
               color_scheme: ColorScheme = "light", open_details: bool = False) -> LayoutReport:
        """Load ``path`` in a ``width`` × ``height`` CSS-pixel viewport and measure it;
        ``open_details`` first opens every ``<details>`` (as a reader tapping each would)."""
        self._media(color_scheme)
        with self._viewport(width, height):
            self._driver.get(path.resolve().as_uri())
            if open_details:
                self._driver.execute_script(
                    "for (const d of document.querySelectorAll('details')) d.open = true;")
            first = self._driver.execute_cdp_cmd(
                "Page.captureScreenshot",
                {"format": "png", "clip": {"x": 0, "y": 0, "width": width, "height": height,
                                           "scale": 1}})
            found: dict[str, Any] = self._driver.execute_script(_LAYOUT_JS)
            clip = {"x": 0, "y": 0, "width": width, "scale": 1,
                    "height": min(int(found["height"]), 16384)}  # the whole page
            shot = self._driver.execute_cdp_cmd(
                "Page.captureScreenshot",
                {"format": "png", "captureBeyondViewport": True, "clip": clip})
        return LayoutReport(
            viewport=int(found["viewport"]),
            scroll_width=int(found["scrollWidth"]),
            smallest_chart_text=tuple((float(px), str(t)) for px, t in found["smallest"]),
            chart_texts=int(found["charts"]),
            overflowing=tuple(str(o) for o in found["overflowing"]),
            screenshot=base64.b64decode(shot["data"]),
            page_height=int(found["height"]),
            first_screen=base64.b64decode(first["data"]),
        )

    def ink(self, png: bytes) -> float:
        """The share of ``png``'s pixels that differ from its top-left pixel (the page's
        background): 0.0 for a blank screenshot. Decoded by the browser's own PNG decoder on
        a canvas (no imaging library needed); a data: image does not taint the canvas."""
        self._driver.get("about:blank")
        share: float = self._driver.execute_async_script("""
          const done = arguments[arguments.length - 1];
          const img = new Image();
          img.onload = () => {
            const c = document.createElement('canvas');
            c.width = img.width; c.height = img.height;
            const g = c.getContext('2d');
            g.drawImage(img, 0, 0);
            const d = g.getImageData(0, 0, c.width, c.height).data;
            let ink = 0;
            for (let i = 0; i < d.length; i += 4) {
              if (Math.abs(d[i] - d[0]) + Math.abs(d[i + 1] - d[1]) +
                  Math.abs(d[i + 2] - d[2]) > 24) ink++;
            }
            done(ink / (d.length / 4));
          };
          img.onerror = () => done(-1);
          img.src = 'data:image/png;base64,' + arguments[0];""",
            base64.b64encode(png).decode("ascii"))
        return float(share)

    def evaluate(self, path: Path, script: str, *, color_scheme: ColorScheme = "light",
                 media: Literal["screen", "print"] = "screen", width: int | None = None,
                 height: int = 900) -> Any:
        """Load ``path`` under the given colour scheme, media type and (optionally) viewport
        width, and return what ``script`` (a function body ending in ``return``) returns."""
        self._media(color_scheme, media)
        try:
            with self._viewport(width, height):
                self._driver.get(path.resolve().as_uri())
                return self._driver.execute_script(script)
        finally:
            self._media(color_scheme)

    def print_pdf(self, path: Path) -> bytes:
        """Load ``path`` and print it to PDF as a reader's "Print" would (print CSS applies)."""
        self._driver.get(path.resolve().as_uri())
        return base64.b64decode(self._driver.print_page())
