"""The reproduction ledger: its rules, its completeness, and the chapters' verdicts against it."""

from __future__ import annotations

import io
import json
import re
import tokenize
from pathlib import Path

import nbformat
import pytest

from flbook import ledger as L
from flbook.ledger import referee as R

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


# ---- rules ---------------------------------------------------------------------------------------------


def test_number_within_tolerance_and_spread():
    assert L.number(75.27, 72.3).ok                       # within 3 points
    assert not L.number(75.27, 72.2).ok                   # 3.07 off
    assert L.number(75.27, 70.0, paper_spread=5.5).ok     # the paper's own spread widens it
    v = L.number(63.51, 60.02, what="passive Grad")
    assert v.status == "not reproduced" and "60.02" in v.reason and "63.51" in v.reason


def test_thresholds_sign_trend_ordering_bound():
    assert L.at_least(20.1, 20).ok and not L.at_least(19.9, 20).ok
    assert L.at_most(0.5, 1).ok and not L.at_most(1.5, 1).ok
    assert L.sign(-0.3, expected=-1, margin=0.245).ok and not L.sign(-0.2, expected=-1, margin=0.245).ok
    assert L.trend([0, 1, 2], [1, 2, 3]).ok
    assert L.trend([2, 0, 1], [3, 1, 2]).ok                              # sorted by x first
    assert L.trend([0, 1, 2], [1, 3, 2]).status == "partly"             # overall up, one step down
    assert L.trend([0, 1, 2], [3, 2, 1]).status == "not reproduced"
    assert L.trend([0, 1, 2], [3, 2, 1], expected=-1).ok
    assert L.ordering({"a": 3, "b": 2, "c": 1}, ["a", "b", "c"]).ok
    assert not L.ordering({"a": 1, "b": 2}, ["a", "b"]).ok
    assert L.ordering({"a": 1.9, "b": 2}, ["a", "b"], margin=0.2).ok
    assert L.bound(1000, 1000).ok and not L.bound(999, 1000).ok and L.bound(951, 1000, required=0.95).ok


def test_rules_at_their_edges():
    """Each rule's boundary, on numbers exact in binary: a tolerance, a threshold or a margin is
    met at equality, and the tolerance is the larger of 3 points and the paper's spread, not their sum."""
    assert L.number(10.0, 13.0).ok and L.number(10.0, 7.0).ok and not L.number(10.0, 13.25).ok
    assert L.number(10.0, 14.5, paper_spread=4.5).ok and not L.number(10.0, 14.75, paper_spread=4.5).ok
    assert not L.number(75.27, 69.0, paper_spread=5.5).ok             # 6.27 off: more than 5.5, less than 3 + 5.5
    assert L.at_least(20.0, 20.0).ok and L.at_most(55.0, 55.0).ok
    assert L.trend([0, 1, 2], [1.0, 3.0, 2.5], margin=1.0).ok           # a step back of 0.5, inside the margin
    assert L.trend([0, 1, 2], [1.0, 4.0, 2.75], margin=1.0).status == "partly"   # 1.25 back: beyond it


def test_combine():
    ok, bad = L.Verdict("reproduced"), L.Verdict("not reproduced", "x")
    part = L.Verdict("partly", "y")
    assert L.combine(ok, ok).ok
    assert L.combine(ok, bad).status == "partly"
    assert L.combine(part, bad).status == "partly" and L.combine(part, part).status == "partly"
    assert L.combine(bad, bad).status == "not reproduced"
    assert L.combine(ok, L.not_run("costs 3 h")).status == "not run"


@pytest.mark.parametrize("call, err", [
    (lambda: L.number(float("nan"), 1), ValueError),
    (lambda: L.number("a", 1), TypeError),
    (lambda: L.sign(1, expected=2), ValueError),
    (lambda: L.trend([1], [1]), ValueError),
    (lambda: L.ordering({"a": 1}, ["a", "b"]), KeyError),
    (lambda: L.bound(3, 2), ValueError),
    (lambda: L.Verdict("fine"), ValueError),
    (lambda: L.Verdict("not reproduced"), ValueError),   # a reason is required
    (lambda: L.combine(), ValueError),
])
def test_rules_reject_bad_input(call, err):
    with pytest.raises(err):
        call()


def test_provenance_marks_old_and_dirty_records():
    ok = {"command": "python -m flbook.experiments.x", "commit": "abc", "scale": "paper", "seeds": [0], "date": "d"}
    assert L.provenance_of(ok)["provenance"] == "complete"
    assert L.provenance_of({**ok, "commit": "abc+dirty"})["provenance"] == "made from an uncommitted tree"
    assert L.provenance_of({**ok, "commit": None})["provenance"] == "made before provenance"
    assert L.provenance_of({**ok, "command": "python -m fedleak.experiments.x"})["provenance"] == "made before provenance"


def test_select_refuses_empty_filters():
    rows = L.load()
    with pytest.raises(LookupError):
        L.select(rows, chapter="part9/nothing")
    with pytest.raises(LookupError):
        L.select(rows, ids=["no such result"])


# ---- the ledger file -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built() -> list[R.Entry]:
    return R.build()


