"""How a referee counts the ledger: what each row counts towards, and the rules' shared thresholds.

A row's status comes from its rule (:mod:`flbook.ledger`). Whether the row says something about
the *paper* is a second question, answered here, once for every paper:

- ``paper``: the paper's result on the paper's data (real, or synthetic as the paper makes it).
  These rows make the headline counts.
- ``stand-in``: the paper's result computed on data that stood in for the paper's (a synthetic
  census for ACS Income, MNIST for ImageNet); :attr:`Count.stand_in` says what stood in for what,
  with both sizes. Indicative only, counted apart.
- ``apart``: in the ledger, out of the paper's count, for one of the reasons of
  :data:`EXCLUSIONS` (a random draw's per-client cells, a duplicate measurement, our own control
  or diagnostic, a small model standing in for the paper's, a claim true by construction, a
  relative claim that no attack compared can decide).

Each paper module has a function ``referee(row) -> Count`` that says this for each of its rows;
:func:`judge` joins the two into an :class:`Entry`. ``python -m flbook.ledger`` writes the
entries (:func:`build`, :func:`save`) to ``book/results/ledger.json``: its ``rows`` hold each row
with the status the book shows, its ``counting`` what each row counts towards and why.
:func:`load` reads them back; :func:`flbook.ledger.load` reads the rows alone.

The shared thresholds, so that the same word means the same thing in every row: a sign, trend or
ordering must clear a margin of :data:`K_SE` standard errors of the difference
(:func:`noise_margin`, from :func:`std_error` of ours and, where reported, the paper's), never
zero; "slightly" is at most :data:`SLIGHT_AT_MOST` points (:func:`slight`); "comparable" is within
:data:`COMPARABLE_WITHIN` points (:func:`comparable`); "high quality" is SSIM at least
:data:`HIGH_QUALITY_SSIM`; an attack recovers something at SSIM :data:`NONTRIVIAL_SSIM` or more,
and a relative claim among attacks that all stay below it is undecidable (:func:`decidable`).
And one run cannot establish a paper-scale claim: :func:`judge` caps a ``reproduced`` row read
from one seed or a quick run at ``partly``, unless the row's count says why one run decides it
(:attr:`Count.one_run_enough`: a deterministic computation, a bound checked on every instance).
"""

from __future__ import annotations

import math
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from . import PAPERS, STATUSES, TABLE_COLUMNS, Row, Verdict, _finite, _paper_modules, files, frame, ledger_path, select, sign

SECTIONS: dict[str, str] = {
    "paper": "the paper's results on the paper's data (real, or synthetic as the paper makes it)",
    "stand-in": "the paper's results on data that stood in for the paper's: indicative only",
    "apart": "in the ledger, not in the paper's count: our controls, duplicates, draws that cannot correspond, "
             "small stand-in models, claims true by construction, claims no attack compared can decide",
}
"""What a row counts towards (:func:`section_of`), in the book's words."""

EXCLUSIONS: dict[str, str] = {
    "not comparable": "the paper's number belongs to one instance we cannot rebuild (a per-client cell of one "
                      "random data draw: client 3 of another draw is another client)",
    "duplicate": "the same measurement as a counted row (MSE, where PSNR = -10 log10 MSE is counted)",
    "control": "our own control or diagnostic: it explains a gap, it is not a result of the paper",
    "quick stand-in": "a small model or setting standing in for the paper's (a 16x16 CNN for ResNet-18): it "
                      "shows the mechanism, not the paper's number",
    "by construction": "true by how the experiment is set up (Q = 1 enqueued as the search's first trial), so "
                       "it tests nothing",
    "undecidable": "a relative claim where every attack compared fails (SSIM below NONTRIVIAL_SSIM), so the "
                   "order among them is noise",
}
"""Why a row is in the ledger but not in the paper's count (:attr:`Count.excluded`)."""

