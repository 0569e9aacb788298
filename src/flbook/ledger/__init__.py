"""The reproduction ledger: every numbered result of the four papers, with a verdict computed by code.

Each paper has one module here that is the single home of its reported numbers and claims
(:mod:`flbook.ledger.diana`, :mod:`flbook.ledger.xu_neglia`, :mod:`flbook.ledger.wilson`, :mod:`flbook.ledger.song`). A module exposes ``rows()``,
which reads the book's result files and returns one :class:`Row` per result; the row's status is
decided by one of the rule functions below (:func:`number`, :func:`trend`, :func:`ordering`,
:func:`bound`, ...), never typed. Chapters call the same rules on their live numbers, and show
paper-scale verdicts with :func:`table`, which reads the ledger file.

``python -m flbook.ledger`` rebuilds ``book/results/ledger.json``; a test checks that the
committed file equals a fresh :func:`build`, so nobody can edit a verdict by hand.

Statuses, from best to worst:

- ``reproduced``: the paper's number within its reported spread or the stated tolerance, the
  ordering or trend it claims, the bound holding;
- ``partly``: some of the result's parts hold and some not (e.g. the trend but not the size);
- ``not reproduced``: the rule fails on our numbers (the row's ``reason`` says what we found);
- ``not run``: the book has the code but no result at the paper's setting yet;
- ``not covered``: the book has no code for the result (the reason says why).

What a row counts towards (the paper's data, stand-in data, or kept apart), the thresholds the
rules share, and the cap on rows read from one run are the referee's: :mod:`flbook.ledger.referee`, whose
``build``, ``save`` and ``load`` make and read the ledger file with each row's counting.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATUSES: tuple[str, ...] = ("reproduced", "partly", "not reproduced", "not run", "not covered")
"""The statuses a row can have, from best to worst."""

PAPERS: dict[str, str] = {
    "xu_neglia": "Xu & Neglia 2021",
    "diana": "Diana et al. 2025",
    "wilson": "Wilson et al. 2025",
    "song": "Song et al. 2025",
}
"""Ledger module name -> the paper's short name used in every row."""

DATA_KINDS: tuple[str, ...] = ("real", "synthetic (as in the paper)", "synthetic stand-in", "none")
"""What a row's numbers were computed on (the paper's real data set, synthetic data as the paper
itself uses, a synthetic stand-in for a data set we could not obtain (ACS Income), or nothing
a proposition checked on constructed instances counts as ``synthetic (as in the paper)``)."""

DEFAULT_TOL = 3.0
"""Default tolerance for a reported number, in the number's unit (percentage points)."""


# --------------------------------------------------------------------------------------------
# Verdicts: the rules
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A rule's decision, a status from ``STATUSES`` and, unless reproduced, why."""

    status: str
    reason: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status={self.status!r}: expected one of {STATUSES}")
        if self.status != "reproduced" and not self.reason.strip():
            raise ValueError(f"a {self.status!r} verdict needs a reason (what we found and why)")

    @property
    def ok(self) -> bool:
        """True when the status is ``reproduced``."""
        return self.status == "reproduced"


def _finite(name: str, x: float) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name}={x!r}: expected a number") from None
    if not math.isfinite(v):
        raise ValueError(f"{name}={x!r}: expected a finite number")
    return v


def number(paper: float, ours: float, *, tol: float = DEFAULT_TOL, paper_spread: float = 0.0,
           what: str = "") -> Verdict:
    """A reported number: reproduced when ``|ours - paper| <= max(tol, paper_spread)``.

    ``paper_spread`` is the paper's own reported standard deviation (or half-range) when it
    gives one; ``tol`` defaults to 3 points (:data:`DEFAULT_TOL`).
    """
    p, o = _finite("paper", paper), _finite("ours", ours)
    t = max(_finite("tol", tol), _finite("paper_spread", paper_spread))
    if t < 0:
        raise ValueError(f"tol={tol}, paper_spread={paper_spread}: expected non-negative tolerances")
    d = o - p
    if abs(d) <= t:
        return Verdict("reproduced")
    lead = f"{what}: " if what else ""
    return Verdict("not reproduced", f"{lead}ours {o:.4g} vs paper {p:.4g} ({d:+.3g}, tolerance {t:.3g})")


