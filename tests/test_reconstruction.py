"""Local model reconstruction (Part II): Alg. 3 / Obs. 1, message-subset selection, Xu's Algo. 3."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from flprivacy import ClientData, LocalSGD, eavesdrop, linear_regression, run_fedavg
from flprivacy.attacks import learned_mapping, reconstruction
from flprivacy.attacks.learned_mapping import learned_mapping_reconstruction, learned_mapping_reconstruction_batch
from flprivacy.attacks.reconstruction import (
    condition_number,
    condition_numbers,
    design_matrices,
    random_subset_search,
    reconstruct_least_squares,
    select_messages,
)
from flprivacy.federation import LeastSquaresSGD
from flprivacy.models import design
from flprivacy.optimum import least_squares_optimum


def _client(d: int, n: int, seed: int) -> ClientData:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d - 1, generator=g, dtype=torch.float64) + torch.randn(d - 1, generator=g, dtype=torch.float64)
    w = torch.randn(d, generator=g, dtype=torch.float64)
    return ClientData(X, X @ w[:-1] + w[-1] + 0.3 * torch.randn(n, generator=g, dtype=torch.float64))


def _messages(data: ClientData, n_msgs: int, lr: float, epochs: int, seed: int, batch_size=None):
    """The client's replies to ``n_msgs`` random sent models (an exogenous server)."""
    d = data.X.shape[1] + 1
    g = torch.Generator().manual_seed(seed + 1)
    sent = torch.randn(n_msgs, d, generator=g, dtype=torch.float64)
    local = LeastSquaresSGD(lr=lr, epochs=epochs, batch_size=batch_size)
    model = linear_regression(d - 1)
    returned = torch.stack([local(model, s, data, g) for s in sent])
    return sent, returned


def _stable_lr(data: ClientData, fraction: float) -> float:
    X1 = design(data.X)
    return fraction * data.n / (2 * torch.linalg.eigvalsh(X1.T @ X1)[-1].item())


# ---- Obs. 1 / Prop. 2: exact recovery ----------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(d=st.integers(2, 12), epochs=st.integers(1, 6), fraction=st.floats(0.1, 1.0), extra=st.integers(0, 5),
       seed=st.integers(0, 10_000))
def test_full_batch_least_squares_is_recovered_exactly(d, epochs, fraction, extra, seed):
    """d+1 (or more) full-batch exchanges give θ_c^* to 1e-8, for any d, E and η (unknown to the attack)."""
    data = _client(d, 3 * d, seed)
    lr = _stable_lr(data, fraction)  # η ≤ S_c / (2 λ_max(H)): the condition of Theorem 1
    sent, returned = _messages(data, d + 1 + extra, lr, epochs, seed)
    rec = reconstruct_least_squares((sent, returned))
    star = least_squares_optimum(data)
    assert (rec.theta - star).norm() / star.norm() < 1e-8
    assert rec.residual < 1e-10


def test_recovery_from_a_fedavg_log_with_partial_participation():
    """The attack reads only the log; peers use mini-batches, the target full batch, E = 3."""
    d = 6
    clients = [_client(d, 20, s) for s in range(6)]
    lr = _stable_lr(clients[0], 0.5)

    def local(model, theta, data, gen):
        if data is clients[0]:
            return LeastSquaresSGD(lr=lr, epochs=3)(model, theta, data, gen)
        return LeastSquaresSGD(lr=lr, batch_size=4)(model, theta, data, gen)

    run = run_fedavg(linear_regression(d - 1), clients, rounds=60, local=local, clients_per_round=3, seed=1)
    M = eavesdrop(run.log, 0)
    assert len(M) >= d + 1
    star = least_squares_optimum(clients[0])
    for subset in ("all", "best"):
        rec = reconstruct_least_squares(M, subset=subset)
        assert (rec.theta - star).norm() / star.norm() < 1e-8, subset


def test_V_estimates_the_inverse_update_matrix():
    data = _client(4, 12, 0)
    lr, E = _stable_lr(data, 0.6), 2
    sent, returned = _messages(data, 8, lr, E, 0)
    X1 = design(data.X)
    W = torch.eye(4, dtype=torch.float64) - torch.linalg.matrix_power(
        torch.eye(4, dtype=torch.float64) - 2 * lr / data.n * X1.T @ X1, E)
    rec = reconstruct_least_squares((sent, returned))
    assert torch.allclose(rec.V, torch.linalg.inv(W), atol=1e-8)


def test_normal_equations_lose_accuracy_on_ill_conditioned_logs():
    """Alg. 3 line 3 as written (pinv of Θ_outᵀΘ_out) squares the condition number."""
    data = _client(8, 24, 3)
    sent, returned = _messages(data, 9, _stable_lr(data, 0.02), 1, 3)
    star = least_squares_optimum(data)
    err = {m: float((reconstruct_least_squares((sent, returned), method=m).theta - star).norm() / star.norm())
           for m in ("lstsq", "normal")}
    assert err["lstsq"] < 1e-8
    assert err["normal"] > 10 * err["lstsq"]


def test_mini_batches_give_an_estimate_not_the_exact_model():
    data = _client(4, 64, 1)
    sent, returned = _messages(data, 40, _stable_lr(data, 0.3), 1, 1, batch_size=8)
    rec = reconstruct_least_squares((sent, returned))
    star = least_squares_optimum(data)
    assert 1e-6 < float((rec.theta - star).norm() / star.norm()) < 0.5
    assert rec.residual > 1e-8


# ---- clear errors -------------------------------------------------------------------------------
def test_too_few_messages():
    data = _client(5, 15, 0)
    sent, returned = _messages(data, 5, 0.01, 1, 0)  # d+1 = 6 needed
    with pytest.raises(ValueError, match=r"at least d\+1 = 6 observed rounds.*only 5"):
        reconstruct_least_squares((sent, returned))


