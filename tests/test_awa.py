"""The approximate and weighted attack (Song, Wang & Zuazua 2025): scenarios, interpolation,
layer weights, the attacks' objectives, Bayesian optimisation, and BatchNorm support."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch
from torch import nn

from flprivacy.attacks import awa, awa_search
from flprivacy.attacks.inversion import dummy_latent, update_distance
from flprivacy.config import generator as make_generator
from flprivacy.federation import local_sgd
from flprivacy.models import FLModel, SmallCNN, resnet18, small_cnn

SIDE = 8


def cnn64(batchnorm: bool = True) -> FLModel:
    """The small CNN in float64, so that 'exact' means exact up to float64 rounding."""
    return FLModel(SmallCNN(3, 4, SIDE, width=4, dtype=torch.float64, batchnorm=batchnorm), "cross_entropy")


def data(n: int = 4, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 3, SIDE, SIDE, generator=g, dtype=torch.float64), torch.tensor([0, 1, 2, 3][:n])


# ---- §3 scenarios -----------------------------------------------------------------------------------
def test_paper_scenarios_and_which_replay():
    assert [(s.epochs, s.batches) for s in awa.PAPER_SCENARIOS] == [(1, 1), (4, 1), (1, 4), (2, 2)]
    assert [s.case for s in awa.PAPER_SCENARIOS] == [1, 2, 3, 4]
    assert [s.replayable for s in awa.PAPER_SCENARIOS] == [True, True, True, False]
    with pytest.raises(ValueError, match="epochs"):
        awa.Scenario(0, 1)


def test_client_update_is_the_library_client():
    """client_update is local_sgd with per-epoch reshuffling, drawn from the same generator."""
    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    for E, B in [(1, 1), (4, 1), (1, 4), (2, 2)]:
        ours, orders = awa.client_update(m, th, X, y, lr=0.1, epochs=E, batches=B, seed=3)
        lib = local_sgd(m, th, X, y, lr=0.1, epochs=E, batch_size=4 // B, generator=make_generator(3))
        assert torch.equal(ours, lib), (E, B)
        assert len(orders) == E and all(sorted(o.tolist()) == [0, 1, 2, 3] for o in orders)


@pytest.mark.parametrize("E,B", [(1, 1), (4, 1), (1, 4)])
def test_scenarios_1_to_3_replay_exactly(E, B):
    """The true images in the first epoch's order replay the update to float64 rounding."""
    m, (X, y) = cnn64(), data()
    assert awa.replay_gap(m, m.init_params(0), X, y, lr=0.1, epochs=E, batches=B, seed=1) < 1e-12


def _seed_with_new_partition(m, th, X, y) -> int:
    """A client seed whose second epoch groups the images differently from the first."""
    for s in range(50):
        orders = awa.client_update(m, th, X, y, lr=0.1, epochs=2, batches=2, seed=s)[1]
        if {frozenset(b.tolist()) for b in orders[0].split(2)} != {frozenset(b.tolist()) for b in orders[1].split(2)}:
            return s
    raise AssertionError("no seed regroups the images")


@pytest.mark.parametrize("batchnorm", [False, True])
def test_scenario_4_does_not_replay_but_does_with_the_true_orders(batchnorm):
    """E = B = 2: the second epoch's unknown shuffle breaks the replay; with the client's actual
    orders the replay is exact again, so the orders are the only missing information.

    Without BatchNorm a mini-batch gradient is the mean of per-image gradients, so at θ_t any
    partition gives the same sum of batch gradients: the regrouping only matters through the
    change of θ within the epoch, the gap is O(η²) against an O(η) update, and halving η
    halves the relative gap (ratio 2 + O(η)). With BatchNorm the batch gradient depends on
    which images share the batch (batch statistics), so the gap is O(1): it does not shrink."""
    m, (X, y) = cnn64(batchnorm), data()
    th = m.init_params(0)
    seed = _seed_with_new_partition(m, th, X, y)
    gaps = [awa.replay_gap(m, th, X, y, lr=lr, epochs=2, batches=2, seed=seed) for lr in (0.02, 0.01)]
    assert gaps[0] > 1e-6  # float64 rounding is ~1e-15
    if batchnorm:
        assert gaps[0] / gaps[1] < 1.5, gaps
    else:
        assert 1.7 < gaps[0] / gaps[1] < 2.3, gaps
    theta_next, orders = awa.client_update(m, th, X, y, lr=0.02, epochs=2, batches=2, seed=seed)
    exact = awa.replay(m, th, X, y, lr=0.02, batches=2, epochs=2, orders=orders).detach()
    assert torch.allclose(exact, th - theta_next, rtol=0, atol=1e-14)


# ---- eq. 19-20 interpolation ---------------------------------------------------------------------
def test_interpolation_exact_on_a_linear_path():
    g = torch.Generator().manual_seed(0)
    th0, v = torch.randn(7, generator=g, dtype=torch.float64), torch.randn(7, generator=g, dtype=torch.float64)
    E = 5
    models, updates = awa.interpolate(th0, th0 + E * v, E)
    assert models.shape == (E + 1, 7) and updates.shape == (E, 7)
    for e in range(E + 1):
        assert torch.allclose(models[e], th0 + e * v, atol=1e-14)
    assert torch.allclose(updates, -v.expand(E, 7), atol=1e-14)
    assert torch.allclose(updates.sum(0), th0 - (th0 + E * v), atol=1e-13)


def test_interpolation_error_is_second_order_in_the_learning_rate():
    """Full-batch GD for E = 2 epochs: θ_1 - θ̃_1 = η(g_1 - g_0)/2 = -η² H g_0 / 2 + O(η³), so
    halving η divides the error by 4 (up to O(η) relative corrections)."""
    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    errs = []
    for lr in (0.02, 0.01):
        th1 = local_sgd(m, th, X, y, lr=lr)
        th2 = local_sgd(m, th1, X, y, lr=lr)
        models, _ = awa.interpolate(th, th2, 2)
        errs.append(float((models[1] - th1).norm()))
    assert 3.6 < errs[0] / errs[1] < 4.4, errs