def at_least(ours: float, threshold: float, *, what: str = "") -> Verdict:
    """A claim of the form "at least ``threshold``" (e.g. "over 20 p.p.", "SSIM above 0.9")."""
    o, t = _finite("ours", ours), _finite("threshold", threshold)
    if o >= t:
        return Verdict("reproduced")
    lead = f"{what}: " if what else ""
    return Verdict("not reproduced", f"{lead}ours {o:.4g}, the claim needs at least {t:.4g}")


def at_most(ours: float, threshold: float, *, what: str = "") -> Verdict:
    """A claim of the form "at most ``threshold``" (e.g. an error below a bound)."""
    o, t = _finite("ours", ours), _finite("threshold", threshold)
    if o <= t:
        return Verdict("reproduced")
    lead = f"{what}: " if what else ""
    return Verdict("not reproduced", f"{lead}ours {o:.4g}, the claim needs at most {t:.4g}")


def sign(effect: float, *, expected: int = 1, margin: float = 0.0, what: str = "") -> Verdict:
    """A directional claim: ``effect`` (a difference, a slope, a correlation) has the ``expected``
    sign (+1 or -1) by more than ``margin`` (e.g. 3 standard errors of the difference)."""
    if expected not in (1, -1):
        raise ValueError(f"expected={expected!r}: expected +1 or -1")
    e, m = _finite("effect", effect), _finite("margin", margin)
    if m < 0:
        raise ValueError(f"margin={margin}: expected a non-negative margin")
    if expected * e > m:
        return Verdict("reproduced")
    lead = f"{what}: " if what else ""
    word = "positive" if expected > 0 else "negative"
    return Verdict("not reproduced", f"{lead}effect {e:+.3g}, the paper's claim needs it {word} beyond {m:.3g}")


def trend(xs: Sequence[float], ys: Sequence[float], *, expected: int = 1, margin: float = 0.0,
          what: str = "") -> Verdict:
    """A monotone claim "``ys`` rises (``expected=+1``) or falls (-1) with ``xs``": the difference
    between the last and first point has the expected sign beyond ``margin``, and no step goes
    against it by more than ``margin``."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"xs, ys: expected two sequences of equal length >= 2, got {len(xs)} and {len(ys)}")
    order = sorted(range(len(xs)), key=lambda i: float(xs[i]))
    y = [_finite("ys", ys[i]) for i in order]
    v = sign(y[-1] - y[0], expected=expected, margin=margin, what=what)
    if not v.ok:
        return v
    worst = min(expected * (b - a) for a, b in zip(y, y[1:]))
    if worst < -margin:
        lead = f"{what}: " if what else ""
        return Verdict("partly", f"{lead}overall {y[0]:.4g} -> {y[-1]:.4g} as claimed, but one step goes "
                                 f"against it by {-worst:.3g} (margin {margin:.3g})")
    return Verdict("reproduced")


def ordering(values: Mapping[str, float], order: Sequence[str], *, margin: float = 0.0, what: str = "") -> Verdict:
    """An ordering claim: ``values[order[0]] >= values[order[1]] >= ...``, each allowed to be short
    by ``margin`` (ties within noise count as holding)."""
    missing = [k for k in order if k not in values]
    if missing:
        raise KeyError(f"order names {missing} not in values (keys: {sorted(values)})")
    bad = [(a, b) for a, b in zip(order, order[1:]) if _finite(a, values[a]) < _finite(b, values[b]) - margin]
    if not bad:
        return Verdict("reproduced")
    lead = f"{what}: " if what else ""
    parts = ", ".join(f"{a} {values[a]:.4g} < {b} {values[b]:.4g}" for a, b in bad)
    return Verdict("not reproduced", f"{lead}{parts}")


def bound(holds: int, trials: int, *, required: float = 1.0, what: str = "") -> Verdict:
    """A proposition that must hold in every trial (``required=1``) or in a fraction of them
    (``required = 1 - delta``)."""
    if trials < 1 or not 0 <= holds <= trials:
        raise ValueError(f"holds={holds}, trials={trials}: expected 0 <= holds <= trials, trials >= 1")
    if holds >= required * trials:
        return Verdict("reproduced")
    lead = f"{what}: " if what else ""
    return Verdict("not reproduced", f"{lead}held in {holds} of {trials} trials, the paper needs {required:.0%}")


def combine(*verdicts: Verdict, what: str = "") -> Verdict:
    """One result made of several parts (e.g. a trend *and* a size): reproduced when all parts
    are, not reproduced when none is, partly otherwise. Reasons are joined."""
    if not verdicts:
        raise ValueError("combine: expected at least one verdict")
    reasons = "; ".join(v.reason for v in verdicts if v.reason)
    lead = f"{what}: " if what and reasons else ""
    if all(v.ok for v in verdicts):
        return Verdict("reproduced")
    if any(v.status in ("not run", "not covered") for v in verdicts):
        worst = max((v for v in verdicts), key=lambda v: STATUSES.index(v.status))
        return Verdict(worst.status, lead + reasons)
    if any(v.ok or v.status == "partly" for v in verdicts):
        return Verdict("partly", lead + reasons)
    return Verdict("not reproduced", lead + reasons)


def not_run(reason: str) -> Verdict:
    """The book has the code, but no result at the paper's setting (say what it would cost)."""
    return Verdict("not run", reason)


