"""Resumable runs: one file per finished point, so that a command of hours survives its session.

A long command (Fig. 3's batch-size panel or Table 3 on Income-A of Diana et al.: hours of one
core each) is a list of independent *points*: a factor value and a seed, a clipping-norm search, a
seed of a table. :func:`run_points` runs them, ``jobs`` at a time, and writes each point's result
as soon as it finishes to ``book/results/points/<result file>/<key>.json``, with the provenance
that :func:`flbook.experiments.save_result` gives a result file: the command, scale, date,
version, commit, machine, and the library files the point's process imported, whole and by unit.
It also records the point's wall and CPU seconds (the CPU time of its process: one core's work
whatever else shares the machine).

The next call reuses a point whose file records the same function and arguments at the same
scale and whose recorded library code is still the code of the working tree, by the rule that
``python -m flbook.experiments.reproduce`` applies to result files
(:func:`flbook.experiments.fingerprint.check_sources`); every other point runs again. A
command built on it writes its result file once every point is there. Stop it at any time
(Ctrl-C, ``kill``, the end of a session): the finished points stay, and the same command resumes.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flprivacy.config import scale
from . import (
    git_commit,
    library_source_units,
    library_sources,
    machine,
    result_path,
    results_dir,
    run_command,
)


@dataclass(frozen=True)
class Point:
    """One independent run of a resumable command.

    Attributes:
        key: the point's name, unique within its command, used as its file's stem
            (letters, digits and ``=._-`` only), e.g. ``"batch_size=32_seed=0"``.
        fn: the function that computes it, as ``"package.module:function"``; it must be importable
            by that name (a worker process imports it) and return JSON-serialisable data.
        args: its positional arguments, JSON-serialisable (they are recorded and compared).
    """

    key: str
    fn: str
    args: tuple = ()

    def __post_init__(self):
        if not self.key or not all(ch.isalnum() or ch in "=._-" for ch in self.key):
            raise ValueError(f"Point.key: expected a non-empty name of letters, digits and '=._-' (a file "
                             f"stem), got {self.key!r}.")
        if self.fn.count(":") != 1:
            raise ValueError(f"Point.fn: expected 'package.module:function', got {self.fn!r}.")
        try:
            json.dumps(list(self.args))
        except TypeError as err:
            raise TypeError(f"Point.args of {self.key!r}: expected JSON-serialisable values ({err}); pass "
                            "numbers, strings and lists.") from None

    def recorded_args(self) -> list:
        """The arguments as a point file records them (JSON: tuples become lists)."""
        return json.loads(json.dumps(list(self.args)))


def points_dir(result: str, scale_: str | None = None) -> Path:
    """Where the points of result file ``result`` (at scale ``scale_``, default the current one) are
    kept: ``book/results/points/<the result file's stem>/`` (``<result>_quick`` at quick scale)."""
    return results_dir() / "points" / result_path(result, scale_).stem


def _src_root() -> Path:
    return Path(__file__).resolve().parents[2]


def load_point(path: Path, point: Point, scale_: str) -> dict[str, Any] | None:
    """The record in ``path`` when it holds ``point`` as it would run now: the same function,
    arguments and scale, and library code unchanged since (:func:`check_sources`) or re-verified
    since by a canary (:func:`flbook.experiments.canary.reverified`); else None."""
    from .fingerprint import check_sources

    try:
        rec = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("sources"), dict) or "data" not in rec:
        return None
    from .moves import rename_function, renames

    if (rename_function(str(rec.get("fn")), renames()) != point.fn or rec.get("args") != point.recorded_args()
            or rec.get("scale") != scale_):
        return None
    units = rec.get("source_units") if isinstance(rec.get("source_units"), dict) else None
    module, _, name = str(rec["fn"]).partition(":")  # as the run named it
    own = module.replace(".", "/")
    own = f"{own}.py" if f"{own}.py" in rec["sources"] else f"{own}/__init__.py"
    same, why = check_sources(rec["sources"], units, _src_root(), [(own, name)] if units is not None else None)
    if not same:
        from .canary import still_current  # moved since, or re-verified by a canary

        same = still_current(rec, [(own, name)], why)[0]
    return rec if same else None