CAUSES: dict[str, str] = {
    "unknown": "no cause found yet",
    "our protocol": "a controlled experiment points to a difference between our protocol and the paper's",
    "compute": "we ran less than the paper (seeds, budget, scale) within what a CPU allows",
    "the paper": "the claim fails where we follow the paper's protocol and our controls rule out our own "
                 "choices: a finding about the paper",
}
"""Why a counted row is not reproduced or only partly (:attr:`Count.cause`; ``unknown`` by default)."""

K_SE = 2.0
"""Standard errors of a difference that a sign, trend or ordering must clear (:func:`noise_margin`)."""

SLIGHT_AT_MOST = 5.0
"""The most a change called "slightly" may be, in percentage points; it must also clear the noise (:func:`slight`)."""

COMPARABLE_WITHIN = 3.0
"""The most two numbers called "comparable", "close to" or "similar" may differ, in percentage points
(the tolerance of a reported number)."""

HIGH_QUALITY_SSIM = 0.6
"""The least SSIM to the true image of a reconstruction called "high quality". SSIM runs from 0 (no
structure in common) to 1 (the same image); beating a baseline image such as the mean digit is a
weaker claim."""

NONTRIVIAL_SSIM = 0.2
"""An attack recovers something when its SSIM is at least 0.2; when every attack compared stays below
it, the order among them is noise and a relative claim is undecidable (:func:`decidable`)."""


# --------------------------------------------------------------------------------------------
# The shared thresholds as rules
# --------------------------------------------------------------------------------------------


def std_error(values: Sequence[float]) -> float:
    """The standard error of the mean of ``values``: sample standard deviation / sqrt(n).

    Raises:
        ValueError: with fewer than two values (one run has no spread; the row then cannot be
            reproduced for a paper-scale claim, see :func:`judge`).
    """
    v = [_finite("values", x) for x in values]
    if len(v) < 2:
        raise ValueError(f"values: expected at least 2 numbers for a standard error, got {len(v)}; "
                         "a single run has no spread")
    m = sum(v) / len(v)
    return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v))


def noise_margin(*std_errors: float, k: float = K_SE) -> float:
    """The margin a difference must clear: ``k`` (default :data:`K_SE` = 2) standard errors of the
    difference of independent quantities, ``k * sqrt(se_1**2 + se_2**2 + ...)``."""
    if not std_errors:
        raise ValueError("noise_margin: expected at least one standard error (ours, and the paper's if reported)")
    ses = [_finite("std_errors", x) for x in std_errors]
    kk = _finite("k", k)
    if any(x < 0 for x in ses) or kk <= 0:
        raise ValueError(f"std_errors={ses}, k={k}: expected non-negative standard errors and k > 0")
    return kk * math.sqrt(sum(x * x for x in ses))


def slight(change: float, *, expected: int, margin: float, at_most: float = SLIGHT_AT_MOST,
           what: str = "") -> Verdict:
    """"Slightly rises (``expected=+1``) or falls (-1)": the change has the expected sign beyond
    ``margin`` and a size of at most ``at_most`` (:data:`SLIGHT_AT_MOST`). A change in the claimed
    direction but larger than slight is ``partly`` (the direction holds, the word does not)."""
    v = sign(change, expected=expected, margin=margin, what=what)
    if not v.ok:
        return v
    c, cap = _finite("change", change), _finite("at_most", at_most)
    if abs(c) > cap:
        lead = f"{what}: " if what else ""
        return Verdict("partly", f"{lead}a change of {c:+.3g} goes the claimed way but is not slight (at most {cap:.3g})")
    return Verdict("reproduced")


def comparable(a: float, b: float, *, within: float = COMPARABLE_WITHIN, what: str = "") -> Verdict:
    """"Comparable", "close to", "similar": ``|a - b| <= within`` (:data:`COMPARABLE_WITHIN`)."""
    x, y, t = _finite("a", a), _finite("b", b), _finite("within", within)
    if t < 0:
        raise ValueError(f"within={within}: expected a non-negative tolerance")
    if abs(x - y) <= t:
        return Verdict("reproduced")
    lead = f"{what}: " if what else ""
    return Verdict("not reproduced", f"{lead}{x:.4g} vs {y:.4g} differ by {abs(x - y):.3g}, more than {t:.3g}")