def not_covered(reason: str) -> Verdict:
    """The book has no code for this result (say why)."""
    return Verdict("not covered", reason)


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One result of one paper, with our number, its provenance and its verdict.

    Attributes:
        paper: the paper's short name (a value of :data:`PAPERS`).
        result_id: unique, readable id, e.g. ``"Diana Table 3 Medical active-50 Ours"``.
        claim: the result in the paper's words (quoted where it is a sentence).
        paper_value: the paper's number or claim, as text.
        ours: our number(s), as text ("" when not run or not covered).
        status: one of :data:`STATUSES`, from the rule.
        reason: one line; empty only when reproduced.
        chapter: the chapter that shows it, as its path under ``book/`` without suffix.
        data: one of :data:`DATA_KINDS`.
        file: the result file's name under ``book/results`` (or ``"live"`` when the chapter
            computes it at every build, or ``""``).
        scale, seeds, command, commit, date: the file's provenance (empty when none).
        provenance: ``"complete"``, ``"made from an uncommitted tree"``, ``"made before
            provenance"`` (the file lacks a commit or names the old package), ``"live"`` or ``""``.
    """

    paper: str
    result_id: str
    claim: str
    paper_value: str
    ours: str
    status: str
    reason: str
    chapter: str
    data: str
    file: str = ""
    scale: str = ""
    seeds: list[int] = field(default_factory=list)
    command: str = ""
    commit: str = ""
    date: str = ""
    provenance: str = ""

    def __post_init__(self) -> None:
        if self.paper not in PAPERS.values():
            raise ValueError(f"paper={self.paper!r}: expected one of {sorted(PAPERS.values())}")
        if self.status not in STATUSES:
            raise ValueError(f"{self.result_id}: status={self.status!r}: expected one of {STATUSES}")
        if self.data not in DATA_KINDS:
            raise ValueError(f"{self.result_id}: data={self.data!r}: expected one of {DATA_KINDS}")
        if self.status != "reproduced" and not self.reason.strip():
            raise ValueError(f"{self.result_id}: a {self.status!r} row needs a reason")


def provenance_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance fields of a result record written by
    :func:`flbook.experiments.save_result`, and whether it is complete.

    A record is "made before provenance" when it has no commit, or when its command names the
    library's old package name (``fedleak``); "made from an uncommitted tree" when its commit
    carries ``+dirty`` (the library's sources differed from the commit); else "complete"."""
    command = str(record.get("command", ""))
    commit = str(record.get("commit", "") or "")
    complete = bool(commit) and "fedleak" not in command and "FEDLEAK" not in command
    seeds = record.get("seeds") or []
    if not complete:
        status = "made before provenance"
    elif commit.endswith("+dirty"):
        status = "made from an uncommitted tree"
    else:
        status = "complete"
    return {
        "scale": str(record.get("scale", "")),
        "seeds": [int(s) for s in seeds],
        "command": command,
        "commit": commit,
        "date": str(record.get("date", "")),
        "provenance": status,
    }


