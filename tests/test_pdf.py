"""`make pdf` (tools/make_pdf.py): the book printed by headless Chromium into one PDF.

A small page is printed on every run where Chromium is installed; the book's own PDF
(``$FLPRIVACY_PDF``, else ``_build/pdf/book.pdf`` once `make pdf` has made it) is checked when it
exists: more than 100 pages, and a bookmark for every chapter's title.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import execute_book  # noqa: E402
import make_pdf  # noqa: E402


def chromium_or_skip() -> None:
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        pytest.skip("Debian's chromium is not installed (`make browser` installs it)")


def test_a_page_prints_with_its_pages_and_bookmarks(tmp_path):
    chromium_or_skip()
    paragraphs = "".join(f"<p>{'A sentence of the chapter. ' * 40}</p>" for _ in range(30))
    (tmp_path / "book.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>T</title></head><body>"
        f"<h1>First chapter</h1>{paragraphs}<h2>A section: θ ≤ 1</h2>{paragraphs}"
        "<details><summary>Solution</summary><pre>" + "x = 1  # a long line " * 20 + "</pre></details>"
        "</body></html>")
    (tmp_path / "index.html").write_text('<meta http-equiv="Refresh" content="0; url=book.html" />\n')
    info = make_pdf.make_pdf(tmp_path / "index.html", tmp_path / "out" / "book.pdf", budget_s=120)
    pdf = (tmp_path / "out" / "book.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and info["bytes"] == len(pdf)
    assert info["pages"] == make_pdf.page_count(pdf) >= 4
    titles = make_pdf.outline_titles(pdf)
    assert "First chapter" in titles and "A section: θ ≤ 1" in titles, titles


def _title(notebook: Path) -> str:
    """A chapter's title as a heading shows it: its first ``# `` line, without markdown marks."""
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return re.sub(r"[*_`]", "", line[2:]).strip()
    raise AssertionError(f"{notebook} has no title")


def test_the_book_pdf_has_every_chapter():
    path = Path(os.environ.get("FLPRIVACY_PDF", ROOT / "_build" / "pdf" / "book.pdf"))
    if not path.is_file():
        pytest.skip(f"no PDF of the book at {path}: `make pdf` makes it")
    pdf = path.read_bytes()
    pages = make_pdf.page_count(pdf)
    assert pages > 100, f"{path} has {pages} pages"
    titles = {" ".join(t.split()) for t in make_pdf.outline_titles(pdf)}
    missing = [(nb.relative_to(ROOT).as_posix(), _title(nb)) for nb in execute_book.toc_notebooks(ROOT)
               if _title(nb) not in titles]
    assert not missing, f"chapters without a bookmark in {path}: {missing}"
