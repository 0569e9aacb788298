"""Benchmark: FedAvg rounds per second on a 10-client MLP.

    python -m flprivacy.experiments.bench_fedavg

Ten clients with 500 samples of 20 features each, an MLP with 128 ReLU units (Diana et al.'s
architecture), one local epoch; batch sizes 32 and full batch. Writes
``book/results/bench_fedavg.json``.
"""

from __future__ import annotations

import time

import torch

from .. import ClientData, LocalSGD, mlp, run_fedavg
from . import save_result


def main(rounds: int = 30, repeats: int = 3) -> dict:
    g = torch.Generator().manual_seed(0)
    clients = [ClientData(torch.randn(500, 20, generator=g), torch.randn(500, generator=g)) for _ in range(10)]
    model = mlp(20, hidden=128)
    out = {}
    for label, B in (("B=32", 32), ("full batch", None)):
        local = LocalSGD(lr=0.01, epochs=1, batch_size=B)
        best = float("inf")
        for r in range(repeats):
            t0 = time.perf_counter()
            run_fedavg(model, clients, rounds=rounds, local=local, seed=r)
            best = min(best, time.perf_counter() - t0)
        steps = rounds * len(clients) * local.n_steps(500)
        out[label] = {"rounds_per_s": rounds / best, "sgd_steps_per_s": steps / best,
                      "local_steps_per_round_per_client": local.n_steps(500)}
        print(f"{label:>10}: {rounds / best:7.1f} rounds/s, {steps / best:8.0f} SGD steps/s")
    return out


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()  # no options: reject any
    res = main()
    print("wrote", save_result("bench_fedavg", res, seeds=[0], scale_="fixed"))