# ---- eq. 22-30 layers and weights -------------------------------------------------------------------
def test_layers_of_the_small_cnn_and_resnet18():
    m = cnn64()
    layers = awa.model_layers(m)
    assert [l.kind for l in layers] == ["cv", "bn", "cv", "bn", "cv", "bn", "fc"]
    assert layers[0].start == 0 and layers[-1].stop == m.dim
    assert all(a.stop == b.start for a, b in zip(layers, layers[1:]))
    r = resnet18()
    kinds = [l.kind for l in awa.model_layers(r)]
    assert (kinds.count("cv"), kinds.count("bn"), kinds.count("fc")) == (20, 20, 1)
    assert 11_000_000 < r.dim < 11_300_000  # ResNet-18 for CIFAR-10: 11.17 M parameters


def test_linear_weights_by_hand():
    """eq. 24: (q - 1)/(L_k - 1)·(l - 1) + 1 within each kind; q_k for a single layer."""
    layers = awa.model_layers(cnn64())  # cv bn cv bn cv bn fc
    w = awa.linear_weights(layers, q_cv=5.0, q_bn=3.0, q_fc=7.0)
    assert w.tolist() == [1.0, 1.0, 3.0, 2.0, 5.0, 3.0, 7.0]
    w = awa.linear_weights(layers, q_cv=10.0, q_bn=1.0, q_fc=2.0)
    assert w.tolist() == [1.0, 1.0, 5.5, 1.0, 10.0, 1.0, 2.0]


def _toy_layers():
    return [awa.Layer(f"l{i}", "cv", 2 * i, 2 * i + 2) for i in range(4)]


def test_enhanced_layers_by_hand():
    """eq. 25-30 on four two-entry layers (entries m ± sqrt(v): mean m, variance v).

    target (m, v): (1, 1), (1, 1), (4, 1), (1, 1)
    dummy  (m, v): (3, 1.5), (1, 0.55), (8, 1), (1.5, 4)
    relative mean errors e_mean = (2, 0, 1, 0.5)   [absolute errors would be (2, 0, 4, 0.5)]
    relative variance errors e_var = (0.5, 0.45, 0, 3)   [with σ instead of σ²: (0.22, 0.26, 0, 1)]
    """
    target = torch.cat([torch.tensor([m - 1.0, m + 1.0], dtype=torch.float64) for m in (1.0, 1.0, 4.0, 1.0)])
    mv = [(3.0, 1.5), (1.0, 0.55), (8.0, 1.0), (1.5, 4.0)]
    pred = torch.cat([torch.tensor([m - math.sqrt(v), m + math.sqrt(v)], dtype=torch.float64) for m, v in mv])
    layers = _toy_layers()
    E = awa.enhanced_layers
    # ⌈0.25·4⌉ = 1 layer of largest RELATIVE mean error: layer 0 (the absolute error would pick layer 2)
    assert E(pred, target, layers, 0.25, 1.0).tolist() == [True, False, False, False]
    # ⌈0.5·4⌉ = 2 layers of largest relative VARIANCE error: {3, 0} (σ would pick {3, 1})
    assert E(pred, target, layers, 1.0, 0.5).tolist() == [True, False, False, True]
    # 𝒫_mean = {0, 2} ∩ 𝒫_var = {0, 3} = {0}; with p = 0.3 the sizes are ⌈1.2⌉ = 2 too (a floor: {0} ∩ {3} = ∅)
    assert E(pred, target, layers, 0.5, 0.5).tolist() == [True, False, False, False]
    assert E(pred, target, layers, 0.3, 0.3).tolist() == [True, False, False, False]
    assert E(pred, target, layers, 0.0, 0.5).tolist() == [False] * 4
    # ⌈0.75·4⌉ = 3: 𝒫_mean = {0, 2, 3}, 𝒫_var = {0, 1, 3}
    assert E(pred, target, layers, 0.75, 0.75).tolist() == [True, False, False, True]
    # eq. 27: the weight of an enhanced layer is SET to q_en (layer 3's linear weight is 4)
    Q = awa.AWAWeights(q_cv=4.0, q_bn=1.0, q_fc=1.0, q_en=100.0, p_mean=0.75, p_var=0.75)
    assert awa.layer_weights(pred, target, layers, Q).tolist() == [100.0, 2.0, 3.0, 100.0]


def test_weighted_distance_by_hand_and_unweighted_is_dlg():
    layers = _toy_layers()
    pred = torch.arange(8, dtype=torch.float64)
    target = torch.zeros(8, dtype=torch.float64)
    w = torch.tensor([1.0, 2.0, 0.5, 3.0], dtype=torch.float64)
    by_hand = 1 * (0 + 1) + 2 * (4 + 9) + 0.5 * (16 + 25) + 3 * (36 + 49)
    assert float(awa.weighted_distance(pred, target, layers, w)) == by_hand
    assert float(awa.weighted_distance(pred, target, layers, torch.ones(4))) == float(update_distance(pred, target))


