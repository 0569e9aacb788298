"""Xu & Neglia Table 1 on LEAF (Part II): the local-update readings, the ceiling, eq. (7) re-run on
fitted maps (decode curve, span restriction) and the diagnostics' summary."""

from __future__ import annotations

import pytest
import torch

from flprivacy import ClientData, LocalSGD, eavesdrop, logistic_regression, run_fedavg
from flprivacy.attacks.learned_mapping import decode_mapping, follow_mapping, learned_mapping_reconstruction_batch, update_span
from flbook.experiments import part2_leaf_diagnostics as diag
from flbook.experiments.part2_leaf import attack_seed, local_rule, rows_of

SMALL = {"local_unit": "steps", "rounds": 6, "local_steps": (1, 2),
         "mapping": {"hidden": 16, "fit_steps": 30, "decode_steps": 25}}


@pytest.fixture(scope="module")
def small():
    return attack_seed(3, overrides=SMALL)


def test_local_rule_steps_and_epochs():
    s = {"lr": 0.01, "batch_size": 256}
    # Algo. 2: E epochs of ⌈S_c/B⌉ steps; 1536 samples, B = 256: 6 steps per epoch
    assert local_rule(2, {**s, "local_unit": "epochs"}).n_steps(1536) == 12
    assert local_rule(2, {**s, "local_unit": "epochs"}).n_steps(184) == 2
    assert local_rule(2, {**s, "local_unit": "steps"}).n_steps(1536) == 2
    assert local_rule(3, s).n_steps(280) == 3  # without a local_unit: SGD steps
    with pytest.raises(ValueError, match="local_unit"):
        local_rule(1, {**s, "local_unit": "rounds"})


def test_attack_seed_overrides(small):
    assert small.settings["rounds"] == 6 and small.settings["mapping"]["hidden"] == 16
    assert small.settings["mapping"]["fit_lr"] == 1e-3  # merged, not replaced
    assert len(small.results) == len(small.keys) == 2 * 5
    assert all(len(M) == 6 for M in small.messages)
    with pytest.raises(ValueError, match="unknown setting"):
        attack_seed(0, overrides={"round": 3})


def test_data_seed_fixes_the_draw():
    a = attack_seed(1, data_seed=7, overrides={**SMALL, "local_steps": (1,)})
    b = attack_seed(2, data_seed=7, overrides={**SMALL, "local_steps": (1,)})
    assert all(torch.equal(x.X, y.X) and torch.equal(x.y, y.y) for x, y in zip(a.fed.clients, b.fed.clients))
    assert not torch.equal(a.messages[0].returned, b.messages[0].returned)  # training seeds differ


def test_rows_and_ceiling(small):
    rows = rows_of(small, 3)
    assert len(rows) == 10
    for r, (steps, c) in zip(rows, small.keys):
        data = small.fed.clients[c]
        assert (r["local_steps"], r["client"]) == (steps, c)
        assert r["acc_local_optimum"] == small.model.accuracy(small.optima[c], data.X, data.y)
    # the true local optimum: the regularised loss's gradient vanishes (L-BFGS, 200 iterations)
    th = small.optima[0].clone().requires_grad_(True)
    d0 = small.fed.clients[0]
    loss = small.model.loss(th, d0.X, d0.y) + 1e-4 * th.pow(2).sum()
    (g,) = torch.autograd.grad(loss, th)
    assert g.norm() < 1e-3
    assert small.model.loss(small.optima[0], d0.X, d0.y) < small.model.loss(small.messages[0].returned[-1], d0.X, d0.y)


def test_decode_mapping_replays_eq7(small):
    steps = small.settings["mapping"]["decode_steps"]
    out = decode_mapping(small.results, steps=steps, lr=small.settings["mapping"]["decode_lr"], checkpoints=(0, 5))
    theta = torch.stack([r.theta for r in small.results])
    assert torch.allclose(out[steps], theta, atol=1e-6)  # the same Adam iterates as the attack's eq. (7)
    assert torch.equal(out[0], torch.stack([r.theta_init for r in small.results]))
    assert set(out) == {0, 5, steps}
    assert torch.equal(out[5], decode_mapping(small.results, steps=5, lr=small.settings["mapping"]["decode_lr"])[5])

    with pytest.raises(ValueError, match="all the entries"):
        decode_mapping(small.results[1:], steps=1)
    with pytest.raises(ValueError, match="basis"):
        decode_mapping(small.results, steps=1, basis=torch.zeros(2, 3, 1))


