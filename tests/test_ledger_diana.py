"""``flbook.ledger.diana``: the later part's row replaces the earlier one's, a part that fails to
import raises, and the note on which relaxation of eq. 2 a file ran goes on exactly the Table 1-3
Grad cells that are not reproduced and whose file is committed. The mutants these tests catch are
in ``tests/mutants/ledger_diana.py``."""

from __future__ import annotations

import importlib
import types

import pytest

from flbook.ledger import Row
from flbook.ledger import diana as D

AUTHORS = {"data": {"settings": {"grad_relaxation": "input", "grad_sampler": "sigmoid"}}}


def _row(result_id, status="not reproduced", file="part3_table1.json"):
    return Row(paper=D.PAPER, result_id=result_id, claim="", paper_value="", ours="", status=status,
               reason="" if status == "reproduced" else "ours 60 %", chapter="part3/x", data="real", file=file)


def _parts(monkeypatch, parts: dict):
    """Make ``diana.rows`` see the given parts (``{name: rows}``; ``None``: not installed)."""
    real = importlib.import_module

    def fake(name, *a, **k):
        short = name.rsplit(".", 1)[-1]
        if short in parts:
            if parts[short] is None:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            if isinstance(parts[short], Exception):
                raise parts[short]
            return types.SimpleNamespace(rows=lambda: parts[short])
        return real(name, *a, **k)
    monkeypatch.setattr(D.importlib, "import_module", fake)
    monkeypatch.setattr(D, "_PARTS", tuple(parts))
    monkeypatch.setattr(D, "record_or_none", lambda name, scale_="paper": AUTHORS)


def test_the_later_part_replaces_the_earlier_parts_row_in_its_own_order(monkeypatch):
    _parts(monkeypatch, {"a": [_row("Diana Fig. 3 x", "reproduced"), _row("Diana Fig. 1 y", "reproduced")],
                         "b": [_row("Diana Fig. 3 z", "reproduced"), _row("Diana Fig. 3 x")]})
    out = D.rows()
    assert [r.result_id for r in out] == ["Diana Fig. 1 y", "Diana Fig. 3 z", "Diana Fig. 3 x"]
    assert out[-1].status == "not reproduced"  # part b's verdict


def test_a_missing_part_is_skipped_a_broken_one_raises(monkeypatch):
    _parts(monkeypatch, {"a": [_row("Diana Fig. 1 y", "reproduced")], "b": None})
    assert [r.result_id for r in D.rows()] == ["Diana Fig. 1 y"]
    _parts(monkeypatch, {"a": ModuleNotFoundError("No module named 'optuna'", name="optuna")})
    with pytest.raises(ModuleNotFoundError, match="optuna"):
        D.rows()


def test_the_relaxation_note_goes_on_failed_table_grad_cells_with_a_file(monkeypatch):
    rows = [_row("Diana Table 1 Medical passive/Grad"), _row("Diana Table 2 Income-L active-50/Grad-w-O"),
            _row("Diana Table 1 Medical active-10/Grad", "reproduced"), _row("Diana Table 1 Medical passive/Ours"),
            _row("Diana §5.3 Medical passive gain over Grad"), _row("Diana Fig. 4 Income-A large clients/Grad"),
            _row("Diana Table 3 Medical passive/Grad", file="")]
    _parts(monkeypatch, {"a": rows})
    out = {r.result_id: r.reason for r in D.rows()}
    noted = [i for i, why in out.items() if "relaxation of eq. 2" in why]
    assert noted == [rows[0].result_id, rows[1].result_id]
    assert out[rows[2].result_id] == "" and out[rows[3].result_id] == "ours 60 %"


def test_a_grad_cell_whose_file_is_not_committed_keeps_its_reason(monkeypatch):
    _parts(monkeypatch, {"a": [_row("Diana Table 1 Medical passive/Grad")]})
    monkeypatch.setattr(D, "record_or_none", lambda name, scale_="paper": None)
    assert D.rows()[0].reason == "ours 60 %"


