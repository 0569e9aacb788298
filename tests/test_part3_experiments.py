"""Smoke tests of Part III's experiment pipelines (Table 1, Fig. 1) on tiny synthetic data."""

from __future__ import annotations

from dataclasses import replace

import pytest

from flprivacy.data.census import encode_census, income_l_task, synthetic_census
from flbook.experiments import part3_fig1, part3_pipeline, part3_table1


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


def test_spearman_matches_pandas_with_ties():
    import pandas as pd

    from flbook.experiments import part3_fig4

    x, y = [3, 1, 4, 1, 5, 9, 2, 6], [2.0, 7.0, 1.0, 8.0, 2.0, 8.0, 1.0, 8.0]
    assert part3_fig4.spearman(x, y) == pytest.approx(pd.Series(x).corr(pd.Series(y), method="spearman"), abs=1e-12)


def test_fig4_keeps_every_clients_accuracy_and_its_trend():
    from flbook.experiments import part3_fig4

    task = income_l_task(0.4, n_synthetic=800, seed=0)
    s = replace(part3_table1.QUICK_SETTINGS["Income-L"], rounds=4, active_rounds=(3,), adam_trials=2, adam_batch=2,
                grad_learning_rates=(1e3,), grad_iterations=3, model_wo_steps=20, hidden=16)
    out = part3_pipeline.run_pipeline(task, s, seed=0)
    pc = out["details"]["per_client"]
    assert pc["sizes"] == task.sizes
    for row in ("passive/Ours", "active-3/Ours", "Model-w-O"):  # the row is the size-weighted mean of the clients
        assert out["rows"][row] == pytest.approx(sum(a * n for a, n in zip(pc[row], pc["sizes"])) / sum(pc["sizes"]))
    g = out["details"]["passive/grad_choice"]["Grad"]["per_client"]
    assert out["rows"]["passive/Grad"] == pytest.approx(sum(a * n for a, n in zip(g, pc["sizes"])) / sum(pc["sizes"]))
    lean = part3_pipeline.run_pipeline(task, s, seed=0, grad=False)
    assert not any("Grad" in r for r in lean["rows"])
    assert all(lean["rows"][r] == out["rows"][r] for r in lean["rows"])  # the same run, Grad left out
    tr = part3_fig4.trend([{"per_client": pc}, {"per_client": pc}])
    m = len(pc["sizes"])
    assert tr["level"] == pytest.approx(-3 / (2 * (m - 1)) ** 0.5)
    assert tr["Model-w-O"]["mean_rho"] == pytest.approx(part3_fig4.spearman(pc["sizes"], pc["Model-w-O"]))


def test_fig4_ledger_row_needs_a_negative_rho_beyond_the_no_relation_level():
    from flbook.ledger.diana_aia import fig4_row

    def rec(rho):
        return {"name": "part3_fig4_synthetic", "scale": "paper", "data": {"trend": {
            "level": -0.25, "clients": 51, "seeds": 3, "active-50/Ours": {"rho": [rho] * 3, "mean_rho": rho},
            "Model-w-O": {"rho": [-0.9] * 3, "mean_rho": -0.9}}}}

    assert fig4_row(rec(-0.3), "part3/sensitivity", "synthetic stand-in").status == "reproduced"
    assert fig4_row(rec(-0.2), "part3/sensitivity", "synthetic stand-in").status == "not reproduced"  # within the noise
    assert fig4_row(rec(0.3), "part3/sensitivity", "synthetic stand-in").status == "not reproduced"
    assert fig4_row(None, "part3/sensitivity", "synthetic stand-in").status == "not run"