def _per_layer_loss(pred, target, layers, Q):
    """Eq. 23 written per layer, as the library computed it before the fused form: the weights of
    eq. 24/27 and one squared norm per layer slice."""
    w = awa.layer_weights(pred.detach(), target, layers, Q)
    sq = torch.stack([((pred[l.start:l.stop] - target[l.start:l.stop]) ** 2).sum() for l in layers])
    return (w.to(sq.dtype) * sq).sum()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_weighted_loss_equals_the_per_layer_form(dtype):
    """The attack's loss (one weighted elementwise sum over θ with per-parameter weights) equals
    Σ_l q^(l) ‖Δθ̂^(l) - Δθ^(l)‖² per layer, and so does its gradient. Both add the same
    non-negative terms in another order; with pairwise summation each sum's relative error is at
    most ⌈log2 n⌉·u (u the unit roundoff, n the number of terms), plus a few roundings of the
    products: tol = (2⌈log2 n⌉ + 4)·u, i.e. ~3e-15 in float64 (far below 1e-6) and ~1.6e-6 in
    float32 for the ~4,000 parameters here."""
    torch.manual_seed(0)
    m = FLModel(SmallCNN(3, 4, SIDE, width=8, dtype=dtype), "cross_entropy")
    layers = awa.model_layers(m)
    d = layers[-1].stop
    target = torch.randn(d, dtype=dtype) * 1e-3
    tol = (2 * math.ceil(math.log2(d)) + 4) * torch.finfo(dtype).eps / 2
    assert dtype == torch.float32 or tol < 1e-6
    from flbook.ledger.song import TABLE_III

    for Q in (awa.AWAWeights(), awa.AWAWeights(**TABLE_III["case 1"]),
              awa.AWAWeights(q_cv=3.0, q_bn=7.0, q_fc=2.0, q_en=50.0, p_mean=0.5, p_var=0.5)):
        fused = awa._WeightedLoss(layers, target, Q)
        pred = (target + torch.randn(d, dtype=dtype) * 1e-3).requires_grad_(True)
        if Q.p_mean == 0.5:  # ⌈0.5·7⌉ = 4 layers of largest e_mean and 4 of largest e_var: they share one
            assert bool(awa.enhanced_layers(pred.detach(), target, layers, 0.5, 0.5).any())
        a = fused(pred, target)
        (ga,) = torch.autograd.grad(a, pred)
        b = _per_layer_loss(pred, target, layers, Q)
        (gb,) = torch.autograd.grad(b, pred)
        a, b = a.detach(), b.detach()
        assert abs(float(a) - float(b)) <= tol * float(b), (Q, float(a), float(b))
        assert float((ga - gb).norm()) <= tol * float(gb.norm())
        # and the public weighted_distance is the same sum
        w = awa.layer_weights(pred.detach(), target, layers, Q)
        assert abs(float(awa.weighted_distance(pred.detach(), target, layers, w)) - float(b)) <= tol * float(b)


# ---- the attacks' objectives --------------------------------------------------------------------------
def _first_dummy(seed: int = 0) -> torch.Tensor:
    return dummy_latent(4, (3, SIDE, SIDE), 1, "uniform", make_generator(seed)).double()


def test_awa_scenario_4_attacks_the_interpolated_first_epoch():
    """In case 4 the first objective value is eq. 23 between one replayed epoch of B batches from
    θ_t and the interpolated target (θ_t - θ_{t+1})/E (eq. 19-21), with the weights of eq. 24/27."""
    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    thn, orders = awa.client_update(m, th, X, y, lr=0.1, epochs=2, batches=2, seed=0)
    Q = awa.AWAWeights(q_cv=3.0, q_bn=2.0, q_fc=5.0, q_en=9.0, p_mean=0.3, p_var=0.4)
    rec = awa.awa_attack(m, th, thn, labels=y[orders[0]], image_shape=(3, SIDE, SIDE), lr=0.1, epochs=2, batches=2,
                         Q=Q, iterations=1, seed=0)
    layers = awa.model_layers(m)
    pred = th - local_sgd(m, th, _first_dummy(), y[orders[0]], lr=0.1, batch_size=2, shuffle=False)
    # the interpolated target is (θ_t - θ_{t+1})/E; take the library's copy of it, because the dense
    # layer's update of a softmax cross-entropy has mean 0 up to rounding (its gradient sums to 0 over
    # classes), so eq. 25's e_mean of that layer is a ratio of rounding errors and a 1e-16 change in
    # the target can flip which layers eq. 28 selects
    target = awa.interpolate(th, thn, 2)[1][0]
    assert torch.allclose(target, (th - thn) / 2, rtol=0, atol=1e-15)
    w = awa.linear_weights(layers, 3.0, 2.0, 5.0)
    w[awa.enhanced_layers(pred, target, layers, 0.3, 0.4)] = 9.0
    assert rec.settings["approximate"] is True
    assert math.isclose(rec.loss[0], float(awa.weighted_distance(pred, target, layers, w)), rel_tol=1e-10)


def test_awa_with_unit_weights_is_dlg_and_dlg_refuses_scenario_4():
    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    thn, _ = awa.client_update(m, th, X, y, lr=0.1, epochs=4, batches=1, seed=0)
    kw = dict(labels=y, image_shape=(3, SIDE, SIDE), lr=0.1, epochs=4, batches=1, iterations=3, seed=2)
    a, d = awa.awa_attack(m, th, thn, **kw), awa.dlg_attack(m, th, thn, **kw)
    assert torch.allclose(a.images, d.images, rtol=0, atol=1e-12) and a.loss == pytest.approx(d.loss, rel=1e-12)
    # eq. 33 is the unweighted distance of the final dummy's replay
    pred = awa.replay(m, th, a.images, y, lr=0.1, batches=1, epochs=4).detach()
    assert math.isclose(a.settings["objective"], float(((pred - (th - thn)) ** 2).sum()), rel_tol=1e-10)
    thn4, _ = awa.client_update(m, th, X, y, lr=0.1, epochs=2, batches=2, seed=0)
    with pytest.raises(ValueError, match="Scenario 4"):
        awa.dlg_attack(m, th, thn4, labels=y, image_shape=(3, SIDE, SIDE), lr=0.1, epochs=2, batches=2, iterations=1)


