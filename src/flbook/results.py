"""Where the book's result files live, and how a page or the ledger reads one back.

A command writes its numbers with :func:`flbook.experiments.save_result` into
``book/results/<name>.json`` (``<name>_quick.json`` at quick scale), with the provenance of its
run; chapters and the ledger read them with :func:`load_result`. This module imports nothing of
the commands, so the ledger reads results without importing an experiment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flprivacy.config import SCALE_ENV, SCALES, project_root, scale


def results_dir() -> Path:
    """``book/results`` in the project checkout."""
    root = project_root()
    if root is None:
        raise FileNotFoundError(
            "experiment results live in book/results of a flprivacy checkout; run from a clone of the project."
        )
    return root / "book" / "results"


def result_path(name: str, scale_: str | None = None) -> Path:
    """Path of the result file ``name`` at scale ``scale_`` (default: the current scale).

    Paper-scale (and scale-independent ``"fixed"``) results are ``book/results/<name>.json``;
    a quick-scale run writes ``<name>_quick.json`` instead, so that it can never overwrite
    the committed paper-scale file.
    """
    s = scale() if scale_ is None else scale_
    if s not in (*SCALES, "fixed"):
        raise ValueError(f"scale_={s!r}: expected one of {(*SCALES, 'fixed')}")
    return results_dir() / (f"{name}.json" if s in ("paper", "fixed") else f"{name}_{s}.json")


def load_result(name: str, scale_: str = "paper") -> dict[str, Any]:
    """Read a committed result file of scale ``scale_`` (default ``"paper"``).

    Raises:
        FileNotFoundError: naming the command that produces the file.
        ValueError: if the file records another scale than the one asked for.
    """
    path = result_path(name, scale_)
    if not path.is_file():
        env = f"{SCALE_ENV}={scale_} " if scale_ == "paper" else ""
        raise FileNotFoundError(
            f"result file {path} not found; produce it with `{env}python -m flbook.experiments.<script>` "
            "(the chapter names the exact command and scale)."
        )
    record = json.loads(path.read_text())
    if record.get("scale") != scale_:
        raise ValueError(f"{path} records scale {record.get('scale')!r}, not the {scale_!r} asked for; "
                         f"rerun its command at {SCALE_ENV}={scale_}.")
    return record


def load_result_or_none(name: str, scale_: str = "paper") -> dict[str, Any] | None:
    """:func:`load_result`, or ``None`` when the file is not committed (a chapter then shows what
    it has without it). A file of another scale still raises ``ValueError``."""
    try:
        return load_result(name, scale_)
    except FileNotFoundError:
        return None
