"""The book as course material: every chapter ends with exercises whose solutions are hidden.

Each chapter of ``_toc.yml`` under ``book/part*`` holds at least two sphinx-exercise exercises
(```` ```{exercise} ````, with a ``:label:``), each followed by a solution
(``solution-start`` / ``solution-end`` naming that label, hidden in a dropdown); the code of a
solution runs with the chapter under nbval, so it is checked like the rest.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def chapters() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [c["file"] for part in toc["parts"] for c in part["chapters"] if c["file"].startswith("book/part")]


@pytest.mark.parametrize("doc", chapters())
def test_chapter_has_two_exercises_with_hidden_solutions(doc):
    cells = json.loads((ROOT / f"{doc}.ipynb").read_text())["cells"]
    md = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: *(\S+)", md)
    assert len(labels) >= 2, f"{doc}: {len(labels)} labelled exercises; a chapter ends with at least two"
    assert len(set(labels)) == len(labels), f"{doc}: duplicate exercise labels {labels}"
    for label in labels:
        start = re.search(r"```\{solution-start\} *" + re.escape(label) + r"\n((?::[^\n]*\n)*)", md)
        assert start, f"{doc}: exercise {label} has no solution (solution-start {label})"
        assert ":class: dropdown" in start.group(1), f"{doc}: the solution of {label} is not hidden (:class: dropdown)"
    assert md.count("{solution-start}") == md.count("{solution-end}"), f"{doc}: unbalanced solution-start/-end"


def test_page_titles_hold_no_math():
    # A page's first heading becomes the browser tab's title and its entry in the navigation of
    # every page; neither is typeset (pages without formulas do not load MathJax), so `$d+1$`
    # would show as raw `\(d+1\)`. Write such titles in plain text (*d*+1).
    bad = []
    for doc in chapters() + ["book/run_it_yourself"]:
        cells = json.loads((ROOT / f"{doc}.ipynb").read_text())["cells"]
        title = next(line for c in cells if c["cell_type"] == "markdown"
                     for line in "".join(c["source"]).splitlines() if line.startswith("# "))
        if "$" in title or "\\(" in title:
            bad.append(f"{doc}: {title}")
    assert not bad, "page titles with math (shown raw in tabs and navigation):\n" + "\n".join(bad)


# --- references: every entry findable, every work named in prose cited ---------------

BIB = ROOT / "book" / "references.bib"


def _bib_entries() -> dict[str, str]:
    text = BIB.read_text()
    return {m.group(1): m.group(0) for m in re.finditer(r"@\w+\{([^,]+),.*?\n\}", text, re.S)}


def test_every_bibliography_entry_has_a_doi_arxiv_id_or_url():
    missing = [k for k, e in _bib_entries().items() if not re.search(r"^\s*(doi|url|eprint)\s*=", e, re.M | re.I)]
    assert not missing, f"entries with no doi, url or eprint (arXiv id) in {BIB.name}: {missing}"
    vague = [k for k, e in _bib_entries().items() if re.search(r"arXiv preprint\}", e)]
    assert not vague, f"'arXiv preprint' without a number (use eprint = {{NNNN.NNNNN}}): {vague}"


def _prose(doc: str) -> str:
    cells = json.loads((ROOT / f"{doc}.ipynb").read_text())["cells"]
    md = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return re.sub(r"```.*?```", "", md, flags=re.S)   # code fences (directives' bodies stay: see below)


def _md(doc: str) -> str:
    cells = json.loads((ROOT / f"{doc}.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def _uncited_works(doc: str) -> list[str]:
    """'Name et al. 2023' / 'Name et al. (2023)' / 'Name and Other (2021)' in prose whose first
    author and year match no key of the bibliography cited in the same chapter."""
    md = _md(doc)
    cited = set(re.findall(r"\{(?:foot)?cite(?::\w+)?\}`([^`]+)`", md))
    cited = {k.strip() for group in cited for k in group.split(",")}
    keys = set(_bib_entries())
    bad = []
    for m in re.finditer(r"\b([A-Z][a-z]+)(?: et al\.?| (?:and|&) [A-Z][a-z]+),? \(?((?:19|20)\d\d)\)?", md):
        name, year = m.group(1).lower(), m.group(2)
        ok = [k for k in cited if k.startswith(name) and year in k]
        if not ok:
            known = [k for k in keys if k.startswith(name) and year in k]
            bad.append(f"{m.group(0)!r} ({'cite ' + known[0] if known else 'not in references.bib'})")
    return sorted(set(bad))


def _literal_exercise_refs(doc: str) -> list[str]:
    """'exercise 5' typed in prose: exercises are numbered across the book, so the number a
    reader sees differs; reference an exercise by its label ({ref}`label`)."""
    return sorted(set(m.group(0) for m in re.finditer(r"\b[Ee]xercises? \d+(?:\s*(?:,|and|-|–)\s*\d+)*", _md(doc))))


def _empty_headings(doc: str) -> list[str]:
    cells = json.loads((ROOT / f"{doc}.ipynb").read_text())["cells"]
    bad = []
    for i, c in enumerate(cells):
        if c["cell_type"] != "markdown":
            continue
        lines = "".join(c["source"]).strip().splitlines()
        nxt = next((cells[j] for j in range(i + 1, len(cells))), None)
        if lines and lines[-1].startswith("#") and (nxt is None or (nxt["cell_type"] == "markdown" and "".join(nxt["source"]).lstrip().startswith("#"))):
            bad.append(lines[-1])
    return bad


# Chapters that failed these checks when they were written (2026-11-24); their owners fix the
# prose, then the entry goes. xfail(strict=False): a fixed chapter passes and is reported XPASS.
_STILL_FAILING = {
    "exercise_numbers": set(),
}


def _chapters_marked(check: str) -> list:
    return [pytest.param(d, marks=pytest.mark.xfail(strict=False, reason="chapter's prose not yet fixed"))
            if d in _STILL_FAILING.get(check, ()) else d for d in chapters()]


@pytest.mark.parametrize("doc", _chapters_marked("cited"))
def test_every_work_named_in_prose_is_cited(doc):
    bad = _uncited_works(doc)
    assert not bad, f"{doc}: works named but not cited in this chapter (add {{cite}}`key`):\n" + "\n".join(bad)


@pytest.mark.parametrize("doc", _chapters_marked("exercise_numbers"))
def test_no_literal_exercise_numbers(doc):
    bad = _literal_exercise_refs(doc)
    assert not bad, (f"{doc}: exercises are numbered across the book; write {{ref}}`label` instead of "
                     f"{bad}")


@pytest.mark.parametrize("doc", chapters())
def test_no_empty_headings(doc):
    bad = _empty_headings(doc)
    assert not bad, f"{doc}: headings with nothing under them: {bad}"