def test_agic_is_one_combined_step_with_weighted_cosine():
    """AGIC: one full-batch step of size η·E·B on the N dummies, loss Σ w_l (1 - cos_l)/Σ w_l, w_l = l."""
    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    thn, orders = awa.client_update(m, th, X, y, lr=0.1, epochs=2, batches=2, seed=0)
    rec = awa.agic_attack(m, th, thn, labels=y, image_shape=(3, SIDE, SIDE), lr=0.1, epochs=2, batches=2,
                          iterations=1, seed=0)
    layers = awa.model_layers(m)
    pred = th - local_sgd(m, th, _first_dummy(), y, lr=0.1 * 2 * 2)
    target = th - thn
    cos = torch.stack([torch.nn.functional.cosine_similarity(pred[l.start:l.stop], target[l.start:l.stop], dim=0)
                       for l in layers])
    w = torch.arange(1, len(layers) + 1, dtype=torch.float64)
    assert math.isclose(rec.loss[0], float((w * (1 - cos)).sum() / w.sum()), rel_tol=1e-10)


# ---- eq. 33-40: Bayesian optimisation ---------------------------------------------------------------
def test_table_ii_ranges():
    assert awa.TABLE_II == {"q_cv": (1, 1000), "q_bn": (1, 1000), "q_fc": (1, 1000), "q_en": (1, 1000),
                            "p_mean": (0, 0.5), "p_var": (0, 0.5)}


def test_the_default_search_space_is_the_papers_table_ii():
    # the library owns its default search space; the book records the paper's table apart
    from flbook.papers.song import TABLE_II

    assert awa.TABLE_II == TABLE_II and awa.TABLE_II is not TABLE_II


def test_tune_weights_protocol_and_cost():
    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    thn, orders = awa.client_update(m, th, X, y, lr=0.1, epochs=2, batches=2, seed=0)
    res = awa_search.tune_weights(m, th, thn, labels=y[orders[0]], image_shape=(3, SIDE, SIDE), lr=0.1, epochs=2, batches=2,
                           n_trials=4, n_startup_trials=2, iterations=4, trial_iterations=2, seed=0)
    assert len(res.values) == len(res.params) == len(res.iterations) == 4
    assert res.iterations == [2, 2, 2, 2] and not any(res.stopped)
    cm = res.cumulative_minimum()
    assert all(b <= a for a, b in zip(cm, cm[1:])) and cm[-1] == min(res.values)
    assert res.best.as_dict() == pytest.approx(res.params[res.values.index(min(res.values))])
    for p in res.params:
        for k, (lo, hi) in awa.TABLE_II.items():
            assert lo <= p[k] <= hi
    assert res.total_iterations == 4 * 2 + 4
    assert res.reconstruction.settings["Q"] == res.best.as_dict()


# ---- BatchNorm in FLModel ---------------------------------------------------------------------------
def test_batchnorm_uses_batch_statistics_like_training_mode():
    """FLModel's BatchNorm (track_running_stats=False) normalises with the batch's statistics:
    the output equals the module's own forward in training mode."""
    m, (X, _) = cnn64(), data()
    th = m.init_params(0)
    mod = m.to_module(th).train()
    assert torch.allclose(m.forward(th, X), mod(X), atol=1e-12)
    # a batch statistic: the output for image 0 depends on the other images of the batch
    assert not torch.allclose(m.forward(th, X)[:1], m.forward(th, X[:2])[:1])


def test_running_statistics_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="track_running_stats=False"):
        FLModel(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(2, 2)), "cross_entropy")
    assert small_cnn(3, 10, 16).dim > 0


def test_tune_weights_with_pruning_records_stopped_trials():
    """A pruned trial is kept as a completed trial with its value at stopping; its iteration count
    is a multiple of report_every below the trial length."""
    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    thn, orders = awa.client_update(m, th, X, y, lr=0.1, epochs=1, batches=2, seed=0)
    res = awa_search.tune_weights(m, th, thn, labels=y[orders[0]], image_shape=(3, SIDE, SIDE), lr=0.1, epochs=1, batches=2,
                           n_trials=5, n_startup_trials=1, iterations=2, trial_iterations=6, prune=True,
                           report_every=2, seed=1)
    assert len(res.values) == 5 and all(math.isfinite(v) for v in res.values)
    for it, stopped in zip(res.iterations, res.stopped):
        assert stopped == (it < 6) and it % 2 == 0 and 2 <= it <= 6
    assert not res.stopped[0]  # nothing to compare the first trial with
    assert res.total_iterations == sum(res.iterations) + 2


# ---- the enqueued Q = 1 trial (DLG's loss) and the resumable study ------------------------------------
def _case1_problem():
    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    thn, orders = awa.client_update(m, th, X, y, lr=0.1, epochs=1, batches=1, seed=0)
    return m, th, thn, dict(labels=y[orders[0]], image_shape=(3, SIDE, SIDE), lr=0.1, epochs=1, batches=1)


def test_first_trial_is_unweighted_and_equals_dlg():
    """Trial 0 is Q = 1 (all layer weights 1, no enhanced layer): eq. 23 is then eq. 10, so with the
    same dummy start and budget its f(Q) is DLG's eq. 33 objective, to float64 rounding."""
    m, th, thn, kw = _case1_problem()
    res = awa_search.tune_weights(m, th, thn, n_trials=3, n_startup_trials=2, iterations=3, trial_iterations=3, seed=4, **kw)
    assert res.params[0] == awa.UNWEIGHTED
    assert awa.AWAWeights(**awa.UNWEIGHTED) == awa.AWAWeights()  # the default Q is DLG's loss
    assert res.unweighted_value == res.values[0]
    dlg = awa.dlg_attack(m, th, thn, iterations=3, seed=4, **kw)
    assert math.isclose(res.unweighted_value, dlg.settings["objective"], rel_tol=1e-9)
    assert res.settings["enqueue_unweighted"] is True
    # the other start-up trials stay random, inside Table II's box and away from its corner
    assert all(p != awa.UNWEIGHTED for p in res.params[1:])
    off = awa_search.tune_weights(m, th, thn, n_trials=2, n_startup_trials=2, iterations=2, trial_iterations=2, seed=4,
                           enqueue_unweighted=False, **kw)
    assert off.unweighted_value is None and awa.UNWEIGHTED not in off.params


