"""`make pdf` (tools/make_pdf.py): the book printed by headless Chromium into one PDF.

A book of two small chapters is built on one page and printed on every run where Chromium is
installed; the book's own PDF (``$FLPRIVACY_PDF``, else ``_build/pdf/book.pdf`` once `make pdf`
has made it) is checked when it exists: more than 100 pages, and a bookmark for every chapter's
title.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
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


def test_a_small_book_prints_with_its_pages_and_bookmarks(tmp_path):
    """`make pdf`'s two steps on a book of two chapters, one with a hidden cell (the one-page
    build must draw it) and a long section, with the book's configuration and extension."""
    chromium_or_skip()
    import nbformat

    book = tmp_path / "book"
    (book / "tools").mkdir(parents=True)
    (book / "book").mkdir()
    for f in ("_config.yml", "conftest.py", "tools/book_assets.py", "book/references.bib"):
        shutil.copy(ROOT / f, book / f)
    # the root document in a folder, as the book's (book/intro): the one page is written there
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n- file: a\n- file: b\n")
    paragraphs = "\n\n".join("A sentence of the chapter. " * 40 for _ in range(40))
    (book / "book" / "intro.md").write_text(f"# The small book\n\n$$\\sum_k x_k$$\n\n{paragraphs}\n")
    for name, title in (("a", "First chapter"), ("b", "A section: θ ≤ 1")):
        nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                               "language": "python"}})
        nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\n{paragraphs}"),
                    nbformat.v4.new_code_cell("x = 6 * 7  # " + "a long comment " * 8, metadata={"tags": ["hide-input"]}),
                    nbformat.v4.new_code_cell("print(x)")]
        nbformat.write(nb, book / f"{name}.ipynb")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "execute_book.py"), "--root", ".", "build",
                        "--builder", "singlehtml", "-W", "-n", "--keep-going", "."],
                       cwd=book, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    info = make_pdf.make_pdf(book / "_build" / "singlehtml" / "index.html", book / "_build" / "pdf" / "book.pdf",
                             budget_s=300)
    pdf = (book / "_build" / "pdf" / "book.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and info["bytes"] == len(pdf)
    assert info["pages"] == make_pdf.page_count(pdf) >= 6, info
    titles = make_pdf.outline_titles(pdf)
    assert {"The small book", "First chapter", "A section: θ ≤ 1"} <= set(titles), titles


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
    # Chromium joins a heading's wrapped lines without a space (and may repeat the first), and the
    # pages set typographic quotes: compare without spaces, with plain quotes and dashes
    def key(text: str) -> str:
        return "".join(text.translate(str.maketrans("‘’“”–—", "''\"\"--")).split())

    titles = [key(t) for t in make_pdf.outline_titles(pdf)]
    missing = [(nb.relative_to(ROOT).as_posix(), _title(nb)) for nb in execute_book.toc_notebooks(ROOT)
               if not any(key(_title(nb)) in t for t in titles)]
    assert not missing, f"chapters without a bookmark in {path}: {missing}"
