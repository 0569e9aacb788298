"""Table 1's controlled experiments (Alg. 4 on Income-L) run the pipeline's own attack."""

from __future__ import annotations

from dataclasses import replace

from flprivacy.experiments import part3_pipeline, part3_table1, part3_table1_controls


def _tiny(s):
    return replace(s, rounds=6, active_rounds=(2, 3), adam_trials=2, adam_batch=2, model_wo_steps=10, n_synthetic=600,
                   seeds=(0,))


def test_controls_rows_are_table1s_pipeline(monkeypatch):
    """Same federation, same tuning seeds, same attack seed: the per-client rows equal the
    pipeline's (per client is its default), the one-study rows equal the pipeline run with one
    study, and Model-w-O equals the pipeline's (it starts from the same per-client estimate)."""
    monkeypatch.setattr(part3_table1_controls, "LONGER_ROUNDS", {"quick": (4,), "paper": (4,)})
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
    # the loss Alg. 4 minimises: the optimum Model-w-O approximates is at least as low as where it started
    assert ctl["loss_model_wo"] <= ctl["loss_last_returned"] * (1 + 1e-9)
