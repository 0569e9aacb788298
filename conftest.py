"""Each chapter executes once per test run: nbval's executions go into the book's cache.

``make test`` runs every notebook under nbval (two pytest-xdist workers), then builds the book
and checks it in a browser. When ``FLPRIVACY_CACHE_EXECUTIONS`` names a jupyter-cache folder
(the Makefile sets it to ``_build/.jupyter_cache``, the book's own), each notebook whose cells
all passed is stored there with the outputs nbval recorded, exactly as ``jupyter-book build``
(``execute_notebooks: cache``) would store its own execution: same code cells, same working
folder (the notebook's), same environment. The book build then finds every chapter in the cache
and only renders it. A notebook with a failing cell is not stored (the build would execute it
again and stop on the same error).

Without the variable (a single notebook run by hand) nothing is written.

Scheduling: pytest-xdist (``--dist loadfile``) hands files to its workers in collection order,
so the notebooks are collected first, longest first (their last execution time, read from the
book's cache; by size when unknown), and the many short unit-test files fill the end: no long
notebook is left to run alone while the other worker idles.
"""

from __future__ import annotations

import copy
import fcntl
import os
import time
from pathlib import Path

import pytest

CACHE_ENV = "FLPRIVACY_CACHE_EXECUTIONS"

_outputs: dict[str, dict[int, list]] = {}   # notebook path -> {cell index: outputs}
_failed: set[str] = set()
_started: dict[str, float] = {}
ROOT = Path(__file__).resolve().parent
BOOK_CACHE = ROOT / "_build" / ".jupyter_cache"


def _last_seconds() -> dict[str, float]:
    """Each notebook's last execution time (s), from the book's cache (empty when there is none)."""
    if not (BOOK_CACHE / "global.db").is_file():
        return {}
    try:
        from jupyter_cache import get_cache
        return {str(Path(r.uri).resolve()): float((r.data or {}).get("execution_seconds", 0))
                for r in get_cache(str(BOOK_CACHE)).list_cache_records()}
    except Exception:   # an unreadable cache only loses the ordering
        return {}


def pytest_collection_modifyitems(session, config, items):
    seconds = _last_seconds()

    def path(item) -> str:
        return str(Path(str(item.fspath)).resolve())

    def key(item):
        p = path(item)
        if p.endswith(".ipynb"):
            return (0, -seconds.get(p, 0.0), -Path(p).stat().st_size)
        return (1, 0.0, 0)

    order = {p: i for i, p in enumerate(dict.fromkeys(path(it) for it in items))}
    items.sort(key=lambda it: (*key(it), order[path(it)]))


def _is_nbval_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "test_outputs")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if not os.environ.get(CACHE_ENV) or not _is_nbval_cell(item):
        return
    report = outcome.get_result()
    path = str(item.parent.fspath)
    _started.setdefault(path, time.perf_counter())
    if report.failed:
        _failed.add(path)
    if call.when == "call" and report.passed:
        _outputs.setdefault(path, {})[item.cell_num] = list(item.test_outputs or [])


def pytest_runtest_teardown(item, nextitem):
    if not os.environ.get(CACHE_ENV) or not _is_nbval_cell(item):
        return
    path = str(item.parent.fspath)
    if nextitem is not None and getattr(nextitem, "parent", None) is item.parent:
        return   # the notebook's last cell has not run yet
    outputs = _outputs.pop(path, {})
    if path in _failed:
        return
    nb = copy.deepcopy(item.parent.nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if len(outputs) != len(code):
        return   # a cell was skipped: not the execution the book would make
    for i, cell in enumerate(code):
        cell.outputs = merge_streams(outputs[i])
        cell.execution_count = i + 1
        for out in cell.outputs:
            if "execution_count" in out:
                out["execution_count"] = i + 1
    store(nb, Path(path), Path(os.environ[CACHE_ENV]), time.perf_counter() - _started.pop(path, time.perf_counter()))


def merge_streams(outputs: list) -> list:
    """Consecutive prints to one stream as one output, as Jupyter shows them (nbval keeps each
    message apart, which would render a progress log as dozens of boxes)."""
    merged: list = []
    for out in outputs:
        if (out.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == out.get("name")):
            merged[-1]["text"] += out["text"]
        else:
            merged.append(copy.deepcopy(out))
    return merged


def store(nb, source: Path, cache_dir: Path, seconds: float = 0.0) -> None:
    """Commit an executed notebook to the jupyter-cache at ``cache_dir`` (one writer at a time)."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache_dir = cache_dir if cache_dir.is_absolute() else ROOT / cache_dir
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir.parent / ".jupyter_cache.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        get_cache(str(cache_dir)).cache_notebook_bundle(
            CacheBundleIn(nb, str(source.resolve()), data={"execution_seconds": seconds}),
            check_validity=True, overwrite=True)
