"""Memory of the message log at scale: peak resident memory of a FedAvg run that logs
every exchange, with the log in memory and on disk.

The setting: 10 clients, full participation, an MLP with 540 inputs and 128 hidden units
(d = 69,377 float32 parameters, 271 KiB per model), one full-batch local step on 20 samples per
client and round. Per round the log must keep 11 models (the global one and 10 replies): the
sent models are the global one and are not stored again. Each configuration runs in a fresh
process, so its peak RSS (``ru_maxrss``) is its own.

Run: ``python -m flbook.experiments.bench_memory`` (``--rounds`` 1000 by default; the result
file records the rounds actually run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from . import positive_int, save_result

N_CLIENTS, N_FEATURES, HIDDEN, N_SAMPLES = 10, 540, 128, 20


def measure(mode: str, rounds: int) -> dict:
    """One run in this process: ``mode`` is ``"memory"`` or ``"disk"``."""
    import torch

    from flprivacy import ClientData, LocalSGD, eavesdrop, mlp, run_fedavg

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    model = mlp(N_FEATURES, hidden=HIDDEN)
    clients = [ClientData(torch.randn(N_SAMPLES, N_FEATURES, generator=g), torch.randn(N_SAMPLES, generator=g))
               for _ in range(N_CLIENTS)]
    local = LocalSGD(lr=0.01, steps=1)
    run_fedavg(model, clients, rounds=2, local=local, seed=0)  # warm-up (allocator, autograd)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = run_fedavg(model, clients, rounds=rounds, local=local, seed=0, log_dir=tmp if mode == "disk" else None)
        seconds = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        t1 = time.perf_counter()
        msgs = eavesdrop(run.log, 0, rounds=range(min(rounds, 100)))  # what an attack reads
        read_seconds = time.perf_counter() - t1
        ok = bool(torch.equal(msgs.sent[-1], run.log.global_models[len(msgs) - 1]))
    model_bytes = model.dim * 4
    return dict(mode=mode, rounds=rounds, d=model.dim, stored_models=run.log.stored_models,
                log_bytes=run.log.nbytes, models_needed_bytes=(rounds * (N_CLIENTS + 1) + 1) * model_bytes,
                baseline_rss_bytes=base, peak_rss_bytes=peak, seconds=seconds, seconds_per_round=seconds / rounds,
                read_100_rounds_one_client_seconds=read_seconds, sent_equals_global=ok)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=positive_int, nargs="+", default=[1000],
                   help="rounds per run (several values show the growth per round)")
    p.add_argument("--modes", nargs="+", choices=["memory", "disk"], default=["memory", "disk"])
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child[0], int(args.child[1]))))
        return {}
    t0 = time.perf_counter()
    rows = []
    for rounds in args.rounds:
        for mode in args.modes:
            out = subprocess.run([sys.executable, "-m", "flbook.experiments.bench_memory", "--child", mode, str(rounds)],
                                 capture_output=True, text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(r)
            gib = 2**30
            print(f"{mode:6s} {rounds:5d} rounds: peak RSS {r['peak_rss_bytes'] / gib:5.2f} GiB (baseline "
                  f"{r['baseline_rss_bytes'] / gib:4.2f}), log {r['log_bytes'] / gib:5.2f} GiB for "
                  f"{r['stored_models']} models, {1000 * r['seconds_per_round']:6.1f} ms/round", flush=True)
    runtime = time.perf_counter() - t0
    data = dict(setting=dict(clients=N_CLIENTS, n_features=N_FEATURES, hidden=HIDDEN, samples_per_client=N_SAMPLES,
                             dtype="float32", local="LocalSGD(lr=0.01, steps=1)"), runs=rows, runtime_seconds=runtime)
    print("wrote", save_result("bench_memory", data, seeds=[0], scale_="fixed"))
    print(f"{runtime:.0f} s")
    return data


if __name__ == "__main__":
    main()
