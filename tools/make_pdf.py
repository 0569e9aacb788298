"""`make pdf`: the book as one PDF, ``_build/pdf/book.pdf``.

`make pdf` renders the book on one HTML page (Sphinx's ``singlehtml`` builder, from the same
execution cache as `make book`, into ``_build/singlehtml``); this script opens that page in
headless Chromium (Debian's ``chromium``, which `make browser` installs), waits until MathJax
has typeset every equation and the fonts and figures are in, and prints it with the DevTools
protocol's ``Page.printToPDF``: A4, the page number at the foot of each page, a bookmark per
heading (the PDF's outline). Code and printed output wrap at the page's edge instead of being
cut, and every collapsed box (hidden code, exercise solutions) is printed open, since a reader of
paper cannot click it open. The network stays off, as for the browser test: the page needs
nothing from outside the build.

Usage: python tools/make_pdf.py [--html _build/singlehtml/index.html] [--out _build/pdf/book.pdf]
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--mute-audio", "--proxy-server=127.0.0.1:9",
         "--allow-file-access-from-files", "--remote-debugging-port=0"]

# Ready when the page has loaded, MathJax has typeset it and the fonts are in.
READY = """(async () => { if (document.readyState !== 'complete') return false;
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready; return true; })()"""

# Paper: code and output wrap at the page's edge, boxes open, no navigation, images loaded.
PREPARE = """(async () => {
  const css = document.createElement('style');
  css.textContent = `@media print {
    pre, .highlight pre, div.cell_output pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }
    .bd-article div.cell_output .output, .pst-scrollable-table-container { overflow: visible !important; }
    mjx-container[display="true"] { overflow: visible !important; }
    .bd-header-article, .prev-next-area, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer-content,
    button.toggle-button, .toggle-hidden-text, .sd-summary-chevron-right, .sd-summary-chevron-down { display: none !important; }
    .tag_hide-input .cell_input, .tag_hide-output .cell_output, .tag_hide-cell .cell_input, .tag_hide-cell .cell_output,
    .toggle-hidden, .toggle-details__container { display: block !important; visibility: visible !important; height: auto !important; }
  }`;
  document.head.appendChild(css);
  document.querySelectorAll('details').forEach(d => d.open = true);
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('img[loading]').forEach(i => i.loading = 'eager');
  await Promise.all(Array.from(document.images).map(i => i.complete ? 0 : new Promise(r => { i.onload = i.onerror = r; })));
  const broken = Array.from(document.images).filter(i => !i.naturalWidth).map(i => i.getAttribute('src'));
  const sheets = Array.from(document.querySelectorAll('link[rel=stylesheet]')).filter(l => !l.sheet).map(l => l.getAttribute('href'));
  return {images: document.images.length, broken: broken.slice(0, 5).concat(sheets.slice(0, 5)),
          math: !!(window.MathJax && MathJax.startup)}; })()"""

FOOTER = ('<div style="font-size:8px; width:100%; text-align:center; color:#555;">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')


class Chromium:
    """One headless Chromium, one tab, driven over the DevTools protocol (CDP)."""

    def __init__(self, exe: str):
        import websocket

        self.profile = tempfile.TemporaryDirectory(prefix="chromium-pdf-")
        log = Path(self.profile.name) / "stderr.log"
        with open(log, "wb") as err:
            self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={self.profile.name}/p", "about:blank"],
                                         stdout=subprocess.DEVNULL, stderr=err)
        url, deadline = None, time.monotonic() + 60
        while url is None and time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r"DevTools listening on (ws://\S+)", log.read_text(errors="replace"))
            url = m.group(1) if m else time.sleep(0.05)
        if not url:
            raise SystemExit("chromium did not open its DevTools port:\n" + log.read_text(errors="replace")[-2000:])
        self.ws = websocket.create_connection(url, timeout=1800, suppress_origin=True)
        self.ids = 0
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def send(self, method: str, session: str | None = None, **params) -> dict:
        self.ids += 1
        msg = {"id": self.ids, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            r = json.loads(self.ws.recv())
            if r.get("id") == self.ids:
                if "error" in r:
                    raise RuntimeError(f"chromium: {method} failed: {r['error']}")
                return r["result"]

    def evaluate(self, expression: str):
        r = self.send("Runtime.evaluate", self.session, expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"chromium: script failed: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def quit(self) -> None:
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()
        self.profile.cleanup()


def page_count(pdf: bytes) -> int:
    """The number of pages of a PDF Chromium wrote (its page objects are uncompressed)."""
    return len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", pdf))


def outline_titles(pdf: bytes) -> list[str]:
    """The PDF's bookmarks (one per heading): each ``/Title`` string, decoded."""
    titles = []
    for m in re.finditer(rb"/Title\s*(<[0-9A-Fa-f\s]*>|\((?:\\.|[^\\)])*\))", pdf):
        raw = m.group(1)
        if raw.startswith(b"<"):
            data = bytes.fromhex(re.sub(rb"\s", b"", raw[1:-1]).decode())
        else:
            data = re.sub(rb"\\(.)", rb"\1", raw[1:-1])
        titles.append(data[2:].decode("utf-16-be", "replace") if data.startswith(b"\xfe\xff")
                      else data.decode("latin-1"))
    return titles


