"""Benchmark: seconds per FedAvg round on Flower vs the in-process simulator (issue 15).

    python -m flprivacy.experiments.flower_overhead [--ray]

The same federation (10 clients with 200 samples of 20 features, an MLP with 128 ReLU units,
one full-batch local epoch) run by :func:`flprivacy.run_fedavg` and by
:func:`flprivacy.flower.run_flower` on its in-process Grid (and, with ``--ray`` and Ray
installed, on Flower's Simulation Engine). Flower's per-round time is the median of the rounds
as its strategy timed them; the in-process one comes from a run of R rounds and one of 1 round,
(t_R - t_1)/(R - 1); the start-up is the rest of the run's wall time. Writes
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
    """Per-round and start-up seconds of ``runner`` (best of ``repeats``).

    When the run reports the wall time of each round (``run_flower``'s
    ``settings["round_seconds"]``), the per-round time is their median and the start-up the rest
    of an R-round run. Otherwise a 1-round and an R-round run give (t_R - t_1)/(R - 1) per round
    and t_1 minus that for the start-up.
    """
    runs = [_once(runner, rounds, **kw) for _ in range(repeats)]
    total, run = min(runs, key=lambda x: x[0])
    per_round_list = run.settings.get("round_seconds") if isinstance(getattr(run, "settings", None), dict) else None
    if per_round_list:
        per_round = sorted(per_round_list)[len(per_round_list) // 2]
        startup = total - sum(per_round_list)
    else:
        t1 = min(_once(runner, 1, **kw)[0] for _ in range(repeats))
        per_round = (total - t1) / (rounds - 1)
        startup = t1 - per_round
    return {"per_round_s": per_round, "startup_s": startup, "rounds": rounds, "total_s": total}


def _once(runner, rounds: int, **kw):
    t0 = time.perf_counter()
    run = runner(rounds=rounds, **kw)
    return time.perf_counter() - t0, run


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
