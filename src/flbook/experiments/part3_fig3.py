"""Fig. 3 and App. C.2-C.3 of Diana et al. 2025: what makes attribute inference stronger or weaker.

On Income-L (Alg. 5 split, default heterogeneity 40 %, B = 32, E = 1), one factor varies at a
time and the Table 1 pipeline (:func:`flbook.experiments.part3_pipeline.run_pipeline`) runs for
each value:

- ``heterogeneity``: h in {0, 0.1, ..., 0.5} (Alg. 5; 0 is i.i.d.), Fig. 3 left;
- ``batch_size``: B in {32, ..., 1024} with App. B.5's learning rate for each B, Fig. 3 centre;
- ``epochs``: E in {1, ..., 5}, with T = ⌈100/E⌉ passive and ⌈50/E⌉ active rounds, Fig. 3 right;
- ``start_round``: the round at which the active attack starts (App. C.2, Fig. 5);
- ``active_rounds``: the number of active rounds (App. C.3, Fig. 6) -- one run, several r.

Rows as in Table 1: passive/active Grad, Grad-w-O, Ours, and Model-w-O.

Commands (``FLPRIVACY_SCALE=paper`` for the paper's settings; quick by default)::

    python -m flbook.experiments.part3_fig3 --factor heterogeneity batch_size epochs start_round active_rounds \
        --seeds 0 1 2 --jobs 2

Each factor writes ``book/results/part3_fig3_<factor>_synthetic[_quick].json`` and prints its
runtime. At paper scale one factor value costs a full Table 1 run (~15 min for Income-L on one
core), so the whole figure is hours (``--jobs 2`` runs two at a time); the quick scale uses 4,000
synthetic people, 20 rounds.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, replace

import torch

from flprivacy.config import at_scale
from . import add_threads_option, positive_int, save_result, seed_int, use_threads
from .part3_pipeline import AIASettings, make_task, over_seeds, run_pipeline, summarise
from .part3_table1 import PAPER_SETTINGS, QUICK_SETTINGS

B5_LEARNING_RATES = {32: 5e-7, 64: 5e-7, 128: 1e-6, 256: 2e-6, 512: 2e-6, 1024: 3e-6}
"""App. B.5: Income-L learning rate for each batch size (kept when E or h vary)."""

PAPER_VALUES = {"heterogeneity": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5), "batch_size": (32, 64, 128, 256, 512, 1024),
                "epochs": (1, 2, 3, 4, 5), "start_round": (20, 40, 60, 80, 100), "active_rounds": (1, 5, 10, 20, 50)}
QUICK_VALUES = {"heterogeneity": (0.0, 0.25, 0.5), "batch_size": (32, 128, 512), "epochs": (1, 3, 5),
                "start_round": (5, 10, 20), "active_rounds": (1, 3, 10)}

PAPER_BASE: AIASettings = PAPER_SETTINGS["Income-L"]
QUICK_BASE: AIASettings = replace(QUICK_SETTINGS["Income-L"], rounds=20, active_rounds=(10,), adam_trials=5,
                                     grad_iterations=10, model_wo_steps=200)
"""Quick: Table 1's quick Income-L (4,000 synthetic people, lr 2e-6 = 4x the paper's for ~4x fewer
local steps) with 20 rounds, 10 active rounds, 5 Optuna trials."""


def base() -> AIASettings:
    return at_scale(quick=QUICK_BASE, paper=PAPER_BASE)


def values(factor: str) -> tuple:
    if factor not in PAPER_VALUES:
        raise ValueError(f"unknown factor {factor!r}; choose from {list(PAPER_VALUES)}.")
    return at_scale(quick=QUICK_VALUES[factor], paper=PAPER_VALUES[factor])


def settings_for(factor: str, value, b: AIASettings | None = None) -> AIASettings:
    """The settings of one point of the sweep: ``b`` (default :func:`base`) with one factor changed."""
    b = b or base()
    A = max(b.active_rounds)
    lr_scale = b.lr / B5_LEARNING_RATES[32]  # quick scale raises every lr by the same factor
    if factor == "heterogeneity":
        return replace(b, heterogeneity=float(value))
    if factor == "batch_size":
        return replace(b, batch_size=int(value), lr=B5_LEARNING_RATES[int(value)] * lr_scale)
    if factor == "epochs":
        E = int(value)
        return replace(b, epochs=E, rounds=math.ceil(b.rounds / E), active_rounds=(math.ceil(A / E),))
    if factor == "start_round":
        return replace(b, rounds=int(value))
    if factor == "active_rounds":
        return replace(b, active_rounds=tuple(sorted(set(int(v) for v in value))))
    raise ValueError(f"unknown factor {factor!r}; choose from {list(PAPER_VALUES)}.")


def _point_seed(factor: str, value, seed: int, source: str, threads: int = 0) -> dict:
    """One seed of one point: Table 1's pipeline with ``factor = value`` (a worker of :func:`sweep`)."""
    if threads:
        torch.set_num_threads(threads)
    s = settings_for(factor, value)
    return over_seeds([seed], lambda sd: make_task("Income-L", source, sd, s), lambda ft, sd: run_pipeline(ft, s, sd),
                      log=lambda m: None)[0]