def row(*, paper: str, result_id: str, claim: str, paper_value: str, ours: str, verdict: Verdict,
        chapter: str, data: str, file: str = "", record: Mapping[str, Any] | None = None) -> Row:
    """Build a :class:`Row` from a verdict and, when ``record`` (a loaded result file) is given,
    its provenance. Use ``file="live"`` for a result the chapter computes at every build."""
    prov: dict[str, Any] = {}
    if record is not None:
        if not file and record.get("name"):
            from ..results import result_path

            scale_ = str(record.get("scale", "paper"))
            file = result_path(str(record["name"]), scale_ if scale_ in ("quick", "paper", "fixed") else "paper").name
        prov = provenance_of(record)
    elif file == "live":
        prov = {"provenance": "live"}
    elif file:
        raise ValueError(f"{result_id}: file={file!r} given without its record; pass record=load_result(...)")
    return Row(paper=paper, result_id=result_id, claim=claim, paper_value=paper_value, ours=ours,
               status=verdict.status, reason=verdict.reason, chapter=chapter, data=data, file=file, **prov)


def not_run_rows(paper: str, ids: Sequence[str], *, why: str, chapter: str, data: str) -> list[Row]:
    """One "not run" row per result id of a result file that is not committed; ``why`` names the
    file and the command that makes it."""
    v = not_run(why)
    return [row(paper=paper, result_id=i, claim="", paper_value="", ours="", verdict=v, chapter=chapter, data=data)
            for i in ids]


def record_or_none(name: str, scale_: str = "paper") -> dict[str, Any] | None:
    """The result file ``name`` at ``scale_`` if committed, else ``None`` (the row is then "not run")."""
    from ..results import load_result

    try:
        return load_result(name, scale_)
    except FileNotFoundError:
        return None


# --------------------------------------------------------------------------------------------
# Build, save, load, show
# --------------------------------------------------------------------------------------------


def _paper_modules() -> list[Any]:
    import importlib

    mods = []
    for name in PAPERS:
        try:
            mods.append(importlib.import_module(f"{__name__}.{name}"))
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    return mods


def build() -> list[Row]:
    """Every paper's rows, computed now from the committed result files."""
    rows: list[Row] = []
    for mod in _paper_modules():
        rows.extend(mod.rows())
    ids = [r.result_id for r in rows]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"duplicate result ids in the ledger: {dup}")
    return rows


def ledger_path() -> Path:
    """``book/results/ledger.json``."""
    from ..results import results_dir

    return results_dir() / "ledger.json"


def files() -> list[dict[str, Any]]:
    """Every committed result file (except the ledger itself) with its provenance
    (:func:`provenance_of`), sorted by name: files "made before provenance" are marked here."""
    from ..results import results_dir

    out = []
    for path in sorted(results_dir().glob("*.json")):
        if path.name == "ledger.json":
            continue
        try:
            record = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"result file {path.name} is not valid JSON ({e}); regenerate it with its command") from None
        out.append({"file": path.name, **provenance_of(record)})
    return out


def to_json(rows: Iterable[Row]) -> str:
    """The ledger file's text (stable: rows in build order, keys in field order, then every
    result file's provenance, :func:`files`)."""
    return json.dumps({"rows": [asdict(r) for r in rows], "files": files()}, indent=1, ensure_ascii=False) + "\n"


def save(rows: Iterable[Row] | None = None) -> Path:
    """Write the ledger (default: a fresh :func:`build`) to :func:`ledger_path`."""
    path = ledger_path()
    path.write_text(to_json(build() if rows is None else rows))
    return path


def load_files() -> list[dict[str, Any]]:
    """The committed ledger's list of result files with their provenance (see :func:`files`)."""
    path = ledger_path()
    if not path.is_file():
        raise FileNotFoundError(f"{path.name} not found in book/results; rebuild it with `python -m flbook.ledger`")
    return list(json.loads(path.read_text())["files"])


