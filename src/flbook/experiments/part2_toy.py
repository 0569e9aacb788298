"""Diana et al. 2025, Fig. 2: passive reconstruction (Alg. 3) on the toy least-squares federation,
and the attribute inference it enables, against the batch size.

    FLPRIVACY_SCALE=paper python -m flbook.experiments.part2_toy

Two clients with 1024 samples each (nine U[0,1) features, one Bernoulli(1/2) sensitive feature,
intercept: d = 11), FedAvg with one local epoch, batch size B ∈ {64, 256, 1024}, 300 rounds; the
eavesdropper sees only rounds 0, 20, ..., 220 (d+1 = 12 messages) of each client and runs Alg. 3,
then the model-based AIA (eq. 3) on the reconstructed model. Settings: ``SETTINGS["toy_fig2"]``
in :mod:`.part2_common`. Writes ``book/results/part2_toy_fig2.json``.

App. B.3 can be read two ways, and the result depends on it: each client draws its *own*
θ* ~ N(0, I) (``reading="per-client"``, as :func:`flprivacy.data.toy_least_squares` does), or one
θ* generates both clients' labels (``reading="shared"``). Both are run.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from tqdm import tqdm

from flprivacy import ClientData, eavesdrop, linear_regression, run_fedavg
from flprivacy.attacks.model_based_aia import aia_accuracy, model_based_aia
from flprivacy.attacks.reconstruction import reconstruct_least_squares
from flprivacy.config import child_seed
from flprivacy.data import toy_least_squares
from . import save_result, seeds_command
from .part2_common import SETTINGS
from flprivacy.federation import LeastSquaresSGD
from flprivacy.optimum import least_squares_optimum

READINGS = ("per-client", "shared")


def toy_clients(seed: int, reading: str = "per-client") -> list[ClientData]:
    """The toy federation of App. B.3. ``"per-client"``: :func:`flprivacy.data.toy_least_squares`
    (each client its own θ*); ``"shared"``: the same features, labels y = x θ* + ε from one
    θ* ~ N(0, I_11) for both clients (noise standard deviation 0.1)."""
    s = SETTINGS["toy_fig2"]
    fed = toy_least_squares(n_clients=s["n_clients"], n_samples=s["n_samples"], noise_std=s["noise_std"], seed=seed)
    if reading == "per-client":
        return fed.clients
    if reading != "shared":
        raise ValueError(f"reading must be one of {READINGS}, got {reading!r}.")
    rng = np.random.default_rng(child_seed(seed, 7))
    theta = torch.tensor(rng.standard_normal(fed.clients[0].X.shape[1] + 1), dtype=torch.float64)
    out = []
    for c in fed.clients:
        noise = torch.tensor(rng.standard_normal(c.n), dtype=torch.float64) * s["noise_std"]
        out.append(ClientData(c.X, c.X @ theta[:-1] + theta[-1] + noise))
    return out


def run_one(seed: int, batch_size: int, lr: float, reading: str = "per-client") -> list[dict]:
    """One FedAvg run of the toy federation; attack every client. One record per client."""
    s = SETTINGS["toy_fig2"]
    clients = toy_clients(seed, reading)
    model = linear_regression(clients[0].X.shape[1])
    observed = list(range(0, s["last_observed_round"] + 1, s["observe_every"]))
    last = s["rounds"] - 1
    run = run_fedavg(model, clients, rounds=s["rounds"], local=LeastSquaresSGD(lr=lr, epochs=s["epochs"],
                                                                             batch_size=batch_size),
                     seed=seed, record_rounds=observed + [last])
    cand = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    col = clients[0].X.shape[1] - 1  # the Bernoulli feature
    out = []
    for c, data in enumerate(clients):
        star = least_squares_optimum(data)
        with warnings.catch_warnings():
            # at B = S_c the d+1 rounds of deterministic training are nearly collinear (App. B.3): the library's
            # rounding warning is expected there, and the record keeps cond(Θ_out) for each attack
            warnings.simplefilter("ignore", RuntimeWarning)
            rec = reconstruct_least_squares(eavesdrop(run.log, c, rounds=observed), on_singular="min_norm")
        truth = data.X[:, col].long()

        def aia(theta: torch.Tensor) -> float:
            return aia_accuracy(model_based_aia(model, theta, data.X, data.y, [col], cand), truth)

        out.append({
            "seed": seed, "B": batch_size, "lr": lr, "reading": reading, "client": c,
            "error": float((rec.theta - star).norm()), "relative_error": float((rec.theta - star).norm() / star.norm()),
            "cond": rec.cond, "aia_reconstructed": aia(rec.theta), "aia_local_optimum": aia(star),
            "aia_last_returned": aia(run.log.exchange(last, c).returned), "aia_final_global": aia(run.theta),
        })
    return out


def run_fig2(seeds: Sequence[int], batch_sizes: Sequence[int] | None = None, lrs: Sequence[float] | None = None,
             readings: Sequence[str] = READINGS, progress: bool = False) -> list[dict]:
    """All (reading, lr, B, seed) runs of Fig. 2; a flat list of per-client records."""
    s = SETTINGS["toy_fig2"]
    grid = list(itertools.product(readings, lrs or s["lrs"], batch_sizes or s["batch_sizes"], seeds))
    rows: list[dict] = []
    for reading, lr, B, seed in tqdm(grid, desc="toy runs", disable=not progress):
        rows += run_one(seed, B, lr, reading)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    _, n_seeds = seeds_command(__doc__.split("\n\n")[0], argv, quick=3, paper=SETTINGS["toy_fig2"]["seeds"])
    rows = run_fig2(range(n_seeds), progress=True)
    path = save_result("part2_toy_fig2", {"settings": SETTINGS["toy_fig2"], "seeds": n_seeds, "records": rows},
                       seeds=range(n_seeds))
    print("wrote", path)


if __name__ == "__main__":
    main()