def test_follow_mapping_is_the_fixed_point_iteration_of_G(small):
    """θ ← θ - α G(θ): at α = 1 one step is the local update as G learned it."""
    start = torch.stack([r.theta_init for r in small.results])
    out = follow_mapping(small.results, steps=3, alpha=0.5, checkpoints=(0, 1))
    assert set(out) == {0, 1, 3} and torch.equal(out[0], start)
    one = torch.stack([r.theta_init - 0.5 * r.predict(r.theta_init) for r in small.results])
    assert torch.allclose(out[1], one, atol=1e-6)
    th = out[1]
    for _ in range(2):
        th = torch.stack([t - 0.5 * r.predict(t) for t, r in zip(th, small.results)])
    assert torch.allclose(out[3], th, atol=1e-5)
    # an affine map fitted exactly to a contraction θ_c = θ - 0.1 (θ - 1): following it (α = 1) converges to 1
    g = torch.Generator().manual_seed(2)
    sent = torch.randn(30, 3, generator=g, dtype=torch.float64)
    res = learned_mapping_reconstruction_batch([(sent, sent - 0.1 * (sent - 1.0))], hidden=0, fit_steps=3000,
                                               fit_lr=1e-2, decode_steps=1)
    assert torch.allclose(follow_mapping(res, steps=300)[300], torch.ones(1, 3), atol=1e-3)
    with pytest.raises(ValueError, match="alpha"):
        follow_mapping(small.results, steps=1, alpha=0.0)
    with pytest.raises(ValueError, match="steps"):
        follow_mapping(small.results, steps=-1)
    with pytest.raises(ValueError, match="all the entries"):
        follow_mapping(small.results[1:], steps=1)


def test_one_logit_model_and_g_initialisation():
    kw = {"overrides": {**SMALL, "local_steps": (1,)}}
    one = attack_seed(4, one_logit=True, **kw)
    assert one.model.dim == 11 and one.model.loss_name == "bce" and one.messages[0].sent.shape[1] == 11
    two = attack_seed(4, **kw)
    assert two.model.dim == 22 and two.model.loss_name == "cross_entropy"
    same = attack_seed(4, mapping_seed=4, **kw)  # the default seeds G with the training seed
    assert torch.equal(same.results[0].theta, two.results[0].theta)
    other = attack_seed(4, mapping_seed=1004, **kw)
    assert torch.equal(other.messages[0].returned, two.messages[0].returned)  # same training,
    assert not torch.equal(other.results[0].mapping.W1, two.results[0].mapping.W1)  # another G


def test_decode_mapping_normalised_units():
    g = torch.Generator().manual_seed(1)
    sent = 3.0 + 2.0 * torch.randn(2, 12, 4, generator=g)
    ret = sent - 0.1 * (sent - 1.0)
    res = learned_mapping_reconstruction_batch([(sent[0], ret[0]), (sent[1], ret[1])], hidden=8, fit_steps=20,
                                               decode_steps=15, normalize_inputs=True)
    out = decode_mapping(res, steps=15)[15]
    assert torch.allclose(out, torch.stack([r.theta for r in res]), atol=1e-6)


def test_update_span_and_restricted_decode(small):
    basis = update_span(small.messages, 1e-2)
    b, d, k = basis.shape
    assert (b, d) == (10, small.model.dim) and 1 <= k <= d
    for i, M in enumerate(small.messages):
        U = basis[i][:, basis[i].abs().sum(0) > 0].double()
        assert torch.allclose(U.T @ U, torch.eye(U.shape[1], dtype=torch.float64), atol=1e-5)
        Y = (M.sent - M.returned).double()
        resid = Y - Y @ U @ U.T  # the dropped directions carry less than rtol of the largest singular value
        assert torch.linalg.matrix_norm(resid, 2) <= 1e-2 * torch.linalg.matrix_norm(Y, 2) * (1 + 1e-4)
    out = decode_mapping(small.results, steps=20, basis=basis)[20]
    start = torch.stack([r.theta_init for r in small.results])
    for i in range(b):
        move = (out[i] - start[i]).double()
        U = basis[i].double()
        assert (move - U @ (U.T @ move)).norm() <= 1e-5 * (1 + move.norm())  # stays in the span
    # a rank-2 set of updates gives k = 2
    g = torch.Generator().manual_seed(0)
    V = torch.linalg.qr(torch.randn(6, 2, generator=g))[0]
    sent = torch.randn(9, 6, generator=g)
    ret = sent - torch.randn(9, 2, generator=g) @ V.T
    B2 = update_span([(sent, ret)], 1e-6)
    assert B2.shape == (1, 6, 2)
    with pytest.raises(ValueError, match="rtol"):
        update_span([(sent, ret)], -1.0)


