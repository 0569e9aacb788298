"""Reliability: no silent NaN, honest least-squares diagnostics, data integrity, a
message log that stores each model once (in memory or on disk), chunked AIA candidates, and
experiment commands that exit non-zero on bad arguments."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from flprivacy import ClientData, LocalSGD, eavesdrop, linear_regression, lenet5, mlp, run_fedavg
from flprivacy.attacks.active import local_sgd_many, simulate_adam_active
from flprivacy.attacks.model_based_aia import candidate_losses, model_based_aia
from flprivacy.data.attributes import SensitiveAttribute
from flprivacy.attacks.inversion import lemma1_prediction, restore_label_counts
from flprivacy.attacks.reconstruction import random_subset_search, reconstruct_least_squares
from flprivacy.federation import n_local_steps
from flprivacy.metrics import quality
from flprivacy.threats import SendBack
from flprivacy.validation import NonFiniteError, as_tensor, check_positive


def ls_clients(n_clients=3, n=12, p=3, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_clients):
        X = scale * torch.randn(n, p, generator=g, dtype=torch.float64)
        out.append(ClientData(X, X.sum(1) + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)))
    return out


# ---- no silent NaN ------------------------------------------------------------------------------------
def test_diverging_learning_rate_raises_naming_round_client_and_cause():
    # gradient descent on ||Xθ - y||²/n diverges once lr > n / λ_max(XᵀX); lr = 100 is far beyond for these data
    clients = ls_clients()
    with pytest.raises(NonFiniteError, match=r"round \d+, client \d+.*learning rate"):
        run_fedavg(linear_regression(3), clients, rounds=50, local=LocalSGD(lr=100.0, epochs=5), seed=0)


def test_divergence_warning_fires_once_at_the_first_round_past_1e8():
    """run_fedavg warns (DivergenceWarning) at the first round t whose new global model θ^{t+1}
    has a norm above 1e8 · max(‖θ^0‖, 1) (validation.DIVERGENCE_FACTOR's documented value), and
    only then. lr = 1 on these least-squares clients is beyond 2/λ_max: the norm grows about
    3x a round, so it crosses 1e8 well inside 40 rounds and stays finite (float64)."""
    from flprivacy.validation import DivergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fl = run_fedavg(linear_regression(3), ls_clients(2), rounds=40, local=LocalSGD(lr=1.0), seed=0)
    norms = fl.log.global_trajectory().norm(dim=1)
    assert torch.isfinite(norms).all()
    past = (norms[1:] > 1e8 * max(float(norms[0]), 1.0)).nonzero()
    assert len(past) > 0, "the run did not diverge: the test's premise fails"
    first = int(past[0])
    mine = [w for w in caught if issubclass(w.category, DivergenceWarning)]
    assert len(mine) == 1 and str(mine[0].message).startswith(f"run_fedavg: round {first}:")
    assert "lr=1.0" in str(mine[0].message)


def test_local_sgd_itself_raises_on_divergence():
    from flprivacy.federation import local_sgd

    c = ls_clients(1)[0]
    model = linear_regression(3)
    with pytest.raises(NonFiniteError, match="learning rate"):
        local_sgd(model, model.init_params(0), c.X, c.y, lr=1e3, epochs=400)


def test_a_custom_trainer_returning_nan_is_caught_with_round_and_client():
    def broken(model, theta, data, generator):  # any LocalTrainer, not only LocalSGD
        return theta * math.nan if data.n == 12 and theta.abs().sum() > 0 else theta

    clients = ls_clients(2)
    with pytest.raises(NonFiniteError, match=r"round 0, client 0: the returned model is non-finite"):
        run_fedavg(linear_regression(3), clients, rounds=2, local=broken, seed=0)


def test_server_learning_rate_divergence_is_named():
    clients = ls_clients()
    with pytest.raises(NonFiniteError, match="server_lr"):
        run_fedavg(linear_regression(3), clients, rounds=400, local=LocalSGD(lr=0.05), server_lr=1e150, seed=0)


def test_non_finite_data_and_settings_are_rejected_before_training():
    clients = ls_clients()
    X = clients[1].X.clone()
    X[0, 0] = math.nan
    with pytest.raises(NonFiniteError, match="X"):
        ClientData(X, clients[1].y)
    with pytest.raises(ValueError, match="lr"):
        LocalSGD(lr=math.nan)
    with pytest.raises(ValueError, match="seed"):
        run_fedavg(linear_regression(3), clients, rounds=1, local=LocalSGD(lr=0.1), seed=-1)
    with pytest.raises(ValueError, match="server_lr"):
        run_fedavg(linear_regression(3), clients, rounds=1, local=LocalSGD(lr=0.1), server_lr=0.0)
    with pytest.raises(ValueError, match="clients\\[0\\].X does not fit"):
        run_fedavg(linear_regression(5), clients, rounds=1, local=LocalSGD(lr=0.1))


def test_model_based_aia_on_a_nan_model_raises_instead_of_choosing_candidate_0():
    model = linear_regression(3)
    X = torch.tensor([[0.1, 0.2, 1.0], [0.3, -0.1, 0.0]], dtype=torch.float64)
    y = torch.tensor([1.0, 0.0], dtype=torch.float64)
    theta = torch.full((4,), math.nan, dtype=torch.float64)
    with pytest.raises(NonFiniteError, match="theta"):
        model_based_aia(model, theta, X, y, [2], [[0.0], [1.0]])


def test_label_count_restoration_never_returns_absurd_counts():
    model = lenet5(1, 3, image_size=16)
    theta = model.init_params(0)
    update = torch.zeros_like(theta)
    update[0] = math.nan
    with pytest.raises(NonFiniteError, match="update"):
        restore_label_counts(model, theta, update, 4, lr=0.1, image_shape=(1, 16, 16))
    counts = restore_label_counts(model, theta, torch.zeros_like(theta), 4, lr=0.1, image_shape=(1, 16, 16),
                                  generator=torch.Generator().manual_seed(0))
    assert int(counts.sum()) == 4 and bool((counts >= 0).all())


# ---- boundary conversions ----------------------------------------------------------------------------
def test_float32_or_numpy_theta_on_a_float64_model_is_converted():
    model = linear_regression(3)
    X = torch.randn(5, 3, dtype=torch.float64)
    theta = model.init_params(0)
    ref = model.forward(theta, X)
    torch.testing.assert_close(model.forward(theta.float(), X), ref, rtol=1e-6, atol=1e-6)  # float32 rounding
    torch.testing.assert_close(model.forward(theta.numpy(), X.numpy()), ref)
    with pytest.raises(ValueError, match=r"X of shape \(5, 4\).*\(n, 3\)"):
        model.forward(theta, torch.randn(5, 4))


def test_accuracy_accepts_a_column_of_labels():
    model = mlp(3, hidden=4, n_outputs=3, loss="cross_entropy")
    X = torch.randn(30, 3, generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, 3, (30,), generator=torch.Generator().manual_seed(1))
    theta = model.init_params(0)
    assert model.accuracy(theta, X, y.view(-1, 1)) == model.accuracy(theta, X, y)  # not an (n, n) comparison
    assert 0 <= model.accuracy(theta, X, y) <= 1


def test_divisions_by_zero_are_clear_errors():
    with pytest.raises(ValueError, match="batch_size"):
        n_local_steps(10, batch_size=0)
    with pytest.raises(ValueError, match="n_samples"):
        n_local_steps(0)
    with pytest.raises(ValueError, match="n_images"):
        lemma1_prediction(torch.ones(3), lr=0.1, steps=2, n_clients=3, n_images=0)
    from flprivacy.bounds import lambda_min_W, theorem1_bound
    with pytest.raises(ValueError, match="S_c"):
        lambda_min_W(0.1, 1.0, 0, 3)
    with pytest.raises(ValueError, match="lam"):
        theorem1_bound(0.1, 1.0, 3, 1, 10, 5, 10, math.nan, 0.1)


def test_parallel_paths_check_like_their_siblings():
    from flprivacy.stack import LinearStack
    from flprivacy.config import generator

    model, clients = linear_regression(3), ls_clients()
    starts = [model.init_params(0)] * 3
    with pytest.raises(ValueError, match="lr"):
        simulate_adam_active(model, clients, starts, LocalSGD(lr=0.1), 2, torch.tensor([-1.0]), torch.tensor([0.9]),
                             torch.tensor([0.99]))
    with pytest.raises(ValueError, match="seed"):
        simulate_adam_active(model, clients, starts, LocalSGD(lr=0.1), 2, torch.tensor([0.1]), torch.tensor([0.9]),
                             torch.tensor([0.99]), seed=-1)
    with pytest.raises(ValueError, match="thetas"):
        local_sgd_many(LinearStack(model), [torch.zeros(2, 4, dtype=torch.float64)] * 2, clients, LocalSGD(lr=0.1),
                       [generator(c) for c in range(3)])
    # random_subset_search rejects a singular Θ_out as select_messages does
    sent = torch.randn(10, 4, dtype=torch.float64)
    returned = sent.clone()
    returned[:, 0] -= 1.0  # every pseudo-gradient is e_1: rank 2 < d+1 = 5
    with pytest.raises(ValueError, match="singular"):
        random_subset_search((sent, returned), n_subsets=10)


# ---- least squares: an honest diagnostic -------------------------------------------------------------
def _ls_messages(fraction: float, n_msgs: int = 12, d: int = 5, seed: int = 0):
    from flprivacy.federation import LeastSquaresSGD
    from flprivacy.models import design
    from flprivacy.optimum import least_squares_optimum

    g = torch.Generator().manual_seed(seed)
    X = torch.randn(40, d - 1, generator=g, dtype=torch.float64) + 1.0
    data = ClientData(X, X.sum(1) + 0.3 * torch.randn(40, generator=g, dtype=torch.float64))
    X1 = design(data.X)
    lr = fraction * data.n / (2 * torch.linalg.eigvalsh(X1.T @ X1)[-1].item())
    sent = torch.randn(n_msgs, d, generator=g, dtype=torch.float64)
    local, model = LeastSquaresSGD(lr=lr, epochs=1), linear_regression(d - 1)
    returned = torch.stack([local(model, s, data, g) for s in sent])
    return sent, returned, least_squares_optimum(data)


def test_least_squares_reports_the_condition_number_error_estimate():
    sent, returned, star = _ls_messages(0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # well conditioned in float64: no warning
        rec = reconstruct_least_squares((sent, returned))
    eps = torch.finfo(torch.float64).eps
    assert rec.error_estimate == pytest.approx(2 * rec.cond * eps)  # cond·ε_msg + cond·ε_64, both float64
    # the perturbation bound: the actual error is within a modest multiple of cond·ε (here also << 1e-6)
    assert float((rec.theta - star).norm() / star.norm()) <= 100 * rec.error_estimate + 1e-12
    rec_n = reconstruct_least_squares((sent, returned), method="normal")
    assert rec_n.error_estimate == pytest.approx(rec.cond * eps + rec_n.cond**2 * eps)


def test_float32_messages_of_an_ill_conditioned_system_warn():
    sent, returned, star = _ls_messages(1e-4)  # tiny local steps: pseudo-gradients ~1e-4 of the models, cond(Θ_out) large
    with pytest.warns(RuntimeWarning, match="meaningless"):
        rec = reconstruct_least_squares((sent.float(), returned.float()), subset="best")
    assert rec.rounds_used.numel() == sent.shape[1] + 1  # square: the residual is ~0 by construction...
    assert rec.residual < 1e-6
    # ...but the honest diagnostic is cond·ε32, above the warning threshold 1e-2
    assert rec.error_estimate >= rec.cond * torch.finfo(torch.float32).eps > 1e-2


# ---- metrics -------------------------------------------------------------------------------------------
def test_identical_0_255_images_score_ssim_1():
    img = torch.randint(0, 256, (2, 1, 12, 12), generator=torch.Generator().manual_seed(0)).double()
    with pytest.warns(UserWarning, match="data_range=255"):
        q = quality(img, img)
    assert q.summary()["ssim"] == pytest.approx(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q255 = quality(img, img, data_range=255)
    assert q255.summary()["ssim"] == pytest.approx(1.0) and q255.summary()["mse"] == 0


# ---- the message log ---------------------------------------------------------------------------------
def test_the_log_stores_every_model_once_and_reads_the_same_from_disk(tmp_path):
    clients = ls_clients(4)
    kw = dict(rounds=6, local=LocalSGD(lr=0.05), seed=3, clients_per_round=3)
    mem = run_fedavg(linear_regression(3), clients, **kw)
    disk = run_fedavg(linear_regression(3), clients, log_dir=tmp_path, **kw)
    T, m = 6, 3
    assert mem.log.stored_models == disk.log.stored_models == (T + 1) + T * m  # globals + replies; sent = global
    assert list(tmp_path.iterdir()), "the disk log writes its models under log_dir"
    torch.testing.assert_close(mem.theta, disk.theta, rtol=0, atol=0)
    for c in range(4):
        a, b = eavesdrop(mem.log, c), eavesdrop(disk.log, c)
        assert torch.equal(a.rounds, b.rounds) and torch.equal(a.sent, b.sent) and torch.equal(a.returned, b.returned)
        for i, t in enumerate(a.rounds.tolist()):
            assert torch.equal(a.sent[i], mem.log.global_models[t])
    assert torch.equal(mem.log.global_trajectory(), disk.log.global_trajectory())
    assert torch.equal(mem.log.last_returned(0), disk.log.last_returned(0))


def test_forged_sent_models_are_stored(tmp_path):
    clients = ls_clients(2)
    for log_dir in (None, tmp_path):
        run = run_fedavg(linear_regression(3), clients, rounds=4, local=LocalSGD(lr=0.05), seed=0,
                         adversary=SendBack(0, [2, 3]), log_dir=log_dir)
        ex = run.log.exchange(3, 0)
        assert ex.forged and torch.equal(ex.sent, run.log.exchange(2, 0).returned)
        assert run.log.stored_models == 5 + 4 * 2 + 2  # globals, replies, the two forged models


# ---- model-based AIA in chunks -------------------------------------------------------------------------
def test_candidate_chunks_give_the_same_losses():
    g = torch.Generator().manual_seed(0)
    K, n, p = 40, 25, 45
    X = torch.zeros(n, p, dtype=torch.float64)
    X[:, :5] = torch.randn(n, 5, generator=g, dtype=torch.float64)
    X[torch.arange(n), 5 + torch.randint(0, K, (n,), generator=g)] = 1.0
    model = mlp(p, hidden=6, dtype=torch.float64)
    attr = SensitiveAttribute.one_hot(range(5, 5 + K))
    y = torch.randn(n, generator=g, dtype=torch.float64)
    theta = model.init_params(0)
    full = candidate_losses(model, theta, X, y, attr, max_elements=10**9)
    small = candidate_losses(model, theta, X, y, attr, max_elements=n * p)  # one candidate per chunk
    # the same numbers, up to the summation order of batched products: a few ε64 relative
    torch.testing.assert_close(small, full, rtol=1e-10, atol=1e-12)
    assert torch.equal(small.argmin(0), full.argmin(0))
    thetas = torch.stack([theta, model.init_params(1)])
    torch.testing.assert_close(candidate_losses(model, thetas, X, y, attr, max_elements=3 * n * p),
                               candidate_losses(model, thetas, X, y, attr, max_elements=10**9), rtol=1e-10, atol=1e-12)


# ---- data integrity ------------------------------------------------------------------------------------
def _write_pums(path, n, st=22):
    g = np.random.default_rng(0)
    cols = ["AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "WKHP", "SEX", "RAC1P"]
    df = pd.DataFrame({"RT": "P", "ST": st, "PWGTP": g.integers(1, 60, n), "PINCP": g.integers(0, 90000, n),
                       **{c: g.integers(1, 9, n) for c in cols}})
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)


def test_a_made_up_acs_file_is_rejected(empty_data_dir, offline):
    from flprivacy.data.tabular import acs_person_file, load_acs_income

    path = acs_person_file("LA")
    _write_pums(path, 60)
    with pytest.raises(ValueError, match=r"60 rows.*fetch-acs"):
        load_acs_income(["LA"])
    _write_pums(path, 3000, st=48)  # Texas rows in Louisiana's file
    with pytest.raises(ValueError, match="ST"):
        load_acs_income(["LA"])
    pd.DataFrame({"a": range(3000)}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="lacks the PUMS columns"):
        load_acs_income(["LA"])


def test_archives_are_verified_by_sha256(tmp_path):
    from flprivacy.data.files import REGISTRY, ChecksumError, verify

    assert all(f.checksum.startswith("sha256:") for f in REGISTRY.values())
    f = tmp_path / "x.bin"
    f.write_bytes(b"not the archive")
    with pytest.raises(ChecksumError):
        verify(f, REGISTRY["cifar10/cifar-10-python.tar.gz"].checksum)


def test_dead_mirrors_fail_fast(tmp_path, monkeypatch):
    from flprivacy.data import files

    monkeypatch.setattr(files, "CONNECT_TIMEOUT", 0.3)
    dead = files.RemoteFile("x/y.bin", "", ("http://10.255.255.1/y.bin", "http://127.0.0.1:9/y.bin"))
    t0 = time.perf_counter()
    with pytest.raises(files.DataNotFoundError, match="unreachable"):
        files.fetch(dead, root=tmp_path, allow_download=True)
    assert time.perf_counter() - t0 < 5  # two connect checks of 0.3 s, not two 30-60 s read timeouts


def test_load_mnist_rejects_a_negative_count():
    from flprivacy.data import load_mnist

    with pytest.raises(ValueError, match="n must be a positive"):
        load_mnist(n=-5)


# ---- experiment commands ------------------------------------------------------------------------------
def test_experiment_commands_exit_non_zero_on_bad_arguments(empty_data_dir, offline):
    from flbook.experiments import part2_toy, part3_fig1, part3_table1, part4_factors, result_path

    for main, argv in ((part2_toy.main, ["--seeds", "-1"]), (part2_toy.main, ["--seeds", "0"]),
                       (part3_fig1.main, ["--seeds", "-1"]),
                       (part3_table1.main, ["--task", "Income-L", "--source", "acs"])):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code != 0, argv
    with pytest.raises(ValueError, match="nonexistent"):
        part4_factors.main(groups=["nonexistent"])
    assert result_path("anything", "quick").name == "anything_quick.json"  # a quick run never writes <name>.json


def test_validation_helpers():
    assert torch.equal(as_tensor("X", np.arange(3.0)), torch.arange(3.0, dtype=torch.float64))
    with pytest.raises(TypeError, match="X"):
        as_tensor("X", "abc")
    with pytest.raises(ValueError, match="lr"):
        check_positive("lr", math.inf)