def load() -> list[Row]:
    """The committed ledger's rows.

    Raises:
        FileNotFoundError: when the ledger file is missing (rebuild it with ``python -m flbook.ledger``).
    """
    path = ledger_path()
    if not path.is_file():
        raise FileNotFoundError(f"{path.name} not found in book/results; rebuild it with `python -m flbook.ledger`")
    return [Row(**r) for r in json.loads(path.read_text())["rows"]]


def counts(rows: Iterable[Row]) -> dict[str, dict[str, int]]:
    """``{paper: {status: count}}`` over :data:`STATUSES` (zeros included), papers in :data:`PAPERS` order."""
    out = {p: dict.fromkeys(STATUSES, 0) for p in PAPERS.values()}
    for r in rows:
        out[r.paper][r.status] += 1
    return out


def select(rows: Iterable[Row], *, chapter: str | None = None, prefix: str | None = None,
           ids: Sequence[str] | None = None) -> list[Row]:
    """Rows of one chapter, or whose id starts with ``prefix``, or with the given ``ids``.

    Raises:
        LookupError: when the selection is empty, or an id is unknown: a filter that selects
            nothing must not pass silently.
    """
    rows = list(rows)
    out = rows
    if chapter is not None:
        out = [r for r in out if r.chapter == chapter]
    if prefix is not None:
        out = [r for r in out if r.result_id.startswith(prefix)]
    if ids is not None:
        known = {r.result_id: r for r in out}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise LookupError(f"ids: unknown result ids {unknown}; see book/results/ledger.json for the ids")
        out = [known[i] for i in ids]
    if not out:
        raise LookupError(f"no ledger row matches chapter={chapter!r}, prefix={prefix!r}, ids={ids!r}")
    return out


TABLE_COLUMNS: dict[str, str] = {
    "result_id": "result", "paper_value": "paper", "ours": "ours", "status": "status", "reason": "why not",
}


def frame(rows: Iterable[Row], columns: Mapping[str, str] | None = None) -> Any:
    """A pandas DataFrame of ``rows`` with readable column names (no index to show)."""
    import pandas as pd

    cols = dict(TABLE_COLUMNS if columns is None else columns)
    df = pd.DataFrame([{c: getattr(r, c) for c in cols} for r in rows])
    if "seeds" in df:
        df["seeds"] = [len(s) for s in df["seeds"]]
    return df.rename(columns=cols)


def table(*, chapter: str | None = None, prefix: str | None = None, ids: Sequence[str] | None = None,
          columns: Mapping[str, str] | None = None) -> Any:
    """The committed ledger's verdicts for a chapter (or an id prefix, or ids), as a table in the
    book's style (``flprivacy.tables.style``): what a chapter shows instead of typed verdicts.
    :func:`flbook.ledger.referee.table` adds what each row counts towards."""
    from flprivacy.tables import style

    df = frame(select(load(), chapter=chapter, prefix=prefix, ids=ids), columns)
    if "why not" in df:
        df["why not"] = df["why not"].fillna("")   # a reproduced row needs no reason
    return style(df, caption="Verdicts of the committed ledger (book/results/ledger.json, built by "
                             "`python -m flbook.ledger` from the result files; its rules are in flbook.ledger).")


def verdict_of(result_id: str) -> Verdict:
    """The committed ledger's verdict for one result id (for prose built from the ledger)."""
    (r,) = select(load(), ids=[result_id])
    return Verdict(r.status, r.reason)


RuleFn = Callable[..., Verdict]

__all__ = [
    "DATA_KINDS", "DEFAULT_TOL", "PAPERS", "Row", "STATUSES", "Verdict", "at_least", "at_most", "bound", "build",
    "combine", "counts", "files", "frame", "ledger_path", "load", "load_files", "not_covered", "not_run", "not_run_rows", "number", "ordering",
    "provenance_of", "record_or_none", "row", "save", "select", "sign", "table", "to_json", "trend", "verdict_of",
]