def test_true_update_full_batch(small):
    # client 1 (184 samples < B = 256): one full-batch step is deterministic, θ - θ_c = η ∇L(θ)
    i = small.keys.index((1, 1))
    th = small.messages[i].sent[-1]
    d1 = small.fed.clients[1]
    t = th.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(small.model.loss(t, d1.X, d1.y), t)
    assert torch.allclose(diag.true_update(small, i, th, 0), small.settings["lr"] * grad, atol=1e-6)


def test_probes_and_summary(small):
    rows = diag.probes(small, 3, checkpoints=(0, 10))
    for r, res, M in zip(rows, small.results, small.messages):
        c = r["client"]
        data = small.fed.clients[c]
        assert r["acc_decode_0"] == small.model.accuracy(M.returned[-1], data.X, data.y)
        assert r["dist_last_to_optimum"] == pytest.approx(float((M.returned[-1] - small.optima[c]).norm()))
        assert set(k for k in r if k.startswith("G_error_")) == {f"G_error_{x}" for x in diag.LAMBDAS}
        assert set(k for k in r if k.startswith("acc_decode_")) == {"acc_decode_0", "acc_decode_10"}
        i_ = small.keys.index((r["local_steps"], c))
        for al in diag.FOLLOW["alphas"]:
            th_f = follow_mapping(small.results, steps=diag.FOLLOW["steps"], alpha=al)[diag.FOLLOW["steps"]][i_]
            assert r[f"acc_follow_{al}"] == small.model.accuracy(th_f, data.X, data.y)
        i = small.keys.index((r["local_steps"], c))
        last = M.returned[-1]
        scale = (M.sent - M.returned).pow(2).sum(1).mean().sqrt()
        for lam in (0.0, 1.0):
            th = last + lam * (small.optima[c] - last)
            want = (res.predict(th) - diag.true_update(small, i, th, 3)).norm() / scale
            assert r[f"G_error_{lam}"] == pytest.approx(float(want), rel=1e-5)
    recs = [{"variant": next(iter(diag.VARIANTS)), "seed": s, "local_steps": 1, "client": c, "acc_last_returned": 0.5,
             "acc_decoded": 0.6 + 0.1 * s, "acc_local_optimum": 1.0} for s in (0, 1) for c in (0, 1)]
    recs += [{**r, "variant": "T = 20 rounds", "acc_decoded": 0.4} for r in recs]
    out = diag.summary(recs)
    assert [o["variant"] for o in out] == [next(iter(diag.VARIANTS)), "T = 20 rounds"]
    assert out[0]["decoded"] == pytest.approx(65.0) and out[0]["gain"] == pytest.approx(15.0)
    assert out[1]["gain"] == pytest.approx(-10.0) and out[0]["local_optimum"] == 100.0 and out[0]["seeds"] == 2
    with pytest.raises(ValueError, match="unknown variant"):
        diag.run_variant("nope", [0])


def test_probes_record_a_diverged_follow_as_none(small, monkeypatch):
    monkeypatch.setitem(diag.FOLLOW, "alphas", (1.0, 1e6))  # a step this large overshoots until it overflows
    monkeypatch.setitem(diag.FOLLOW, "steps", 200)
    rows = diag.probes(small, 3, checkpoints=(0,))
    assert all(r["acc_follow_1000000.0"] is None and r["acc_follow_1.0"] is not None for r in rows)


def test_table1_variants_rule():
    from flbook.ledger.xu_neglia import _variants_sentence, table1_variants

    recs = []
    for v, dec in (("a", 0.75), ("b", 0.6)):
        for s in (1, 5, 10):
            for seed in (0, 1):
                for c in range(5):
                    recs.append({"variant": v, "seed": seed, "local_steps": s, "client": c,
                                 "acc_last_returned": 0.6, "acc_decoded": dec})
    out = table1_variants(recs)
    assert list(out) == ["a", "b"]
    assert out["a"]["gains"] == pytest.approx([15.0] * 3) and out["a"]["mean_gain"] == pytest.approx(15.0)
    assert out["a"]["verdict"].ok and not out["b"]["verdict"].ok and out["a"]["seeds"] == 2
    text = _variants_sentence({"data": {"seeds": 2, "records": recs}})
    assert "a +15.0" in text and "b +0.0" in text
    assert _variants_sentence(None) == ""