def decidable(scores: Mapping[str, float], *, threshold: float = NONTRIVIAL_SSIM) -> bool:
    """Whether a relative claim among attacks can be decided on ``scores`` (SSIM by attack): at
    least one attack compared reaches ``threshold`` (:data:`NONTRIVIAL_SSIM`)."""
    if not scores:
        raise ValueError("scores: expected at least one attack's score")
    t = _finite("threshold", threshold)
    return max(_finite(k, v) for k, v in scores.items()) >= t


# --------------------------------------------------------------------------------------------
# Counting
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Count:
    """How one row counts, as its paper module's ``referee`` decides.

    Attributes:
        stand_in: when the row's data stood in for the paper's, what for what, with both sizes
            ("a synthetic census of 40,000 rows for ACS Income-A (332,900 rows in the paper)").
        excluded: ``""`` (the row counts) or a key of :data:`EXCLUSIONS`.
        excluded_why: for an excluded row, why this row (required then).
        cause: for a counted row not reproduced or partly, a key of :data:`CAUSES`.
        one_run_enough: why one run (one seed, or a quick run) decides this row, when it does.
        verdict: a stricter decision of the row than its rule's, when the referee's rule differs
            (say which rule in its reason); ``None`` keeps the rule's.
    """

    stand_in: str = ""
    excluded: str = ""
    excluded_why: str = ""
    cause: str = ""
    one_run_enough: str = ""
    verdict: Verdict | None = None

    def __post_init__(self) -> None:
        if self.excluded and self.excluded not in EXCLUSIONS:
            raise ValueError(f"excluded={self.excluded!r}: expected '' or one of {sorted(EXCLUSIONS)}")
        if bool(self.excluded) != bool(self.excluded_why.strip()):
            raise ValueError(f"excluded={self.excluded!r}, excluded_why={self.excluded_why!r}: a row kept out "
                             "of the count says why (excluded_why), and only such a row")
        if self.cause and self.cause not in CAUSES:
            raise ValueError(f"cause={self.cause!r}: expected '' or one of {sorted(CAUSES)}")


COUNTS = Count()
"""The count of a row that counts as it is, the paper's result on the paper's data."""


@dataclass(frozen=True)
class Entry(Row):
    """A ledger row with the referee's count: a line of ``book/results/ledger.json``. Besides the
    attributes of :class:`~flbook.ledger.Row`, it has these.

    Attributes:
        section: a key of :data:`SECTIONS`.
        stand_in, excluded, excluded_why, cause: as in :class:`Count`.
        rule_status: the status the row's own rule gave, when the referee's differs (one run,
            or a stricter rule), else ``""``.
    """

    section: str = "paper"
    stand_in: str = ""
    excluded: str = ""
    excluded_why: str = ""
    cause: str = ""
    rule_status: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.section not in SECTIONS:
            raise ValueError(f"{self.result_id}: section={self.section!r}: expected one of {list(SECTIONS)}")
        if self.data == "synthetic stand-in" and not self.stand_in.strip():
            raise ValueError(f"{self.result_id}: a row on a synthetic stand-in says what stood in for what "
                             "(the referee's Count(stand_in=...))")
        Count(excluded=self.excluded, excluded_why=self.excluded_why, cause=self.cause)  # validates


def section_of(stand_in: str, excluded: str) -> str:
    """``apart`` when the row is excluded, ``stand-in`` when its data stood in for the paper's, else ``paper``."""
    if excluded:
        return "apart"
    return "stand-in" if stand_in else "paper"


def _one_run(r: Row) -> str:
    """Why a row read from a file is one run ("one seed", "quick scale"), or ``""``."""
    if r.file in ("", "live"):
        return ""
    few = len(r.seeds) < 2
    quick = r.scale == "quick"
    return " and ".join(w for w, b in (("one seed", few), ("quick scale", quick)) if b)


