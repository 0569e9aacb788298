"""The rendered book, checked in a real browser (headless Chromium), offline.

The test builds the book with ``make book`` (every chapter executed on a fresh clone, only the
changed ones after an earlier build) unless ``FLPRIVACY_SITE`` names an already built HTML folder, then
opens every page of the table of contents in Debian's ``chromium`` (one browser per test process,
each page in a fresh tab, driven over the DevTools protocol) and checks what a reader sees:

- every page of ``_toc.yml`` exists and loads;
- math is typeset by the MathJax copy inside the build (no raw ``\\(`` ``\\[`` ``$$`` left in the
  rendered text, navigation included), with the network cut off;
- every image a page shows exists and is not empty, and each chapter that draws a figure shows one;
- no cell shows an error or a traceback;
- every link between the book's pages resolves;
- screenshots of the key pages are saved (``_build/site-test/``, or ``$FLPRIVACY_ARTIFACTS``).

Then, page by page (one test per page and check, so that pytest-xdist spreads the pages over its
workers: ``--dist loadgroup`` keeps a page's checks on one worker, which renders it once), what a
reader sees with every solution opened (the hidden dropdowns are opened by a probe script in a
copy of the page, and MathJax typesets them):

- no raw TeX anywhere in the text (``\\(``, ``$$``, ``\\frac``, ``\\cos``, ...), solutions included;
- no table cell reading NaN, None or "..." (a truncated or unexplained table);
- no error in the browser console (a script error, a failed resource, a duplicate declaration);
- no image shown at less than half its natural width (unreadable tick labels);
- at 400 px wide (a phone) no horizontal overflow of the page: wide content scrolls inside its
  own box; a screenshot of every chapter at 400 px is saved for review.

Without ``chromium`` the test is skipped with the reason, except in CI (``CI`` set), where it fails:
``make test`` installs it (``make browser``).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
KEY_PAGES = ["book/intro", "book/part1/federated_learning", "book/part2/exact_recovery",
             "book/part3/passive_active_aia", "book/part4/curious_client",
             # the densest pages (wide tables, long figures), kept at desktop width for comparison
             "book/part4/curious_client_factors", "book/part3/gradient_aia_regression", "book/part5/closing"]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--hide-scrollbars", "--mute-audio"]


def toc_files() -> list[str]:
    """Every document of ``_toc.yml`` (root, parts, chapters, sections), without extension."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                files.append(e["file"])
            walk(e.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        reason = "Debian's chromium is not installed (make test installs it: `make browser`)"
        if os.environ.get("CI"):
            pytest.fail(reason + "; CI must run the browser test")
        pytest.skip(reason)
    return exe


class Browser:
    """One headless Chromium per test process, driven over the DevTools protocol (CDP).

    Each page opens in a fresh tab of the same browser: launching Chromium for every probe and
    screenshot (about 90 launches) cost most of this test's time. The network stays cut off
    (``--proxy-server`` to a closed port), as for a reader offline. ``websocket-client`` is
    jupyter_server's own dependency (pinned in requirements.txt).
    """

    def __init__(self):
        import websocket

        self.profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        log = Path(self.profile.name) / "stderr.log"   # a file, not a pipe: a full pipe would block Chromium
        with open(log, "wb") as err:
            self.proc = subprocess.Popen([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={self.profile.name}/p",
                                          "--proxy-server=127.0.0.1:9", "--allow-file-access-from-files",
                                          "--remote-debugging-port=0", "about:blank"],
                                         stdout=subprocess.DEVNULL, stderr=err)
        url, deadline = None, time.monotonic() + 60
        while url is None and time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r"DevTools listening on (ws://\S+)", log.read_text(errors="replace"))
            url = m.group(1) if m else time.sleep(0.05)
        assert url, "chromium did not open its DevTools port:\n" + log.read_text(errors="replace")[-2000:]
        self.ws = websocket.create_connection(url, timeout=300, suppress_origin=True)
        self.ids = 0

    def send(self, method: str, session: str | None = None, check: bool = True, **params) -> dict:
        """One CDP command; returns its result (events that arrive meanwhile are dropped). With
        ``check=False`` an error (e.g. a page navigating away mid-evaluation) returns ``{}``."""
        self.ids += 1
        msg = {"id": self.ids, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            r = json.loads(self.ws.recv())
            if r.get("id") == self.ids:
                if "error" in r:
                    assert not check, f"chromium: {method} failed: {r['error']}"
                    return {}
                return r["result"]

    def open(self, url: str, width: int, height: int, until: str, budget_s: float) -> tuple[str | None, str]:
        """Open ``url`` in a fresh ``width`` x ``height`` tab and wait up to ``budget_s`` for the
        JavaScript expression ``until`` to be truthy; returns its value (None on time-out) and the
        tab's session (close it with :meth:`close`)."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        self.send("Page.navigate", session, url=url)
        return self.wait(session, until, budget_s), session

    def wait(self, session: str, until: str, budget_s: float):
        """The value of the JavaScript expression ``until`` once truthy, or None after ``budget_s``."""
        deadline, value = time.monotonic() + budget_s, None
        while time.monotonic() < deadline:
            value = self.send("Runtime.evaluate", session, check=False, expression=until, awaitPromise=True,
                              returnByValue=True).get("result", {}).get("value")
            if value:
                break
            time.sleep(0.1)
        return value or None

    def close(self, session: str) -> None:
        target = self.send("Target.getTargetInfo", session)["targetInfo"]["targetId"]
        self.send("Target.closeTarget", targetId=target)

    def dom(self, session: str) -> str:
        return self.send("Runtime.evaluate", session, expression="document.documentElement.outerHTML",
                         returnByValue=True)["result"]["value"]

    def screenshot(self, session: str, path: Path) -> None:
        import base64

        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", session, format="png")["data"]))

    def quit(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.profile.cleanup()


_BROWSER: list[Browser] = []


def browser() -> Browser:
    """This test process's Chromium (started on first use, closed at exit)."""
    if not _BROWSER:
        import atexit

        _BROWSER.append(Browser())
        atexit.register(_BROWSER[0].quit)
    return _BROWSER[0]


# A page is ready when it and its frames (the 400 px wrapper's iframe) have loaded, MathJax (where a
# page loads it) has typeset them and the fonts are in.
READY = """(async () => { if (location.protocol !== 'file:' || document.readyState !== 'complete') return false;
  const within = (p, ms) => Promise.race([p, new Promise(r => setTimeout(r, ms))]);   // never hang the test
  for (const w of [window, ...Array.from(window.frames)]) {
    if (w.document.readyState !== 'complete') return false;
    if (w.MathJax && w.MathJax.startup && w.MathJax.startup.promise) await within(w.MathJax.startup.promise, 20000);
    await within(w.document.fonts.ready, 5000);
  }
  return true; })()"""


@pytest.fixture(scope="module")
def site() -> Path:
    """The built HTML folder: $FLPRIVACY_SITE, or `make book` (the reader's command) in this checkout.

    `make book` executes only what its cache lacks: everything on a fresh clone (CI), only the
    chapters that changed after an earlier build.
    """
    chromium()  # skip before the long build when there is no browser
    given = os.environ.get("FLPRIVACY_SITE")
    if given:
        path = Path(given).resolve()
        assert (path / "index.html").is_file(), f"FLPRIVACY_SITE={given!r} holds no built book (index.html)"
        return path
    import fcntl
    (ROOT / "_build").mkdir(exist_ok=True)
    with open(ROOT / "_build" / ".site-test.lock", "w") as lock:   # xdist workers: one builds, the other waits
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(["make", "book"], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, "`make book` fails:\n" + (r.stdout + r.stderr)[-6000:]
    return ROOT / "_build" / "html"


def artifacts_dir() -> Path:
    return Path(os.environ.get("FLPRIVACY_ARTIFACTS", ROOT / "_build" / "site-test"))


class Page(HTMLParser):
    """Text outside code, scripts and typeset math; images; links; error outputs."""

    SKIP = {"script", "style", "pre", "code", "mjx-container", "mjx-assistive-mml", "svg", "textarea", "noscript"}

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.text: list[str] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self.errors: list[str] = []
        self.math = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "mjx-container":
            self.math += 1
        if tag in self.SKIP:
            self.depth += 1
        cls = a.get("class") or ""
        if re.search(r"\b(output_error|traceback)\b", cls) or "output error" in cls:
            self.errors.append(cls)
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth:
            self.text.append(data)


RAW_MATH = re.compile(r"\\\(|\\\[|\$\$")


def source_of(doc: str) -> str:
    for ext in (".ipynb", ".md"):
        f = ROOT / (doc + ext)
        if f.is_file():
            if ext == ".ipynb":
                return "\n".join("".join(c["source"]) for c in json.loads(f.read_text())["cells"])
            return f.read_text()
    raise FileNotFoundError(f"{doc} of _toc.yml has no .ipynb or .md source")


@pytest.mark.parametrize("doc", [pytest.param(d, id=d, marks=pytest.mark.xdist_group(d)) for d in toc_files()])
def test_page_renders_offline_with_math_figures_and_working_links(site, doc):
    problems: list[str] = []
    page = site / (doc + ".html")
    assert page.is_file(), f"{doc}: page {page.name} was not built"
    _, dom = rendered(site, doc)   # MathJax retried with longer budgets on a busy machine
    parsed = Page()
    parsed.feed(dom)
    text = html.unescape(" ".join(parsed.text))
    raw = [text[max(0, m.start() - 40):m.end() + 40] for m in RAW_MATH.finditer(text)]
    src = source_of(doc)
    if raw:
        problems.append(f"{doc}: {len(raw)} raw LaTeX delimiters in the rendered text (math not typeset "
                        f"offline), e.g. {raw[:2]}")
    if re.search(r"\$[^$]+\$|\\\(|\\begin\{", src) and parsed.math == 0:
        problems.append(f"{doc}: its source has math but the page shows no typeset formula")
    if parsed.errors or "Traceback (most recent call last)" in dom:
        problems.append(f"{doc}: a cell shows an error or a traceback ({parsed.errors[:3]})")
    content_images = [s for s in parsed.images if not s.startswith("data:") and "_static" not in s]
    inline_images = [s for s in parsed.images if s.startswith("data:image")]
    for src_ in parsed.images:
        if src_.startswith("data:"):
            continue
        target = (page.parent / unquote(urlparse(src_).path)).resolve()
        if not target.is_file() or target.stat().st_size == 0:
            problems.append(f"{doc}: image {src_} missing or empty")
    if doc.startswith("book/part") and re.search(r"plt\.show\(\)|imshow\(|show_images\(", src) \
            and not (content_images or inline_images):
        problems.append(f"{doc}: the chapter draws figures but the page shows none")
    for href in parsed.links:
        u = urlparse(href)
        if u.scheme or href.startswith(("#", "mailto:")) or not u.path:
            continue
        target = (page.parent / unquote(u.path)).resolve()
        if not target.exists():
            problems.append(f"{doc}: link {href} does not resolve")
    shot = shot_path(doc, 1280)   # taken by rendered(), in the same load
    if shot is not None and (not shot.is_file() or shot.stat().st_size == 0):
        problems.append(f"{doc}: no screenshot")
    assert not problems, f"{len(problems)} problems in the rendered page:\n" + "\n".join(problems)


def test_site_weight(site):
    # the pages' probe copies (".probe-...", ".phone-...", ".wide-table-...") that the other worker writes and
    # removes are the test's own temporaries, not the site's
    files = [f for f in site.rglob("*") if f.is_file() and not f.name.startswith((".probe", ".phone", ".wide-table"))]
    # the executed notebooks a reader downloads (_sources/<chapter>.ipynb, with outputs and figures:
    # tools/book_assets.py) are fetched only on a click: counted apart, under their own bar
    downloads = [f for f in files if f.relative_to(site).parts[0] == "_sources" and f.suffix == ".ipynb"]
    taken = sum(f.stat().st_size for f in downloads)
    downloads_mb = 15   # all of them together: no heavier than the site (17 of 24 chapters measured 7.1 MB, awa 2.4)
    size = sum(f.stat().st_size for f in files) - taken
    maps = [str(f.relative_to(site)) for f in site.rglob("*.map")]
    assert not maps, f"source maps shipped: {maps[:5]}"
    mathjax = site / "_static" / "mathjax"
    assert (mathjax / "tex-chtml.js").is_file(), "MathJax (tex-chtml.js) is not inside the build: math needs the network"
    assert not (mathjax / "sre").exists(), "the whole MathJax distribution is shipped (tools/book_assets.py not loaded?)"
    fonts = site / "_static" / "vendor" / "fontawesome" / "webfonts"
    assert (fonts / "fa-solid-900.woff2").is_file(), "the icon web fonts the theme's CSS draws the icons with are missing"
    assert not (site / "_static" / "scripts" / "fontawesome.js").exists(), \
        "the theme's 1.5 MB fontawesome.js is shipped beside the icon fonts (tools/book_assets.py not loaded?)"
    assert size < 15 * 2**20, f"_build/html is {size / 2**20:.1f} MB without the notebook downloads; the bar is 15 MB"
    assert taken < downloads_mb * 2**20, \
        f"the {len(downloads)} executed notebooks to download weigh {taken / 2**20:.1f} MB; the bar is {downloads_mb} MB"


def test_no_build_paths_in_the_pages(site):
    """A reader's page names no folder of the machine that built it (a temporary folder, the
    checkout's absolute path, the data directory): outputs print paths relative to the book, as
    ``$FLPRIVACY_DATA_DIR/...`` (``flprivacy.data.files.DataPathsAsVariable``), or not at all."""
    import re

    from flprivacy.data import data_dir

    folders = "|".join(re.escape(str(p)) + r"[\w/.-]*" for p in (ROOT, data_dir()))
    bad = {}
    for f in site.rglob("*.html"):
        if "_static" in f.parts or "_sources" in f.parts:
            continue
        text = f.read_text(errors="replace")
        hits = re.findall(r"/tmp/[\w.-]+|" + folders, text)
        if hits:
            bad[str(f.relative_to(site))] = sorted(set(hits))[:3]
    assert not bad, f"build paths in rendered pages: {bad}"


# --- per page: what a reader sees, solutions opened -------------------------------------------

# The probe: first in <head>, it records every console error and uncaught error (a script parse
# error such as a duplicate `const` included); once the test signals (window.__flp_go, set after
# the page is READY and its screenshot taken, so one load serves both) it opens every hidden
# solution, lets MathJax typeset them, then measures tables, images and overflow and writes its
# findings into the DOM (body[data-flp]).
PROBE_HEAD = """<script>window.__flp = {errors: []};
addEventListener('error', e => __flp.errors.push(e.message ? (e.message + ' (' + String(e.filename || '').split('/').pop()
  + ':' + e.lineno + ')') : ('resource failed to load: ' + ((e.target && (e.target.src || e.target.href)) || '?'))), true);
(function () { const o = console.error; console.error = function (...a) { __flp.errors.push(a.map(String).join(' '));
  return o.apply(console, a); }; })();</script>"""
PROBE_BODY = """<script>addEventListener('load', () => { const go = setInterval(async () => {
  if (!window.__flp_go) return;   // the test sets it once the page is ready (and screenshot)
  clearInterval(go);
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('details').forEach(d => d.open = true);
  try { if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; await MathJax.typesetPromise(); } }
  catch (err) { __flp.errors.push('MathJax: ' + err); }
  const r = {errors: __flp.errors, cells: [], images: [], overflow: [], width: innerWidth,
             scrollWidth: document.documentElement.scrollWidth, solutions: document.querySelectorAll('.solution').length};
  document.querySelectorAll('table').forEach((t, k) => t.querySelectorAll('td, th').forEach(c => {
    const x = c.textContent.trim();
    if (/^(nan|NaN|None|<NA>|NaT|\\.\\.\\.|\\u2026)$/.test(x)) r.cells.push('table ' + (k + 1) + ': ' + JSON.stringify(x));
  }));
  document.querySelectorAll('img').forEach(i => { if (i.naturalWidth > 0 && i.clientWidth > 0 && i.clientWidth < i.naturalWidth / 2)
    r.images.push(String(i.getAttribute('src')).slice(-60) + ' shown at ' + i.clientWidth + ' of ' + i.naturalWidth + ' px'); });
  const scrolls = el => { for (let a = el.parentElement; a; a = a.parentElement) {
    const o = getComputedStyle(a).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return true; } return false; };
  const seen = new Set();
  document.querySelectorAll('article.bd-article *, article *').forEach(el => { const b = el.getBoundingClientRect();
    if (b.width > 0 && b.right > innerWidth + 1 && !scrolls(el)) {
      const d = el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).slice(0, 2).join('.') : '');
      if (!seen.has(d)) { seen.add(d); r.overflow.push(d + ' (right edge ' + Math.round(b.right) + ' px)'); } } });
  r.cut = Array.from(document.querySelectorAll('article div.cell_output pre')).filter(p => p.scrollWidth > p.clientWidth + 1)
    .map(p => p.textContent.split('\\n').reduce((a, l) => l.length > a.length ? l : a, '').slice(0, 70));
  r.tables = Array.from(document.querySelectorAll('article table')).map(t => {
    let box = t; for (let a = t.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX; if (o === 'auto' || o === 'scroll') { box = a; break; } }
    return {cls: String(t.className), width: t.scrollWidth, boxed: box !== t, boxRight: Math.round(box.getBoundingClientRect().right),
            boxWidth: box.clientWidth, name: ((t.querySelector('caption') || {}).textContent || (t.querySelector('tr') || {}).textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 70)}; });
  document.body.setAttribute('data-flp', JSON.stringify(r));
}, 50); });</script>"""

RAW_TEX = re.compile(r"\\\(|\\\[|\$\$|\\(?:frac|mathbb|mathcal|mathrm|mathbf|boldsymbol|operatorname|sum|prod|int|cos|sin|"
                     r"log|exp|theta|alpha|beta|gamma|delta|eta|lambda|sigma|mu|nabla|partial|left|right|top|cdot|"
                     r"le|ge|leq|geq|in|hat|tilde|bar|text|begin|end|sqrt|infty|approx|times)(?![A-Za-z])")


PHONE = 400   # px; Chromium's headless window is at least 500 px wide, so a phone is an iframe


def _phone_wrapper(page: Path, target: Path, height: int) -> Path:
    """A page holding ``target`` in a PHONE-wide iframe; copies the probe's findings to its body."""
    wrap = page.with_name(f".phone-{os.getpid()}-{target.name}")
    wrap.write_text(f"""<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe id="f" src="{target.name}" style="width:{PHONE}px;height:{height}px;border:0"></iframe>
<script>setInterval(() => {{ try {{ const v = document.getElementById('f').contentDocument.body.getAttribute('data-flp');
  if (v) document.body.setAttribute('data-flp', v); }} catch (e) {{}} }}, 50);</script></body></html>""")
    return wrap


GO = "(() => { for (const w of [window, ...Array.from(window.frames)]) w.__flp_go = true; return true; })()"
HEIGHT = 1600   # px, the window of the probes and of the screenshots (what a reader sees first)


def _probe(site: Path, doc: str, width: int, budget_ms: int, shot: Path | None = None) -> tuple[dict, str]:
    """One load of the page at ``width``: once READY, the screenshot ``shot`` (solutions still
    closed), then the probe's findings and (desktop) the DOM with solutions open."""
    page = site / (doc + ".html")
    text = page.read_text()
    probe = page.with_name(f".probe-{os.getpid()}-{width}-{page.name}")
    probe.write_text(text.replace("<head>", "<head>" + PROBE_HEAD, 1).replace("</body>", PROBE_BODY + "</body>", 1))
    opened = _phone_wrapper(page, probe, HEIGHT) if width <= PHONE else probe
    b = browser()
    deadline = time.monotonic() + budget_ms / 1000
    try:
        # not ready within the budget: the screenshot shows why, and the probe still runs
        _, session = b.open(opened.as_uri(), max(width, 500), HEIGHT, READY, budget_ms / 1000)
        try:
            if shot is not None:
                b.screenshot(session, shot)
            b.send("Runtime.evaluate", session, check=False, expression=GO, returnByValue=True)
            found = b.wait(session, "document.body && document.body.getAttribute('data-flp')",
                           max(deadline - time.monotonic(), 5.0))
            dom = b.dom(session) if width > PHONE else ""   # the probe's findings are all a phone check needs
        finally:
            b.close(session)
    finally:
        probe.unlink(missing_ok=True)
        opened.unlink(missing_ok=True)
    return (json.loads(found) if found else {}), dom


_RENDERED: dict[tuple[str, int], tuple[dict, str]] = {}


def shot_path(doc: str, width: int) -> Path | None:
    """Where the screenshot of ``doc`` at ``width`` is saved: the key pages at desktop width,
    every chapter at 400 px; None for the others."""
    shots = artifacts_dir() / "screenshots"
    if width > PHONE and doc in KEY_PAGES:
        return shots / (doc.replace("/", "_") + ".png")
    if width <= PHONE and doc.startswith("book/part"):
        return shots / (f"{PHONE}px_" + doc.replace("/", "_") + ".png")
    return None


def rendered(site: Path, doc: str, width: int = 1280) -> tuple[dict, str]:
    """The probe's findings and the DOM, for the page at a window width (retried with longer
    budgets while MathJax or the probe has not finished on a busy machine); the same load saves
    the page's screenshot (:func:`shot_path`)."""
    if (doc, width) not in _RENDERED:
        shot = shot_path(doc, width)
        if shot is not None:
            shot.parent.mkdir(parents=True, exist_ok=True)
        for budget in (20000, 60000, 180000):
            found, dom = _probe(site, doc, width, budget, shot)
            parsed = Page()
            parsed.feed(dom)
            if found and not RAW_MATH.search(html.unescape(" ".join(parsed.text))):
                break
        _RENDERED[(doc, width)] = (found, dom)
    return _RENDERED[(doc, width)]


# Pages that failed a check when it was written (2026-11-24), to be fixed in the chapters; each
# is xfail(strict=False): a fixed page shows as XPASS, and then leaves this list.
STILL_FAILING: dict[str, set[str]] = {
    "raw_tex": set(),
    "tables": set(),
    "console": set(),
    "images": set(),
    "overflow": set(),
    "cut": set(),
    # 10 tables on these pages are wider than the text column at 1280 px (2026-12-01, after the
    # seed counts moved to the headers, tables went to 0.9 of the text's size and nine pages
    # split or reworded their widest tables: 56 tables on 18 pages before)
    "fit": {
        "book/part2/learned_mapping",
        "book/part3/dp_defence",
        "book/part3/gradient_aia_regression",
        "book/part4/diffusion_postprocessing",
    },
}


def pages_for(check: str) -> list:
    return [pytest.param(d, id=d, marks=[pytest.mark.xdist_group(d)]
                         + ([pytest.mark.xfail(strict=False, reason=f"{d}: known {check} problem, chapter to fix")]
                            if d in STILL_FAILING[check] else []))
            for d in toc_files()]


def _found(site, doc, width=1280) -> dict:
    found, _ = rendered(site, doc, width)
    assert found, f"{doc}: the probe did not finish (the page's scripts never reached 'load' in 180 s)"
    return found


@pytest.mark.parametrize("doc", pages_for("raw_tex"))
def test_no_raw_tex_with_solutions_open(site, doc):
    found = _found(site, doc)
    _, dom = rendered(site, doc)
    parsed = Page()
    parsed.feed(dom)
    text = html.unescape(" ".join(parsed.text))
    raw, last = [], -1000
    for m in RAW_TEX.finditer(text):
        if m.start() > last + 80:   # one excerpt per formula
            raw.append(" ".join(text[max(0, m.start() - 50):m.end() + 50].split()))
            last = m.start()
    assert not raw, f"{doc}: {len(raw)} pieces of raw TeX in the text a reader sees (solutions open: " \
                    f"{found.get('solutions')}):\n" + "\n".join(raw[:10])


@pytest.mark.parametrize("doc", pages_for("tables"))
def test_tables_show_no_nan_or_ellipsis(site, doc):
    bad = _found(site, doc)["cells"]
    assert not bad, f"{doc}: table cells a reader cannot use ({len(bad)}; use flprivacy.tables.style):\n" + \
                    "\n".join(sorted(set(bad))[:20])


@pytest.mark.parametrize("doc", pages_for("fit"))
def test_tables_fit_the_column_on_a_desktop(site, doc):
    """At 1280 px every table is seen whole: none is wider than the text column, so no column
    hides behind a sideways scroll (on a phone wide tables scroll inside their box, checked
    below). A table that does not fit is split, transposed or given fewer columns."""
    wide = [f"{t['width']} px in {t['boxWidth']} px: {t['name']}" for t in _found(site, doc)["tables"]
            if t["boxed"] and t["width"] > t["boxWidth"] + 1]
    assert not wide, f"{doc}: tables wider than the text column at 1280 px ({len(wide)}):\n" + "\n".join(wide[:10])


@pytest.mark.parametrize("doc", pages_for("cut"))
def test_printed_output_is_not_cut_on_a_desktop(site, doc):
    """At 1280 px every line a cell prints is seen whole: no output box needs a sideways scroll
    (book.css wraps printed output from tablet width up)."""
    cut = _found(site, doc)["cut"]
    assert not cut, f"{doc}: printed output cut at the column's edge ({len(cut)} boxes; its longest lines):\n" + \
                    "\n".join(cut[:10])


@pytest.mark.parametrize("doc", pages_for("console"))
def test_no_console_errors(site, doc):
    errors = _found(site, doc)["errors"]
    assert not errors, f"{doc}: errors in the browser console:\n" + "\n".join(errors[:10])


@pytest.mark.parametrize("doc", pages_for("images"))
def test_images_shown_at_half_their_size_or_more(site, doc):
    bad = _found(site, doc)["images"]
    assert not bad, f"{doc}: images shrunk below half their natural width (tick labels unreadable; draw " \
                    f"one or two panels per row):\n" + "\n".join(bad)


@pytest.mark.parametrize("doc", pages_for("overflow"))
def test_no_horizontal_overflow_on_a_phone(site, doc):
    found = _found(site, doc, width=PHONE)
    shot = shot_path(doc, PHONE)   # taken by rendered(), in the same load
    if shot is not None:
        assert shot.is_file() and shot.stat().st_size > 0, f"{doc}: no 400 px screenshot"
    assert found["scrollWidth"] <= found["width"] + 1 and not found["overflow"], (
        f"{doc}: at {PHONE} px the page is {found['scrollWidth']} px wide; elements past the right edge (make them "
        f"wrap or scroll inside their box):\n" + "\n".join(found["overflow"][:15]))


WIDE_TABLE_CLASS = "flp-wide-table-probe"


def test_a_wide_table_scrolls_inside_its_box_on_a_phone(site):
    """A result table wider than a phone, put into a cell's output of a built chapter, scrolls
    inside its own box at 400 px instead of making the page scroll sideways (book.css).

    The chapters' tables may all fit today; this one (16 columns of tables.style) does not, so
    the rule is checked whatever the chapters show."""
    import pandas as pd

    from flprivacy.tables import style

    cols = [f"attack {i}" for i in range(16)]
    wide = style(pd.DataFrame({c: [0.5 + i / 100, 0.25] for i, c in enumerate(cols)}), percent=cols)
    table = wide.set_table_attributes(f'class="{WIDE_TABLE_CLASS}"').to_html()
    marker = '<div class="output text_html">'
    host = next((d for d in toc_files() if d.startswith("book/part") and (site / (d + ".html")).is_file()
                 and marker in (site / (d + ".html")).read_text()), None)
    assert host, f"no chapter of the build shows an HTML cell output ({marker}) to hold the wide table"
    page = site / (host + ".html")
    copy = page.with_name(f".wide-table-{os.getpid()}-{page.name}")
    copy.write_text(page.read_text().replace(marker, marker + table, 1))
    try:
        found = {}
        for budget in (20000, 60000):
            found, _ = _probe(site, str(Path(host).parent / copy.stem), PHONE, budget)
            if found:
                break
    finally:
        copy.unlink(missing_ok=True)
    assert found, f"{host}: the probe did not finish"
    probe = [t for t in found["tables"] if WIDE_TABLE_CLASS in t["cls"]]
    assert probe, f"{host}: the wide table is not in the page's article"
    t = probe[0]
    assert t["width"] > PHONE, f"the test table is only {t['width']} px wide: it must be wider than a phone"
    assert t["boxed"] and t["boxRight"] <= found["width"] + 1, (
        f"{host}: at {PHONE} px a {t['width']} px table does not scroll inside a box within the page "
        f"(its box ends at {t['boxRight']} px): book.css must give cell outputs overflow-x: auto")
    assert found["scrollWidth"] <= found["width"] + 1, (
        f"{host}: at {PHONE} px the page is {found['scrollWidth']} px wide with a wide table in a cell's output")
