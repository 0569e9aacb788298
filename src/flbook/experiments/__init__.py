"""Committed experiment scripts and their result files.

Each script is run as ``python -m flbook.experiments.<name>``, writes its numbers with
:func:`save_result` into ``book/results/<name>.json`` (committed, with the command that
made it), and chapters read them back with :func:`~flbook.results.load_result`. Numbers in the book come
either from a chapter's own code or from such a file.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from flprivacy.config import SCALE_ENV, SCALES, SEED_ENV, project_root, scale

from ..results import (  # noqa: F401 - where result files live, read back
    load_result, load_result_or_none, result_path, results_dir)


_STARTED = (time.perf_counter(), time.process_time())
"""When this package was imported: a command ``python -m flbook.experiments.<name>`` imports it first,
so :func:`runtime` measures the whole run."""


def runtime() -> dict[str, float]:
    """The run's cost so far: wall-clock and CPU seconds (all threads of this process) since the
    command started. Every result record holds it under ``"runtime"`` (:func:`save_result`); keys
    inside ``data`` such as ``seconds_per_iteration`` are measurements, not the run's cost."""
    return {"wall_seconds": round(time.perf_counter() - _STARTED[0], 1),
            "cpu_seconds": round(time.process_time() - _STARTED[1], 1)}


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
    }


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--threads N`` (default 1) to an experiment's command line; see :func:`use_threads`."""
    parser.add_argument("--threads", type=seed_int, default=1,
                        help="torch threads (default 1: the operations are small, and extra threads on a busy "
                             "machine slow them down; 0 keeps torch's choice)")


def _int_at_least(text: str, minimum: int, expected: str) -> int:
    """``text`` as an integer >= ``minimum``, else an argparse error "expected <expected>, got ..."."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (e.g. ``--seeds 3``); anything else exits non-zero."""
    return _int_at_least(text, 1, "a positive integer")


def seed_int(text: str) -> int:
    """argparse type: a seed, an integer >= 0; anything else exits non-zero."""
    return _int_at_least(text, 0, "a non-negative integer seed")


def use_threads(args: argparse.Namespace) -> None:
    """Apply the ``--threads`` option of :func:`add_threads_option`."""
    if args.threads:
        torch.set_num_threads(args.threads)


KEEP_FREED_MEMORY_ENV: dict[str, str] = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "2147483647"}
"""The environment form of :func:`keep_freed_memory`, read by glibc when a process starts: what
``reproduce`` gives every command it runs (``python -m flbook.experiments.bench_part3_allocator``
measures it on a paper-scale Part III point and on the gradient-based AIA at 36,000 rows)."""


ALLOCATORS: tuple[str, ...] = ("glibc default", "keep freed memory")
"""The two settings of glibc's allocator :func:`time_allocators` compares (the second is
:data:`KEEP_FREED_MEMORY_ENV`)."""


def time_allocators(module: str, args: Sequence[str], repeats: int, same: str) -> dict[str, Any]:
    """Run ``python -m flbook.experiments.<module> --child <setting> *args`` under each of
    :data:`ALLOCATORS`, alternating, ``repeats`` times, on one thread each (an allocator setting
    holds for a whole process, so each run is a child process). Each child prints, as its last line,
    a JSON object with at least ``wall``, ``user``, ``system`` (seconds) and ``minor_faults``, and
    ``same``: what must not depend on the setting. Returns every run, the medians per setting, the
    default's over the kept setting's (wall, and CPU = user + system) and whether ``same`` was equal
    in every run."""
    import statistics

    runs: dict[str, list[dict]] = {a: [] for a in ALLOCATORS}
    for r in range(repeats):
        for a in ALLOCATORS:
            env = {k: v for k, v in os.environ.items() if k not in KEEP_FREED_MEMORY_ENV} | {"OMP_NUM_THREADS": "1"}
            env |= KEEP_FREED_MEMORY_ENV if a == ALLOCATORS[1] else {}
            cmd = [sys.executable, "-m", f"flbook.experiments.{module}", "--child", a, *args]
            out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
            if out.returncode != 0:
                raise RuntimeError(f"{module}: the child under {a!r} failed ({out.returncode}):\n{out.stderr[-2000:]}")
            runs[a].append(json.loads(out.stdout.strip().splitlines()[-1]))
            x = runs[a][-1]
            print(f"{module}, repeat {r}, {a}: {x['wall']:.2f} s wall, {x['system']:.2f} s in the kernel", flush=True)
    med = {a: {k: statistics.median(x[k] for x in v) for k in ("wall", "user", "system", "minor_faults")}
           for a, v in runs.items()}
    default, kept = (med[a] for a in ALLOCATORS)
    return dict(median=med, runs=runs, repeats=repeats, wall_ratio=default["wall"] / kept["wall"],
                cpu_ratio=(default["user"] + default["system"]) / (kept["user"] + kept["system"]),
                same_numbers=len({json.dumps(x[same], sort_keys=True) for v in runs.values() for x in v}) == 1)


