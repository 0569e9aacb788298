"""What a chapter says reproduces is what the ledger says.

A chapter's summary sentence about what reproduces is followed, in its Markdown, by a MyST comment
(not rendered) naming the ledger rows it speaks of and their status::

    An active server gets close to the oracle on Medical.
    % ledger: Diana Table 1 Medical*active* = reproduced

    ``% ledger: <result id or fnmatch pattern>[; <more>] = <status>[|<status>]``

This test reads every such marker of every notebook of the book and checks it against the
committed ledger (``book/results/ledger.json``, as the referee counts it): each pattern must match
at least one row, and every row it matches must have one of the statuses named. A sentence left
behind when a verdict changes fails here. Each chapter that the ledger's rows name closes with a
"Beside the paper" box read from the ledger (``referee.beside_the_paper``), and the paragraphs of
its summary sections that speak of reproducing carry a marker.
"""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest

from flbook import ledger
from flbook.ledger import referee

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
MARKER = re.compile(r"^%\s*ledger:\s*(?P<patterns>[^=]+?)\s*=\s*(?P<statuses>.+?)\s*$", re.M)
# a paragraph that says what reproduces (or not), in a chapter's summary sections
VERDICT_WORDS = re.compile(r"\b(?:reproduc\w*|not confirmed|confirms?|does not hold|holds|fails to)\b", re.I)
SUMMARY_HEADINGS = re.compile(r"^#{2,3} +(?:What it means|Summary|Beside the paper|What the book found)\b.*$",
                              re.M | re.I)


def notebooks() -> list[Path]:
    return sorted(p for p in BOOK.rglob("*.ipynb") if "_build" not in p.parts and ".ipynb_checkpoints" not in p.parts)


def markdown(nb: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "markdown"]


def check_marker(line: str, entries) -> list[str]:
    """The problems of one marker line against ``entries`` (empty when it agrees)."""
    m = MARKER.match(line.strip())
    if not m:
        return [f"{line!r}: not a marker (expected '% ledger: <id or pattern>[; ...] = <status>[|<status>]')"]
    statuses = [s.strip() for s in m["statuses"].split("|")]
    bad = [s for s in statuses if s not in ledger.STATUSES]
    if bad:
        return [f"{line!r}: unknown status {bad}; expected one of {list(ledger.STATUSES)}"]
    problems = []
    for pattern in (p.strip() for p in m["patterns"].split(";")):
        rows = [e for e in entries if fnmatch.fnmatchcase(e.result_id, pattern)]
        if not rows:
            problems.append(f"{line!r}: {pattern!r} matches no ledger row")
        problems += [f"{line!r}: {e.result_id!r} is {e.status!r} in the ledger" for e in rows
                     if e.status not in statuses]
    return problems


def markers(nb: Path) -> list[str]:
    return [m.group(0) for text in markdown(nb) for m in MARKER.finditer(text)]


@pytest.fixture(scope="module")
def entries():
    return referee.load()


@pytest.mark.parametrize("nb", [n for n in notebooks() if markers(n)], ids=lambda p: str(p.relative_to(BOOK)))
def test_summary_markers_agree_with_the_ledger(nb, entries):
    problems = [p for line in markers(nb) for p in check_marker(line, entries)]
    assert not problems, f"{nb.relative_to(ROOT)}: summary sentences that disagree with the ledger:\n" + "\n".join(problems)


def test_a_marker_that_disagrees_fails(entries):
    """The check bites: a real row with a wrong status, a pattern matching nothing, an unknown status."""
    e = next(e for e in entries if e.status == "reproduced")
    assert check_marker(f"% ledger: {e.result_id} = reproduced", entries) == []
    assert check_marker(f"% ledger: {e.result_id} = not reproduced", entries)
    assert check_marker("% ledger: No such result* = reproduced", entries)
    assert check_marker(f"% ledger: {e.result_id} = fine", entries)
    other = next(x for x in entries if x.status != "reproduced")
    # a pattern covering a row of another status fails, however many rows agree
    assert check_marker(f"% ledger: {e.result_id}; {other.result_id} = reproduced", entries)


def ledger_chapters(entries) -> list[str]:
    return sorted({e.chapter for e in entries})




def _chapter_params():
    chapters = sorted({e.chapter for e in referee.load()})
    return [pytest.param(c, id=c) for c in chapters]


@pytest.mark.parametrize("chapter", _chapter_params())
def test_chapter_closes_with_its_box_and_marks_its_summary(chapter):
    nb = BOOK / f"{chapter}.ipynb"
    cells = json.loads(nb.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert f'beside_the_paper("{chapter}")' in code, \
        f"{chapter}: no 'Beside the paper' box (a cell calling referee.beside_the_paper(\"{chapter}\"))"
    md = "\n".join(markdown(nb))
    assert re.search(r"^## +Beside the paper\b", md, re.M), f"{chapter}: no '## Beside the paper' section"
    unmarked = []
    for head in SUMMARY_HEADINGS.finditer(md):
        section = md[head.end():]
        nxt = re.search(r"^#{1,3} ", section, re.M)
        section = section[:nxt.start()] if nxt else section
        section = re.sub(r"```.*?```", "", section, flags=re.S)   # exercises, directives
        paragraphs = re.split(r"\n\s*\n", section)
        for k, para in enumerate(paragraphs):
            text = "\n".join(x for x in para.splitlines() if not x.lstrip().startswith("%"))
            has_marker = bool(MARKER.search(para)) or (k + 1 < len(paragraphs)
                                                     and paragraphs[k + 1].lstrip().startswith("% ledger:"))
            if VERDICT_WORDS.search(text) and not has_marker:
                unmarked.append(text.strip()[:100])
    assert not unmarked, (f"{chapter}: summary paragraphs about what reproduces without a '% ledger:' marker "
                          "(name the rows they speak of):\n" + "\n".join(unmarked))
