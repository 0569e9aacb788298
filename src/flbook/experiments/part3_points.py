"""Part III's longest commands, resumable point by point (:mod:`flbook.experiments.points`).

Fig. 3's batch-size panel and Table 3 on Income-A of Diana et al. 2025 cost hours of one core
each at paper scale; run whole, an interruption loses every finished run. This command runs the same computations as :mod:`.part3_fig3` and :mod:`.part3_table3`,
with their functions and settings, but keeps each finished point in
``book/results/points/<result>/``, so the next call (``make reproduce`` or the same command)
resumes where the last one stopped, and writes the same result file when every point is there:

    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_points fig3 --factor batch_size --seeds 0 1 2 --jobs 2
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_points table3 --task Income-A --source synthetic \
        --seeds 0 1 2 --jobs 2

- ``fig3``: one point per (value, seed), :func:`.part3_fig3._point_seed`; the result file
  ``part3_fig3_<factor>_synthetic[_quick].json`` has :func:`.part3_fig3.sweeps`' layout.
- ``table3``: first the clipping-norm search on the first seed (one point,
  :func:`.part3_table3.select_clip_norm`), then one point per seed with the chosen norm
  (:func:`.part3_table3.run_table3`); the result file ``part3_table3_<task>_<source>[_quick].json``
  has :func:`.part3_table3.run`'s layout.

Both add ``points`` (:func:`.points.provenance`: how many, their dates, commits and summed CPU
seconds, ``one_core_seconds``, which ``reproduce`` reports as the file's cost).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import asdict

from . import add_threads_option, positive_int, save_result, seed_int, use_threads
from ..papers.diana import PAPER_TABLE3
from .part3_fig3 import PAPER_VALUES, settings_for, values
from .part3_pipeline import make_task, over_seeds, summarise, table_record
from .part3_table3 import clip_grid, result_name, run_table3, select_clip_norm, table3_settings
from .points import Point, provenance, run_points

_HERE = "flbook.experiments.part3_points"  # its import name (run as a command, __name__ is "__main__")


def _value_key(value) -> str:
    return "-".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)


def fig3_points(factor: str, seeds: Sequence[int], source: str = "synthetic") -> list[Point]:
    """The (value, seed) points of one Fig. 3 factor at the current scale, as :func:`.part3_fig3.sweeps`
    runs them (``active_rounds``: one point per seed, every r at once)."""
    vs = [tuple(values(factor))] if factor == "active_rounds" else list(values(factor))
    for v in vs:
        settings_for(factor, v)  # unknown factor or value: fail before any run
    return [Point(f"{factor}={_value_key(v)}_seed={seed}", "flbook.experiments.part3_fig3:_point_seed",
                  (factor, list(v) if isinstance(v, tuple) else v, int(seed), source))
            for v in vs for seed in seeds]


def fig3(factor: str, seeds: Sequence[int], source: str = "synthetic", jobs: int = 1, save: bool = True) -> dict:
    """One Fig. 3 panel from its points; the record of :func:`.part3_fig3.main` plus ``points``."""
    start = time.perf_counter()
    pts = fig3_points(factor, seeds, source)
    recs = run_points(f"part3_fig3_{factor}_synthetic", pts, jobs=jobs)
    out_points = []
    for i in range(0, len(pts), len(seeds)):
        group = pts[i:i + len(seeds)]
        value = group[0].args[1]
        per_seed = [recs[p.key]["data"] for p in group]
        out_points.append({"value": value, "settings": asdict(settings_for(factor, value)),
                           "summary": summarise(per_seed),
                           "per_seed": [{"seed": p.args[2], "rows": r["rows"], "seconds": r["seconds"]}
                                        for p, r in zip(group, per_seed)],
                           "seconds": sum(r["seconds"] for r in per_seed)})
    out = {"factor": factor, "seeds": list(seeds), "points": out_points, "source": "synthetic census",
           "seconds": sum(pt["seconds"] for pt in out_points),
           "wall_seconds_since_start": time.perf_counter() - start, "jobs": jobs, "points_record": provenance(recs)}
    if save:
        print("wrote", save_result(f"part3_fig3_{factor}_synthetic", out, seeds=seeds))
    return out


def table3_clip(task: str, source: str, seed: int) -> dict:
    """App. C.4's clipping-norm search for ``task`` on seed ``seed`` (a point of :func:`table3`)."""
    s = table3_settings(task)
    return select_clip_norm(make_task(task, source, seed, s), s, seed, clip_grid(task))


def table3_seed(task: str, source: str, seed: int, max_grad_norm: float) -> dict:
    """Every row of Table 3 for one seed with clipping norm ``max_grad_norm`` (a point of :func:`table3`)."""
    s = table3_settings(task)
    return over_seeds([seed], lambda sd: make_task(task, source, sd, s),
                      lambda ft, sd: run_table3(ft, s, sd, max_grad_norm), log=lambda m: None)[0]


def table3(task: str, source: str, seeds: Sequence[int], jobs: int = 1, save: bool = True) -> dict:
    """Table 3 for one task from its points; the record of :func:`.part3_table3.run` plus ``points``
    (``seconds`` is then the summed CPU seconds of its points, not one call's wall time)."""
    start = time.perf_counter()
    name = result_name(task, source)
    seeds = [int(x) for x in seeds]
    clip_rec = run_points(name, [Point(f"clip_seed={seeds[0]}", f"{_HERE}:table3_clip", (task, source, seeds[0]))],
                          jobs=1)
    clip = next(iter(clip_rec.values()))["data"]
    best = float(clip["best"])
    print(f"{task}: clipping norm {best:.0e} (validation loss {clip['val_loss']}; no DP {clip['val_loss_no_dp']:.4g})")
    recs = run_points(name, [Point(f"seed={seed}", f"{_HERE}:table3_seed", (task, source, seed, best))
                             for seed in seeds], jobs=jobs)
    per_seed = [r["data"] for r in recs.values()]
    for seed, res in zip(seeds, per_seed):
        print(f"  seed {seed}: Opacus ε = {res['details']['after_training']['epsilon']}")
    everything = {**clip_rec, **recs}
    out = table_record(task, table3_settings(task), seeds, per_seed, PAPER_TABLE3[task], start, clip=clip,
                       points_record=provenance(everything))
    out["seconds"] = out["points_record"]["one_core_seconds"]
    if save:
        print("wrote", save_result(name, out, seeds=seeds))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fig3", help="one Fig. 3 panel (or App. C.2-C.3), point by point")
    f.add_argument("--factor", required=True, choices=list(PAPER_VALUES))
    t = sub.add_parser("table3", help="Table 3 for one task, point by point")
    t.add_argument("--task", required=True, choices=list(PAPER_TABLE3))
    t.add_argument("--source", default="synthetic", choices=["synthetic", "acs"])
    for q in (f, t):
        q.add_argument("--seeds", nargs="+", type=seed_int, default=[0])
        q.add_argument("--jobs", type=positive_int, default=1, help="points run at once, one process each")
        add_threads_option(q)
    args = p.parse_args(argv)
    use_threads(args)
    if args.command == "fig3":
        out = fig3(args.factor, args.seeds, jobs=args.jobs)
    else:
        out = table3(args.task, args.source, args.seeds, jobs=args.jobs)
    rec = out["points_record"]
    print(f"{rec['points']} points, {rec['one_core_seconds']:.1f} s of one core in all (sessions: {rec['point_dates']})")


if __name__ == "__main__":
    main()