def test_table4_records_f1_and_the_best_trial():
    """awa_table4's record of a BO: f(1) is the enqueued trial's value, f_best the minimum over the
    trials with its Q, and the two booleans follow from them (and are each other's negation while
    Q = 1 is a trial: Optuna keeps the first of tied trials)."""
    from flbook.experiments.awa_table4 import bo_summary

    m, th, thn, kw = _case1_problem()
    res = awa_search.tune_weights(m, th, thn, n_trials=3, n_startup_trials=2, iterations=2, trial_iterations=3, seed=4, **kw)
    s = bo_summary(res)
    assert s["f_unweighted"] == res.values[0] == res.unweighted_value and s["f_best"] == min(res.values)
    assert s["Q"] == res.params[res.values.index(min(res.values))] == res.best.as_dict()
    assert s["bo_beat_unweighted"] == (min(res.values) < res.values[0])
    assert s["best_is_unweighted"] == (s["Q"] == awa.UNWEIGHTED) == (not s["bo_beat_unweighted"])
    # both branches, on the same record with Q* set by hand
    one = bo_summary(dataclasses.replace(res, best=awa.AWAWeights(), values=[1.0, 2.0, 3.0], unweighted_value=1.0))
    assert one["best_is_unweighted"] and not one["bo_beat_unweighted"] and one["f_best"] == 1.0
    beat = bo_summary(dataclasses.replace(res, best=awa.AWAWeights(q_cv=2.0), values=[1.0, 0.5], unweighted_value=1.0))
    assert beat["bo_beat_unweighted"] and not beat["best_is_unweighted"] and beat["f_best"] == 0.5
    assert bo_summary(dataclasses.replace(res, unweighted_value=None))["bo_beat_unweighted"] is None


def test_dlg_objective_is_eq_33_of_its_reconstruction():
    m, th, thn, kw = _case1_problem()
    rec = awa.dlg_attack(m, th, thn, iterations=2, seed=1, **kw)
    pred = awa.replay(m, th, rec.images, kw["labels"], lr=0.1, batches=1).detach()
    assert math.isclose(rec.settings["objective"], float(((pred - (th - thn)) ** 2).sum()), rel_tol=1e-12)


def test_study_in_sqlite_resumes(tmp_path):
    """A study stored in SQLite resumes: a second call runs only the missing trials, keeps the first
    trials' values, and does not enqueue Q = 1 again."""
    m, th, thn, kw = _case1_problem()
    db = tmp_path / "awa.db"
    common = dict(n_startup_trials=2, iterations=2, trial_iterations=2, seed=0, storage=db, study_name="s", **kw)
    first = awa_search.tune_weights(m, th, thn, n_trials=2, **common)
    assert db.is_file()
    second = awa_search.tune_weights(m, th, thn, n_trials=3, **common)
    assert second.values[:2] == first.values and len(second.values) == 3
    assert second.params[0] == awa.UNWEIGHTED and awa.UNWEIGHTED not in second.params[1:]
    assert second.iterations == [2, 2, 2]
    with pytest.raises(FileNotFoundError, match="storage"):
        awa_search.tune_weights(m, th, thn, n_trials=1, **{**common, "storage": tmp_path / "no" / "x.db"})
    with pytest.raises(TypeError, match="storage"):
        awa_search.tune_weights(m, th, thn, n_trials=1, **{**common, "storage": 3})


# ---- the diagnostics at the paper's model (experiments.awa_diagnostics) --------------------------------------
def test_diagnostics_baselines_are_the_library_attacks():
    """The diagnostics' baseline rows are dlg_attack and awa_attack step for step: same images and
    objective to float64 rounding; the variants change one thing each."""
    from flprivacy.config import child_seed
    from flbook.experiments import awa_diagnostics as diag
    from flbook.ledger.song import TABLE_III

    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    seed = 5
    thn, orders = awa.client_update(m, th, X, y, lr=0.1, epochs=1, batches=1, seed=child_seed(seed, 2))
    kw = dict(labels=y[orders[0]], image_shape=(3, SIDE, SIDE), lr=0.1, iterations=4, seed=child_seed(seed, 3))
    base = {v.name: v for v in diag.variants()}
    ours = diag.run_variant(base["ours: DLG"], m, th, X, y, iterations=4, seed=seed, lr=0.1)
    lib = awa.dlg_attack(m, th, thn, **kw)
    assert torch.allclose(ours["images"], lib.images, rtol=0, atol=1e-12)
    assert math.isclose(ours["objective"], lib.settings["objective"], rel_tol=1e-9)
    ours = diag.run_variant(base["ours: AWA"], m, th, X, y, iterations=4, seed=seed, lr=0.1)
    lib = awa.awa_attack(m, th, thn, Q=awa.AWAWeights(**TABLE_III["case 1"]), **kw)
    assert torch.allclose(ours["images"], lib.images, rtol=0, atol=1e-12)
    zhu = diag.run_variant(base["DLG as Zhu et al."], m, th, X, y, iterations=30, seed=seed, lr=0.1)
    assert zhu["evaluations"] <= 30 and 0 <= zhu["label_accuracy"] <= 1
    # the η² option: the library's awa_attack and tune_weights against the diagnostics' own loss * 1/η²
    # (at η = 1e-3 Adam's ε = 1e-8 is not negligible against the unscaled gradients, so the scale moves the images)
    thn3, orders3 = awa.client_update(m, th, X, y, lr=1e-3, epochs=1, batches=1, seed=child_seed(seed, 2))
    kw3 = dict(kw, labels=y[orders3[0]], lr=1e-3)
    ours = diag.run_variant(dataclasses.replace(base["ours: AWA"], gradient_scale=True), m, th, X, y, iterations=4, seed=seed,
                            lr=1e-3)
    lib = awa.awa_attack(m, th, thn3, Q=awa.AWAWeights(**TABLE_III["case 1"]), gradient_scale=True, **kw3)
    assert torch.allclose(ours["images"], lib.images, rtol=0, atol=1e-12) and lib.settings["gradient_scale"] is True
    plain = awa.awa_attack(m, th, thn3, Q=awa.AWAWeights(**TABLE_III["case 1"]), **kw3)
    assert not torch.allclose(plain.images, lib.images, rtol=0, atol=1e-6)
    tuned = awa_search.tune_weights(m, th, thn3, n_trials=1, n_startup_trials=1, gradient_scale=True, **kw3)
    one = awa.awa_attack(m, th, thn3, gradient_scale=True, **kw3)  # the one (enqueued) trial is Q = 1
    assert torch.allclose(tuned.reconstruction.images, one.images, rtol=0, atol=1e-12)
    assert math.isclose(tuned.values[0], one.settings["objective"], rel_tol=1e-9)  # the trial ran scaled too
    assert not math.isclose(plain.settings["objective"], lib.settings["objective"], rel_tol=1e-9)
    assert tuned.settings["gradient_scale"] is True
    assert all(v.name == "ours: DLG" or v != base["ours: DLG"] for v in diag.variants())


