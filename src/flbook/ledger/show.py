"""The ledger's rows as a reader sees them: the "Beside the paper" box that closes a chapter, and
the compact row tables of the "What reproduces" page, in one implementation.

Every row shown here is read from the committed ledger (``book/results/ledger.json``, counted by
:mod:`flbook.ledger.referee`); nothing is typed by hand. Each row of a chapter's box carries an
HTML id (:func:`anchor`), so that a link to a result lands on its row, not at the top of the page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from html import escape
from typing import Any

from flbook.ledger import STATUSES

__all__ = ["BG", "WORDS", "anchor", "box", "breakable", "details", "groups", "rows_table"]

Entry = Any
"""A :class:`flbook.ledger.referee.Entry` (this module does not import the referee, which imports it)."""

BG: dict[str, str] = {"reproduced": "#e8f5e9", "partly": "#f1f8e9", "not reproduced": "#ffebee",
                      "not run": "#f5f5f5", "not covered": "#fafafa"}
"""Each status's row background, light enough that the text stays black on every one."""

WORDS: dict[str, str] = {"paper": "the paper's data", "stand-in": "stand-in data", "apart": "kept apart"}
"""What each :data:`~flbook.ledger.referee.SECTIONS` key is called in a box or a group's title."""


def anchor(result_id: str) -> str:
    """The HTML id of a result's row in its chapter's box: ``row-`` and the id in lower case,
    every run of other characters a hyphen ("Diana Table 1 Medical" -> ``row-diana-table-1-medical``)."""
    if not isinstance(result_id, str) or not result_id.strip():
        raise ValueError(f"result_id={result_id!r}: expected a ledger row's non-empty result id")
    return "row-" + re.sub(r"[^a-z0-9]+", "-", result_id.lower()).strip("-")


def breakable(text: str) -> str:
    """``text`` escaped for HTML, with break opportunities after the / and _ of file names."""
    return escape(text).replace("/", "/<wbr>").replace("_", "_<wbr>")


def details(e: Entry, *, changed: Iterable[str] = ()) -> str:
    """A row's claim, reason, cause, stand-in, exclusion, data and file, shown on demand; a file in
    ``changed`` is marked as made by code that has changed since its run."""
    changed = set(changed)
    seeds = f" ({len(e.seeds)} seed{'s' if len(e.seeds) != 1 else ''})" if e.seeds else ""
    lines = [f"<b>claim</b>: {escape(e.claim)}" if e.claim else "",
             f"<b>why</b>: {breakable(e.reason)}" if e.reason else "",
             f"<b>cause</b>: {escape(e.cause)}" if e.cause else "",
             f"<b>stood in</b>: {escape(e.stand_in)}" if e.stand_in else "",
             f"<b>kept apart</b> ({escape(e.excluded)}): {escape(e.excluded_why)}" if e.excluded else "",
             f"<b>data</b>: {escape(e.data)}" + (f"; <b>file</b>: {breakable(e.file)}{seeds}" if e.file else ""),
             "<em>code changed since the run</em>" if e.file in changed else "",
             f"<em>{escape(e.provenance)}</em>"
             if e.provenance in ("made before provenance", "made from an uncommitted tree") else ""]
    return "<br>".join(x for x in lines if x)


def rows_table(rows: Sequence[Entry], *, link: Callable[[Entry], str] | None = None,
               ids: bool = False, changed: Iterable[str] = ()) -> str:
    """Compact rows as an HTML table: the result (linked by ``link`` when given; with ``ids`` each
    row carries its :func:`anchor`), the paper's value, ours, and the status, which opens on the
    row's :func:`details`. The table scrolls inside its own box where the column is too narrow."""
    changed = list(changed)

    def name(e: Entry) -> str:
        return f'<a href="{escape(link(e))}">{escape(e.result_id)}</a>' if link else escape(e.result_id)

    body = "".join(
        f'<tr style="background:{BG[e.status]}"' + (f' id="{anchor(e.result_id)}"' if ids else "") + ">"
        f"<td>{name(e)}</td><td>{breakable(e.paper_value)}</td><td>{breakable(e.ours)}</td>"
        f"<td><details><summary><b>{escape(e.status)}</b></summary><small>{details(e, changed=changed)}"
        "</small></details></td></tr>"
        for e in rows)
    head = "".join(f"<th>{h}</th>" for h in ("result", "paper", "ours", "status"))
    return (f'<div class="ledger-table" style="overflow-x:auto"><table style="font-size:0.85em">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def _counts(rows: Sequence[Entry]) -> str:
    return ", ".join(f"{v} {s}" for s in STATUSES if (v := sum(e.status == s for e in rows)))


def groups(rows: Sequence[Entry], label: str, *, open_: bool = False, **table: Any) -> str:
    """``rows`` as a group a reader opens: its title counts the rows by status."""
    return (f"<details{' open' if open_ else ''}><summary><b>{len(rows)} {escape(label)}</b> ({_counts(rows)})"
            f"</summary>{rows_table(rows, **table)}</details>")


def box(entries: Iterable[Entry], chapter: str) -> Any:
    """The box that closes a chapter: its results beside the paper's, read from the committed ledger.

    The rows on the paper's data come first and open, counted by status; rows on stand-in data and
    rows kept apart (our controls, duplicates, draws that cannot correspond) follow in closed groups,
    since they do not count among the paper's results. Every row has its :func:`anchor`, so the
    "What reproduces" page links land on it.

    Args:
        chapter: the chapter's path under ``book/`` without suffix, as the ledger's rows name it
            (``"part3/passive_active_aia"``).
        entries: the referee's entries (:func:`flbook.ledger.referee.beside_the_paper` passes the
            committed ledger's).

    Returns:
        An ``IPython.display.HTML`` object (a notebook displays it).
    """
    from IPython.display import HTML

    entries = list(entries)
    picked = [e for e in entries if e.chapter == chapter]
    if not picked:
        known = sorted({e.chapter for e in entries})
        raise LookupError(f"chapter={chapter!r}: no ledger row names this chapter; expected one of {known}")
    by = {sec: [e for e in picked if e.section == sec] for sec in WORDS}
    head = by["paper"]
    lead = (f"Of this chapter's {len(head)} result{'s' if len(head) != 1 else ''} on the paper's data: "
            f"{_counts(head)}." if head else "This chapter has no result on the paper's data.")
    parts = [f'<p style="margin:0 0 .4em"><b>Beside the paper.</b> {lead} Open a status for the claim, '
             'the reason and the result file; the whole ledger is on the '
             '<a href="../part5/what_reproduces.html">What reproduces</a> page.</p>']
    if head:
        parts.append(rows_table(head, ids=True))
    for sec in ("stand-in", "apart"):
        if by[sec]:
            parts.append(groups(by[sec], f"rows on {WORDS[sec]}" if sec == "stand-in" else "rows kept apart "
                                "(not counted among the paper's results)", ids=True))
    return HTML('<div class="beside-the-paper" style="border:1px solid #c5cae9;border-left:4px solid #3f51b5;'
                'border-radius:4px;padding:.6em .8em;margin:.5em 0">' + "".join(parts) + "</div>")
