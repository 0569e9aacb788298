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
