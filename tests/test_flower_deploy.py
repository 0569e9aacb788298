"""The book's federation on a real loopback Flower deployment (issue 25): flower-superlink, one
flower-supernode per client (each loading only its own partition), `flwr run deploy local`; the
log recorded by the ServerApp's RecordingStrategy equals run_fedavg's, and the attacks give the
same results on it. Every process started is killed by id (process group + descendants)."""

from __future__ import annotations

import shutil
import time

import pytest
import torch

flwr = pytest.importorskip("flwr", reason="Flower is an optional extra: pip install flprivacy[flower] "
                                          "(or -r requirements-flower.txt); `make install` installs it")
psutil = pytest.importorskip("psutil", reason="the deployment test checks for leftover processes with psutil")

from flprivacy import ClientData, LocalSGD, eavesdrop, linear_regression, run_fedavg  # noqa: E402
from flprivacy.attacks.model_based_aia import model_based_aia  # noqa: E402
from flprivacy.data.attributes import SensitiveAttribute  # noqa: E402
from flprivacy.attacks.reconstruction import reconstruct_least_squares  # noqa: E402
from flprivacy.flower_deploy import Deployment, deploy  # noqa: E402

from flprivacy.flower_deploy import _BIN  # noqa: E402

if not (_BIN / "flower-superlink").exists():
    pytest.skip("flower-superlink is not installed next to this Python", allow_module_level=True)

EPS64 = torch.finfo(torch.float64).eps
ROUNDS = 4  # Alg. 3 needs d+1 = 4 rounds for d = 3 parameters (2 features + bias); each round spawns
# one flwr-clientapp process per node (Flower's subprocess isolation), ~10 s a round on 2 shared cores


def _clients(seed: int = 4, sizes=(40, 35, 50), d: int = 2) -> list[ClientData]:
    """Least-squares clients; column d-1 is a binary sensitive attribute (as tests/test_flower.py)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        X = torch.randn(n, d, generator=g, dtype=torch.float64)
        X[:, d - 1] = (torch.rand(n, generator=g) < 0.5).double()
        w = torch.randn(d, generator=g, dtype=torch.float64)
        out.append(ClientData(X, X @ w + 0.5 + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)))
    return out


def _ours(workdir) -> list[int]:
    """Live processes whose FLWR_HOME is this test's (everything the deployment started)."""
    home = str(workdir / "flwr_home")
    out = []
    for p in psutil.process_iter():
        try:
            if p.status() != psutil.STATUS_ZOMBIE and p.environ().get("FLWR_HOME") == home:
                out.append(p.pid)
        except (psutil.Error, OSError):
            pass
    return out


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    clients, local = _clients(), LocalSGD(lr=0.05, epochs=2)
    work = tmp_path_factory.mktemp("deploy")
    fl = deploy(("linear_regression", (2,)), clients, rounds=ROUNDS, local=local, seed=0, timeout=100, workdir=work)
    time.sleep(0.5)
    return fl, clients, local, work


def test_deployment_leaves_no_process(deployed):
    fl, _, _, work = deployed
    assert _ours(work) == []
    assert fl.settings["commands"][0].startswith("flower-superlink --insecure")
    assert sum(c.startswith("flower-supernode") for c in fl.settings["commands"]) == 3


def test_deployment_log_equals_run_fedavg_log(deployed):
    """Full participation, same seed: Flower's node ids are mapped to clients by the partition-id
    each SuperNode reports (a `query` message), so the log is run_fedavg's up to the order of the
    aggregation's sums: ~(T+1)(n+2)ε max|θ| (see tests/test_flower.py::_tol)."""
    fl, clients, local, _ = deployed
    ref = run_fedavg(linear_regression(2), clients, rounds=ROUNDS, local=local, seed=0).log
    a, b = fl.log, ref
    tol = 4 * (ROUNDS + 1) * (len(clients) + 2) * EPS64 * max(1.0, float(b.global_trajectory().abs().max()))
    assert a.participants == b.participants and a.n_samples == b.n_samples and torch.equal(a.weights, b.weights)
    assert (a.global_trajectory() - b.global_trajectory()).abs().max() <= tol
    ea, eb = a.exchanges(), b.exchanges()
    assert [(e.round, e.client, e.forged) for e in ea] == [(e.round, e.client, e.forged) for e in eb]
    for x, y in zip(ea, eb):
        assert (x.sent - y.sent).abs().max() <= tol and (x.returned - y.returned).abs().max() <= tol


def test_attacks_on_the_deployment_log_match_the_in_process_log(deployed):
    """Alg. 3 (least squares on the eavesdropped exchanges) and the model-based AIA (eq. 3) give
    the same answers on the deployment's log as on run_fedavg's."""
    fl, clients, local, _ = deployed
    model = linear_regression(2)
    ref = run_fedavg(model, clients, rounds=ROUNDS, local=local, seed=0).log
    attr = SensitiveAttribute.binary(1)
    for c in range(len(clients)):
        rec, rec0 = reconstruct_least_squares(eavesdrop(fl.log, c)), reconstruct_least_squares(eavesdrop(ref, c))
        scale = float(rec0.theta.norm())
        # least squares amplifies the logs' rounding difference by at most cond(Θ_out) (rec.error_estimate ~ cond·ε)
        assert (rec.theta - rec0.theta).norm() / scale <= max(50 * (rec.error_estimate + rec0.error_estimate), 1e-12)
        X, y = clients[c].X, clients[c].y
        assert torch.equal(model_based_aia(model, rec.theta, X, y, attr.columns, attr.candidates),
                           model_based_aia(model, rec0.theta, X, y, attr.columns, attr.candidates))


def test_missing_superlink_is_a_clear_error_not_a_hang(tmp_path):
    """`flwr run` against a port where no SuperLink listens fails within seconds with Flower's
    'Connection to the SuperLink is unavailable'."""
    dep = Deployment(tmp_path)
    dep.write_connection()
    t0 = time.monotonic()
    r = dep.flwr_run(tmp_path / "spec.pt", tmp_path / "log.pt", timeout=60)
    assert r.returncode != 0 and "unavailable" in (r.stdout + r.stderr)
    assert time.monotonic() - t0 < 60
