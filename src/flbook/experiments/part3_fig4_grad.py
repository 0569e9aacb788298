"""Fig. 4 of Diana et al. 2025 with the gradient-based rows, resumable seed by seed.

:mod:`.part3_fig4` runs Fig. 4 (Income-A, Table 1's setting, 50 active rounds) for Ours and
Model-w-O; its ``--grad`` adds Grad and Grad-w-O, which cost about 49 minutes of one core per
seed at paper scale (measured 2026-11-28) (the gradient-based AIA is most of a seed's time), more than one sitting.
This command runs the same computation, :func:`.part3_fig4.run` with ``grad=True``, one seed per
point (:mod:`.points`: each finished seed is kept in
``book/results/points/part3_fig4_grad_synthetic/``, and the same command resumes where the last
one stopped), and writes ``book/results/part3_fig4_grad_synthetic[_quick].json`` with
:func:`.part3_fig4.run`'s layout plus ``points`` once every seed is there:

    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_fig4_grad --seeds 0 1 2 --jobs 2

Its Ours and Model-w-O rows are :mod:`.part3_fig4`'s (same pipeline, seed and settings); the
ledger's Fig. 4 rows read the gradient-based rows from this file.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import asdict

from . import add_threads_option, positive_int, save_result, seed_int, use_threads
from .part3_fig4 import fig4_settings, run, trend
from .points import Point, provenance, run_points

NAME = "part3_fig4_grad_synthetic"


def seed_result(seed: int, source: str = "synthetic") -> dict:
    """One seed of Fig. 4 with the gradient-based rows (a point): :func:`.part3_fig4.run`'s
    per-seed entry, plus the data source."""
    out = run([seed], source, grad=True, log=lambda _: None)
    return {**out["per_seed"][0], "source": out["source"]}


def run_points_of(seeds: Sequence[int], jobs: int = 1, source: str = "synthetic") -> dict:
    """The result record from one point per seed; ``seconds`` is the points' summed CPU seconds."""
    start = time.perf_counter()
    pts = [Point(f"seed={int(sd)}", "flbook.experiments.part3_fig4_grad:seed_result", (int(sd), source))
           for sd in seeds]
    recs = run_points(NAME, pts, jobs=jobs)
    per_seed = [recs[p.key]["data"] for p in pts]
    points_record = provenance(recs)
    return {"task": "Income-A", "source": per_seed[0]["source"], "settings": asdict(fig4_settings()), "grad": True,
            "seeds": [int(sd) for sd in seeds], "per_seed": per_seed, "trend": trend(per_seed),
            "seconds": points_record["one_core_seconds"], "wall_seconds_since_start": time.perf_counter() - start,
            "jobs": jobs, "points_record": points_record}


def main(argv: Sequence[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", nargs="+", type=seed_int, default=None)
    p.add_argument("--jobs", type=positive_int, default=1, help="seeds run at once, one process each")
    add_threads_option(p)
    args = p.parse_args(argv)
    use_threads(args)
    seeds = tuple(fig4_settings().seeds if args.seeds is None else args.seeds)
    out = run_points_of(seeds, jobs=args.jobs)
    tr = out["trend"]
    for row, v in tr.items():
        if isinstance(v, dict):
            print(f"  {row:22s} mean rho {v['mean_rho']:+.3f}  per seed {[round(r, 3) for r in v['rho']]}")
    print(f"  no-relation level (one-sided 0.14%): {tr['level']:.3f} over {tr['clients']} clients, {tr['seeds']} seeds")
    print("wrote", save_result(NAME, out, seeds=seeds))
    return out


if __name__ == "__main__":
    main()