def make_pdf(html: Path, out: Path, budget_s: float = 1800) -> dict:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("make pdf needs Debian's chromium: `make browser` installs it (as root with apt-get)")
    if not html.is_file():
        raise SystemExit(f"{html} does not exist: build it with `make pdf` (the singlehtml builder)")
    # the table of contents writes index.html as a redirect to the root document (book/intro.html)
    m = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', html.read_text(errors="replace")[:500])
    if m:
        html = html.parent / m.group(1)
    # Sphinx writes the one page at the root document's path (book/intro.html) but links its
    # styles, scripts and images from the build's root: print a copy that sits there
    root = html.parent
    while not (root / "_static").is_dir() and root != root.parent:
        root = root.parent
    if root != html.parent and (root / "_static").is_dir():
        shutil.copy(html, root / "_print.html")
        html = root / "_print.html"
    start = time.monotonic()
    browser = Chromium(exe)
    try:
        browser.send("Emulation.setDeviceMetricsOverride", browser.session, width=1280, height=1350,
                     deviceScaleFactor=1, mobile=False)
        browser.send("Page.enable", browser.session)
        browser.send("Page.navigate", browser.session, url=html.resolve().as_uri())
        deadline = time.monotonic() + budget_s
        while not browser.evaluate(READY):
            if time.monotonic() > deadline:
                raise SystemExit(f"{html} did not finish loading and typesetting within {budget_s:.0f} s")
            time.sleep(0.5)
        page = browser.evaluate(PREPARE)
        if page["broken"]:
            raise SystemExit(f"{html}: images or styles did not load: {page['broken']}")
        if not page["math"] and ("\\(" in html.read_text(errors="replace") or "\\[" in html.read_text(errors="replace")):
            raise SystemExit(f"{html}: MathJax did not load, the equations would print as TeX")
        images = page["images"]
        loaded = time.monotonic() - start
        r = browser.send("Page.printToPDF", browser.session, paperWidth=8.27, paperHeight=11.69,
                         marginTop=0.6, marginBottom=0.7, marginLeft=0.6, marginRight=0.6, scale=0.8,
                         printBackground=True, displayHeaderFooter=True, headerTemplate="<span></span>",
                         footerTemplate=FOOTER, generateDocumentOutline=True, transferMode="ReturnAsStream")
        chunks = []
        while True:
            part = browser.send("IO.read", browser.session, handle=r["stream"], size=1 << 22)
            chunks.append(base64.b64decode(part["data"]) if part.get("base64Encoded") else part["data"].encode("latin-1"))
            if part.get("eof"):
                break
        browser.send("IO.close", browser.session, handle=r["stream"])
    finally:
        browser.quit()
    pdf = b"".join(chunks)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pdf)
    return {"pages": page_count(pdf), "bytes": len(pdf), "images": images, "seconds_to_typeset": round(loaded, 1),
            "seconds": round(time.monotonic() - start, 1)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "singlehtml" / "index.html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "book.pdf")
    args = parser.parse_args(argv)
    info = make_pdf(args.html, args.out)
    print(f"PDF: {args.out} ({info['pages']} pages, {info['bytes'] / 2**20:.1f} MB, {info['images']} images; "
          f"loaded and typeset in {info['seconds_to_typeset']} s, printed in {info['seconds']} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