def test_fig4_grad_is_fig4_with_grad_seed_by_seed_and_resumes(tmp_path, monkeypatch):
    """part3_fig4_grad's record is part3_fig4.run(grad=True)'s, seed by seed from point files; a second
    call reads the points and computes nothing."""
    from flbook.experiments import part3_fig4, part3_fig4_grad
    from flbook.experiments import points as P

    tiny = replace(part3_table1.QUICK_SETTINGS["Income-L"], task="Income-A", n_synthetic=800, rounds=4,
                   active_rounds=(3,), adam_trials=2, adam_batch=2, grad_learning_rates=(1e3,), grad_iterations=3,
                   model_wo_steps=20, hidden=16)
    monkeypatch.setattr(part3_fig4, "fig4_settings", lambda: tiny)
    monkeypatch.setattr(part3_fig4_grad, "fig4_settings", lambda: tiny)
    monkeypatch.setattr(P, "points_dir", lambda result, scale_=None: tmp_path / result)
    out = part3_fig4_grad.run_points_of([0])
    whole = part3_fig4.run([0], grad=True, log=lambda _: None)
    assert [p["per_client"] for p in out["per_seed"]] == [p["per_client"] for p in whole["per_seed"]]
    assert {"passive/Grad", "active-3/Grad-w-O", "active-3/Ours"} <= set(out["trend"])
    assert out["trend"] == whole["trend"] and out["points_record"]["points"] == 1
    monkeypatch.setattr(part3_fig4, "run", lambda *a, **k: pytest.fail("a finished seed ran again"))
    assert part3_fig4_grad.run_points_of([0])["trend"] == out["trend"]


def test_fig4_large_attacks_the_large_clients_as_the_pipeline_and_bounds_grad(tmp_path, monkeypatch):
    """part3_fig4_large runs the gradient-based AIA on the large clients exactly as the whole
    pipeline does (same accuracies at every configuration, passive then active), point by point;
    its passive Ours is the pipeline's; the Grad accuracy the all-client rule gives each large
    client lies in her [lo, hi]; a second call reads the points and computes nothing."""
    from flbook.experiments import part3_fig4, part3_fig4_large as L
    from flbook.experiments import points as P
    from flbook.experiments.part3_pipeline import gradient_aia_all

    tiny = replace(part3_table1.QUICK_SETTINGS["Income-L"], task="Income-A", n_synthetic=800, rounds=4,
                   active_rounds=(3,), adam_trials=2, adam_batch=2, grad_learning_rates=(1e3, 1e5),
                   grad_iterations=3, model_wo_steps=20, hidden=16)
    monkeypatch.setattr(part3_fig4, "fig4_settings", lambda: tiny)
    monkeypatch.setattr(L, "large_settings", lambda: tiny)
    monkeypatch.setattr(P, "points_dir", lambda result, scale_=None: tmp_path / result)
    whole = part3_fig4.run([0], grad=True, log=lambda _: None)["per_seed"][0]["per_client"]
    sizes = whole["sizes"]
    monkeypatch.setattr(L, "min_rows", lambda: sorted(sizes)[-3])  # the two largest clients
    big = [c for c, n in enumerate(sizes) if n > sorted(sizes)[-3]]
    keys = [f"seed=0_client={c}_{ph}" for c in big for ph in L.PHASES]
    assert L.run_only([0], keys[1:2]) == keys[:1] + keys[2:]  # --only: one point run, three missing
    with pytest.raises(ValueError, match="unknown point"):
        L.run_only([0], ["seed=0_client=999_active"])
    out = L.run_points_of([0])  # the three others
    p = out["per_seed"][0]
    assert [c["client"] for c in p["large"]] == big and len(big) == 2 and out["points_record"]["points"] == 4
    assert p["passive_ours"] == whole["passive/Ours"] and p["sizes"] == sizes
    task, model, run = L._federation(0, "synthetic", tiny)
    merged, _ = gradient_aia_all(model, run.log, task.clients, task.attribute, tiny.rounds,
                                 sorted(L.first_rounds_sets(list(range(tiny.rounds, tiny.rounds + 3))), key=len), 0,
                                 learning_rates=tiny.grad_learning_rates, iterations=tiny.grad_iterations,
                                 patience=tiny.grad_patience, tolerance=tiny.grad_tolerance,
                                 relaxation=tiny.grad_relaxation, sampler=tiny.grad_sampler)
    for c in p["large"]:
        t = task.attribute.true_index(task.clients[c["client"]].X)
        assert c["accuracy"] == (100 * merged[c["client"]].accuracy(t)).tolist()  # same configurations, same numbers
        acc = [a for row in c["accuracy"] for a in row]
        assert c["lo"] == min(acc) and c["hi"] == max(acc)
        assert c["lo"] <= whole["active-3/Grad"][c["client"]] <= c["hi"]
        assert c["lo"] <= whole["active-3/Grad-w-O"][c["client"]] <= c["hi"]
    # Grad's rule among the large clients is grad_rows on their merged results
    from flbook.experiments.part3_pipeline import grad_rows
    truths = [task.attribute.true_index(task.clients[c].X) for c in big]
    g, _, choice = grad_rows([merged[c] for c in big], truths, [sizes[c] for c in big],
                             list(range(len(merged[big[0]].round_sets))))
    assert p["grad_among_large"]["Grad"] == g
    assert [c["grad_rule_among_large"] for c in p["large"]] == choice["Grad"]["per_client"]
    assert out["summary"]["clients"] == 2
    monkeypatch.setattr(L, "phase_grad", lambda *a, **k: pytest.fail("a finished point ran again"))
    assert L.run_points_of([0])["summary"] == out["summary"]


