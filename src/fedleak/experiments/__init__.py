"""Committed experiment scripts and their result files.

Each script is run as ``python -m fedleak.experiments.<name>``, writes its numbers with
:func:`save_result` into ``book/results/<name>.json`` (committed, with the command that
made it), and chapters read them back with :func:`load_result`. Numbers in the book come
either from a chapter's own code or from such a file.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import torch

from ..config import scale


def results_dir() -> Path:
    """``book/results`` in the project checkout."""
    root = Path(__file__).resolve().parents[3]
    if not (root / "pyproject.toml").is_file():
        raise FileNotFoundError(
            "experiment results live in book/results of a fedleak checkout; run from a clone of the project."
        )
    return root / "book" / "results"


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
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: the operations are small, and extra threads on a busy "
                             "machine slow them down; 0 keeps torch's choice)")


def use_threads(args: argparse.Namespace) -> None:
    """Apply the ``--threads`` option of :func:`add_threads_option`."""
    if args.threads:
        torch.set_num_threads(args.threads)


def save_result(name: str, data: Any, command: str | None = None) -> Path:
    """Write ``data`` (JSON-serialisable) to ``book/results/<name>.json`` with metadata: the
    command that produced it, the scale, the date and the machine."""
    path = results_dir() / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "name": name,
        "command": command or "python -m " + " ".join([Path(sys.argv[0]).stem] + sys.argv[1:]),
        "scale": scale(),
        "date": _dt.date.today().isoformat(),
        "machine": machine(),
        "data": data,
    }
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def load_result(name: str) -> dict[str, Any]:
    """Read a committed result file; the error says which command produces it."""
    path = results_dir() / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"result file {path} not found; produce it with `python -m fedleak.experiments.{name}` "
            "(see the chapter for the exact command and scale)."
        )
    return json.loads(path.read_text())
