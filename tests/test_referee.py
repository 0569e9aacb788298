"""The referee's layer of the ledger (flbook.ledger.referee): its shared thresholds at their
edges, what each row counts towards, the cap on one-run rows, and that nothing the book shows
mixes the sections."""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import nbformat
import pytest

from flbook import ledger as L
from flbook.ledger import referee as R

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


# ---- the shared thresholds, just inside and just outside (numbers exact in binary) -----------------------


def test_noise_margin_is_two_standard_errors_of_the_difference():
    assert R.noise_margin(3.0, 4.0) == 10.0                    # 2 * sqrt(9 + 16)
    assert R.noise_margin(1.5) == 3.0
    assert R.noise_margin(3.0, 4.0, k=1.0) == 5.0
    assert R.K_SE == 2.0


def test_std_error_is_the_sample_sd_over_root_n():
    assert R.std_error([1.0, 3.0]) == 1.0                      # sd sqrt(2), over sqrt(2)
    assert math.isclose(R.std_error([0.0, 0.0, 3.0]), 1.0)     # sd sqrt(3), over sqrt(3)
    with pytest.raises(ValueError, match="at least 2"):
        R.std_error([1.0])


def test_a_sign_needs_to_clear_the_noise_margin():
    m = R.noise_margin(0.5, 0.5)                               # sqrt(2) ~ 1.414
    assert L.sign(1.5, margin=m).ok and not L.sign(1.375, margin=m).ok
    assert L.sign(-1.5, expected=-1, margin=m).ok and not L.sign(-1.375, expected=-1, margin=m).ok


def test_slight_is_beyond_noise_and_at_most_five_points():
    assert R.SLIGHT_AT_MOST == 5.0
    assert R.slight(-5.0, expected=-1, margin=1.0).ok                         # at the cap
    assert R.slight(-5.25, expected=-1, margin=1.0).status == "partly"       # just past it
    assert R.slight(-13.75, expected=-1, margin=1.0).status == "partly"      # a large fall is not slight
    assert R.slight(-1.25, expected=-1, margin=1.0).ok                        # just beyond the noise
    assert R.slight(-0.75, expected=-1, margin=1.0).status == "not reproduced"  # within the noise
    assert R.slight(2.0, expected=-1, margin=1.0).status == "not reproduced"    # the wrong way


def test_comparable_is_within_three_points():
    assert R.COMPARABLE_WITHIN == 3.0
    assert R.comparable(70.0, 73.0).ok and R.comparable(73.0, 70.0).ok
    assert not R.comparable(70.0, 73.25).ok
    assert R.comparable(70.0, 74.0, within=4.0).ok


def test_decidable_needs_one_attack_at_nontrivial_ssim():
    assert R.NONTRIVIAL_SSIM == 0.2 and R.HIGH_QUALITY_SSIM == 0.6
    assert R.decidable({"DLG": 0.0125, "AWA": 0.2})
    assert not R.decidable({"DLG": 0.0125, "AWA": 0.1875})


@pytest.mark.parametrize("call, err", [
    (lambda: R.noise_margin(), ValueError),
    (lambda: R.noise_margin(-1.0), ValueError),
    (lambda: R.noise_margin(1.0, k=0), ValueError),
    (lambda: R.std_error([1.0, float("nan")]), ValueError),
    (lambda: R.comparable(1.0, 2.0, within=-1), ValueError),
    (lambda: R.decidable({}), ValueError),
    (lambda: R.Count(excluded="boring", excluded_why="x"), ValueError),
    (lambda: R.Count(excluded="control"), ValueError),              # a reason is required
    (lambda: R.Count(excluded_why="no key"), ValueError),
    (lambda: R.Count(cause="bad luck"), ValueError),
    (lambda: R.tally([], section="all"), ValueError),                # no count over every section
    (lambda: R.judge(_row(), "counts"), TypeError),
])
def test_referee_rejects_bad_input(call, err):
    with pytest.raises(err):
        call()