def judge(r: Row, count: Count) -> Entry:
    """The ledger line of row ``r`` counted as ``count``.

    The status is the rule's, or ``count.verdict`` when the referee decides more strictly; a
    ``reproduced`` row read from one seed or a quick run becomes ``partly`` unless
    ``count.one_run_enough`` says why one run decides it. A counted row that is not reproduced
    gets ``cause="unknown"`` unless the count names one."""
    if not isinstance(count, Count):
        raise TypeError(f"{r.result_id}: count={count!r}: expected a referee's Count")
    v = count.verdict if count.verdict is not None else Verdict(r.status, r.reason)
    one = _one_run(r)
    if v.ok and one and not count.one_run_enough.strip():
        v = Verdict("partly", f"the rule holds, but on {one}: one run cannot establish the paper's claim "
                              "(at least two seeds at paper scale)")
    section = section_of(count.stand_in, count.excluded)
    cause = count.cause
    if not cause and section != "apart" and v.status in ("not reproduced", "partly"):
        cause = "unknown"
    fields = asdict(r)
    fields.update(status=v.status, reason=v.reason)
    return Entry(**fields, section=section, stand_in=count.stand_in, excluded=count.excluded,
                 excluded_why=count.excluded_why, cause=cause,
                 rule_status=r.status if v.status != r.status else "")


def tally(entries: Iterable[Entry], *, section: str) -> dict[str, dict[str, int]]:
    """``{paper: {status: count}}`` over :data:`~flbook.ledger.STATUSES` (zeros included), papers
    in :data:`~flbook.ledger.PAPERS` order, for the entries of one ``section`` only (the headline
    is ``section="paper"``): no count mixes stand-in data, our controls or duplicates with the paper's results."""
    if section not in SECTIONS:
        raise ValueError(f"section={section!r}: expected one of {list(SECTIONS)} (the headline is 'paper')")
    out = {p: dict.fromkeys(STATUSES, 0) for p in PAPERS.values()}
    for e in entries:
        if e.section == section:
            out[e.paper][e.status] += 1
    return out


def count_table(entries: Iterable[Entry], *, paper: str | None = None) -> Any:
    """A DataFrame, one line per (paper, section) with a column per status and the total; the
    headline (``paper``) first, and a section with no row of a paper left out (but the headline)."""
    import pandas as pd

    entries = list(entries)
    lines = []
    for p in PAPERS.values():
        if paper is not None and p != paper:
            continue
        for sec in SECTIONS:
            c = tally(entries, section=sec)[p]
            if sum(c.values()) or sec == "paper":
                lines.append({"paper": p, "rows": sec, **c, "total": sum(c.values())})
    if not lines:
        raise LookupError(f"paper={paper!r}: expected one of {list(PAPERS.values())}")
    return pd.DataFrame(lines)


# --------------------------------------------------------------------------------------------
# The ledger file
# --------------------------------------------------------------------------------------------

_ROW_FIELDS = tuple(f.name for f in fields(Row))
_COUNT_FIELDS = ("section", "stand_in", "excluded", "excluded_why", "cause", "rule_status")


def build() -> list[Entry]:
    """Every paper's rows, computed now from the committed result files by the rules (a module's
    ``rows()`` and, where it has one, ``referee_claim_rows()``), each counted by its paper module's
    ``referee`` (:func:`judge`).

    Raises:
        AttributeError: when a paper module has no ``referee``.
        ValueError: when two rows share a result id.
    """
    out: list[Entry] = []
    for mod in _paper_modules():
        referee = getattr(mod, "referee", None)
        if referee is None:
            raise AttributeError(f"{mod.__name__} has no referee(row) -> Count: every paper module says how its "
                                 "rows count (flbook.ledger.referee)")
        extra = getattr(mod, "referee_claim_rows", None)  # the stated claims, made apart from rows()
        out.extend(judge(r, referee(r)) for r in mod.rows() + (extra() if extra is not None else []))
    ids = [e.result_id for e in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"duplicate result ids in the ledger: {dup}")
    return out


