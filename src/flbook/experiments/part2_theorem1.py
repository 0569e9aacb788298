"""Theorem 1 of Diana et al. 2025 measured: the error of Alg. 3 under mini-batch updates, against
the number of messages n_c, the batch size B and the learning rate η, next to the bound.

    FLPRIVACY_SCALE=paper python -m flbook.experiments.part2_theorem1

The theorem assumes (Assumption 3) that the models sent to the client do not depend on her
earlier gradient noise; we make it hold exactly by letting the server send models drawn at
random around a reference point (a man-in-the-middle server, which the appendix names as the
case where the assumption is met). The client runs FedAvg's local update (Alg. 2, reshuffled
mini-batches). For each trial we record the reconstruction error and the right-hand side of
eq. (18) computed with the measured λ = λ_min(Θ_outᵀΘ_out/n_c), λ_min(W) and a plug-in σ.
Writes ``book/results/part2_theorem1.json``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from tqdm import tqdm

from flprivacy.attacks.reconstruction import design_matrices, reconstruct_least_squares
from flprivacy.bounds import lambda_min_W, local_steps, theorem1_bound
from flprivacy.config import child_seed, generator
from flprivacy.federation import ClientData
from . import save_result, seeds_command
from .part2_common import SETTINGS
from flprivacy.models import design
from flprivacy.optimum import least_squares_optimum



def make_client(S_c: int = 256, n_features: int = 5, noise_std: float = 0.5, seed: int = 0) -> ClientData:
    """A least-squares client: U[0,1) features, y = xθ + b + ε."""
    g = generator(seed)
    X = torch.rand(S_c, n_features, generator=g, dtype=torch.float64)
    w = torch.randn(n_features + 1, generator=g, dtype=torch.float64)
    return ClientData(X, X @ w[:-1] + w[-1] + noise_std * torch.randn(S_c, generator=g, dtype=torch.float64))


def batched_replies(data: ClientData, sent: Tensor, lr: float, batch_size: int, epochs: int = 1,
                    generator: torch.Generator | None = None) -> Tensor:
    """The client's Alg. 2 replies to many sent models at once (one row each), vectorised:
    every reply reshuffles its own mini-batches each epoch (``argsort`` of uniform keys), then
    takes ⌈S_c/B⌉ steps θ ← θ - η (2/``|b|``) X_bᵀ(X_b θ - y_b) per epoch."""
    X1, y = design(data.X), data.y
    n_msgs, S = sent.shape[0], X1.shape[0]
    B = min(batch_size, S)
    theta = sent.clone()
    for _ in range(epochs):
        if B == S:
            theta = theta - lr * (2.0 / S) * ((theta @ X1.T - y) @ X1)
            continue
        order = torch.rand(n_msgs, S, generator=generator).argsort(dim=1)
        for idx in order.split(B, dim=1):
            Xb, yb = X1[idx], y[idx]  # (n, b, d), (n, b)
            r = torch.einsum("nbd,nd->nb", Xb, theta) - yb
            theta = theta - lr * (2.0 / idx.shape[1]) * torch.einsum("nb,nbd->nd", r, Xb)
    return theta


def noise_scale(data: ClientData, thetas: Tensor, batch_size: int) -> float:
    """Plug-in σ for Assumption 2: the largest per-coordinate standard deviation of the mini-batch
    gradient noise g(θ) - ∇L_c(θ) over the given models, for batches of ``batch_size`` drawn
    without replacement: Var = s²(θ)/B · (S_c - B)/(S_c - 1), s² the per-sample gradient variance.
    (A sub-Gaussian variance proxy is at least the variance, so this under-estimates σ.)"""
    X1, y = design(data.X), data.y
    S = X1.shape[0]
    B = min(batch_size, S)
    if B == S:
        return 0.0
    resid = thetas @ X1.T - y  # (m, S)
    per_sample = 2 * resid[:, :, None] * X1[None]  # (m, S, d)
    var = per_sample.var(dim=1) / B * (S - B) / (S - 1)
    return float(var.max().sqrt())


@dataclass
class Trial:
    n_c: int
    B: int
    lr: float
    seed: int
    error: float
    bound: float
    lam: float
    sigma: float
    lambda_min_W: float


def run_trial(data: ClientData, n_c: int, B: int, lr: float, seed: int, delta: float = 0.1,
              spread: float = 1.0) -> Trial:
    """One eavesdropped log of ``n_c`` exchanges with random sent models; Alg. 3; eq. (18)."""
    star = least_squares_optimum(data)
    g = generator(child_seed(seed, n_c, B, int(lr * 1e6)))
    sent = star + spread * torch.randn(n_c, star.numel(), generator=g, dtype=torch.float64)
    returned = batched_replies(data, sent, lr, B, generator=g)
    rec = reconstruct_least_squares((sent, returned), on_singular="min_norm")
    _, A = design_matrices((sent, returned))
    lam = float(torch.linalg.eigvalsh(A.T @ A / n_c)[0])
    X1 = design(data.X)
    eig = torch.linalg.eigvalsh(X1.T @ X1)
    S, d = X1.shape
    K = local_steps(1, S, B)
    lw = lambda_min_W(lr, float(eig[0]), S, K)
    sigma = noise_scale(data, sent, B)
    bound = theorem1_bound(lr, sigma, d, 1, S, B, n_c, lam, delta, lambda_min_W=lw,
                           lambda_max_H=float(eig[-1])) if lam > 0 else math.inf
    return Trial(n_c, B, lr, seed, float((rec.theta - star).norm()), bound, lam, sigma, lw)


def run_sweeps(seeds: Sequence[int], progress: bool = False, data_seed: int = 0) -> list[dict]:
    """The three sweeps of ``SETTINGS["theorem1"]``; one record per trial. ``data_seed`` draws the
    client's data (:func:`make_client`), ``seeds`` the sent models and mini-batches of each trial."""
    s = SETTINGS["theorem1"]
    data = make_client(s["S_c"], s["n_features"], s["noise_std"], seed=data_seed)
    jobs = []
    sw = s["sweeps"]
    jobs += [("n_c", n, sw["n_c"]["B"], sw["n_c"]["lr"]) for n in sw["n_c"]["values"]]
    jobs += [("B", sw["B"]["n_c"], B, sw["B"]["lr"]) for B in sw["B"]["values"]]
    jobs += [("lr", sw["lr"]["n_c"], B, lr) for B in sw["lr"]["B"] for lr in sw["lr"]["values"]]
    rows = []
    for sweep, n, B, lr in tqdm(jobs, desc="Theorem 1 sweeps", disable=not progress):
        for seed in seeds:
            t = run_trial(data, n, B, lr, seed, s["delta"], s["spread"])
            rows.append({"sweep": sweep, **t.__dict__})
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    _, n = seeds_command("Theorem 1 sweeps", argv, quick=20, paper=200)
    rows = run_sweeps(range(n), progress=True)
    path = save_result("part2_theorem1", {"settings": SETTINGS["theorem1"], "seeds": n, "records": rows},
                       seeds=range(n))
    print("wrote", path)


if __name__ == "__main__":
    main()