def keep_freed_memory() -> bool:
    """Make glibc's allocator keep freed memory for reuse in this process: no ``mmap`` for large
    blocks (``M_MMAP_MAX = 0``) and no trimming of the heap (``M_TRIM_THRESHOLD`` at its maximum),
    the run-time form of ``MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647``.

    An attack that replays local training (AWA, DLG on ResNet-18) allocates and frees the same
    tensors of millions of entries at every iteration. By default each is a fresh ``mmap`` whose
    pages the kernel maps and zero-fills on first touch, and a third of the CPU time goes to the
    kernel; kept, the blocks are reused. The numbers computed do not change (the allocator decides
    where tensors live, not what they hold); the process keeps its peak memory until it exits.
    ``python -m flbook.experiments.awa_bench`` measures the effect side by side. Returns whether
    the settings were applied (False where the C library has no ``mallopt``, e.g. macOS).
    """
    import ctypes
    import ctypes.util

    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_max = -1, -4  # glibc's <malloc.h>
    return bool(mallopt(m_mmap_max, 0)) and bool(mallopt(m_trim_threshold, 2**31 - 1))


def training_parser(description: str, defaults: dict[str, Any], steps_help: str | None = None,
                    ) -> argparse.ArgumentParser:
    """The options the committed weight-training commands share (``train_ddpm``, ``train_rog``,
    ``train_fedinverse_gan``): ``--steps``, ``--batch-size``, ``--lr`` and ``--seed`` with the
    command's ``defaults``, ``--minutes`` (a time budget) and ``--out``; the command adds its own
    options, then :func:`add_threads_option`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--steps", type=positive_int, default=defaults["steps"], help=steps_help)
    parser.add_argument("--batch-size", type=positive_int, default=defaults["batch_size"])
    parser.add_argument("--lr", type=float, default=defaults["lr"])
    parser.add_argument("--seed", type=seed_int, default=defaults["seed"])
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop after this many minutes of training (the record names the steps done)")
    parser.add_argument("--out", type=Path, default=None, help="weights file (default: the committed path)")
    return parser


def training_record(module: str, argv: Sequence[str] | None, **fields: Any) -> dict[str, Any]:
    """The record saved beside trained weights: the command actually run (``argv`` when called from
    Python), the command's ``fields``, then the UTC date, the commit and the machine."""
    command = run_command() if argv is None else f"python -m flbook.experiments.{module} " + " ".join(argv)
    return dict(command=command, **fields, date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                commit=git_commit(), machine=machine())


def exit_on_bad_input(main: Any) -> None:
    """Run a command's ``main()``; a ValueError or FileNotFoundError (bad option, missing data)
    prints ``error: ...`` and exits with status 2 instead of a traceback."""
    try:
        main()
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


def seeds_command(description: str, argv: Sequence[str] | None, *, quick: int, paper: int,
                  parser: argparse.ArgumentParser | None = None) -> tuple[argparse.Namespace, int]:
    """The command line shared by the seed-sweep experiments: ``--seeds N`` (default ``quick`` or
    ``paper`` runs, by :func:`flprivacy.config.scale`), parsed from ``argv``, with torch on one
    thread (thousands of tiny products: one thread is faster on a shared CPU). ``parser`` may
    carry the command's other options. Returns the parsed arguments and the number of runs."""
    p = parser or argparse.ArgumentParser(description=description)
    p.add_argument("--seeds", type=positive_int, default=None, help=f"runs (default: {paper} paper, {quick} quick)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    return args, args.seeds or (paper if scale() == "paper" else quick)


def run_command() -> str:
    """The command line that is running now, as a reader would type it to repeat it.

    A module run with ``python -m`` is named by its module; the scale and seed variables that
    are set are written in front of it.
    """
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    prog = f"python -m {spec.name}" if spec is not None and spec.name else "python " + sys.argv[0]
    envs = " ".join(f"{k}={os.environ[k]}" for k in (SCALE_ENV, SEED_ENV) if k in os.environ)
    return " ".join(x for x in (envs, prog, *map(shlex.quote, sys.argv[1:])) if x)


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """The project's commit (``<sha>`` or ``<sha>+dirty``), or ``"unknown"`` outside a git checkout.

    Read once, when a command ``python -m flbook.experiments.<name>`` imports this package
    (i.e. when a run starts; see :func:`started_as_command`), or at the first save otherwise, and
    kept: a run of hours records the code it ran, not a commit made while it was running."""
    root = project_root()
    if root is None:
        return "unknown"
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "src"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


def source_hash(path: str | Path) -> str:
    """The fingerprint of a library file in a result's ``sources``: its SHA-256, 16 hex digits."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


@functools.lru_cache(maxsize=None)  # a run fingerprints each file once, as first seen
def _fingerprint(path: str) -> tuple[str, str | None]:
    """A file's whole-file hash (:func:`source_hash`) and its units (``fingerprint.source_units``;
    None when it does not parse), both of the bytes read once, now."""
    from .fingerprint import source_units

    data = Path(path).read_bytes()
    return hashlib.sha256(data).hexdigest()[:16], source_units(data)


def _imported_library_files() -> dict[str, str]:
    """``{"<package>/<path>.py": absolute path}`` of the files of the library (``flprivacy``) and of
    the book's reproduction package (``flbook``) that this process has imported."""
    src = Path(__file__).resolve().parents[2]
    out = {}
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if name.split(".")[0] not in ("flprivacy", "flbook") or not f:
            continue
        path = Path(f).resolve()
        if path.is_relative_to(src) and path.is_file():
            out[path.relative_to(src).as_posix()] = str(path)
    return dict(sorted(out.items()))