def to_json(entries: Iterable[Entry]) -> str:
    """The ledger file's text: ``rows`` (the :class:`~flbook.ledger.Row` fields, with the status
    the book shows), ``counting`` (per row, what it counts towards and why), then every result
    file's provenance (:func:`flbook.ledger.files`). Stable: rows in build order."""
    entries = list(entries)
    d = [asdict(e) for e in entries]
    return json.dumps({"rows": [{k: x[k] for k in _ROW_FIELDS} for x in d],
                       "counting": [{"result_id": x["result_id"], **{k: x[k] for k in _COUNT_FIELDS}} for x in d],
                       "files": files()}, indent=1, ensure_ascii=False) + "\n"


def save(entries: Iterable[Entry] | None = None) -> Path:
    """Write the ledger (default: a fresh :func:`build`) to ``book/results/ledger.json``."""
    path = ledger_path()
    path.write_text(to_json(build() if entries is None else entries))
    return path


def load() -> list[Entry]:
    """The committed ledger's entries (rows with their counting).

    Raises:
        FileNotFoundError: when the ledger file is missing (rebuild it with ``python -m flbook.ledger``).
    """
    path = ledger_path()
    if not path.is_file():
        raise FileNotFoundError(f"{path.name} not found in book/results; rebuild it with `python -m flbook.ledger`")
    d = json.loads(path.read_text())
    if "counting" not in d:
        raise ValueError(f"{path.name} has no counting; rebuild it with `python -m flbook.ledger`")
    by_id = {c["result_id"]: c for c in d["counting"]}
    return [Entry(**r, **{k: by_id[r["result_id"]][k] for k in _COUNT_FIELDS}) for r in d["rows"]]


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def _statuses(c: Mapping[str, int]) -> str:
    return ", ".join(f"{c[s]} {s}" for s in STATUSES if c[s]) or "none"


def _stand_in_label(text: str) -> str:
    """A stand-in's short name: its text without parentheses, up to the first clause ("MNIST for
    ImageNet", "a synthetic census of 15,982 people drawn for Louisiana")."""
    import re

    plain = text
    for _ in range(3):  # parentheses nest up to twice in the rows' texts
        plain = re.sub(r"\s*\([^()]*\)", "", plain)
    return re.split(r"; |, |: ", plain)[0].strip()


def summary(entries: Iterable[Entry], paper: str) -> str:
    """What a referee concludes about one paper, in a paragraph of Markdown made from the ledger:
    the headline counts on the paper's data, the causes of its gaps, what stays untested for want
    of data (the stand-in rows, with what stood in) or of compute (``not run``, one-run rows), the
    rows kept apart by reason, and the failures that are findings about the paper."""
    if paper not in PAPERS.values():
        raise ValueError(f"paper={paper!r}: expected one of {list(PAPERS.values())}")
    mine = [e for e in entries if e.paper == paper]
    head = [e for e in mine if e.section == "paper"]
    c = tally(mine, section="paper")[paper]
    parts = [f"**On the paper's data** ({_n(len(head), 'result')}): {_statuses(c)}."]
    gaps = [e for e in head if e.status in ("not reproduced", "partly")]
    if gaps:
        by = {k: sum(e.cause == k for e in gaps) for k in CAUSES}
        parts.append("Of the " + _n(len(gaps), "gap") + " (not reproduced or partly), the cause is "
                     + ", ".join(f"{k}: {v}" for k, v in by.items() if v) + ".")
    one = [e for e in head if e.rule_status == "reproduced" and e.status == "partly"]
    run = [e for e in head if e.status == "not run"]
    if one or run:
        parts.append("**Untested for want of compute:** " + "; ".join(
            x for x in (f"{_n(len(run), 'result')} not run" if run else "",
                        f"{_n(len(one), 'result')} whose rule holds on one run only (capped at partly)" if one else "")
            if x) + ".")
    stand = [e for e in mine if e.section == "stand-in"]
    if stand:
        what = sorted({_stand_in_label(e.stand_in) for e in stand})
        parts.append(f"**Untested for want of data:** {_n(len(stand), 'result')} ran on data that stood in for the "
                     f"paper's ({'; '.join(what[:4])}{'; ...' if len(what) > 4 else ''}; each row says how large): "
                     f"{_statuses(tally(stand, section='stand-in')[paper])}, indicative only.")
    apart = [e for e in mine if e.section == "apart"]
    if apart:
        by = {k: sum(e.excluded == k for e in apart) for k in EXCLUSIONS}
        parts.append("**Kept apart** (in the ledger, not in the count): "
                     + ", ".join(f"{v} {k}" for k, v in by.items() if v) + ".")
    found = [e for e in head if e.cause == "the paper"]
    parts.append("**Findings about the paper:** " + (
        "; ".join(e.result_id for e in found) + "." if found else
        "none: no gap on the paper's data has been traced to the paper itself (each has another cause, or none found yet)."))
    return " ".join(parts)