def test_follow_sentence():
    from flbook.ledger.xu_neglia import _follow_sentence

    recs = [{"variant": "a", "acc_last_returned": 0.5, "acc_decoded": 0.6, "acc_follow_0.3": 0.4, "acc_follow_1.0": 0.55},
            {"variant": "a", "acc_last_returned": 0.7, "acc_decoded": 0.7, "acc_follow_0.3": 0.7, "acc_follow_1.0": 0.65},
            {"variant": "b", "acc_last_returned": 0.1, "acc_decoded": 0.9}]  # not probed: left out
    text = _follow_sentence({"data": {"follow": {"steps": 10, "alphas": [0.3, 1.0]}, "records": recs}})
    assert "Adam gains +5.0 points" in text and "-5.0 at α = 0.3" in text and "+0.0 at α = 1" in text
    recs[1]["acc_follow_1.0"] = None  # diverged on that attack's run
    text = _follow_sentence({"data": {"follow": {"steps": 10, "alphas": [1.0]}, "records": recs}})
    assert "+5.0 (over 1 of 2 attacks; the others' runs diverged) at α = 1" in text
    assert _follow_sentence(None) == "" and _follow_sentence({"data": {"records": recs}}) == ""


def test_table1_numbers_ceiling():
    from flbook.ledger.xu_neglia import table1_claims, table1_numbers

    recs = [{"seed": seed, "local_steps": s, "client": c, "acc_last_returned": 0.8, "acc_decoded": 0.8,
             "acc_local_optimum": 0.99} for seed in (0, 1) for s in (1, 5, 10) for c in range(5)]
    t = table1_numbers(recs)
    assert t["ceiling"] == pytest.approx(99.0)
    gain = table1_claims(t)[1]["verdict"]
    assert not gain.ok and "99.0%" in gain.reason
    assert table1_numbers([{k: v for k, v in r.items() if k != "acc_local_optimum"} for r in recs])["ceiling"] is None


def test_screen_draws_matches_the_paper_rows():
    from flbook.ledger.xu_neglia import PAPER_TABLE1

    out = diag.screen_draws(candidates=3, local_steps=(1, 5))
    assert sorted(r["data_seed"] for r in out) == [0, 1, 2]
    assert [r["distance"] for r in out] == sorted(r["distance"] for r in out)  # closest first
    for r in out:
        assert set(r["acc_last_returned"]) == {"1", "5"}
        cells = [(a, p) for k in (1, 5) for a, p in zip(r["acc_last_returned"][str(k)], PAPER_TABLE1[k]["last returned"])]
        assert len(cells) == 10 and all(0 <= a <= 100 for a, _ in cells)
        assert r["distance"] == pytest.approx((sum((a - p) ** 2 for a, p in cells) / 10) ** 0.5)
    # the screen trains with the book's settings: data seed 0's client 3 at 5 epochs equals a direct run
    s = diag.SETTINGS["leaf_table1"]
    fed = diag.leaf_synthetic(s["sizes"], s["n_features"], s["n_classes"], s["n_clusters"], seed=0)
    model = diag.logistic_regression(s["n_features"], s["n_classes"])
    run = diag.run_fedavg(model, fed.clients, rounds=s["rounds"], weighting=s["weighting"],
                          seed=diag.SCREEN["training_seed"], local=local_rule(5, s))
    want = 100 * model.accuracy(diag.eavesdrop(run.log, 3).returned[-1], fed.clients[3].X, fed.clients[3].y)
    assert next(r for r in out if r["data_seed"] == 0)["acc_last_returned"]["5"][3] == pytest.approx(want)
    with pytest.raises(ValueError, match="local_steps"):
        diag.screen_draws(candidates=1, local_steps=(2,))
    with pytest.raises(ValueError, match="local_steps"):
        diag.screen_draws(candidates=1, local_steps=())


