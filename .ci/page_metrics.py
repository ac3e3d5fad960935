"""Measure what a reader of the built book sees at a phone's and a desktop's width, in headless Chromium.

Usage: python .ci/page_metrics.py [_build/html] [--widths 420,1400] [--pages markov,api] [--json out.json]
         [--max-small-figures N]

For each chapter page (``book/*.html``) at each window width it loads the page (with the book's own CSS
and scripts, MathJax typeset), and reports

* figures: for every image of the article, its displayed width in CSS px and the effective size of its
  smallest type in CSS px. The book's figures are Matplotlib SVGs whose text is drawn as paths: a text
  of ``f`` pt is a group ``scale(f/100 -f/100)`` in a ``viewBox`` measured in pt, so on the page it is
  ``f * displayed_width / viewBox_width`` px (:func:`svg_min_font_pt`). A raster image counts its
  type as ``BOOK_FONT_PT`` pt at 100 dpi. ``small`` lists the figures whose smallest type is under
  ``MIN_FONT_PX`` (8 px);
* display equations cut: a typeset display equation wider than the box it sits in that neither scrolls
  (overflow-x auto or scroll) nor fits; and ``eq_scroll_no_cue``, one that scrolls without the book's
  scroll cue (the class ``pt-scrolls`` that book/_static/paththeory.js sets, which draws a shadow);
* code blocks: ``code_cut`` is a ``pre`` wider than its box that does not scroll (clipped), and
  ``code_scroll_no_cue`` one that scrolls sideways with no scroll cue (a reader on a phone, where the
  scrollbar is hidden, does not know that more lies to the right).

Chromium is driven through its DevTools protocol (tornado's websocket client, installed with the
book's tools); nothing is fetched from the network. Exits 1 when ``--max-small-figures`` is given and
more figures than that have small type at the narrowest width; 0 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: Type smaller than this, in CSS px on the page, is too small to read.
MIN_FONT_PX = 8.0
#: Font size assumed for raster figures (the book style's 10 pt at 100 dpi).
BOOK_FONT_PT = 9.0

_SCALE = re.compile(r"scale\(\s*([0-9.]+)\s+-([0-9.]+)\s*\)")
_VIEWBOX = re.compile(r'viewBox="\s*[-0-9.]+\s+[-0-9.]+\s+([0-9.]+)\s+([0-9.]+)\s*"')


def svg_min_font_pt(svg: str) -> tuple[float, float] | None:
    """(smallest text size in pt, viewBox width in pt) of a Matplotlib SVG, or None without text.

    Matplotlib draws text as glyph paths in a group ``translate(x y) scale(s -s)`` with
    ``s = fontsize / 100`` (``matplotlib.textpath.TextToPath.FONT_SCALE``); images are flipped with
    ``scale(1 -1)``, which is not text and is skipped.
      >>> svg_min_font_pt('<svg viewBox="0 0 500 300"><g transform="translate(1 2) scale(0.09 -0.09)"/>'
      ...                 '<g transform="scale(0.1 -0.1)"/><image transform="scale(1 -1)"/></svg>')
      (9.0, 500.0)
    """
    box = _VIEWBOX.search(svg)
    sizes = [float(a) * 100 for a, b in _SCALE.findall(svg) if a == b and float(a) < 1]
    if box is None or not sizes:
        return None
    return round(min(sizes), 3), float(box.group(1))


def effective_px(font_pt: float, viewbox_width: float, displayed_width: float) -> float:
    """CSS px of ``font_pt`` type in an SVG of ``viewbox_width`` pt shown ``displayed_width`` px wide.
      >>> effective_px(9, 547.2, 760)
      12.5
    """
    return round(font_pt * displayed_width / viewbox_width, 2)


#: Run in the page once it has loaded and MathJax has typeset: what the reader sees.
PAGE_SCRIPT = r"""
(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  // Open every solution and dropdown (sphinx-togglebutton), as a reader who opens them sees them,
  // and let book/_static/paththeory.js mark what scrolls.
  for (const b of document.querySelectorAll('.toggle-button.toggle-button-hidden')) b.click();
  for (const d of document.querySelectorAll('details')) d.open = true;
  await new Promise(r => setTimeout(r, 300));
  window.dispatchEvent(new Event('resize'));
  await new Promise(r => setTimeout(r, 300));
  const article = document.querySelector('.bd-article') || document.body;
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  // The element's own horizontal overflow, and whether the reader can reach it.
  const state = (el) => {
    const over = el.scrollWidth - el.clientWidth;
    if (over <= 1) {
      // It fits in its own box; does its box fit in the page (an ancestor that clips)?
      const r = el.getBoundingClientRect();
      let p = el.parentElement;
      while (p && p !== document.body) {
        const s = getComputedStyle(p).overflowX;
        if (s !== 'visible') {
          const pr = p.getBoundingClientRect();
          if (r.right > pr.right + 1 || r.left < pr.left - 1) return scrolls(p) ? (p.classList.contains('pt-scrolls') ? 'scroll-cue' : 'scroll-no-cue') : 'cut';
        }
        p = p.parentElement;
      }
      return r.right > document.documentElement.clientWidth + 1 ? 'cut' : 'fits';
    }
    if (!scrolls(el)) return 'cut';
    const cue = el.classList.contains('pt-scrolls') || el.closest('.pt-scrolls') !== null;
    return cue ? 'scroll-cue' : 'scroll-no-cue';
  };
  const images = [...article.querySelectorAll('img')].map(img => ({
    src: img.currentSrc || img.src, width: img.getBoundingClientRect().width,
    natural: img.naturalWidth, hidden: img.offsetParent === null,
  }));
  const equations = [...article.querySelectorAll('mjx-container[display="true"]')]
    .filter(el => el.offsetParent !== null).map(el => state(el));
  const code = [...article.querySelectorAll('pre')].filter(el => el.offsetParent !== null)
    .map(el => ({state: state(el), where: el.closest('.doctest') ? 'api-example'
      : el.closest('.solution') ? 'solution' : el.closest('.cell_input') ? 'cell-input'
      : el.closest('.cell_output') ? 'cell-output' : 'other', text: el.textContent.slice(0, 60)}));
  return JSON.stringify({images, equations, code, page_width: document.documentElement.scrollWidth,
                         window: window.innerWidth});
})()
"""


class Browser:
    """One headless Chromium, driven over the DevTools protocol."""

    def __init__(self, chromium: str = "chromium"):
        self.chromium = chromium
        self.profile = tempfile.mkdtemp(prefix="pt-metrics-")
        self.proc = None
        self.ws = None
        self._id = 0

    async def start(self) -> None:
        from tornado.httpclient import AsyncHTTPClient
        from tornado.websocket import websocket_connect

        self.proc = subprocess.Popen(
            [self.chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "--allow-file-access-from-files", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port_file = Path(self.profile) / "DevToolsActivePort"
        for _ in range(300):
            if port_file.is_file() and port_file.read_text().strip():
                break
            await asyncio.sleep(0.1)
        port = port_file.read_text().split()[0]
        targets = json.loads((await AsyncHTTPClient().fetch(f"http://127.0.0.1:{port}/json")).body)
        page = next(t for t in targets if t["type"] == "page")
        self.ws = await websocket_connect(page["webSocketDebuggerUrl"], max_message_size=1 << 28)
        await self.send("Page.enable")
        await self.send("Runtime.enable")

    async def send(self, method: str, **params):
        self._id += 1
        mine = self._id
        self.ws.write_message(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = await self.ws.read_message()
            if message is None:
                raise RuntimeError("Chromium closed the connection")
            data = json.loads(message)
            if data.get("id") == mine:
                if "error" in data:
                    raise RuntimeError(f"{method}: {data['error']}")
                return data.get("result", {})

    async def wait_event(self, name: str, timeout: float = 60) -> None:
        async def _wait():
            while True:
                data = json.loads(await self.ws.read_message())
                if data.get("method") == name:
                    return
        await asyncio.wait_for(_wait(), timeout)

    async def measure(self, url: str, width: int) -> dict:
        await self.send("Emulation.setDeviceMetricsOverride", width=width, height=900,
                        deviceScaleFactor=1, mobile=width < 600)
        await self.send("Page.navigate", url=url)
        await self.wait_event("Page.loadEventFired")
        result = await self.send("Runtime.evaluate", expression=PAGE_SCRIPT, awaitPromise=True,
                                 returnByValue=True)
        return json.loads(result["result"]["value"])

    async def screenshot(self, url: str, width: int, out: Path, height: int = 900) -> None:
        await self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                        deviceScaleFactor=1, mobile=width < 600)
        await self.send("Page.navigate", url=url)
        await self.wait_event("Page.loadEventFired")
        await self.send("Runtime.evaluate", expression=PAGE_SCRIPT, awaitPromise=True, returnByValue=True)
        import base64
        data = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        out.write_bytes(base64.b64decode(data["data"]))

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def figure_rows(site: Path, page: Path, images: list[dict]) -> list[dict]:
    """One row per image: its file, displayed width and the effective px of its smallest type."""
    rows = []
    for image in images:
        if image["hidden"] or not image["width"]:
            continue
        src = image["src"]
        if src.startswith("data:"):
            # A raster image embedded in the page (a cell's PNG output): the book style's type at 100 dpi.
            rows.append({"page": page.stem, "image": "data:" + src[5:20], "width": round(image["width"], 1),
                         "font_pt": BOOK_FONT_PT,
                         "font_px": effective_px(BOOK_FONT_PT, image["natural"] * 72 / 100, image["width"])})
            continue
        path = Path(src.removeprefix("file://"))
        if not path.is_file():
            continue
        if path.suffix == ".svg":
            found = svg_min_font_pt(path.read_text(errors="replace"))
            if found is None:
                continue
            font_pt, box = found
        else:
            font_pt, box = BOOK_FONT_PT, image["natural"] * 72 / 100
        rows.append({"page": page.stem, "image": path.name, "width": round(image["width"], 1),
                     "font_pt": font_pt, "font_px": effective_px(font_pt, box, image["width"])})
    return rows


async def run(site: Path, widths: list[int], pages: list[str] | None, chromium: str) -> dict:
    browser = Browser(chromium)
    await browser.start()
    report = {}
    try:
        files = sorted((site / "book").glob("*.html"))
        if pages:
            files = [f for f in files if f.stem in pages]
        for width in widths:
            per = report[str(width)] = {"figures": [], "equations": {}, "code": {}, "overflow_pages": []}
            for page in files:
                seen = await browser.measure(page.resolve().as_uri(), width)
                per["figures"] += figure_rows(site, page, seen["images"])
                per["equations"][page.stem] = {s: seen["equations"].count(s) for s in set(seen["equations"])}
                per["code"][page.stem] = [c for c in seen["code"] if c["state"] != "fits"]
                if seen["page_width"] > seen["window"] + 1:
                    per["overflow_pages"].append(page.stem)
    finally:
        browser.close()
    return report


def summary(report: dict) -> list[str]:
    lines = []
    for width, per in report.items():
        figs = per["figures"]
        small = [f for f in figs if f["font_px"] < MIN_FONT_PX]
        lines.append(f"{width} px: {len(figs)} figures, {len(small)} with type under {MIN_FONT_PX:g} px "
                     f"(smallest {min((f['font_px'] for f in figs), default=0):.1f} px)")
        eq = {}
        for counts in per["equations"].values():
            for state, n in counts.items():
                eq[state] = eq.get(state, 0) + n
        lines.append(f"{width} px: display equations {eq}")
        code = {}
        for blocks in per["code"].values():
            for block in blocks:
                key = (block["state"], block["where"])
                code[key] = code.get(key, 0) + 1
        listed = ", ".join(f"{state}/{where}: {n}" for (state, where), n in sorted(code.items()))
        lines.append(f"{width} px: code blocks not fitting their box: {listed or 'none'}")
        if per["overflow_pages"]:
            lines.append(f"{width} px: pages wider than the window: {', '.join(per['overflow_pages'])}")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default="_build/html")
    parser.add_argument("--widths", default="420,1400")
    parser.add_argument("--pages", default="")
    parser.add_argument("--json", default="")
    parser.add_argument("--max-small-figures", type=int, default=None)
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "chromium"))
    args = parser.parse_args(argv[1:])
    site = Path(args.site)
    if not (site / "index.html").is_file():
        print(f"page_metrics: no built book in {site}", file=sys.stderr)
        return 2
    widths = [int(w) for w in args.widths.split(",")]
    report = asyncio.run(run(site, widths, [p for p in args.pages.split(",") if p], args.chromium))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    for line in summary(report):
        print(line)
    narrow = report[str(min(widths))]["figures"]
    small = [f for f in narrow if f["font_px"] < MIN_FONT_PX]
    if args.max_small_figures is not None and len(small) > args.max_small_figures:
        for f in small:
            print(f"  {f['page']}: {f['image'][:16]} shown {f['width']} px wide, type {f['font_px']} px", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