def _results(tasks: list[tuple], jobs: int) -> Iterator[dict]:
    """:func:`_point_seed` of every task, in order; ``jobs`` > 1 runs them in that many processes."""
    if jobs == 1:
        yield from (_point_seed(*t) for t in tasks)
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(_point_seed, *t, 1) for t in tasks]
        yield from (f.result() for f in futures)


def sweeps(factors: Sequence[str], seeds: Sequence[int], vals: Sequence | None = None, source: str = "synthetic",
           log=print, jobs: int = 1) -> Iterator[dict]:
    """Run Table 1's pipeline for every value of every factor in ``factors``; yields, factor by
    factor, ``{"factor", "seeds", "points": [...]}`` with, per value, the mean and std over seeds
    of every row, each seed's rows and the runtime (``seconds``: the sum of the seeds' runtimes,
    i.e. one core's time).

    ``vals`` replaces the values of the scale (one factor only). ``jobs`` > 1 runs all (factor,
    value, seed) triples in one pool of that many processes, one torch thread each; every run
    seeds itself, so the numbers are those of ``jobs = 1``."""
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}.")
    if vals is not None and len(factors) != 1:
        raise ValueError(f"vals gives the values of one factor; got {len(factors)} factors {list(factors)}.")
    plans = []
    for factor in factors:
        vs = tuple(values(factor) if vals is None else vals)
        points_values = [vs] if factor == "active_rounds" else list(vs)
        for v in points_values:
            settings_for(factor, v)  # unknown factor or value: fail before any run
        plans.append((factor, points_values))
    results = _results([(f, v, seed, source) for f, pv in plans for v in pv for seed in seeds], jobs)
    for factor, points_values in plans:
        points = []
        for value in points_values:
            per_seed = [next(results) for _ in seeds]
            points.append({"value": list(value) if factor == "active_rounds" else value,
                           "settings": asdict(settings_for(factor, value)), "summary": summarise(per_seed),
                           "per_seed": [{"seed": seed, "rows": r["rows"], "seconds": r["seconds"]}
                                        for seed, r in zip(seeds, per_seed)],
                           "seconds": sum(r["seconds"] for r in per_seed)})
            if log:
                log(f"{factor} = {value}: {points[-1]['seconds']:.1f} s")
        yield {"factor": factor, "seeds": list(seeds), "points": points}


def sweep(factor: str, seeds: Sequence[int], vals: Sequence | None = None, source: str = "synthetic",
          log=print, jobs: int = 1) -> dict:
    """:func:`sweeps` for one factor."""
    return next(sweeps([factor], seeds, vals, source, log, jobs))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--factor", nargs="+", default=list(PAPER_VALUES), choices=list(PAPER_VALUES))
    p.add_argument("--seeds", nargs="+", type=seed_int, default=[0])
    p.add_argument("--jobs", type=positive_int, default=1,
                   help="processes running (value, seed) pairs in parallel, one torch thread each")
    add_threads_option(p)
    args = p.parse_args(argv)
    use_threads(args)
    start = time.perf_counter()
    for out in sweeps(args.factor, args.seeds, log=lambda m: print(m, flush=True), jobs=args.jobs):
        factor = out["factor"]
        out["source"] = "synthetic census"
        out["seconds"] = sum(pt["seconds"] for pt in out["points"])
        out["wall_seconds_since_start"] = time.perf_counter() - start
        out["jobs"] = args.jobs
        print("wrote", save_result(f"part3_fig3_{factor}_synthetic", out, seeds=args.seeds))
        print(f"{factor}: total runtime {out['seconds']:.1f} s on one core "
              f"({out['wall_seconds_since_start']:.1f} s since the command started, {args.jobs} job(s))")


if __name__ == "__main__":
    main()
