"""Benchmark: FedAvg rounds per second, three implementations side by side in one process.

    python -m flbook.experiments.bench_fedavg

For each setting, the same federation is trained by

- ``plain loop``: the simplest code a reader would write: for each client, a PyTorch
  ``nn.Module`` copy trained with ``torch.optim.SGD`` and autograd on its mini-batches, then a
  weighted average (no message log);
- ``run_fedavg``: the library's per-client reference path (records the message log);
- ``run_fedavg(batched=True)``: all clients as one tensor program (:mod:`flprivacy.batched`).

Settings: ``bench`` is ten clients with 500 samples of 20 features, the MLP with 128 ReLU
units of Diana et al., one local epoch, B = 32; ``uneven`` (not tuned for) is 51 clients of
20 to 400 samples, logistic regression on 30 features with 2 classes, B = 16, two epochs.
Times are the best of ``--repeats`` runs of ``--rounds`` rounds, all on the same threads.
Writes ``book/results/bench_fedavg.json`` with the ratios.
"""

from __future__ import annotations

import argparse
import copy
import time

import torch

from flprivacy import ClientData, LocalSGD, logistic_regression, mlp, run_fedavg
from flprivacy.federation import batch_schedule, client_weights
from . import add_threads_option, positive_int, save_result, use_threads


def plain_loop(model, clients, rounds: int, local: LocalSGD, seed: int) -> torch.Tensor:
    """FedAvg as a reader writes it: one nn.Module per client, torch.optim.SGD, autograd."""
    net = copy.deepcopy(model.module).train()
    loss_fn = {"mse": torch.nn.MSELoss(), "cross_entropy": torch.nn.CrossEntropyLoss(),
               "bce": torch.nn.BCEWithLogitsLoss()}[model.loss_name]
    p = client_weights(clients, "size")
    gens = [torch.Generator().manual_seed(seed + c) for c in range(len(clients))]
    glob = {k: v.detach().clone() for k, v in net.state_dict().items()}
    for _ in range(rounds):
        new = {k: torch.zeros_like(v) for k, v in glob.items()}
        for c, data in enumerate(clients):
            net.load_state_dict(glob)
            opt = torch.optim.SGD(net.parameters(), lr=local.lr)
            for idx in batch_schedule(data.n, epochs=local.epochs, batch_size=local.batch_size, generator=gens[c]):
                Xb, yb = (data.X, data.y) if idx is None else (data.X[idx], data.y[idx])
                opt.zero_grad()
                out = net(Xb)
                loss = loss_fn(out.squeeze(-1), yb) if model.loss_name != "cross_entropy" else loss_fn(out, yb)
                loss.backward()
                opt.step()
            for k, v in net.state_dict().items():
                new[k] += float(p[c]) * v.detach()
        glob = new
    return torch.cat([v.reshape(-1) for v in glob.values()])


def _settings():
    g = torch.Generator().manual_seed(0)
    bench = [ClientData(torch.randn(500, 20, generator=g), torch.randn(500, generator=g)) for _ in range(10)]
    sizes = torch.randint(20, 401, (51,), generator=g).tolist()
    uneven = [ClientData(torch.randn(n, 30, generator=g), torch.randint(0, 2, (n,), generator=g)) for n in sizes]
    return {
        "bench: 10 clients x 500, MLP(128), B=32, E=1": (mlp(20, hidden=128), bench, LocalSGD(lr=0.01, batch_size=32)),
        "uneven: 51 clients x 20-400, logistic, B=16, E=2": (logistic_regression(30, 2), uneven,
                                                              LocalSGD(lr=0.05, epochs=2, batch_size=16)),
    }


def main(rounds: int = 10, repeats: int = 3) -> dict:
    out = {}
    for name, (model, clients, local) in _settings().items():
        runners = {
            "plain loop": lambda: plain_loop(model, clients, rounds, local, seed=0),
            "run_fedavg": lambda: run_fedavg(model, clients, rounds=rounds, local=local, seed=0),
            "run_fedavg(batched=True)": lambda: run_fedavg(model, clients, rounds=rounds, local=local, seed=0,
                                                           batched=True),
        }
        times = {k: float("inf") for k in runners}
        for _ in range(repeats):  # interleaved, so that a busy machine slows all three alike
            for k, run in runners.items():
                t0 = time.perf_counter()
                run()
                times[k] = min(times[k], time.perf_counter() - t0)
        rps = {k: rounds / t for k, t in times.items()}
        out[name] = {"rounds_per_s": rps,
                     "batched_vs_plain_loop": rps["run_fedavg(batched=True)"] / rps["plain loop"],
                     "batched_vs_run_fedavg": rps["run_fedavg(batched=True)"] / rps["run_fedavg"],
                     "run_fedavg_vs_plain_loop": rps["run_fedavg"] / rps["plain loop"]}
        print(name)
        for k, v in rps.items():
            print(f"  {k:>26}: {v:7.1f} rounds/s")
        print(f"  batched / plain loop = {out[name]['batched_vs_plain_loop']:.2f}x, "
              f"batched / run_fedavg = {out[name]['batched_vs_run_fedavg']:.2f}x")
    out["rounds"], out["repeats"] = rounds, repeats
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=positive_int, default=10)
    parser.add_argument("--repeats", type=positive_int, default=3)
    add_threads_option(parser)
    args = parser.parse_args()
    use_threads(args)
    res = main(args.rounds, args.repeats)
    print("wrote", save_result("bench_fedavg", res, seeds=[0], scale_="fixed"))
