"""Federated DP-SGD through Opacus (Diana et al. App. C.4) and the least-squares pieces of
Table 2 (App. C.1): fast checks against independent references."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

pytest.importorskip("opacus")

from opacus.accountants import RDPAccountant  # noqa: E402
from opacus.accountants.utils import get_noise_multiplier  # noqa: E402

from flprivacy import ClientData, LocalSGD, linear_regression, mlp, run_fedavg  # noqa: E402
from flprivacy.data.census import COW_GROUPS, encode_census_reduced, medical_task  # noqa: E402
from flprivacy.defences import PAPER_CLIP_GRID, DPLocalSGD  # noqa: E402
from flbook.experiments import part3_table2, part3_table3  # noqa: E402
from flbook.ledger.diana_aia import PAPER_TABLE2, PAPER_TABLE3  # noqa: E402


def _clients(n=(48, 40), p=3, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    w = torch.tensor([1.0, -2.0, 3.0][:p], dtype=dtype)
    out = []
    for k in n:
        X = torch.randn(k, p, generator=g, dtype=dtype)
        out.append(ClientData(X, X @ w + 0.1 * torch.randn(k, generator=g, dtype=dtype)))
    return out


def test_noise_multiplier_is_opacus_choice_for_the_whole_training():
    """σ = Opacus's get_noise_multiplier for T_total·E·⌈S_c/B⌉ steps at q = 1/⌈S_c/B⌉."""
    clients = _clients()
    dp = DPLocalSGD(lr=0.05, max_grad_norm=1.0, target_epsilon=1.0, target_delta=1e-5, total_rounds=6, epochs=2,
                    batch_size=8)
    run_fedavg(mlp(3, 4), clients, rounds=1, local=dp, seed=0)
    for c in clients:
        batches = math.ceil(c.n / 8)
        ref = get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=1 / batches,
                                   steps=6 * 2 * batches, accountant="rdp", epsilon_tolerance=0.01)
        assert dp.noise_multiplier(c) == pytest.approx(ref, rel=1e-9)