# ---- judge: sections, causes, the one-run cap ----------------------------------------------------------------


def _row(status: str = "reproduced", *, seeds=(0, 1), scale: str = "paper", file: str = "x.json",
         data: str = "real", reason: str = "") -> L.Row:
    if status != "reproduced" and not reason:
        reason = "ours 1 vs paper 2"
    return L.Row(paper=L.PAPERS["diana"], result_id="Diana Table 1 Medical passive/Ours", claim="", paper_value="75",
                 ours="74", status=status, reason=reason, chapter="part3/passive_active_aia", data=data, file=file,
                 scale=scale, seeds=list(seeds), command="c", commit="abc", date="d", provenance="complete")


def test_a_row_counts_as_the_papers_unless_told_otherwise():
    e = R.judge(_row(), R.COUNTS)
    assert (e.section, e.status, e.rule_status, e.cause) == ("paper", "reproduced", "", "")


def test_one_seed_or_quick_scale_caps_reproduced_at_partly():
    one = R.judge(_row(seeds=(0,)), R.COUNTS)
    assert one.status == "partly" and "one seed" in one.reason and one.rule_status == "reproduced"
    assert one.cause == "unknown"
    quick = R.judge(_row(scale="quick"), R.COUNTS)
    assert quick.status == "partly" and "quick scale" in quick.reason
    assert R.judge(_row(seeds=(0,)), R.Count(one_run_enough="deterministic")).status == "reproduced"
    assert R.judge(_row(seeds=(), file="live"), R.COUNTS).status == "reproduced"       # a live check is not a file's run
    assert R.judge(_row("not reproduced", seeds=(0,)), R.COUNTS).status == "not reproduced"  # never raised


def test_sections_stand_in_and_apart():
    s = R.judge(_row(data="synthetic stand-in"), R.Count(stand_in="a synthetic census of 100 rows for ACS"))
    assert s.section == "stand-in"
    mnist = R.judge(_row(), R.Count(stand_in="MNIST for ImageNet"))
    assert mnist.section == "stand-in"
    apart = R.judge(_row("not reproduced"), R.Count(excluded="duplicate", excluded_why="MSE repeats PSNR"))
    assert apart.section == "apart" and apart.cause == ""       # no cause asked of a row kept apart
    with pytest.raises(ValueError, match="stood in"):
        R.judge(_row(data="synthetic stand-in"), R.COUNTS)


def test_a_stricter_verdict_replaces_the_rules_and_says_so():
    e = R.judge(_row(), R.Count(verdict=L.Verdict("not reproduced", "beyond 2 SE: no")))
    assert (e.status, e.rule_status, e.reason, e.cause) == ("not reproduced", "reproduced", "beyond 2 SE: no", "unknown")
    assert R.judge(_row(), R.Count(cause="the paper", verdict=L.Verdict("partly", "y"))).cause == "the paper"


def test_tally_keeps_sections_apart():
    es = [R.judge(_row(), R.COUNTS), R.judge(_row(data="synthetic stand-in"), R.Count(stand_in="census")),
          R.judge(_row("not reproduced"), R.Count(excluded="control", excluded_why="ours"))]
    d = L.PAPERS["diana"]
    assert R.tally(es, section="paper")[d]["reproduced"] == 1
    assert R.tally(es, section="stand-in")[d]["reproduced"] == 1
    assert R.tally(es, section="apart")[d]["not reproduced"] == 1
    assert sum(R.tally(es, section="paper")[d].values()) == 1
    t = R.count_table(es, paper=d)
    assert list(t["rows"]) == ["paper", "stand-in", "apart"] and list(t["total"]) == [1, 1, 1]


def test_the_ledger_file_round_trips():
    es = R.load()
    assert es and all(isinstance(e, R.Entry) for e in es)
    assert [e.result_id for e in es] == [r.result_id for r in L.load()]
    assert [e.status for e in es] == [r.status for r in L.load()]    # chapters reading rows show the counted status