def _call(fn: str, args: list, threads: int = 0) -> dict[str, Any]:
    """Compute one point in this process: its data (as JSON reads it back), wall and CPU seconds, and
    the library code this process imported, fingerprinted before the run (what was imported by then)
    and at its end (what it imported later)."""
    if threads:
        import torch

        torch.set_num_threads(threads)
    module, name = fn.split(":")
    f = getattr(importlib.import_module(module), name)
    library_sources()
    wall, cpu = time.perf_counter(), time.process_time()
    data = f(*args)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"data": json.loads(json.dumps(data)), "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "sources": library_sources(), "source_units": library_source_units()}


def _execute(points: Sequence[Point], jobs: int) -> Iterator[tuple[Point, dict[str, Any]]]:
    """``(point, computed)`` for every point, as each finishes; ``jobs`` > 1 runs them in that many
    fresh processes, one torch thread each."""
    if jobs == 1:
        for p in points:
            yield p, _call(p.fn, p.recorded_args())
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as pool:
        futures = {pool.submit(_call, p.fn, p.recorded_args(), 1): p for p in points}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()


def run_points(result: str, points: Sequence[Point], *, jobs: int = 1,
               log: Callable[[str], None] | None = print) -> dict[str, dict[str, Any]]:
    """Every point's record, ``{key: record}`` in the order of ``points``: read from its file
    (:func:`points_dir`) when it is current (:func:`load_point`), else computed and written there
    as soon as it finishes. A record holds the provenance of a result file, ``"point"``, ``"fn"``,
    ``"args"``, ``"wall_seconds"``, ``"cpu_seconds"`` and ``"data"`` (the function's return value).

    Args:
        result: the result file's name (as for :func:`flbook.experiments.save_result`).
        points: the points, with unique keys.
        jobs: how many points run at once (>= 1; above 1, each in its own process).
        log: receives one line per finished point (None: silent).
    """
    from tqdm import tqdm

    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}.")
    keys = [p.key for p in points]
    if len(set(keys)) != len(keys):
        raise ValueError(f"points: keys must be unique, got duplicates in {keys}.")
    s = scale()
    folder = points_dir(result, s)
    out: dict[str, dict[str, Any]] = {}
    for p in points:
        rec = load_point(folder / f"{p.key}.json", p, s)
        if rec is not None:
            out[p.key] = rec
    todo = [p for p in points if p.key not in out]
    if log:
        log(f"{result}: {len(out)} of {len(points)} points current in points/{folder.name}/, {len(todo)} to run")
    folder.mkdir(parents=True, exist_ok=True)
    from flprivacy import __version__

    for p, res in tqdm(_execute(todo, jobs), total=len(todo), desc=result, disable=not todo or log is None):
        rec = {"name": result, "point": p.key, "fn": p.fn, "args": p.recorded_args(), "command": run_command(),
               "scale": s, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
               "version": __version__, "commit": git_commit(), "machine": machine(),
               "wall_seconds": res["wall_seconds"], "cpu_seconds": res["cpu_seconds"],
               "sources": res["sources"], "source_units": res["source_units"], "data": res["data"]}
        path = folder / f"{p.key}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(rec, indent=1) + "\n")
        os.replace(tmp, path)  # a killed run never leaves half a file
        out[p.key] = rec
        if log:
            log(f"{p.key}: {res['cpu_seconds']:.1f} s of CPU ({res['wall_seconds']:.1f} s wall)")
    return {p.key: out[p.key] for p in points}


def provenance(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What a result file assembled from points says about them: their folder, how many, their
    dates and commits, and their summed CPU seconds (one core's time of the whole computation,
    however many sessions it took)."""
    recs = list(records.values())
    return {"points": len(recs), "point_dates": sorted({r["date"][:10] for r in recs}),
            "point_commits": sorted({str(r["commit"])[:12] for r in recs}),
            "one_core_seconds": round(sum(r["cpu_seconds"] for r in recs), 1)}