@pytest.mark.parametrize("settings,authors", [({"grad_relaxation": "input", "grad_sampler": "sigmoid"}, True),
                                              ({"grad_relaxation": "input", "grad_sampler": "softmax"}, False),
                                              ({"grad_relaxation": "mixture", "grad_sampler": "sigmoid"}, False),
                                              ({"grad_sampler": "sigmoid"}, False), ({}, False)])
def test_only_the_authors_relaxation_and_sampler_together_count_as_theirs(settings, authors):
    why = D.grad_relaxation_reason({"data": {"settings": settings}})
    assert ("the authors' relaxation" in why) is authors and ("reruns this file" in why) is not authors
    if not authors:
        assert f"the {settings.get('grad_relaxation', 'mixture')} relaxation with the {settings.get('grad_sampler', 'softmax')} sampler" in why


def test_a_parts_added_claim_rows_follow_its_rows_and_later_parts_still_replace_them(monkeypatch):
    """``referee_claim_rows`` (the stated claims that had no row) joins its part's rows;
    a later part's row of the same id still replaces it."""
    real = importlib.import_module
    parts = {"a": types.SimpleNamespace(rows=lambda: [_row("Diana Table 1 x", "reproduced")],
                                        referee_claim_rows=lambda: [_row("Diana §5.3 y", "reproduced"),
                                                                       _row("Diana Fig. 3 z", "reproduced")]),
             "b": types.SimpleNamespace(rows=lambda: [_row("Diana Fig. 3 z")])}
    monkeypatch.setattr(D.importlib, "import_module",
                        lambda name, *a, **k: parts.get(name.rsplit(".", 1)[-1]) or real(name, *a, **k))
    monkeypatch.setattr(D, "_PARTS", ("a", "b"))
    monkeypatch.setattr(D, "record_or_none", lambda name, scale_="paper": AUTHORS)
    out = D.rows()
    assert [r.result_id for r in out] == ["Diana Table 1 x", "Diana §5.3 y", "Diana Fig. 3 z"]
    assert out[-1].status == "not reproduced"


def test_the_referee_asks_the_later_part_first(monkeypatch):
    from flbook.ledger.referee import COUNTS, Count

    real = importlib.import_module
    parts = {"a": types.SimpleNamespace(made_here=lambda r: True, count_row=lambda r: Count(cause="compute")),
             "b": types.SimpleNamespace(made_here=lambda r: r.result_id.startswith("Diana Fig. 3"),
                                        count_row=lambda r: Count(cause="our protocol")),
             "c": types.SimpleNamespace()}  # a part without made_here claims nothing
    monkeypatch.setattr(D.importlib, "import_module",
                        lambda name, *a, **k: parts.get(name.rsplit(".", 1)[-1]) or real(name, *a, **k))
    monkeypatch.setattr(D, "_PARTS", ("a", "b", "c"))
    assert D.referee(_row("Diana Fig. 3 z")).cause == "our protocol"
    assert D.referee(_row("Diana Table 1 x")).cause == "compute"
    monkeypatch.setattr(D, "_PARTS", ("c",))
    assert D.referee(_row("Diana Table 1 x")) == COUNTS


def test_every_diana_row_is_claimed_by_the_part_that_makes_it():
    """diana_aia's ``made_here`` never claims a row of diana_sensitivity (Fig. 3, App. C.2-C.3) or of
    diana_reconstruction (Part II), so ``referee`` reaches the right part in any order."""
    from flbook.ledger import diana_aia, diana_reconstruction

    aia = {r.result_id for r in [*diana_aia.rows(), *diana_aia.referee_claim_rows()]}
    for r in diana_reconstruction.rows():
        assert not diana_aia.made_here(r), r.result_id
    for rid in aia:
        claimed = diana_aia.made_here(_row(rid))
        assert claimed is not rid.startswith(("Diana Fig. 3", "Diana App. C.2", "Diana App. C.3")), rid