# ---- every rule call in the ledger and the chapters states its margin ---------------------------------------

MARGIN_RULES = {"sign", "trend", "ordering", "slight"}


def _rule_calls_without_margin(tree: ast.AST, skip: frozenset[str] = frozenset()) -> list[str]:
    """Calls of sign/trend/ordering/slight without ``margin=`` or with a literal 0, outside the
    top-level functions named in ``skip``."""
    bad = []
    nodes = [n for n in getattr(tree, "body", [tree])
             if not (isinstance(n, ast.FunctionDef) and n.name in skip)]
    for node in (x for n in nodes for x in ast.walk(n)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name not in MARGIN_RULES:
            continue
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("np", "torch", "math", "numpy"):
            continue    # np.sign and friends, not the ledger's
        kw = {k.arg: k.value for k in node.keywords}
        m = kw.get("margin")
        if m is None:
            bad.append(f"line {node.lineno}: {name}(...) without margin=")
        elif isinstance(m, ast.Constant) and m.value == 0:
            bad.append(f"line {node.lineno}: {name}(..., margin=0)")
    return bad


FROZEN: dict[str, frozenset[str]] = {
    "diana_aia.py": frozenset({"_fig1_rows"}),
    "wilson.py": frozenset({"fig7_verdict", "fig7_investigation", "_lemma_rows", "app_f_control_verdicts",
                            "_factor_rows", "_ablation_rows"}),
}
"""Functions whose rule calls state no margin, left as the committed result files' runs executed them
(an edit would make those files stale under flbook/experiments/fingerprint.py's rule). Their rows are decided again, with margins, by their module's referee (``Count(verdict=...)``):
diana_aia._referee_fig1_redecided and wilson.wilson_referee_verdicts. The list must stay exact."""


def _ledger_sources() -> list[Path]:
    return sorted((ROOT / "src" / "flbook" / "ledger").glob("*.py"))


@pytest.mark.parametrize("path", _ledger_sources(), ids=lambda p: p.name)
def test_every_rule_call_in_the_ledger_states_its_margin(path: Path):
    """The margin rule: a sign, trend or ordering clears a margin from the noise, never zero by
    default. (The rules' signatures do not require the margin argument; this test does.)"""
    if path.name in ("__init__.py", "referee.py"):
        pytest.skip("the rules' own definitions")
    tree = ast.parse(path.read_text())
    frozen = FROZEN.get(path.name, frozenset())
    assert not _rule_calls_without_margin(tree, frozen), path.name
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in frozen):
        assert _rule_calls_without_margin(fn), f"{path.name}:{fn.name} states its margins now: drop it from FROZEN"


def _notebooks() -> list[Path]:
    return sorted(p for p in BOOK.rglob("*.ipynb") if "_build" not in p.parts and ".ipynb_checkpoints" not in p.parts)


@pytest.mark.parametrize("nb_path", _notebooks(), ids=lambda p: str(p.relative_to(BOOK)))
def test_every_rule_call_in_a_chapter_states_its_margin(nb_path: Path):
    nb = nbformat.read(nb_path, as_version=4)
    bad = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "ledger" not in cell.source and "trend(" not in cell.source:
            continue
        src = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        if "ledger" not in src:
            continue
        bad += [f"cell {i}, {b}" for b in _rule_calls_without_margin(tree)]
    assert not bad, f"{nb_path.name}: {bad}"


def test_the_scan_finds_a_missing_margin():
    assert _rule_calls_without_margin(ast.parse("ledger.trend(x, y, expected=1)"))
    assert _rule_calls_without_margin(ast.parse("sign(d, margin=0)"))
    assert not _rule_calls_without_margin(ast.parse("sign(d, margin=noise_margin(a, b))\nnp.sign(x)"))


# ---- what the book shows never mixes sections ------------------------------------------------------------------

