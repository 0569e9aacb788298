"""Benchmark: seconds per FedAvg round, side by side, on four runners.

    python -m flbook.experiments.flower_overhead [--ray-tries N] [--deploy-rounds R]

The same federation (10 clients with 200 samples of 20 features, an MLP with 128 ReLU units,
one full-batch local epoch) run by

- ``in_process``: :func:`flprivacy.run_fedavg`;
- ``flower_in_process_grid``: :func:`flprivacy.flower.run_flower` on its in-process Grid;
- ``flower_deployment``: :func:`flprivacy.flower_deploy.deploy`, a loopback deployment
  (``flower-superlink``, one ``flower-supernode`` per client, ``flwr run``), ``--deploy-rounds``
  rounds (each round starts one ClientApp process per node: Flower's process isolation);
- ``flower_ray``: ``run_flower(backend="ray")`` (Flower's Simulation Engine), tried
  ``--ray-tries`` times, each in its own process killed after ``--ray-timeout`` s; every try's
  outcome (finished, failed with its error, or timed out) is recorded, and the per-round time is
  that of the fastest finished try (none if no try finished).

Flower's per-round time is the median of the rounds as its strategy timed them; the in-process
one comes from a run of R rounds and one of 1 round, (t_R - t_1)/(R - 1); the start-up is the
rest of the run's wall time. ``load_average_1min`` records the machine's 1-minute load average at
the start and the end (on a shared machine the processes of the deployment and of Ray compete
with others for the cores). Writes ``book/results/flower_overhead.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import torch

from flprivacy import ClientData, LocalSGD, mlp, run_fedavg
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


def time_deployment(rounds: int, seed: int = 0, timeout: float = 600.0, n_features: int = 20, hidden: int = 128) -> dict:
    """Per-round and start-up seconds of :func:`federation` on a loopback Flower deployment (one run)."""
    from flprivacy.flower_deploy import deploy

    clients, _, local = federation(n_features=n_features, hidden=hidden, seed=seed)
    run = deploy(("mlp", (n_features, hidden)), clients, rounds=rounds, local=local, seed=seed, timeout=timeout)
    rs = run.settings["round_seconds"]
    total = run.settings["wall_s"]
    return {"per_round_s": sorted(rs)[len(rs) // 2], "startup_s": total - sum(rs), "rounds": rounds, "total_s": total,
            "round_seconds": rs}


_RAY_CHILD = """
import json, os, sys, time
from flbook.experiments.flower_overhead import federation, time_runs
from flprivacy.flower import run_flower
clients, model, local = federation()
cfg = {"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": {"num_cpus": os.cpu_count()}}
r = time_runs(lambda **k: run_flower(backend="ray", backend_config=cfg, **k), int(sys.argv[1]), repeats=1,
              model=model, clients=clients, local=local, seed=0)
import ray
r["ray_version"] = ray.__version__
print("RESULT " + json.dumps(r))
"""


def _kill_tree(p: subprocess.Popen) -> None:
    """SIGKILL ``p``'s process group and every descendant (Ray's raylet, GCS and workers), by id."""
    pids = []
    with contextlib.suppress(Exception):
        import psutil

        pids = [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    p.wait(timeout=30)


def try_ray(rounds: int, tries: int, timeout: float) -> dict:
    """Ray, ``tries`` times, each in a fresh process killed after ``timeout`` s: every outcome."""
    outcomes, best = [], None
    for _ in range(tries):
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-c", _RAY_CHILD, str(rounds)], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(p)
            outcomes.append({"outcome": "timed out", "seconds": time.perf_counter() - t0})
            continue
        _kill_tree(p)  # Ray's daemons may outlive the driver
        lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
        if p.returncode == 0 and lines:
            r = json.loads(lines[-1][len("RESULT "):])
            outcomes.append({"outcome": "finished", "seconds": time.perf_counter() - t0})
            best = r if best is None or r["per_round_s"] < best["per_round_s"] else best
        else:
            err = [ln for ln in out.splitlines() if "Error" in ln or "error" in ln][-3:]
            outcomes.append({"outcome": f"failed (exit {p.returncode})", "seconds": time.perf_counter() - t0,
                             "error": " | ".join(err)[-500:]})
    return {"tries": outcomes, "finished": sum(o["outcome"] == "finished" for o in outcomes), "timeout_s": timeout,
            "result": best}


def main(rounds: int = 8, deploy_rounds: int = 3, ray_tries: int = 2, ray_timeout: float = 300.0) -> dict:
    from flprivacy.flower import run_flower

    clients, model, local = federation()
    kw = dict(model=model, clients=clients, local=local, seed=0)
    load0 = os.getloadavg()[0]  # the machine may be shared: its load beside the times
    out = {"model_parameters": model.dim, "clients": len(clients),
           "in_process": time_runs(run_fedavg, rounds, **kw),
           "flower_in_process_grid": time_runs(run_flower, rounds, **kw),
           "flower_deployment": time_deployment(deploy_rounds)}
    if ray_tries > 0:
        out["flower_ray"] = try_ray(rounds, ray_tries, ray_timeout)
    out["load_average_1min"] = {"start": load0, "end": os.getloadavg()[0], "cpus": os.cpu_count()}
    for name, v in out.items():
        if isinstance(v, dict) and name != "load_average_1min":
            v = v.get("result", v)
            if v is None:
                print(f"{name:>24}: no try finished")
            else:
                print(f"{name:>24}: {1e3 * v['per_round_s']:8.1f} ms/round, start-up {v['startup_s']:6.2f} s")
    return out


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ray-tries", type=int, default=2, help="times to try Flower's Ray engine (0: skip)")
    p.add_argument("--ray-timeout", type=float, default=300.0, help="seconds before a Ray try is killed")
    p.add_argument("--deploy-rounds", type=int, default=3, help="rounds of the loopback deployment")
    args = p.parse_args()
    res = main(deploy_rounds=args.deploy_rounds, ray_tries=args.ray_tries, ray_timeout=args.ray_timeout)
    print("wrote", save_result("flower_overhead", res, seeds=[0], scale_="fixed"))
