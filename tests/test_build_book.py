"""tools/build_book.py: `make test` renders the book in two Sphinx processes. Under -W a single
extension that does not declare parallel safety would turn that into an error (Sphinx warns and
reads serially), so a small book with the real configuration is built with --jobs 2."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_book  # noqa: E402


@pytest.mark.parametrize("argv", [[], ["build", "."], ["--jobs", "0", "build"], ["--jobs", "two", "build"]])
def test_bad_arguments_name_the_usage(argv):
    with pytest.raises(SystemExit, match=r"--jobs N build .*positive"):
        build_book.main(argv)


def test_the_book_configuration_reads_and_writes_in_parallel_without_a_warning(tmp_path):
    # Sphinx reads in parallel only above 5 documents: 7 pages, with math, a citation and code.
    book = tmp_path / "book"
    (book / "tools").mkdir(parents=True)
    (book / "book").mkdir()
    shutil.copy(ROOT / "_config.yml", book)
    shutil.copy(ROOT / "tools" / "book_assets.py", book / "tools")
    shutil.copy(ROOT / "book" / "references.bib", book / "book")
    pages = [f"page{i}" for i in range(7)]
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n" + "".join(f"- file: {p}\n" for p in pages))
    (book / "intro.md").write_text("# Intro\n\nA formula $x^2$.\n")
    for i, p in enumerate(pages):
        (book / f"{p}.md").write_text(f"# Page {i}\n\n$$\\sum_k x_k$$\n\n```python\nprint({i})\n```\n")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "build_book.py"), "--jobs", "2", "build", "-W", "-n",
                        "--keep-going", str(book)], capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "serial read" not in out and "WARNING" not in out, out[-4000:]
    assert (book / "_build" / "html" / "page6.html").is_file()