COUNT_CALL = re.compile(r"\bledger\.counts\(|\bL\.counts\(")


def test_no_chapter_counts_rows_across_sections():
    """``flbook.ledger.counts`` counts every row together (stand-in data, controls and duplicates
    with the paper's results); the book counts with ``referee.tally(..., section=...)``."""
    bad = []
    for nb_path in _notebooks():
        nb = nbformat.read(nb_path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and COUNT_CALL.search(cell.source):
                bad.append(f"{nb_path.relative_to(BOOK)} cell {i}")
    assert not bad, f"counts over all sections (use flbook.ledger.referee.tally): {bad}"


def test_every_counted_not_reproduced_row_has_a_cause_and_every_stand_in_says_what():
    for e in R.load():
        if e.section != "apart" and e.status in ("not reproduced", "partly"):
            assert e.cause in R.CAUSES, e.result_id
        if e.section == "stand-in":
            assert e.stand_in.strip(), e.result_id
        if e.data == "synthetic stand-in":
            assert e.section != "paper", f"{e.result_id}: a synthetic stand-in row counted as the paper's"
        if e.section == "apart":
            assert e.excluded in R.EXCLUSIONS and e.excluded_why.strip(), e.result_id


def test_ledger_json_keeps_rows_and_counting_in_step():
    d = json.loads(L.ledger_path().read_text())
    assert [c["result_id"] for c in d["counting"]] == [r["result_id"] for r in d["rows"]]


def test_verdict_tables_say_what_each_row_counts_towards():
    rows = {e.result_id: e for e in R.load() if e.chapter == "part3/passive_active_aia"}
    t = R.table(chapter="part3/passive_active_aia").data
    for rid, status in zip(t["result"], t["status"]):
        e = rows[rid]
        want = {"paper": e.status, "stand-in": f"{e.status} (stand-in data)",
                "apart": f"{e.status} (kept apart: {e.excluded})"}[e.section]
        assert status == want, rid
    assert {e.section for e in rows.values()} >= {"paper", "stand-in"}


def test_a_papers_paragraph_is_made_from_its_rows():
    d = L.PAPERS["diana"]
    import dataclasses

    ours = dataclasses.replace(_row("not reproduced"), result_id="Diana Table 1 Medical passive/Grad")
    es = [R.judge(_row(), R.COUNTS),
          R.judge(_row("not reproduced"), R.Count(cause="the paper")),
          R.judge(ours, R.Count(cause="our protocol")),
          R.judge(_row(data="synthetic stand-in"), R.Count(stand_in="a synthetic census of 100 people (for ACS), split")),
          R.judge(_row(), R.Count(excluded="duplicate", excluded_why="MSE"))]
    text = R.summary(es, d)
    assert "(3 results): 1 reproduced, 2 not reproduced." in text
    assert "our protocol: 1, the paper: 1" in text
    assert "Diana Table 1 Medical passive/Ours." in text and "passive/Grad" not in text   # the finding, by id
    assert "1 result ran on data that stood in for the paper's (a synthetic census of 100 people;" in text
    assert "1 duplicate" in text
    assert "findings about the paper:** none" not in text.lower()
    with pytest.raises(ValueError):
        R.summary(es, "Nobody 2030")


def test_a_stand_ins_short_name_drops_its_details():
    assert R._stand_in_label("MNIST (28x28 grey digits; 8 per client (train)) for ImageNet (128x128), in x.json") \
        == "MNIST for ImageNet"
    assert R._stand_in_label("a synthetic census of 15,982 people (as many), split over 10 clients") \
        == "a synthetic census of 15,982 people"


def test_long_names_in_verdict_tables_can_wrap():
    assert R._breakable("flbook.experiments.part4_factors 0.309 a/b") == \
        "flbook.\u200bexperiments.\u200bpart4_\u200bfactors 0.309 a/\u200bb"
    assert R._breakable(3.5) == 3.5
