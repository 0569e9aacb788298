"""`make book`: execute the chapters that are not current in the book's cache, two at a time, then
render the book in two Sphinx processes.

`jupyter-book build` executes the chapters missing from its jupyter-cache one after the other,
in its read phase. Here they run first, as `make test` runs them: pytest with nbval on
``--workers`` pytest-xdist workers (one math thread each), every notebook whose cells all pass
stored in the book's cache with its outputs (``conftest.py``, ``FLPRIVACY_CACHE_EXECUTIONS``).
Only the notebooks of the table of contents that the cache does not already hold for their
current code are executed (the cache's own test: same code cells and cell metadata, the same
kernel), so a rebuild after editing one chapter executes that chapter only.

A failing cell stops the build before anything is rendered: pytest names the notebook, the cell
and the error. The other chapters still finish, and those that passed stay in the cache.

When every chapter is in the cache, the render only reads it, in two Sphinx processes
(``tools/build_book.py``). Should one still be missing (a cell nbval skipped, so its execution
was not stored), the render keeps one process and executes it itself: two processes would
execute two chapters into one cache database at once.

Usage: python tools/execute_book.py [--workers N] [--list] [--root DIR] <jupyter-book build arguments>
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cache_dir(root: Path) -> Path:
    return root / "_build" / ".jupyter_cache"


def toc_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks the book builds: every ``root``/``file``/``glob`` entry of ``_toc.yml`` that
    is an ``.ipynb`` file, in the order of the table of contents."""
    import yaml

    found: list[Path] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("root", "file") and isinstance(value, str):
                    found.append(root / value)
                elif key == "glob" and isinstance(value, str):
                    found.extend(p.with_suffix("") for p in sorted(root.glob(value)))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load((root / "_toc.yml").read_text()))
    notebooks = [p if p.suffix == ".ipynb" else p.with_name(p.name + ".ipynb") for p in found]
    return list(dict.fromkeys(p.resolve() for p in notebooks if p.is_file()))


def stale(notebooks: list[Path], cache: Path) -> list[Path]:
    """The notebooks whose current code the jupyter-cache at ``cache`` holds no execution of
    (the match `jupyter-book build` makes with ``execute_notebooks: cache``)."""
    if not (cache / "global.db").is_file():
        return list(notebooks)
    import nbformat
    from jupyter_cache import get_cache

    db = get_cache(str(cache))
    missing = []
    for path in notebooks:
        try:
            db.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            missing.append(path)
    return missing


def execute(notebooks: list[Path], workers: int, root: Path) -> int:
    """Run ``notebooks`` under nbval on ``workers`` processes, storing each passing execution in
    the book's cache (``root``'s ``conftest.py``)."""
    env = dict(os.environ, FLPRIVACY_CACHE_EXECUTIONS=str(cache_dir(root)))
    env.setdefault("OMP_NUM_THREADS", "1")
    cmd = [sys.executable, "-m", "pytest", "-o", "addopts=", "--nbval-lax", "-p", "no:cacheprovider",
           "--tb=short", "-rf"]
    n = min(workers, len(notebooks))
    if n > 1:
        cmd += ["-n", str(n), "--dist", "loadfile", "--no-loadscope-reorder"]
    else:
        cmd += ["-p", "no:xdist"]
    cmd += [str(p.relative_to(root)) for p in notebooks]
    return subprocess.call(cmd, cwd=root, env=env)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="notebooks executed at once (default 2)")
    parser.add_argument("--list", action="store_true", help="list the chapters to execute, and stop")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's folder (default: this repository)")
    args, build_args = parser.parse_known_args(argv)
    if args.workers < 1:
        parser.error("--workers must be a positive integer")

    root = args.root.resolve()
    todo = stale(toc_notebooks(root), cache_dir(root))
    names = [str(p.relative_to(root)) for p in todo]
    if args.list:
        print("\n".join(names))
        return 0
    if todo:
        print(f"executing {len(todo)} chapters not current in the cache, {min(args.workers, len(todo))} at a time: "
              + ", ".join(Path(n).stem for n in names), flush=True)
        if execute(todo, args.workers, root) != 0:
            print("\nmake book: a chapter failed (notebook, cell and error above); the book is not rendered. "
                  "The chapters that passed are kept in the cache.", file=sys.stderr)
            return 1
    else:
        print("every chapter is current in the cache: rendering only", flush=True)

    left = stale(toc_notebooks(root), cache_dir(root))
    jobs = 1 if left else 2
    if left:
        print("not stored in the cache (a skipped cell?), executed by the render in one process: "
              + ", ".join(str(p.relative_to(root)) for p in left), flush=True)
    # tools/build_book.py, loaded by its path: putting tools/ on sys.path first would also decide
    # which book_assets.py the book's _config.yml loads
    spec = importlib.util.spec_from_file_location("build_book", ROOT / "tools" / "build_book.py")
    build_book = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_book)
    return build_book.main(["--jobs", str(jobs), *build_args])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
