"""Table 1's controlled experiments (Alg. 4 on Income-L) run the pipeline's own attack."""

from __future__ import annotations

from dataclasses import replace

from flbook.experiments import part3_pipeline, part3_table1, part3_table1_controls


def _tiny(s):
    return replace(s, rounds=6, active_rounds=(2, 3), adam_trials=2, adam_batch=2, model_wo_steps=10, n_synthetic=600,
                   seeds=(0,))


def test_controls_rows_are_table1s_pipeline(monkeypatch):
    """Same federation, same tuning seeds, same attack seed: the per-client rows equal the
    pipeline's (per client is its default), the one-study rows equal the pipeline run with one
    study, and Model-w-O equals the pipeline's (it starts from the same per-client estimate)."""
    monkeypatch.setattr(part3_table1_controls, "LONGER_ROUNDS", {"quick": (4,), "paper": (4,)})
    monkeypatch.setattr(part3_table1_controls, "AUTHORS_ORACLE", {"quick": {"epochs": 1, "n_trials": 2},
                                                                  "paper": {"epochs": 1, "n_trials": 2}})
    s = _tiny(part3_table1.QUICK_SETTINGS["Income-L"])
    ctl = part3_table1_controls.run_seed(s, 0, log=lambda m: None)
    task = part3_pipeline.make_task("Income-L", "synthetic", 0, s)
    per = part3_pipeline.run_pipeline(task, s, 0, grad=False)
    one = part3_pipeline.run_pipeline(task, replace(s, adam_per_client=False), 0, grad=False)
    for r in (2, 3):
        assert ctl["attack"][f"active-{r}, per client"]["accuracy"] == per["rows"][f"active-{r}/Ours"]
        assert ctl["attack"][f"active-{r}, per client"]["lr"] == per["details"][f"active-{r}/adam"]["lr"]
        assert ctl["attack"][f"active-{r}, one study"]["accuracy"] == one["rows"][f"active-{r}/Ours"]
    assert ctl["passive/Ours"] == per["rows"]["passive/Ours"]
    assert ctl["Model-w-O"] == per["rows"]["Model-w-O"]
    assert set(ctl["attack"]) == {"active-2, one study", "active-3, one study", "active-2, per client",
                                  "active-3, per client", "active-4, per client"}
    assert 0 <= ctl["Model-w-O (authors' code)"] <= 100 and len(ctl["authors_oracle_params"]) == len(task.clients)
    # the loss Alg. 4 minimises: the optimum Model-w-O approximates is at least as low as where it started
    assert ctl["loss_model_wo"] <= ctl["loss_last_returned"] * (1 + 1e-9)


def test_ledger_reason_reads_the_controls(monkeypatch):
    """The "reaches Model-w-O" reason states the controls' numbers: per-client minus one-study
    accuracy, the longest attack's accuracy and the loss fractions (computed, not typed)."""
    from flbook.ledger import diana_aia

    def seed(acc1, acc50, acc200):
        return {"loss_last_returned": 10.0, "loss_model_wo": 0.01, "Model-w-O": 98.0, "attack": {
            "active-50, one study": {"rounds": 50, "per_client": False, "accuracy": acc1, "loss": 5.0},
            "active-50, per client": {"rounds": 50, "per_client": True, "accuracy": acc50, "loss": 4.0},
            "active-200, per client": {"rounds": 200, "per_client": True, "accuracy": acc200, "loss": 1.0}}}

    rec = {"data": {"task": "Income-L", "per_seed": [seed(80.0, 81.0, 90.0), seed(82.0, 82.0, 92.0)]}}
    monkeypatch.setattr(diana_aia, "record_or_none", lambda name: rec if name == "part3_table1_controls" else None)
    text = diana_aia.alg4_controls_reason("Income-L")
    assert "2 seeds" in text and "+0.50 p.p." in text and "200 attack rounds" in text and "91.00" in text
    assert "98.00" in text and "0.100 of the last returned" in text and "0.0010" in text
    assert "authors' code" not in text
    for x in rec["data"]["per_seed"]:
        x["Model-w-O (authors' code)"] = 88.0
    assert "authors' code" in diana_aia.alg4_controls_reason("Income-L") and "88.00" in diana_aia.alg4_controls_reason("Income-L")
    assert diana_aia.alg4_controls_reason("Income-A") == ""
    monkeypatch.setattr(diana_aia, "record_or_none", lambda name: None)
    assert diana_aia.alg4_controls_reason("Income-L") == ""


def test_oracle_reason_states_both_oracles(monkeypatch):
    from flbook.ledger import diana_aia

    rec = {"data": {"task": "Income-L", "per_seed": [{"Model-w-O": 98.0, "Model-w-O (authors' code)": 88.0},
                                                     {"Model-w-O": 97.0, "Model-w-O (authors' code)": 90.0}]}}
    monkeypatch.setattr(diana_aia, "record_or_none", lambda name: rec if name == "part3_table1_controls" else None)
    text = diana_aia.oracle_controls_reason("Income-L")
    assert "97.50" in text and "89.00" in text and "2 seeds" in text
    assert diana_aia.oracle_controls_reason("Medical") == ""
    del rec["data"]["per_seed"][0]["Model-w-O (authors' code)"]
    assert diana_aia.oracle_controls_reason("Income-L") == ""