def test_global_ssim_is_the_papers_formula():
    """Song §5.1's SSIM with one window: 1 for identical images; by hand on a 2-pixel image."""
    from flbook.experiments.awa_diagnostics import global_ssim

    x = torch.rand(2, 3, 5, 5, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(global_ssim(x, x), torch.ones(2, dtype=torch.float64), atol=1e-12)
    a = torch.tensor([0.2, 0.6]).view(1, 1, 1, 2)
    b = torch.tensor([0.4, 0.4]).view(1, 1, 1, 2)
    c1, c2 = 0.01 ** 2, 0.03 ** 2  # μ_a = 0.4, μ_b = 0.4, σ_a² = 0.04, σ_b² = 0, σ_ab = 0
    by_hand = (2 * 0.16 + c1) * c2 / ((0.32 + c1) * (0.04 + c2))
    assert math.isclose(float(global_ssim(a, b)), by_hand, rel_tol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        global_ssim(a, b[..., :1])


def test_eval_batchnorm_is_a_fresh_models_eval_mode():
    from flbook.experiments.awa_diagnostics import _EvalBatchNorm, make_model

    bn = nn.BatchNorm2d(4)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
    ours = _EvalBatchNorm(4)
    ours.load_state_dict({"weight": bn.weight.detach(), "bias": bn.bias.detach()})
    x = torch.randn(3, 4, 5, 5) * 3 + 1
    assert torch.allclose(ours(x), bn.eval()(x), atol=1e-6)
    m = make_model("resnet18-bn-eval")
    assert m.dim == resnet18().dim  # same θ: BatchNorm's γ, β stay parameters
    assert {l.kind for l in awa.model_layers(m)} == {"cv", "bn", "fc"}
    with pytest.raises(ValueError, match="unknown model"):
        make_model("vgg")


# ---- Table IV at ResNet-18 (experiments.awa_table4_resnet18) -----------------------------------------------
def test_resnet18_grid_and_images():
    """The grid holds every Table IV cell at the three models (no DLG in case 4, Table IV's dash), the
    costliest runs first; images survive the 8-bit round trip to half a grey level."""
    from flbook.experiments import awa_table4_resnet18 as t4
    from flbook.ledger.song import TABLE_IV

    runs = t4.grid()
    cells = sum(v is not None for c in TABLE_IV.values() for v in c.values())
    assert len(runs) == len(set(runs)) == 3 * cells == 33
    assert not any(r.case == "case 4" and r.method == "DLG" for r in runs)
    assert [r.cost for r in runs] == sorted((r.cost for r in runs), reverse=True)
    assert {r.cost for r in runs if r.case in ("case 2", "case 3") and r.method != "AGIC"} == {4}
    x = torch.rand(4, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    back = t4.decode_images(t4.encode_images(x))
    assert back.shape == x.shape and float((back - x).abs().max()) <= 0.5 / 255 + 1e-7
    assert torch.equal(t4.decode_images((back * 255).round().to(torch.uint8).tolist()), back)
    assert torch.equal(t4.stored_images({"images": t4.encode_images(x)}), back)
    assert torch.equal(t4.stored_images({"images_uint8": (back * 255).round().to(torch.uint8).tolist()}), back)


def test_resnet18_bo_is_resumable(monkeypatch, tmp_path):
    """``--bo``: our BO at a grid cell keeps its study in SQLite; Q = 1 (DLG's loss) is the first trial
    and the summary compares with it; a second call with more trials resumes (the first trials
    are not rerun: same values) and adds only the missing ones."""
    from flbook.experiments import awa_table4_resnet18 as t4

    monkeypatch.setattr("flbook.results.results_dir", lambda: tmp_path)
    # the plumbing, not ResNet-18 (the GPU runs): a small CNN for the 32x32 client images keeps the test fast
    monkeypatch.setattr(t4, "make_model", lambda name: FLModel(SmallCNN(3, 10, 32, width=4), "cross_entropy"))
    tiny = dict(n_trials=2, n_startup_trials=1, iterations=1, trial_iterations=1, prune=False, report_every=1)
    first = t4.bo_one("resnet18-bn-eval", "case 1", device="cpu", settings=tiny)
    assert (tmp_path / "awa_table4_resnet18" / "bo" / "resnet18-bn-eval_case1.db").is_file()
    assert first["params"][0] == awa.UNWEIGHTED and first["f_unweighted"] == first["values"][0]
    assert first["f_best"] == min(first["values"]) and first["gradient_scale"] is True
    again = t4.bo_one("resnet18-bn-eval", "case 1", device="cpu", settings=dict(tiny, n_trials=3))
    assert len(again["values"]) == 3 and again["values"][:2] == first["values"]
    assert again["total_iterations"] == 3 + 1


def test_attacks_follow_the_device_of_theta():
    """awa's attacks create every tensor on θ's device (here the CPU, the only one CI has): the images,
    the weights of eq. 23-30 and the interpolated models come back on it, and the dummy's start does
    not depend on where the attack runs (drawn on the CPU)."""
    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    thn, orders = awa.client_update(m, th, X, y, lr=0.1, epochs=2, batches=2, seed=1)
    rec = awa.awa_attack(m, th, thn, labels=y[orders[0]], image_shape=(3, SIDE, SIDE), lr=0.1, epochs=2, batches=2,
                         Q=awa.AWAWeights(q_en=5.0, p_mean=0.5, p_var=0.5), iterations=2)
    assert rec.images.device == th.device
    models, updates = awa.interpolate(th, thn, 2)
    assert models.device == updates.device == th.device


def test_diagnostics_inverting_gradients_tricks(monkeypatch):
    """The inverting-gradients rows change what they say and nothing else: the TV prior adds
    weight × TV(x) to the loss (weight 0 gives the cosine row bit for bit), the cosine rows
    minimise 1 - cos of the whole update, and the schedule divides Adam's step by 10 at 3/8,
    5/8 and 7/8 of the budget (inversefed's lr_decay)."""
    from dataclasses import replace

    from flprivacy.attacks.inversion import total_variation, update_distance
    from flbook.experiments import awa_diagnostics as diag

    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    base = {v.name: v for v in diag.variants()}
    kw = dict(iterations=3, seed=5, lr=0.1)
    cos = diag.run_variant(base["DLG, cosine distance"], m, th, X, y, **kw)
    tv0 = diag.run_variant(replace(base["DLG, cosine + TV"], tv=0.0), m, th, X, y, **kw)
    tv = diag.run_variant(base["DLG, cosine + TV"], m, th, X, y, **kw)
    assert torch.equal(cos["images"], tv0["images"]) and not torch.equal(cos["images"], tv["images"])
    l2 = diag.run_variant(base["ours: DLG"], m, th, X, y, **kw)  # the cosine row differs from eq. 10's row only in D
    assert not torch.equal(cos["images"], l2["images"])
    assert base["DLG, cosine + TV"].tv == 0.1 and base["Inverting gradients (Geiping et al.)"].tv == 0.1
    # the loss the cosine + TV row differentiates, at its first evaluation (a uniform start)
    seen = []
    orig = diag.total_variation
    monkeypatch.setattr(diag, "total_variation", lambda x: seen.append(x.detach().clone()) or orig(x))
    diag.run_variant(base["DLG, cosine + TV"], m, th, X, y, iterations=1, seed=5, lr=0.1)
    assert len(seen) >= 1 and float(total_variation(seen[0])) > 0
    monkeypatch.setattr(diag, "total_variation", orig)
    # the cosine distance is scale-free (the update's size, η times the gradient, does not matter)
    a, b = torch.randn(50, dtype=torch.float64), torch.randn(50, dtype=torch.float64)
    assert math.isclose(float(update_distance(a, 7 * b, "cosine")), float(update_distance(a, b, "cosine")), rel_tol=1e-12)
    # the schedule: milestones and factor as inversefed's lr_decay, stepped once per evaluation
    made = []
    Multi = torch.optim.lr_scheduler.MultiStepLR

    class Spy(Multi):
        def __init__(self, opt, milestones, gamma):
            made.append((list(milestones), gamma))
            super().__init__(opt, milestones=milestones, gamma=gamma)

    monkeypatch.setattr(torch.optim.lr_scheduler, "MultiStepLR", Spy)
    r = diag.run_variant(base["DLG, step schedule"], m, th, X, y, iterations=16, seed=5, lr=0.1)
    assert made == [([6, 10, 14], 0.1)] and r["evaluations"] == 16
    plain = diag.run_variant(base["ours: DLG"], m, th, X, y, iterations=16, seed=5, lr=0.1)
    assert len(made) == 1 and not torch.equal(plain["images"], r["images"])
    # the IG row starts where inversefed does: N(0, 1) in CIFAR-10's normalised space, μ + σ z in pixels
    from flprivacy.config import child_seed, generator

    start = diag.run_variant(base["Inverting gradients (Geiping et al.)"], m, th, X, y, iterations=0, seed=5, lr=0.1)
    z = torch.randn(start["images"].shape, generator=generator(child_seed(5, 3)))
    mu, sd = torch.tensor(diag.CIFAR_MEAN).view(3, 1, 1), torch.tensor(diag.CIFAR_STD).view(3, 1, 1)
    assert torch.allclose(start["images"], (mu + sd * z).clamp(0, 1).to(start["images"].dtype), atol=1e-6)
    with pytest.raises(ValueError, match="init"):
        diag.run_variant(replace(base["ours: DLG"], init="zeros"), m, th, X, y, **kw)
    with pytest.raises(ValueError, match="distance"):
        diag.run_variant(replace(base["ours: DLG"], distance="l1"), m, th, X, y, **kw)
    with pytest.raises(ValueError, match="cosine"):
        diag.run_variant(replace(base["ours: AWA"], distance="cosine"), m, th, X, y, **kw)


def test_keep_freed_memory_reuses_blocks_and_changes_no_number():
    """experiments.keep_freed_memory (what the AWA commands apply): in a child process, a loop that
    allocates and frees a 64 MB tensor faults in a fresh block's pages at every pass by default and,
    once the allocator keeps freed memory, reuses blocks: its faults stay a few blocks' worth
    however many passes run. The values computed are the same."""
    import json
    import resource
    import subprocess
    import sys

    code = """
import json, resource, sys, torch
from flbook.experiments import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "keep" else None
g = torch.Generator().manual_seed(0)
w = torch.randn(2048, generator=g)
total = 0.0
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(int(sys.argv[2])):
    big = torch.empty(8_000_000, dtype=torch.float64).fill_(1.0)  # 64 MB, freed at the next pass
    total += float((big[:2048] * w).sum())
print(json.dumps(dict(applied=applied, faults=resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0, total=total)))
"""

    def child(mode: str, passes: int) -> dict:
        run = subprocess.run([sys.executable, "-c", code, mode, str(passes)], capture_output=True, text=True,
                             check=True)
        return json.loads(run.stdout.strip().splitlines()[-1])

    default, kept20, kept40 = child("default", 20), child("keep", 20), child("keep", 40)
    assert default["total"] == kept20["total"]
    if sys.platform.startswith("linux"):
        assert kept20["applied"] is True
        per_pass = 8_000_000 * 8 // resource.getpagesize()  # one block's pages
        # 64 MB is above glibc's largest mmap threshold (32 MB): by default every pass maps a fresh
        # block, at least one block's faults per pass
        assert default["faults"] >= 20 * per_pass, (default, per_pass)
        # kept, the faults stay bounded: 40 passes fault in at most 10 blocks' pages, a quarter of
        # the 40 blocks that no reuse costs. (How many blocks the heap holds before it reuses them
        # varies from run to run, 2 to 8 in 40 passes: the difference of two runs, 20 and 40 passes,
        # mixed that variation into the check.)
        assert kept40["faults"] <= 10 * per_pass, (kept20, kept40, per_pass)


def test_trace_scores_the_dummy_without_changing_the_attack():
    """``run_variant(trace_every=k)`` (Song Figs. 3-4's curves) scores the dummy every k Adam
    iterations and at the last: the same images and objective as without the trace, the last point
    equal to the final scores, and the scoring's seconds kept out of the attack's."""
    from flbook.experiments import awa_diagnostics as diag

    m, (X, y) = cnn64(), data()
    th = m.init_params(0)
    v = {v.name: v for v in diag.variants()}["ours: AWA"]
    plain = diag.run_variant(v, m, th, X, y, iterations=7, seed=5, lr=0.1)
    traced = diag.run_variant(v, m, th, X, y, iterations=7, seed=5, lr=0.1, trace_every=3)
    assert torch.equal(plain["images"], traced["images"]) and plain["objective"] == traced["objective"]
    assert "trace" not in plain and traced["trace"]["iteration"] == [3, 6, 7]
    assert traced["trace"]["ssim"][-1] == traced["ssim"] and traced["trace"]["psnr"][-1] == traced["psnr"]
    assert diag.run_variant(v, m, th, X, y, iterations=3, seed=5, lr=0.1, trace_every=3)["trace"]["ssim"] == \
        traced["trace"]["ssim"][:1]  # the curve at 3 is a 3-iteration attack's end
    assert traced["trace_seconds"] > 0 and traced["seconds"] > 0
    with pytest.raises(ValueError, match="trace_every"):
        diag.run_variant(v, m, th, X, y, iterations=2, seed=5, lr=0.1, trace_every=-1)
    lbfgs = {w.name: w for w in diag.variants()}["DLG as Zhu et al."]  # L-BFGS: no Adam iterations to trace
    with pytest.raises(ValueError, match="trace_every"):
        diag.run_variant(lbfgs, m, th, X, y, iterations=2, seed=5, lr=0.1, trace_every=1)


def test_resnet18_curves_are_the_grid_cell_and_resume(monkeypatch, tmp_path):
    """``awa_curves_resnet18``: one file per (model, case) holding the curve; a finished curve with
    the same budget and spacing is skipped, another budget is rerun. (A small CNN stands in for
    ResNet-18, as in the BO test: the plumbing, not the GPU runs.)"""
    from flbook.experiments import awa_curves_resnet18 as fc
    from flbook.experiments import awa_table4_resnet18 as t4

    monkeypatch.setattr("flbook.results.results_dir", lambda: tmp_path)
    monkeypatch.setattr(t4, "make_model", lambda name: FLModel(SmallCNN(3, 10, 32, width=4), "cross_entropy"))
    fc.main(["--models", "resnet18-sigmoid", "--cases", "1", "--iterations", "4", "--every", "2"])
    path = tmp_path / "awa_curves_resnet18" / "resnet18-sigmoid_case1.json"
    d = json.loads(path.read_text())["data"]
    assert d["trace"]["iteration"] == [2, 4] and d["trace"]["ssim"][-1] == d["ssim"]
    assert d["Q"] == d["Q_table_iii"] and d["gradient_scale"] is True and (d["E"], d["B"]) == (1, 1)
    grid = t4.run_one(t4.Run("resnet18-sigmoid", "case 1", "AWA"), iterations=4, device="cpu")
    assert d["ssim"] == grid["ssim"] and d["images"] == grid["images"]  # the grid's AWA cell, step for step
    assert fc.done("resnet18-sigmoid", "case 1", 4, 2) and not fc.done("resnet18-sigmoid", "case 1", 6, 2)
    stamp = path.stat().st_mtime_ns
    fc.main(["--models", "resnet18-sigmoid", "--cases", "1", "--iterations", "4", "--every", "2"])
    assert path.stat().st_mtime_ns == stamp
