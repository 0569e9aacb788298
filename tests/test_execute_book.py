"""tools/execute_book.py (`make book`): the chapters not current in the book's cache run under
nbval on two workers, each passing one is stored, a failing one stops the build before the
render naming its notebook and cell, and the render then only reads the cache; the pages' download button gives the executed notebooks, and
launch buttons appear only with a repository address."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import execute_book  # noqa: E402


def test_the_table_of_contents_names_every_chapter_notebook():
    notebooks = execute_book.toc_notebooks(ROOT)
    names = {p.relative_to(ROOT).as_posix() for p in notebooks}
    assert {"book/run_it_yourself.ipynb", "book/part4/awa.ipynb", "book/appendix/api.ipynb"} <= names
    assert all(p.suffix == ".ipynb" and p.is_file() for p in notebooks)
    assert len(names) == len(notebooks) >= 20


def _notebook(path: Path, code: list[str]) -> None:
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {path.stem}")] + [nbformat.v4.new_code_cell(c) for c in code]
    nbformat.write(nb, path)


def test_stale_chapters_execute_in_parallel_a_failure_stops_the_build_and_the_render_reads_the_cache(tmp_path):
    book = tmp_path / "book"
    (book / "tools").mkdir(parents=True)
    (book / "book").mkdir()
    for f in ("_config.yml", "conftest.py", "tools/book_assets.py", "book/references.bib"):
        shutil.copy(ROOT / f, book / f)
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n- file: a\n- file: b\n")
    (book / "intro.md").write_text("# Intro\n\nTwo chapters.\n")
    _notebook(book / "a.ipynb", ["x = 6 * 7", "print('a says', x)"])
    _notebook(book / "b.ipynb", ["y = 1", "assert y == 2, 'b fails'"])

    def build():
        return subprocess.run([sys.executable, str(ROOT / "tools" / "execute_book.py"), "--root", ".", "build",
                               "--all", "-W", "-n", "--keep-going", "."], cwd=book, capture_output=True, text=True,
                              timeout=600)

    r = build()
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-4000:]
    assert "executing 2 chapters" in out and "b.ipynb" in out and "b fails" in out, out[-4000:]
    assert "Cell 1" in out or "cell 1" in out.lower(), out[-4000:]   # nbval names the failing cell
    assert not (book / "_build" / "html").exists(), "the book was rendered after a failing chapter"
    cache = execute_book.cache_dir(book)
    assert [p.name for p in execute_book.stale(execute_book.toc_notebooks(book), cache)] == ["b.ipynb"]

    _notebook(book / "b.ipynb", ["y = 2", "assert y == 2, 'b fails'"])
    r = build()
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "executing 1 chapters" in out and ": b" in out, out[-4000:]
    assert "Executing notebook" not in out, "the render executed a chapter itself"
    page = (book / "_build" / "html" / "a.html").read_text()
    assert "a says 42" in page
    assert execute_book.stale(execute_book.toc_notebooks(book), cache) == []

    # the page's download button gives the executed notebook, with its outputs (tools/book_assets.py)
    assert '_sources/a.ipynb"' in page
    taken = nbformat.read(book / "_build" / "html" / "_sources" / "a.ipynb", as_version=4)
    assert taken.cells[2].outputs[0]["text"] == "a says 42\n"
    # no repository.url in _config.yml: no launch button and no repository button
    assert "mybinder.org" not in page and "launch-buttons" not in page and "repository-button" not in page


def test_launch_and_repository_buttons_only_with_a_repository_url():
    import book_assets

    class Config:
        html_theme_options = {"repository_url": "", "launch_buttons": {"binderhub_url": "https://mybinder.org"}}

    book_assets.repository_buttons(None, Config)
    assert Config.html_theme_options == {"use_repository_button": False, "launch_buttons": {}}
    Config.html_theme_options = {"repository_url": "https://github.com/o/b",
                                 "launch_buttons": {"binderhub_url": "https://mybinder.org"}}
    book_assets.repository_buttons(None, Config)
    assert Config.html_theme_options["use_repository_button"] is True
    assert Config.html_theme_options["launch_buttons"] == {"binderhub_url": "https://mybinder.org"}