COUNTS_AS: dict[str, str] = {"stand-in": "stand-in data", "apart": "kept apart"}
"""The words a verdict table adds to the status of a row that does not count among the paper's
results (a row kept apart also names why: "kept apart: duplicate")."""


def _breakable(text: Any) -> Any:
    """``text`` with a zero-width space after each ``/``, ``_`` or ``.`` that a letter follows, so that
    names such as flbook.experiments.part4_factors can wrap in a narrow column (numbers keep theirs)."""
    import re

    return re.sub(r"([/_.])(?=[A-Za-z])", "\\1\u200b", text) if isinstance(text, str) else text


def table(*, chapter: str | None = None, prefix: str | None = None, ids: Sequence[str] | None = None,
          columns: Mapping[str, str] | None = None) -> Any:
    """The committed ledger's verdicts for a chapter (or an id prefix, or ids) in the book's table
    style, like :func:`flbook.ledger.table`, with what each row counts towards in its status
    cell: nothing more for the paper's results on the paper's data, "stand-in data" or "kept
    apart: why" for the others (in the cell, not a column of its own: the tables fit the text
    column)."""
    from flprivacy.tables import style

    picked = select(load(), chapter=chapter, prefix=prefix, ids=ids)
    cols = dict(TABLE_COLUMNS if columns is None else columns)
    df = frame(picked, cols)
    if "status" in cols:
        df[cols["status"]] = [e.status + (f" ({COUNTS_AS[e.section]}" + (f": {e.excluded})" if e.excluded else ")")
                                          if e.section in COUNTS_AS else "") for e in picked]
    if "why not" in df:
        df["why not"] = df["why not"].fillna("")   # a reproduced row needs no reason
    for c in ("why not", cols.get("ours"), cols.get("paper_value")):
        if c in df:   # a file or module name is one long word: let it break after its / _ . (a zero-width space)
            df[c] = [_breakable(x) for x in df[c]]
    return style(df, caption="Verdicts of the committed ledger (book/results/ledger.json, built by "
                             "`python -m flbook.ledger` from the result files; its rules are in flbook.ledger). "
                             "A status marked stand-in data or kept apart is not counted among the paper's results "
                             "(flbook.ledger.referee).")


def beside_the_paper(chapter: str) -> Any:
    """The "Beside the paper" box that closes ``chapter`` (its path under ``book/`` without suffix,
    ``"part3/passive_active_aia"``): its rows of the committed ledger, those on the paper's data first
    and counted, the stand-in rows and the rows kept apart in closed groups, each row with the id a
    link to the result lands on (:func:`flbook.ledger.show.box`)."""
    from flbook.ledger.show import box

    return box(load(), chapter)


__all__ = [
    "beside_the_paper", "CAUSES", "COMPARABLE_WITHIN", "COUNTS", "Count", "EXCLUSIONS", "Entry", "HIGH_QUALITY_SSIM", "K_SE",
    "NONTRIVIAL_SSIM", "SECTIONS", "SLIGHT_AT_MOST", "comparable", "count_table", "decidable", "judge", "noise_margin",
    "COUNTS_AS", "build", "load", "save", "section_of", "slight", "std_error", "summary", "table", "tally", "to_json",
]
