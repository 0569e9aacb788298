"""The tables of the reproduction record's opening pages: every committed result file with its
provenance, and what ``make reproduce`` last recorded of its plan (``results/reproduce.json``)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from flbook import ledger
from flbook.results import results_dir
from flprivacy.tables import style

RUNTIME_KEYS = ("runtime_s", "wall_seconds", "total_s", "seconds")
"""Where a result file records its run's time in seconds (in its data, or per seed)."""


def runtime(data: Any) -> float | None:
    """The run's time in seconds as ``data`` records it (a key of :data:`RUNTIME_KEYS`, or the sum
    of its ``per_seed`` entries), ``None`` when it records none."""
    if not isinstance(data, dict):
        return None
    for k in RUNTIME_KEYS:
        if isinstance(data.get(k), (int, float)):
            return float(data[k])
    per_seed = data.get("per_seed")
    if isinstance(per_seed, list) and per_seed:
        times = [runtime(v) for v in per_seed]
        if all(t is not None for t in times):
            return float(sum(times))
    return None


def _breakable(text: Any) -> Any:
    """A file name or command with break opportunities after ``/``, ``_`` and ``.`` (one long word
    to a browser otherwise)."""
    if not isinstance(text, str):
        return text
    return re.sub(r"([/_.])", r"\1<wbr>", html.escape(text))


def _day(date: str | None) -> str:
    """A date that does not wrap (non-breaking hyphens)."""
    return (date or "")[:10].replace("-", "\u2011")


def result_files(directory: Path | None = None):
    """Every committed result file at the top of ``book/results`` as it records itself: scale,
    seeds, date, runtime, provenance and command (a styled table)."""
    base = directory or results_dir()
    rows = []
    for f in ledger.files():
        rec = json.loads((base / f["file"]).read_text())
        t = runtime(rec.get("data"))
        if t is None:   # files that keep the run's own clock beside the data
            t = runtime(rec.get("runtime"))
        rows.append({"file": _breakable(f["file"]), "scale": f["scale"],
                     "n seeds": len(f["seeds"]) if f["seeds"] else None, "date": _day(f["date"]),
                     "runtime": None if t is None else t / 60, "provenance": f["provenance"],
                     "command": _breakable(f["command"])})
    return style(pd.DataFrame(rows), units={"runtime": "min"}, decimals={"n seeds": 0, "runtime": 1},
                 na="the file records no seeds (a fixed-settings benchmark) or no runtime",
                 caption="Every committed result file at the top of book/results, as it records "
                         "itself (its folders hold per-run and per-point files)")


def reproduce_plan(directory: Path | None = None) -> tuple[str, list]:
    """What ``results/reproduce.json`` records of ``make reproduce``'s plan: a sentence (files
    current, their one-core hours, files left) and the styled tables of the files still to run
    and of the current ones."""
    path = (directory or results_dir()) / "reproduce.json"
    if not path.is_file():
        return "No `reproduce.json` is committed: `make reproduce` (or `--dry-run`) writes it.", []
    rep = json.loads(path.read_text())
    plan = rep["data"]["plan"]
    left = [j for j in plan["jobs"] if not j["current"]]
    sentence = (f"As of {rep['date'][:10]} (commit `{rep['commit'][:10]}`): **{plan['current']} of "
                f"{plan['planned']} files current**, whose runs took "
                f"{plan['one_core_seconds_of_current'] / 3600:.1f} h of one core; {len(left)} still to run.")
    tables = []
    if left:
        tables.append(style(pd.DataFrame([{"holds": j["paper"], "result file": _breakable(j["result"]),
                                           "why it runs": j["why"].split(": '")[0]} for j in left]),
                            caption="Still to run (the dry run prints the commands in full)"))
    done = [{"result file": _breakable(j["result"]), "made": _day(j["date"]),
             "one core": None if j["one_core_seconds"] is None else j["one_core_seconds"] / 60}
            for j in plan["jobs"] if j["current"]]
    tables.append(style(pd.DataFrame(done), units={"one core": "min"}, decimals={"one core": 1},
                        na="the file records no runtime",
                        caption="Current files and the one-core time their records give"))
    return sentence, tables