def test_committed_ledger_is_a_fresh_build(built):
    """Nobody edits a verdict or a count by hand: the committed file is what the rules and the
    referee compute now."""
    committed = L.ledger_path().read_text()
    fresh = R.to_json(built)
    if committed != fresh:
        a, b = json.loads(committed), json.loads(fresh)
        diff = [r["result_id"] for r, s in zip(a["rows"], b["rows"]) if r != s][:5]
        pytest.fail(f"book/results/ledger.json is stale ({len(a['rows'])} vs {len(b['rows'])} rows; first differing "
                    f"rows {diff}); rebuild it with `python -m flbook.ledger` and commit it")


def test_every_paper_has_its_results(built):
    assert len(built) >= 100, f"the ledger has {len(built)} rows; every numbered result of the four papers needs one"
    for paper in L.PAPERS.values():
        n = sum(sum(R.tally(built, section=sec)[paper].values()) for sec in R.SECTIONS)
        assert n >= 5, f"{paper}: only {n} rows"
        assert sum(R.tally(built, section="paper")[paper].values()) >= 5, f"{paper}: fewer than 5 rows count"


def test_rows_point_at_real_chapters_and_files(built):
    toc = (ROOT / "_toc.yml").read_text()
    for r in built:
        assert (BOOK / f"{r.chapter}.ipynb").is_file() or (BOOK / f"{r.chapter}.md").is_file(), \
            f"{r.result_id}: chapter {r.chapter!r} not found under book/"
        assert f"book/{r.chapter}" in toc, f"{r.result_id}: chapter {r.chapter!r} is not in _toc.yml"
        if r.file and r.file != "live":
            assert (BOOK / "results" / r.file).is_file(), f"{r.result_id}: result file {r.file} missing"
            assert r.command and r.scale and r.date, f"{r.result_id}: {r.file} lacks command, scale or date"
            assert r.provenance in ("complete", "made from an uncommitted tree", "made before provenance")
        if r.status in ("reproduced", "partly", "not reproduced"):
            assert r.file, f"{r.result_id}: a verdict on numbers needs the file (or 'live') they come from"


def test_every_result_file_has_provenance_or_is_marked():
    """Each result file records command (current package name), scale, seeds, commit and date, or the
    ledger marks it "made before provenance" (listed on the What reproduces page)."""
    listed = {f["file"]: f for f in L.load_files()}
    on_disk = {p.name for p in (BOOK / "results").glob("*.json")} - {"ledger.json"}
    assert on_disk == set(listed), f"ledger's file list differs from book/results: {sorted(on_disk ^ set(listed))}"
    for name, f in listed.items():
        if f["provenance"] == "complete":
            assert f["command"] and f["commit"] and f["date"] and f["scale"] and "fedleak" not in f["command"], name


# ---- the chapters: no typed verdicts ------------------------------------------------------------------------

VERDICT = re.compile(r"\b(not reproduced|reproduced|partly reproduced)\b", re.I)


def _string_literals(source: str) -> list[str]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING:
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    fstring = getattr(tokenize, "FSTRING_MIDDLE", None)
    if fstring is not None:  # Python >= 3.12 splits f-strings
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == fstring:
                out.append(tok.string)
    return out


def _chapters() -> list[Path]:
    return sorted(p for p in BOOK.rglob("*.ipynb") if "_build" not in p.parts and ".ipynb_checkpoints" not in p.parts)


@pytest.mark.parametrize("nb_path", _chapters(), ids=lambda p: str(p.relative_to(BOOK)))
def test_no_typed_verdicts_in_code(nb_path: Path):
    """A verdict shown by a chapter comes from a ledger rule: a string literal in code may name a
    status (to compare or filter with it) but never state one ("reproduced (within 5 pp)")."""
    nb = nbformat.read(nb_path, as_version=4)
    bad = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for lit in _string_literals(cell.source):
            body = lit.strip("rbfuRBFU").strip("'\"")
            if VERDICT.search(body) and body.strip().lower() not in L.STATUSES:
                bad.append(f"cell {i}: {lit[:80]}")
    assert not bad, f"{nb_path.name}: typed verdicts (use flbook.ledger's rules or ledger.table): {bad}"


def test_grad_rows_say_which_relaxation_their_file_ran():
    from flbook.ledger.diana import grad_relaxation_reason

    authors = grad_relaxation_reason({"data": {"settings": {"grad_relaxation": "input", "grad_sampler": "sigmoid"}}})
    old = grad_relaxation_reason({"data": {"settings": {"lr": 1.0}}})  # made before the settings named it
    assert "authors' relaxation" in authors and "reruns" not in authors
    assert "mixture relaxation with the softmax sampler" in old and "reruns this file" in old


SECTION_WORDS = {"paper": "paper's data", "stand-in": "stand-in data", "apart": "kept apart"}
"""The README's words for each section of :data:`flbook.ledger.referee.SECTIONS`."""


def test_readme_counts_are_the_committed_ledgers():
    """The README's table of statuses per paper ("at commit time it counted") is the committed
    ledger's, one line per paper and section: no line mixes the paper's data with stand-in data,
    our controls or duplicates."""
    text = (ROOT / "README.md").read_text()
    table = {(m[0].strip(), m[1].strip()): [int(x) for x in m[2:]] for m in re.findall(
        r"^\| ([^|]+?) \| ([^|]+?) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", text, re.M)}
    entries = R.load()
    want = {(paper, SECTION_WORDS[sec]): [n[s] for s in L.STATUSES]
            for sec in R.SECTIONS for paper, n in R.tally(entries, section=sec).items() if sum(n.values())}
    assert table == want, f"README.md's ledger table {table} differs from book/results/ledger.json's counts {want}"