def test_accountant_covers_every_round_and_meets_the_budget():
    """After all planned rounds Opacus's ε is within its search tolerance (0.01) below the target;
    it equals an RDP accountant fed the whole history directly; halfway it is strictly lower."""
    clients = _clients()
    T = 4
    dp = DPLocalSGD(lr=0.05, max_grad_norm=1.0, target_epsilon=1.0, target_delta=1e-5, total_rounds=T, batch_size=8)
    model = mlp(3, 4)
    run_fedavg(model, clients, rounds=T // 2, local=dp, seed=0)
    half = dp.epsilons(clients)
    run_fedavg(model, clients, rounds=T // 2, local=dp, seed=1)
    full = dp.epsilons(clients)
    for c, e_half, e in zip(clients, half, full):
        assert 1.0 - 0.01 - 1e-9 <= e <= 1.0
        assert e_half < e
        ref = RDPAccountant()
        ref.history = [(dp.noise_multiplier(c), 1 / math.ceil(c.n / 8), T * math.ceil(c.n / 8))]
        assert e == pytest.approx(ref.get_epsilon(1e-5), rel=1e-9)


def test_unseen_client_has_no_epsilon():
    dp = DPLocalSGD(lr=0.05, max_grad_norm=1.0, target_epsilon=1.0, target_delta=1e-5, total_rounds=2)
    assert math.isnan(dp.epsilons(_clients(n=(5,)))[0])


def test_per_sample_gradients_are_clipped():
    """With a tiny C the whole local update is bounded by the clipped sum plus the noise:
    ‖Δ‖ ≤ η Σ_steps (C·|b|/B + σC‖z‖/B), far below the plain SGD update."""
    c = _clients(n=(64,), dtype=torch.float64)[0]
    model = linear_regression(3)
    theta = torch.zeros(4, dtype=torch.float64)
    C, lr, B = 1e-6, 0.05, 8
    dp = DPLocalSGD(lr=lr, max_grad_norm=C, target_epsilon=1e3, target_delta=1e-5, total_rounds=1, batch_size=B)
    out = dp(model, theta, c, torch.Generator().manual_seed(0))
    steps = math.ceil(c.n / B)
    sigma = dp.noise_multiplier(c)
    # |b| <= n and ‖z‖ <= 10·sqrt(d) (a chi-square with d = 4 exceeds 100 d with probability < 1e-40)
    bound = lr * steps * (C * c.n / B + sigma * C * 10 * math.sqrt(4) / B)
    assert float((out - theta).norm()) <= bound
    plain = LocalSGD(lr=lr, batch_size=B)(model, theta, c, torch.Generator().manual_seed(0))
    assert float((plain - theta).norm()) > 1e3 * bound


def test_noise_is_added():
    """With a large C (no clipping) and ε = 1 the DP update differs from any noise-free one:
    two runs with different noise streams disagree."""
    c = _clients(n=(32,), dtype=torch.float64)[0]
    model = linear_regression(3)
    theta = torch.zeros(4, dtype=torch.float64)
    outs = []
    for s in (0, 1):
        dp = DPLocalSGD(lr=0.01, max_grad_norm=1e6, target_epsilon=1.0, target_delta=1e-5, total_rounds=1, batch_size=8)
        outs.append(dp(model, theta, c, torch.Generator().manual_seed(s)))
    sigma = dp.noise_multiplier(c)
    assert sigma > 1
    # one step alone adds η·σC/B·z, ‖·‖ of order 1e6·0.01·σ/8 >> any signal here
    assert float((outs[0] - outs[1]).norm()) > 1e2


@pytest.mark.parametrize("kw", [dict(lr=0.0), dict(max_grad_norm=-1.0), dict(target_epsilon=0.0),
                                dict(target_delta=1.0), dict(target_delta=0.0), dict(total_rounds=0),
                                dict(epochs=0), dict(batch_size=0), dict(accountant="moments")])
def test_bad_settings_raise(kw):
    base = dict(lr=0.1, max_grad_norm=1.0, target_epsilon=1.0, target_delta=1e-5, total_rounds=2)
    with pytest.raises(ValueError):
        DPLocalSGD(**(base | kw))


def test_paper_grid_and_targets():
    assert PAPER_CLIP_GRID["Medical"] == (5e5, 7e5, 9e5, 1e6, 3e6, 5e6, 7e6, 9e6)
    assert PAPER_CLIP_GRID["Income-L"] == PAPER_CLIP_GRID["Income-A"] == (1e6, 3e6, 5e6, 7e6, 9e6, 1e7, 3e7, 5e7)
    assert part3_table3.TARGET_DELTA == {"Medical": 1e-5, "Income-L": 1e-5, "Income-A": 1e-6}
    s = part3_table3.settings("Medical")
    dp = part3_table3.dp_trainer("Income-A", s, 1e6)
    assert dp.total_rounds == s.rounds + max(s.active_rounds) and dp.target_delta == 1e-6


# ---- Table 2: reduced features, reference coding, Alg. 3 -------------------------------------------
def test_reduced_census_features():
    df = pd.DataFrame({"AGEP": [30, 40, 50, 60], "COW": [1, 3, 6, 5], "SCHL": [16, 18, 20, 21], "MAR": [1, 5, 1, 3],
                       "OCCP": [10, 10, 10, 10], "RELP": [0, 1, 2, 0], "WKHP": [40, 30, 20, 50], "SEX": [1, 2, 2, 1],
                       "RAC1P": [1, 2, 1, 9], "PINCP": [1e4, 2e4, 3e4, 4e4]})
    tab = encode_census_reduced(df)
    names = tab.feature_names
    assert not any(n.startswith(("OCCP", "RELP", "POBP")) for n in names)
    assert sorted(n for n in names if n.startswith("COW")) == ["COW=other", "COW=private", "COW=public"]
    col = {n: tab.X[:, i].tolist() for i, n in enumerate(names)}
    assert col["RAC1P=1"] == [1, 0, 1, 0] and col["MAR=1"] == [1, 0, 1, 0] and col["SEX=2"] == [0, 1, 1, 0]
    assert col["COW=private"] == [1, 0, 0, 0] and col["COW=public"] == [0, 1, 0, 1] and col["COW=other"] == [0, 0, 1, 0]
    assert set(COW_GROUPS.values()) == {"private", "public", "other"}
    assert tab.y.tolist() == [1e4, 2e4, 3e4, 4e4]
    with pytest.raises(ValueError, match="lacks columns"):
        encode_census_reduced(df.drop(columns=["COW"]))


def test_reference_coding_keeps_the_attribute_and_full_rank():
    s = part3_table2.QUICK_TABLE2_SETTINGS["Medical"]
    ft = part3_table2.make_ls_task("Medical", "medical", 0, s)
    full = medical_task(seed=0)
    assert ft.n_features == full.n_features - 1 and "region=northeast" not in ft.feature_names
    assert ft.feature_names[ft.sensitive_columns[0]] == "smoker=yes"
    for c, c_full in zip(ft.clients, full.clients):
        assert torch.equal(ft.attribute.true_index(c.X), full.attribute.true_index(c_full.X))
        A = torch.cat([c.X.double(), torch.ones(c.n, 1, dtype=torch.float64)], 1)
        assert int(torch.linalg.matrix_rank(A)) == ft.n_features + 1
    with pytest.raises(ValueError, match="sensitive"):
        part3_table2.drop_feature(full, "smoker=yes")
    with pytest.raises(ValueError, match="not a feature"):
        part3_table2.drop_feature(full, "height")
    L = part3_table2.make_ls_task("Income-L", "synthetic", 0, part3_table2.QUICK_TABLE2_SETTINGS["Income-L"])
    assert L.feature_names[L.sensitive_columns[0]] == "SEX=2" and "COW=other" not in L.feature_names


def test_alg3_estimate_recovers_the_local_optimum_under_full_batch_gd():
    """Prop. 2: with full-batch gradient descent the local update is affine, so Alg. 3 on d + 1
    messages returns the client's least-squares optimum to rounding (cond·ε)."""
    clients = _clients(n=(30, 25), dtype=torch.float64)
    model = linear_regression(3)
    run = run_fedavg(model, clients, rounds=12, local=LocalSGD(lr=0.05, epochs=2), seed=0)
    for c, data in enumerate(clients):
        est = part3_table2.alg3_estimate(run.log, c, 12)
        A = torch.cat([data.X, torch.ones(data.n, 1, dtype=torch.float64)], 1)
        opt = torch.linalg.lstsq(A, data.y.unsqueeze(1)).solution.squeeze(1)
        assert torch.allclose(est, opt, atol=1e-6 * float(opt.norm()))


def test_table2_settings_are_the_papers():
    s = part3_table2.PAPER_TABLE2_SETTINGS["Medical"]
    assert (s.lr, s.rounds, s.epochs, s.batch_size, s.active_rounds) == (5e-3, 300, 1, 32, (10, 50))
    assert part3_table2.PAPER_TABLE2_SETTINGS["Income-L"].heterogeneity == 0.0  # i.i.d. (App. C.1)
    assert PAPER_TABLE2["Medical"]["passive/Ours"][0] == 94.13
    assert PAPER_TABLE3["Medical"]["passive/Grad"][0] == 63.51


# ---- the sweeps of Fig. 3 (App. B.5) and the pipelines end to end on a tiny budget -----------------
def test_fig3_settings_follow_the_paper():
    from dataclasses import replace

    from flbook.experiments import part3_fig3

    b = part3_fig3.PAPER_BASE
    assert part3_fig3.settings_for("batch_size", 1024, b).lr == 3e-6
    assert part3_fig3.settings_for("batch_size", 128, b).lr == 1e-6
    assert part3_fig3.settings_for("batch_size", 64, b).lr == 5e-7
    e3 = part3_fig3.settings_for("epochs", 3, b)
    assert (e3.epochs, e3.rounds, e3.active_rounds) == (3, 34, (17,))  # T = ⌈100/E⌉, ⌈50/E⌉ active
    assert part3_fig3.settings_for("heterogeneity", 0.1, b).heterogeneity == 0.1
    assert part3_fig3.settings_for("start_round", 60, b).rounds == 60
    q = part3_fig3.settings_for("batch_size", 256, replace(b, lr=4 * b.lr))
    assert q.lr == pytest.approx(4 * 2e-6)
    with pytest.raises(ValueError, match="unknown factor"):
        part3_fig3.settings_for("momentum", 0.9, b)


def test_fig3_sweeps_group_the_runs_by_factor_value_and_seed(monkeypatch):
    """One pool for several factors: each (factor, value, seed) result lands in its own point."""
    from flbook.experiments import part3_fig3

    def fake(factor, value, seed, source, threads=0):
        return {"rows": {"Model-w-O": 100.0 * (factor == "epochs") + float(value) + seed / 10}, "seconds": 1.0}

    monkeypatch.setattr(part3_fig3, "_point_seed", fake)
    outs = list(part3_fig3.sweeps(["heterogeneity", "epochs"], [0, 2], log=None))
    assert [o["factor"] for o in outs] == ["heterogeneity", "epochs"]
    for out in outs:
        for pt in out["points"]:
            base = 100.0 * (out["factor"] == "epochs") + float(pt["value"])
            assert [r["rows"]["Model-w-O"] for r in pt["per_seed"]] == [base, base + 0.2]
            assert pt["summary"]["Model-w-O"][0] == pytest.approx(base + 0.1) and pt["seconds"] == 2.0
    with pytest.raises(ValueError, match="jobs"):
        part3_fig3.sweep("epochs", [0], jobs=0)
    with pytest.raises(ValueError, match="one factor"):
        next(part3_fig3.sweeps(["epochs", "heterogeneity"], [0], vals=(1,)))


def test_tables_share_one_per_seed_loop_recording_runtime_and_data():
    from types import SimpleNamespace

    from flbook.experiments import part3_pipeline, part3_table1

    made = []

    def make(seed):
        made.append(seed)
        return SimpleNamespace(source="demo", clients=[1, 2], sizes=[3, 4], feature_names=["a"])

    per_seed = part3_pipeline.over_seeds([5, 7], make, lambda ft, seed: {"rows": {"r": float(seed)}},
                                         data=lambda ft: {"features": ft.feature_names}, log=lambda m: None)
    assert made == [5, 7] and [r["rows"]["r"] for r in per_seed] == [5.0, 7.0]
    for r in per_seed:
        assert r["seconds"] >= 0 and r["data"]["sizes"] == [3, 4] and r["data"]["features"] == ["a"]
    rec = part3_pipeline.table_record("Medical", part3_table1.PAPER_SETTINGS["Medical"], [5, 7], per_seed, {}, 0.0)
    assert rec["summary"]["r"][0] == 6.0 and rec["source"] == "demo" and rec["seeds"] == [5, 7]


def _tiny(s):
    from dataclasses import replace

    return replace(s, rounds=12, active_rounds=(2,), adam_trials=2, adam_batch=2, grad_learning_rates=(1e3,),
                   grad_iterations=2, grad_patience=None, model_wo_steps=10, seeds=(0,))


def test_table2_pipeline_uses_alg3_for_the_passive_row():
    from flprivacy.attacks.model_based_aia import candidate_losses

    s = _tiny(part3_table2.QUICK_TABLE2_SETTINGS["Medical"])
    task = part3_table2.make_ls_task("Medical", "medical", 0, s)
    out = part3_table2.run_table2(task, s, 0, log=None)
    model = linear_regression(task.n_features)
    run = run_fedavg(model, task.clients, rounds=s.rounds + 2, seed=0,
                     local=LocalSGD(lr=s.lr, epochs=s.epochs, batch_size=s.batch_size))
    correct = 0
    for c, data in enumerate(task.clients):
        th = part3_table2.alg3_estimate(run.log, c, s.rounds)
        pred = candidate_losses(model, th, data.X, data.y, task.attribute).argmin(0)
        correct += int((pred == task.attribute.true_index(data.X)).sum())
    assert out["rows"]["passive/Ours"] == pytest.approx(100 * correct / sum(task.sizes))


def test_table3_pipeline_reports_opacus_epsilon_within_budget():
    s = _tiny(part3_table3.settings("Medical"))
    task = medical_task(seed=0)
    out = part3_table3.run_table3(task, s, 0, 1e6, log=None)
    after = out["details"]["after_training"]
    assert len(after["epsilon"]) == len(task.clients)
    assert all(1.0 - 0.01 - 1e-9 <= e <= 1.0 for e in after["epsilon"])  # all T + A rounds planned and spent
    assert after["max_grad_norm"] == 1e6 and after["target_delta"] == 1e-5