def library_sources() -> dict[str, str]:
    """The library's source files this process has imported, as ``{"flprivacy/<path>.py": sha}``
    (SHA-256, 16 hex digits). Each file is read and fingerprinted (this hash and its units, see
    :func:`library_source_units`) the first time this function sees it: at the start of a command
    (:func:`started_as_command`) for what was imported then, at the save for what the run imported
    later. ``python -m flbook.experiments.reproduce`` compares them with the files now."""
    return {rel: _fingerprint(path)[0] for rel, path in _imported_library_files().items()}


def library_source_units() -> dict[str, str]:
    """The units of the library files this process has imported (read when :func:`library_sources`
    first saw each file), as ``{"flprivacy/<path>.py": "name=hash name=hash ..."}``: the names the
    file's top-level statements bind, in order, each with a hash of its syntax without docstrings
    and layout where it is first bound (one per definition, import or assignment, and
    ``<module>`` for the other top-level statements). A file that does not
    parse is left out (its whole-file hash in ``sources`` decides). ``python -m
    flbook.experiments.reproduce`` keeps a result current while every recorded unit is
    unchanged and every unit added since cannot be reached by the recorded code (see the module
    ``flbook.experiments.fingerprint``)."""
    out = {}
    for rel, path in _imported_library_files().items():
        units = _fingerprint(path)[1]
        if units is not None:
            out[rel] = units
    return out


def save_result(name: str, data: Any, *, seeds: Sequence[int] | None, scale_: str | None = None) -> Path:
    """Write ``data`` (JSON-serialisable) to :func:`~flbook.results.result_path` with its provenance.

    The record holds the command actually run (:func:`run_command`), the scale, the seeds, the
    UTC date and time, the library version, the git commit, the machine, the run's cost so far
    (:func:`runtime`; a resumable run records the cost of its last invocation) and the hash of
    every library file the run imported (:func:`library_sources`) with the hashes of its top-level
    units (:func:`library_source_units`). A quick-scale run
    writes ``<name>_quick.json`` and never touches the paper-scale file.

    Args:
        name: result name (file stem), e.g. ``"part2_leaf_table1"``.
        data: JSON-serialisable numbers.
        seeds: the seeds the run used (``None`` only for runs without randomness).
        scale_: ``"quick"``, ``"paper"`` or ``"fixed"`` (settings that do not depend on the scale,
            e.g. benchmarks); default the current scale.
    """
    from flprivacy import __version__

    s = scale() if scale_ is None else scale_
    path = result_path(name, s)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "name": name,
        "command": run_command(),
        "scale": s,
        "seeds": None if seeds is None else [int(x) for x in seeds],
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "version": __version__,
        "commit": git_commit(),
        "machine": machine(),
        "runtime": runtime(),
        "sources": library_sources(),
        "source_units": library_source_units(),
        "data": data,
    }
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def short_long_rows(summary: dict[str, Any], rounds: Sequence[int]) -> dict[str, Any]:
    """A Part III summary with its ``active-<r>/`` rows renamed by the active phase's length:
    ``rounds = (short, long)`` (a file's ``settings["active_rounds"]``, or the paper's ``(10, 50)``)
    become ``active-short/`` and ``active-long/``, so tables of different round counts line up."""
    short, long_ = rounds
    return {k.replace(f"active-{short}/", "active-short/").replace(f"active-{long_}/", "active-long/"): v
            for k, v in summary.items()}


def started_as_command(argv: Sequence[str] | None = None) -> bool:
    """True when this interpreter was started as ``python -m flbook.experiments.<name>``
    (read from ``sys.orig_argv``): a run, whose commit is read now; a chapter that only reads
    result files never runs git."""
    argv = list(sys.orig_argv if argv is None else argv)
    return any(a == "-m" and i + 1 < len(argv) and argv[i + 1].startswith(__name__ + ".")
               for i, a in enumerate(argv))


if started_as_command():
    git_commit()  # the commit of the code this run imported (see git_commit)
    library_sources()  # and the files it imported so far, hashed (whole and by unit) now