def test_nan_messages_are_not_usable():
    data = _client(3, 15, 0)
    sent, returned = _messages(data, 5, 0.05, 1, 0)
    returned[1:3] = float("nan")
    with pytest.raises(ValueError, match=r"only 3 are usable \(2 contain NaN"):
        reconstruct_least_squares((sent, returned))


def test_singular_system_is_reported():
    data = _client(3, 15, 0)
    sent, returned = _messages(data, 3, 0.05, 1, 0)
    sent, returned = torch.cat([sent, sent[:1]]), torch.cat([returned, returned[:1]])  # a repeated round
    with pytest.raises(ValueError, match="singular"):
        reconstruct_least_squares((sent, returned))
    rec = reconstruct_least_squares((sent, returned), on_singular="min_norm")
    assert torch.isfinite(rec.theta).all()


def test_bad_inputs():
    with pytest.raises(ValueError, match="same shape"):
        reconstruct_least_squares((torch.zeros(5, 3), torch.zeros(5, 4)))
    with pytest.raises(TypeError, match="ClientMessages"):
        reconstruct_least_squares(torch.zeros(5, 3))
    with pytest.raises(ValueError, match="subset must be"):
        reconstruct_least_squares((torch.randn(5, 2), torch.randn(5, 2)), subset="worst")
    with pytest.raises(ValueError, match="size must be at least"):
        select_messages(torch.randn(10, 4), size=3)


# ---- subset selection ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(25))
def test_selection_finds_the_brute_force_optimum_on_small_logs(seed):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(9, 4, generator=g, dtype=torch.float64) * 3 * torch.rand(9, 1, generator=g, dtype=torch.float64)
    A[:, -1] = 1.0
    subsets = torch.tensor(list(itertools.combinations(range(9), 4)))
    best = condition_numbers(A, subsets).min().item()
    sel = select_messages(A, time_budget=2.0)
    assert sel.cond <= best * (1 + 1e-9)
    assert sel.indices.tolist() == sorted(set(sel.indices.tolist())) and sel.indices.numel() == 4
    assert math.isclose(condition_number(A[sel.indices]), sel.cond, rel_tol=1e-9)


def test_selection_beats_random_sampling_and_tall_subsets_work():
    run = run_fedavg(linear_regression(5), [_client(6, 64, s) for s in range(3)], rounds=80,
                     local=LocalSGD(lr=0.02, batch_size=8), seed=0)
    M = eavesdrop(run.log, 0)
    ours = select_messages(M, time_budget=3.0)
    rand = random_subset_search(M, n_subsets=20_000, seed=0)
    assert ours.cond <= rand.cond
    tall = select_messages(M, size=10, time_budget=2.0)
    assert tall.indices.numel() == 10
    assert math.isclose(condition_number(design_matrices(M)[1][tall.indices]), tall.cond, rel_tol=1e-9)


def test_random_search_is_reproducible_and_uses_distinct_rows():
    A = torch.randn(20, 4, dtype=torch.float64)
    a, b = random_subset_search(A, 3000, seed=3), random_subset_search(A, 3000, seed=3)
    assert torch.equal(a.indices, b.indices) and a.cond == b.cond and a.evaluated == 3000
    assert a.indices.unique().numel() == 4


# ---- Xu & Neglia Algo. 3 -------------------------------------------------------------------------
def test_learned_mapping_on_least_squares_gets_close_to_the_local_optimum():
    """On full-batch least squares the update map is affine (Xu eq. 5): an affine G fitted on
    normalised inputs recovers θ_c^*; the paper's ReLU network moves from the last returned
    model towards it."""
    data = _client(4, 40, 0)
    sent, returned = _messages(data, 30, _stable_lr(data, 0.5), 1, 0)
    star = least_squares_optimum(data)
    start = returned[-1]
    affine = learned_mapping_reconstruction((sent, returned), hidden=0, normalize_inputs=True, fit_steps=3000,
                                            fit_lr=1e-2, decode_optimizer="lbfgs", decode_steps=500)
    assert (affine.theta - star).norm() < 1e-3 * (start - star).norm()
    mlp = learned_mapping_reconstruction((sent, returned), fit_steps=1000, decode_steps=2000)
    assert (mlp.theta - star).norm() < (start - star).norm()
    assert mlp.relative_mapping_loss < 0.05
    assert mlp.predict(sent[:3]).shape == (3, 4) and mlp.predict(sent[0]).shape == (4,)
    assert torch.allclose(mlp.predict(sent[:3]), mlp.mapping(sent[:3].float()), atol=1e-6)


def test_learned_mapping_batch_and_errors():
    data = [_client(3, 20, s) for s in range(3)]
    msgs = [_messages(c, 10, 0.05, 1, s) for s, c in enumerate(data)]
    res = learned_mapping_reconstruction_batch(msgs, hidden=16, fit_steps=50, decode_steps=20)
    assert len(res) == 3 and all(r.theta.shape == (3,) for r in res)
    assert [r.index for r in res] == [0, 1, 2]
    with pytest.raises(ValueError, match="same shape"):
        learned_mapping_reconstruction_batch([msgs[0], (msgs[1][0][:5], msgs[1][1][:5])])
    with pytest.raises(ValueError, match="at least 2"):
        learned_mapping_reconstruction((msgs[0][0][:1], msgs[0][1][:1]))
    with pytest.raises(ValueError, match="decode_optimizer"):
        learned_mapping_reconstruction(msgs[0], hidden=4, fit_steps=1, decode_optimizer="sgd")