def test_run_draw_data_seeds(monkeypatch):
    seen = []

    def fake_attack(seed, labels, data_seed=None, overrides=None, one_logit=False, mapping_seed=None):
        seen.append((seed, data_seed))
        return seed

    monkeypatch.setattr(diag, "attack_seed", fake_attack)
    monkeypatch.setattr(diag, "rows_of", lambda a, seed: [{"seed": seed, "client": 0}])
    fresh, fixed, screened, second, third = list(diag.DRAWS)[:5]
    assert [r["data_seed"] for r in diag.run_draw(fresh, [3, 4])] == [3, 4]  # a fresh draw follows the seed
    assert [r["data_seed"] for r in diag.run_draw(fixed, [3, 4])] == [0, 0]
    assert [r["data_seed"] for r in diag.run_draw(screened, [3, 4], screened=[17, 5, 9])] == [17, 17]
    assert [r["data_seed"] for r in diag.run_draw(third, [3], screened=[17, 5, 9])] == [9]
    assert seen == [(3, None), (4, None), (3, 0), (4, 0), (3, 17), (4, 17), (3, 9)]
    with pytest.raises(ValueError, match="screened"):
        diag.run_draw(screened, [0])
    with pytest.raises(ValueError, match="screened"):
        diag.run_draw(second, [0], screened=[17])
    with pytest.raises(ValueError, match="unknown variant"):
        diag.run_draw("nope", [0])


def test_per_client_spread():
    fixed = list(diag.DRAWS)[1]
    recs = [{"variant": fixed, "seed": sd, "local_steps": 1, "client": c, "acc_last_returned": 0.5 + 0.1 * sd,
             "acc_decoded": 0.7, "acc_local_optimum": 1.0} for sd in (0, 1, 2) for c in (0, 1)]
    recs += [{**r, "variant": next(iter(diag.VARIANTS))} for r in recs if r["seed"] == 0]
    out = diag.per_client(recs)
    assert [(o["variant"], o["client"]) for o in out] == [(next(iter(diag.VARIANTS)), 0), (next(iter(diag.VARIANTS)), 1),
                                                          (fixed, 0), (fixed, 1)]
    assert out[2]["acc_last_returned"] == pytest.approx(60.0) and out[2]["sd_acc_last_returned"] == pytest.approx(10.0)
    assert out[2]["gain"] == pytest.approx(10.0) and out[2]["seeds"] == 3 and out[2]["sd_acc_decoded"] == 0.0
    assert out[0]["seeds"] == 1 and out[0]["sd_acc_last_returned"] == 0.0  # one seed: no spread
    assert [o["variant"] for o in diag.summary(recs)] == [next(iter(diag.VARIANTS)), fixed]  # draws kept


def test_draws_sentence():
    from flbook.ledger.xu_neglia import _draws_sentence

    fresh, fixed, first, second, third = list(diag.DRAWS)[:5]
    assert len(diag.DRAWS) == 2 + diag.SCREENED_DRAWS
    recs = []
    for v, gain3, gain0 in ((fresh, 0.0, 0.0), (first, 0.3, 0.1), (second, 0.2, 0.05), (third, 0.0, 0.1)):
        for s in (1, 5, 10):
            for seed in (0, 1):
                for c in range(5):
                    g = gain3 if c == 3 else gain0 if c == 0 else 0.0
                    recs.append({"variant": v, "seed": seed, "local_steps": s, "client": c,
                                 "acc_last_returned": 0.5, "acc_decoded": 0.5 + g})
    rec = {"data": {"records": recs, "variants": {k: diag.DRAWS[k] for k in (fresh, fixed, first, second, third)},
                    "seeds": 2, "screen_settings": diag.SCREEN}}
    text = _draws_sentence(rec)
    # mean gains over clients: (30 + 10) / 5 = 8, (20 + 5) / 5 = 5, 10 / 5 = 2 points; none reaches 10
    assert "+8.0, +5.0, +2.0 points" in text and "met on 0 of 3" in text
    assert "client 3 gains most at 1/5/10 steps on 2 of 3" in text and "follows the data draw" not in text
    for r in recs:
        if r["variant"] in (first, second) and r["client"] == 3:
            r["acc_decoded"] = 1.0  # gain 50 points on client 3: mean gain 10 + client 0's
    assert "met on 2 of 3" in _draws_sentence(rec) and "follows the data draw" in _draws_sentence(rec)
    assert _draws_sentence(None) == ""
