"""Benchmark: seconds per FedAvg round on Flower vs the in-process simulator (issue 15).

    python -m flprivacy.experiments.flower_overhead [--ray]

The same federation (10 clients with 200 samples of 20 features, an MLP with 128 ReLU units,
one full-batch local epoch) run by :func:`flprivacy.run_fedavg` and by
:func:`flprivacy.flower.run_flower` on its in-process Grid (and, with ``--ray`` and Ray
installed, on Flower's Simulation Engine). A run of R rounds and one of 1 round give the
per-round time (t_R - t_1)/(R - 1) and the fixed start-up cost t_1 - per-round. Writes
``book/results/flower_overhead.json``.
"""

from __future__ import annotations

import os
import time

import torch

from .. import ClientData, LocalSGD, mlp, run_fedavg
from . import save_result


def federation(n_clients: int = 10, n_samples: int = 200, n_features: int = 20, hidden: int = 128, seed: int = 0):
    """The benchmark's clients, model and local update."""
    g = torch.Generator().manual_seed(seed)
    clients = [ClientData(torch.randn(n_samples, n_features, generator=g), torch.randn(n_samples, generator=g))
               for _ in range(n_clients)]
    return clients, mlp(n_features, hidden=hidden), LocalSGD(lr=0.01)


def time_runs(runner, rounds: int, repeats: int = 2, **kw) -> dict:
    """Best-of-``repeats`` wall time of a 1-round and an R-round run: per-round and start-up seconds."""
    best = {}
    for r in (1, rounds):
        best[r] = min(_once(runner, r, **kw) for _ in range(repeats))
    per_round = (best[rounds] - best[1]) / (rounds - 1)
    return {"per_round_s": per_round, "startup_s": best[1] - per_round, "rounds": rounds,
            "total_s": best[rounds]}


def _once(runner, rounds: int, **kw) -> float:
    t0 = time.perf_counter()
    runner(rounds=rounds, **kw)
    return time.perf_counter() - t0


def main(rounds: int = 8, ray: bool = False) -> dict:
    from ..flower import run_flower

    clients, model, local = federation()
    kw = dict(model=model, clients=clients, local=local, seed=0)
    out = {"model_parameters": model.dim, "clients": len(clients),
           "in_process": time_runs(run_fedavg, rounds, **kw),
           "flower_in_process_grid": time_runs(run_flower, rounds, **kw)}
    if ray:
        cfg = {"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": {"num_cpus": os.cpu_count()}}
        out["flower_ray"] = time_runs(lambda **k: run_flower(backend="ray", backend_config=cfg, **k), rounds,
                                      repeats=1, **kw)
    for name, v in out.items():
        if isinstance(v, dict):
            print(f"{name:>24}: {1e3 * v['per_round_s']:8.1f} ms/round, start-up {v['startup_s']:6.2f} s")
    return out


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ray", action="store_true", help="also time Flower's Ray simulation engine (needs flwr[simulation])")
    args = p.parse_args()
    res = main(ray=args.ray)
    print("wrote", save_result("flower_overhead", res, seeds=[0], scale_="fixed"))
