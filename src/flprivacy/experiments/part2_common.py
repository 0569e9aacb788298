"""Shared pieces of Part II's experiments: the papers' settings in one place, and a fast local
update for least squares.

``SETTINGS`` lists, per experiment, the values the papers give (and, marked ``"ours"``, the ones
they leave open, which we had to choose). The experiment modules and the chapters read them from
here; the scale (``FLPRIVACY_SCALE``) only changes seeds and repetition counts. The papers'
reported numbers live in the ledger (:mod:`flprivacy.ledger.xu_neglia`,
:mod:`flprivacy.ledger.diana_reconstruction`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..federation import ClientData, LocalSGD, batch_schedule
from ..models import FLModel


@dataclass(frozen=True)
class LeastSquaresSGD(LocalSGD):
    """FedAvg's local update (Diana Alg. 2) for least-squares linear regression, in closed form.

    Same hyper-parameters, mini-batches and random stream as :class:`flprivacy.LocalSGD` (both
    follow :func:`flprivacy.federation.batch_schedule`), but the mini-batch gradient
    (2/``|b|``) X_bᵀ(X_b θ - y_b) is computed directly instead of through autograd: about ten times
    faster for the thousands of short runs of Part II. ``tests/test_part2_common.py`` checks it
    against :class:`~flprivacy.LocalSGD` to 1e-12. θ = (w, b) with the bias last, as
    :func:`flprivacy.linear_regression`.
    """

    def __call__(self, model: FLModel, theta: Tensor, data: ClientData, generator: torch.Generator) -> Tensor:
        X1, y = design(data.X.to(theta.dtype)), data.y.to(theta.dtype)
        if X1.shape[1] != theta.numel():
            raise ValueError(f"LeastSquaresSGD: θ has {theta.numel()} entries but the data need {X1.shape[1]} "
                             "(features plus the intercept, last).")
        theta = theta.detach().clone()
        for idx in batch_schedule(X1.shape[0], epochs=self.epochs, batch_size=self.batch_size, steps=self.steps,
                                  shuffle=self.shuffle, generator=generator):
            Xb, yb = (X1, y) if idx is None else (X1[idx], y[idx])
            theta = theta - self.lr * (2.0 / Xb.shape[0]) * (Xb.T @ (Xb @ theta - yb))
        return theta


def design(X: Tensor) -> Tensor:
    """Design matrix with the intercept column last, matching θ = (w, b)."""
    return torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype)], dim=1)


def local_optimum(data: ClientData) -> Tensor:
    """θ_c^* = argmin ||X θ - y||² of a least-squares client (intercept last), by QR least squares."""
    X1 = design(data.X.to(torch.float64))
    return torch.linalg.lstsq(X1, data.y.to(torch.float64).unsqueeze(1)).solution.squeeze(1)


# ---- the papers' settings, per experiment ------------------------------------------------------
# Values the paper states are plain; values it leaves open are chosen by us and listed in "ours".
SETTINGS: dict[str, dict] = {
    # Diana et al. 2025, App. B.3 and Fig. 2
    "toy_fig2": {
        "n_clients": 2, "n_samples": 1024, "n_uniform": 9, "noise_std": 0.1, "d": 11,
        "epochs": 1, "batch_sizes": (64, 256, 1024), "rounds": 300, "seeds": 5,
        "observe_every": 20, "last_observed_round": 220,  # T = {0, 20, ..., 220}: d+1 = 12 messages
        "lrs": (0.01, 0.1),
        "ours": {"lrs": "not given in the paper; we run two", "noise_std": "N(0, 0.1) read as a standard deviation",
                 "reading": "one θ* per client, or one shared θ*: both run"},
    },
    # Diana et al. 2025, Theorem 1 (App. A.1): a controlled check of its dependences (no paper experiment)
    "theorem1": {
        "S_c": 256, "n_features": 5, "noise_std": 0.5, "delta": 0.1, "spread": 1.0, "epochs": 1,
        "sweeps": {
            "n_c": {"values": (12, 24, 48, 96, 192), "B": 32, "lr": 0.03},
            "B": {"values": (8, 16, 32, 64, 128, 256), "n_c": 48, "lr": 0.01},
            "lr": {"values": (0.003, 0.01, 0.03, 0.1, 0.2), "n_c": 48, "B": (8, 128)},
        },
        "ours": "all of it: the paper has no experiment for Theorem 1",
    },
    # Xu & Neglia 2021, §4 and Table 1
    "leaf_table1": {
        "sizes": (280, 184, 1536, 256, 208), "n_features": 10, "n_classes": 2, "n_clusters": 5,
        "batch_size": 256, "lr": 0.01, "local_steps": (1, 5, 10), "seeds": 10,
        "rounds": 50, "weighting": "size",
        "mapping": {"hidden": 1000, "fit_steps": 1000, "fit_lr": 1e-3, "decode_steps": 2000, "decode_lr": 1e-2},
        "ours": {"rounds": "not given in the paper", "weighting": "not given (FedAvg's p_c ∝ S_c)",
                 "mapping": "architecture and optimiser from the paper; step counts and learning rates ours",
                 "data": "LEAF's generator, a fresh draw per seed (the paper's draw is not published)"},
    },
    # Xu & Neglia 2021, §4 and Fig. 1
    "adult_fig1": {
        "n_clients": 10, "age_cuts": (38, 52), "lr": 0.001, "local_steps": 1, "seeds": 10,
        "attacked_clients": (0, 1, 2),
        "batch_sizes": (16, 32, 64, 128, 256), "rounds": 100, "test_fraction": 0.2,
        "mapping": {"hidden": 1000, "fit_steps": 1000, "fit_lr": 1e-3, "decode_steps": 2000, "decode_lr": 1e-2},
        "features": {"drop": ("fnlwgt", "education", "native-country"),
                     "categorical": ("workclass", "marital-status", "occupation", "relationship", "race"),
                     "binary": {"sex": "Male"},
                     "standardize": ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")},
        "local_optimum": {"l2": 1e-3, "lbfgs_iterations": 200},
        "ours": {"batch_sizes": "Fig. 1b's values are not listed; we use these", "rounds": "not given",
                 "test_fraction": "not given", "features": "not given; native-country dropped to keep d small",
                 "mapping": "step counts and learning rates not given",
                 "local_optimum": "a small L2 term: the small PhD clients are linearly separable"},
    },
}
