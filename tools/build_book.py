"""`jupyter-book build`, with Sphinx reading and writing the pages in ``--jobs`` processes.

Jupyter Book 1.0's command line has no ``-j``; its ``build_sphinx`` takes ``jobs`` and passes it
to Sphinx as ``parallel``. `make test` and `make book` render the book with two processes once
pytest has filled the execution cache (tools/execute_book.py). A render that must execute a
chapter missing from the cache keeps one process: two would execute two chapters into one
jupyter-cache database at once.

Usage: python tools/build_book.py --jobs N <jupyter-book build arguments>
"""

from __future__ import annotations

import functools
import sys


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--jobs" or not argv[1].isdigit() or int(argv[1]) < 1:
        raise SystemExit(f"usage: python tools/build_book.py --jobs N build ... (got {argv[:2]}): N, a positive "
                         "integer, is the number of Sphinx processes")
    import jupyter_book.sphinx as jb_sphinx
    from jupyter_book.cli.main import main as jupyter_book_cli

    # cli.main imports build_sphinx from jupyter_book.sphinx inside `build`: it calls the partial.
    jb_sphinx.build_sphinx = functools.partial(jb_sphinx.build_sphinx, jobs=int(argv[1]))
    sys.argv = ["jupyter-book", *argv[2:]]
    return jupyter_book_cli()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
