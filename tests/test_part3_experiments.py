"""Smoke tests of Part III's experiment pipelines (Table 1, Fig. 1) on tiny synthetic data."""

from __future__ import annotations

from dataclasses import replace

import pytest

from flprivacy.data.census import encode_census, income_l_task, synthetic_census
from flprivacy.experiments import part3_fig1, part3_pipeline, part3_table1


def test_table1_pipeline_gives_every_row():
    task = income_l_task(0.4, n_synthetic=800, seed=0)
    s = replace(part3_table1.QUICK_SETTINGS["Income-L"], rounds=4, active_rounds=(2, 3), adam_trials=3, adam_batch=3,
                grad_learning_rates=(1e3,), grad_iterations=3, model_wo_steps=20, hidden=16)
    out = part3_pipeline.run_pipeline(task, s, seed=0)
    expected = {"passive/Grad", "passive/Grad-w-O", "passive/Ours", "Model-w-O"} | {
        f"active-{r}/{a}" for r in (2, 3) for a in ("Grad", "Grad-w-O", "Ours")}
    assert set(out["rows"]) == expected
    assert all(0 <= v <= 100 for v in out["rows"].values())
    assert out["rows"]["passive/Grad-w-O"] >= out["rows"]["passive/Grad"]  # the oracle never loses
    assert out["rows"]["active-3/Grad-w-O"] >= out["rows"]["passive/Grad-w-O"]  # more round sets to pick from
    assert set(out["timings"]) >= {"training", "gradient-based AIA", "Model-w-O (Adam to convergence)"}
    summary = part3_pipeline.summarise([out, out])
    assert summary["Model-w-O"] == pytest.approx((out["rows"]["Model-w-O"], 0.0))


def test_table1_settings_follow_the_paper():
    s = part3_table1.PAPER_SETTINGS
    assert s["Medical"].lr == 2e-6 and s["Income-L"].lr == 5e-7 and s["Income-A"].lr == 1e-6
    assert all(v.rounds == 100 and v.batch_size == 32 and v.epochs == 1 and v.active_rounds == (10, 50)
               and v.adam_trials == 50 and v.hidden == 128 and v.heterogeneity == 0.4 for v in s.values())
    with pytest.raises(ValueError, match="unknown task"):
        part3_table1.settings("Income-X")


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_fig1_point(task):
    df = synthetic_census(400, states=None, seed=0)
    tab = encode_census(df, classification_threshold=39_000 if task == "classification" else None)
    s = replace(part3_fig1.QUICK, sizes=(16,), rounds=3, active_rounds=2, grad_learning_rates=(1e3,),
                grad_iterations=3, model_wo_steps=10, hidden=8)
    res = part3_fig1.run_point(tab, "SEX", task, 16, s, seed=0)
    assert set(res) == {"Grad (passive)", "Grad (active)", "model-based, global model",
                        "model-based, optimal local model"}
    assert all(0 <= v <= 100 for v in res.values())
