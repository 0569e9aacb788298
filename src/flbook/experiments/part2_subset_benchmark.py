"""Benchmark: choosing d+1 messages that minimise cond(Θ_out), ours vs 10^7 random subsets.

    python -m flbook.experiments.part2_subset_benchmark            # 10^7 random subsets (~25 min)
    python -m flbook.experiments.part2_subset_benchmark --subsets 100000   # a quick look

Diana et al. (App. C.1) choose the eavesdropped messages used by Alg. 3 by sampling 10^7
random subsets of d+1 rounds and keeping the one with the lowest condition number of Θ_out;
their code loops over ``numpy.linalg.cond``. On the same message logs, this script measures, side
by side:

- ``select_messages`` (greedy pivoted-QR starts + batched swap search), its time and cond;
- ``random_subset_search``: the paper's random sampling with the same budget of subsets,
  vectorised (batched SVDs), its time and the best cond found;
- the plain Python loop of the reference code on a sample of subsets, extrapolated to the budget.

Logs (all messages of client 0, one local epoch, B = 64, 300 rounds): the toy federation of
Fig. 2 (d = 11) and a larger least-squares federation (d = 31). Writes
``book/results/part2_subset_benchmark.json``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from flprivacy import ClientData, eavesdrop, linear_regression, run_fedavg
from flprivacy.attacks.reconstruction import (
    condition_number,
    design_matrices,
    random_subset_search,
    reconstruct_least_squares,
    select_messages,
)
from flprivacy.config import generator
from . import machine, positive_int, save_result
from flprivacy.federation import LeastSquaresSGD
from flprivacy.optimum import least_squares_optimum
from .part2_toy import toy_clients


def wide_clients(n_features: int = 30, n_clients: int = 4, n_samples: int = 512, seed: int = 0) -> list[ClientData]:
    """A least-squares federation with more parameters: U[0,1) features, one model per client."""
    g = generator(seed)
    out = []
    for _ in range(n_clients):
        X = torch.rand(n_samples, n_features, generator=g, dtype=torch.float64)
        w = torch.randn(n_features + 1, generator=g, dtype=torch.float64)
        out.append(ClientData(X, X @ w[:-1] + w[-1] + 0.1 * torch.randn(n_samples, generator=g, dtype=torch.float64)))
    return out


def logs() -> dict[str, tuple[list[ClientData], float]]:
    """The benchmark's federations and learning rates."""
    return {"toy (d=11)": (toy_clients(0), 0.1), "wide (d=31)": (wide_clients(), 0.05)}


def message_log(clients: list[ClientData], lr: float, rounds: int = 300, batch_size: int = 64, seed: int = 0):
    """Client 0's eavesdropped messages in a FedAvg run of ``rounds`` rounds (mini-batches of ``batch_size``)."""
    model = linear_regression(clients[0].X.shape[1])
    run = run_fedavg(model, clients, rounds=rounds, local=LeastSquaresSGD(lr=lr, batch_size=batch_size), seed=seed,
                     record_clients=[0])
    return eavesdrop(run.log, 0)


def plain_loop_seconds(theta_out: torch.Tensor, n: int, k: int, seed: int = 0) -> float:
    """Seconds per subset of the reference code's loop (random.sample + numpy.linalg.cond)."""
    A = theta_out.numpy()
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    best = np.inf
    for _ in range(n):
        idx = np.sort(rng.choice(A.shape[0], size=k, replace=False))
        c = np.linalg.cond(A[idx])
        best = min(best, c)
    return (time.perf_counter() - t0) / n


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description="subset selection vs random subsets")
    p.add_argument("--subsets", type=positive_int, default=10**7, help="random-subset budget (paper: 10^7)")
    p.add_argument("--loop-sample", type=positive_int, default=20_000, help="subsets timed for the plain-loop estimate")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    out = {"budget": args.subsets, "logs": {}}
    for name, (clients, lr) in logs().items():
        M = message_log(clients, lr)
        _, A = design_matrices(M)
        k = A.shape[1]
        star = least_squares_optimum(clients[0])

        def err(rows: torch.Tensor) -> float:
            return float((reconstruct_least_squares(M, subset=rows.tolist()).theta - star).norm() / star.norm())

        ours = select_messages(M)
        assert abs(condition_number(A[ours.indices]) - ours.cond) <= 1e-9 * ours.cond
        print(f"{name}: ours cond {ours.cond:.4g} in {ours.seconds:.2f} s", flush=True)
        rand = random_subset_search(M, n_subsets=args.subsets, seed=0, progress=True)
        print(f"{name}: random ({args.subsets:.0e}) cond {rand.cond:.4g} in {rand.seconds:.1f} s", flush=True)
        loop = plain_loop_seconds(A, args.loop_sample, k)
        first = torch.arange(k)
        out["logs"][name] = {
            "n_messages": len(M), "d": k - 1,
            "ours": {"cond": ours.cond, "seconds": ours.seconds, "evaluated": ours.evaluated,
                     "rounds": M.rounds[ours.indices].tolist(), "relative_error": err(ours.indices)},
            "random": {"cond": rand.cond, "seconds": rand.seconds, "subsets": rand.evaluated,
                       "rounds": M.rounds[rand.indices].tolist(), "relative_error": err(rand.indices)},
            "first_d_plus_1": {"cond": condition_number(A[first]), "relative_error": err(first)},
            "all_messages": {"cond": condition_number(A), "relative_error": err(torch.arange(len(M)))},
            "plain_loop": {"seconds_per_subset": loop, "extrapolated_seconds": loop * args.subsets},
            "ours_not_worse": ours.cond <= rand.cond,
        }
    out["machine"] = machine()
    path = save_result("part2_subset_benchmark", out, seeds=[0], scale_="fixed")
    print("wrote", path)
    return out


if __name__ == "__main__":
    main()
