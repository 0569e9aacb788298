"""Xu & Neglia 2021, Fig. 1: the learned-mapping attack on Adult (education ≥ bachelor, PhDs
split by age over clients 0-2), logistic regression, one local step, η = 0.001.

    FLPRIVACY_SCALE=paper python -m flbook.experiments.part2_adult

Records the rows kept ("at least bachelor") and the PhD clients' rows (before the train/test
split), which the paper reports too (:data:`flbook.ledger.xu_neglia.PAPER_ADULT`). Panels:
(a) relative distances between the clients' local optima; (b) the mapping loss (eq. 6)
when attacking clients 0-2, against the batch size; (c) test accuracy, on the attacked client's
held-out data, of the decoded model and of the last model she returned. Settings:
``SETTINGS["adult_fig1"]``. Writes ``book/results/part2_adult_fig1.json``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn
from tqdm import tqdm

from flprivacy import FLModel, LocalSGD, eavesdrop, run_fedavg
from flprivacy.attacks.learned_mapping import learned_mapping_reconstruction_batch
from flprivacy.data import encode, load_adult
from flprivacy.data.splits import train_val_split, xu_adult_split
from flprivacy.federation import ClientData
from . import save_result, seeds_command
from ..papers.xu_neglia import PAPER_ADULT
from flprivacy.optimum import regularised_optimum
from .part2_common import SETTINGS



def binary_logistic(n_features: int) -> FLModel:
    """Logistic regression with one logit and the binary cross-entropy (d = n_features + 1)."""
    return FLModel(nn.Linear(n_features, 1), "bce")


def adult_clients(seed: int = 0) -> tuple[list[ClientData], list[str]]:
    """The ten Adult clients of Xu & Neglia (train/test split per client) and the feature names."""
    s = SETTINGS["adult_fig1"]
    df = load_adult("all")
    parts = xu_adult_split(df, s["n_clients"], s["age_cuts"], seed=0)
    f = s["features"]
    table = df.drop(columns=list(f["drop"]))
    enc = encode(table, "income", categorical=f["categorical"], binary=f["binary"], standardize=f["standardize"],
                 name="adult")
    clients = [train_val_split(enc.X[idx], enc.y[idx], s["test_fraction"], seed=seed + 1 + c)
               for c, idx in enumerate(parts)]
    return clients, enc.feature_names


def relative_distances(optima: Sequence[Tensor]) -> np.ndarray:
    """2 ||θ_i - θ_j|| / (||θ_i|| + ||θ_j||) for every pair of local optima."""
    T = torch.stack(list(optima))
    diff = torch.cdist(T, T)
    norms = T.norm(dim=1)
    return (2 * diff / (norms[:, None] + norms[None, :])).numpy()


def run_fig1(seeds: Sequence[int], batch_sizes: Sequence[int] | None = None, progress: bool = False) -> dict:
    """Panels (a)-(c) of Fig. 1 for the given seeds; one record per (seed, B, attacked client)."""
    s = SETTINGS["adult_fig1"]
    clients, names = adult_clients(0)
    parts = xu_adult_split(load_adult("all"), s["n_clients"], s["age_cuts"], seed=0)
    model = binary_logistic(clients[0].X.shape[1])
    lo = s["local_optimum"]
    optima = [regularised_optimum(model, c, lo["l2"], lo["lbfgs_iterations"]) for c in clients]
    records = []
    jobs = [(seed, B) for seed in seeds for B in (batch_sizes or s["batch_sizes"])]
    for seed, B in tqdm(jobs, desc="Adult runs", disable=not progress):
        run = run_fedavg(model, clients, rounds=s["rounds"],
                         local=LocalSGD(lr=s["lr"], steps=s["local_steps"], batch_size=B), seed=seed)
        msgs = [eavesdrop(run.log, c) for c in s["attacked_clients"]]
        res = learned_mapping_reconstruction_batch(msgs, seed=seed, **s["mapping"])
        for c, r, M in zip(s["attacked_clients"], res, msgs):
            data = clients[c]
            records.append({
                "seed": seed, "B": B, "client": c, "mapping_loss": r.mapping_loss,
                "relative_mapping_loss": r.relative_mapping_loss,
                "test_acc_decoded": model.accuracy(r.theta, data.X_val, data.y_val),
                "test_acc_last_returned": model.accuracy(M.returned[-1], data.X_val, data.y_val),
                "test_acc_local_optimum": model.accuracy(optima[c], data.X_val, data.y_val),
                "train_acc_decoded": model.accuracy(r.theta, data.X, data.y),
                "train_acc_last_returned": model.accuracy(M.returned[-1], data.X, data.y),
            })
    return {"sizes": [[c.n, int(c.X_val.shape[0])] for c in clients], "n_rows": int(sum(len(p) for p in parts)),
            "phd_rows": [len(p) for p in parts[:3]], "d": model.dim, "features": names,
            "optimum_distances": relative_distances(optima).tolist(), "records": records}


def main(argv: Sequence[str] | None = None) -> None:
    _, n = seeds_command("Xu & Neglia Fig. 1 on Adult", argv, quick=2, paper=SETTINGS["adult_fig1"]["seeds"])
    out = run_fig1(range(n), progress=True)
    path = save_result("part2_adult_fig1", {"settings": SETTINGS["adult_fig1"], "paper": PAPER_ADULT, "seeds": n, **out},
                       seeds=range(n))
    print("wrote", path)


if __name__ == "__main__":
    main()