def test_fig4_method_rows_decide_grad_and_model_wo_and_the_large_clients():
    from flbook.ledger.diana_aia import fig4_method_rows

    def rec(rho, sizes=(100, 30_000), grad_acc=(70.0, 52.0)):
        trend = {"level": -0.25, "clients": 51, "seeds": 1, "Model-w-O": {"rho": [rho], "mean_rho": rho},
                 "active-50/Grad": {"rho": [rho], "mean_rho": rho}}
        return {"name": "x", "scale": "paper", "data": {"trend": trend, "per_seed": [
            {"per_client": {"sizes": list(sizes), "active-50/Grad": list(grad_acc)}}]}}

    def statuses(r, g):
        return [x.status for x in fig4_method_rows(r, g, "part3/sensitivity", "synthetic stand-in")]

    assert statuses(rec(-0.3), rec(-0.3)) == ["reproduced", "reproduced", "reproduced"]  # 52% over 20,000 rows
    assert statuses(rec(-0.2), rec(0.3, grad_acc=(70.0, 60.0))) == ["not reproduced"] * 3
    assert statuses(rec(-0.3), rec(-0.3, sizes=(100, 20_000))) == ["reproduced", "reproduced", "not run"]  # none over
    assert statuses(None, None) == ["not run"] * 3

    def large(lo, hi, rule):  # part3_fig4_large's record: Grad between lo and hi over configurations
        return {"name": "y", "scale": "paper", "data": {"seeds": [0, 1], "settings": {"n_synthetic": 1_664_500},
                "summary": {"clients": 4, "lo": lo, "hi": hi, "grad_rule_among_large": rule, "largest": 35_000}}}

    def last(L):  # the large-client row decided from part3_fig4_large, whatever the 200,000-person file says
        return fig4_method_rows(rec(-0.3), rec(-0.3, sizes=(100, 200)), "part3/sensitivity", "synthetic stand-in",
                                large_rec=L)[-1]

    assert last(large(50.0, 55.0, 52.0)).status == "reproduced"  # every configuration within 5 of 50%
    assert last(large(55.1, 60.0, 58.0)).status == "not reproduced"  # even the weakest is above
    assert last(large(50.0, 60.0, 54.0)).status == "partly"  # the rule among the large clients: within
    assert last(large(50.0, 60.0, 56.0)).status == "not reproduced"
    assert "50.0-60.0%" in last(large(50.0, 60.0, 56.0)).ours and "1,664,500" in last(large(50.0, 60.0, 56.0)).ours
