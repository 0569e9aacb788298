"""The rendered book, checked in a real browser (headless Chromium), offline.

The test builds the book with ``make book`` (every chapter executed on a fresh clone, only the
changed ones after an earlier build) unless ``FLPRIVACY_SITE`` names an already built HTML folder, then
opens every page of the table of contents in Debian's ``chromium`` and checks what a reader sees:

- every page of ``_toc.yml`` exists and loads;
- math is typeset by the MathJax copy inside the build (no raw ``\\(`` ``\\[`` ``$$`` left in the
  rendered text, navigation included), with the network cut off;
- every image a page shows exists and is not empty, and each chapter that draws a figure shows one;
- no cell shows an error or a traceback;
- every link between the book's pages resolves;
- screenshots of the key pages are saved (``_build/site-test/``, or ``$FLPRIVACY_ARTIFACTS``).

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
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
KEY_PAGES = ["book/intro", "book/part1/federated_learning", "book/part2/exact_recovery",
             "book/part3/passive_active_aia", "book/part4/curious_client"]
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
    r = subprocess.run(["make", "book"], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, "`make book` fails:\n" + (r.stdout + r.stderr)[-6000:]
    return ROOT / "_build" / "html"


@pytest.fixture(scope="module")
def artifacts() -> Path:
    path = Path(os.environ.get("FLPRIVACY_ARTIFACTS", ROOT / "_build" / "site-test"))
    (path / "screenshots").mkdir(parents=True, exist_ok=True)
    return path


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


def render(exe: str, page: Path, profile: Path, budget_ms: int = 20000) -> str:
    """The page's DOM after its scripts (MathJax) ran, with the network unreachable."""
    r = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
                        "--proxy-server=127.0.0.1:9", "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "<html" in r.stdout, f"chromium could not load {page}: {r.stderr[-1000:]}"
    return r.stdout


def source_of(doc: str) -> str:
    for ext in (".ipynb", ".md"):
        f = ROOT / (doc + ext)
        if f.is_file():
            if ext == ".ipynb":
                return "\n".join("".join(c["source"]) for c in json.loads(f.read_text())["cells"])
            return f.read_text()
    raise FileNotFoundError(f"{doc} of _toc.yml has no .ipynb or .md source")


def test_every_page_renders_offline_with_math_figures_and_working_links(site, artifacts):
    exe = chromium()
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-"))
    problems: list[str] = []
    pages = toc_files()
    for doc in pages:
        page = site / (doc + ".html")
        if not page.is_file():
            problems.append(f"{doc}: page {page.name} was not built")
            continue
        # MathJax typesets asynchronously; on a slow or busy machine it may not have finished
        # within Chromium's virtual-time budget, so a page with raw delimiters is loaded again
        # with longer budgets before it counts as a failure (offline math that never renders
        # fails all three).
        for budget in (20000, 60000, 180000):
            dom = render(exe, page, profile, budget)
            parsed = Page()
            parsed.feed(dom)
            text = html.unescape(" ".join(parsed.text))
            raw = [text[max(0, m.start() - 40):m.end() + 40] for m in RAW_MATH.finditer(text)]
            if not raw:
                break
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
        if doc in KEY_PAGES:
            shot = artifacts / "screenshots" / (doc.replace("/", "_") + ".png")
            subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=20000",
                            "--proxy-server=127.0.0.1:9", "--window-size=1280,1600", f"--screenshot={shot}",
                            page.as_uri()], capture_output=True, timeout=120)
            if not shot.is_file() or shot.stat().st_size == 0:
                problems.append(f"{doc}: no screenshot")
    (artifacts / "report.json").write_text(json.dumps({"site": str(site), "pages": pages, "problems": problems},
                                                      indent=1))
    assert not problems, f"{len(problems)} problems in the rendered book:\n" + "\n".join(problems)
