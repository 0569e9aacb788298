"""Fig. 4 of Diana et al. 2025 at ACS Income's size: is Grad near random guessing on clients with
more than 20,000 data points?

The paper (§5.2): "for clients with over 20000 data points, Grad provides an attack performance
close to random guessing". Its Income-A has 51 clients, each "randomly selects 20% of the data
points from the corresponding census region, resulting in a total of 332,900 records", i.e. a
census of 1,664,500 people. :mod:`.part3_fig4_grad` runs Fig. 4 on the synthetic census of
200,000 people (Table 1's paper setting), where the largest client has about 4,400 rows, so no
client is that large. This command draws the synthetic census at the paper's size
(:data:`ACS_INCOME_A_PEOPLE`), trains the federation exactly as Fig. 4 does (Table 1's Income-A
settings, T = 100 rounds, then 50 rounds in which the adversary sends every client her own model
back) and runs the gradient-based AIA, with the same round sets, learning rates and random
streams as :func:`.part3_pipeline.gradient_aia_all`, on the clients above the threshold only:
the gradient-based AIA over all 51 clients would cost about eight times :mod:`.part3_fig4_grad`'s
49 minutes of one core per seed. Alg. 4 and Model-w-O are not run; the passive model-based AIA
(Ours, the last returned model) is, for every client, since it costs seconds.

Grad's configuration (round set, learning rate) is one for all clients, chosen by their mean
cosine (:func:`.part3_pipeline.grad_rows`). Here only the large clients are attacked, so the
file records, per large client, her accuracy at *every* configuration: whatever configuration the
51-client choice would pick, her Grad accuracy lies between the minimum and the maximum over
configurations (``lo``, ``hi``). It also records the choice made by Grad's rule among the large
clients alone.

    python -m flbook.experiments.part3_fig4_large                              # quick scale
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_fig4_large --seeds 0 1 2 --jobs 2
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_fig4_large --seeds 0 1 --only seed=0_client=42_active

One point per seed, large client and phase of the attack (:mod:`.points`, resumable). At 36,000
rows the per-round statistics no longer fit the attack's cache and are recomputed at every
iteration, so California's passive phase costs about 100 s of one core per iteration (72 s with
``--threads 2``), up to 100 iterations, measured 2026-11-28: ``--only`` runs the named points, so
that a session runs the points that fit in it. A larger cache (``gradient_aia``'s
``max_cache_mb``) would make an iteration 2.8x cheaper (measured side by side on generated data
of 36,000 rows and 10 rounds, one thread: 5.85 s against 16.2 s; the results are bit-identical
with and without it, checked at 3,000 rows), but it holds 644 float32 numbers per candidate row
and round: 18.5 GB for California's 100 passive rounds and 13.4 GB for Texas's, on a 24 GB
machine that also runs the book's tests, so the command keeps the default. Much of an
iteration's cost is the kernel's, not the arithmetic: every iteration allocates and frees products of
hundreds of megabytes, which glibc maps and zero-fills afresh. With glibc keeping freed memory
(:data:`~flbook.experiments.KEEP_FREED_MEMORY_ENV`, which ``make reproduce`` sets; by hand, prefix
the command with ``MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647``) the point
``seed=1_client=42_active`` took 1,267 s against 1,977 s under the default allocator, with the
same data (side by side on one 2-core machine, 2026-11-29); on the generated 36,000 rows and 10
rounds above, an iteration (the difference between runs of 4 and 2 iterations, halved) without the cache took 3.1 s against 7.8 s, and with the cache 1.0 s
against 3.5 s (``python -m flbook.experiments.bench_part3_allocator`` times the first). Each point trains
the seed's federation again (deterministic, about 10 minutes of one core). Writes
``book/results/part3_fig4_large_synthetic[_quick].json`` once every point is there.
At quick scale the census has 8,000 people and the threshold is :data:`QUICK_MIN_ROWS` rows (the
largest one or two clients), to exercise the same code.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import torch

from flprivacy.attacks.gradient_aia import GradientAIAResult, first_rounds_sets, gradient_aia
from flprivacy.config import at_scale, child_seed
from flprivacy.federation import LocalSGD
from flprivacy.models import mlp
from flprivacy.threats import eavesdrop, last_returned
from . import add_threads_option, positive_int, save_result, seed_int, use_threads
from .part3_fig4 import fig4_settings
from .part3_pipeline import AIASettings, federate, grad_rows, make_task, per_client_accuracy
from .points import Point, provenance, run_points

NAME = "part3_fig4_large_synthetic"
ACS_INCOME_A_PEOPLE = 1_664_500
"""The paper's Income-A: 332,900 records, 20% of each state's rows (§5.1), so 5 x 332,900 people."""
LARGE_CLIENT = 20_000
"""The paper's threshold: "clients with over 20000 data points" (training rows here, as Fig. 4's sizes)."""
QUICK_MIN_ROWS = 150


def large_settings() -> AIASettings:
    """Fig. 4's settings (:func:`.part3_fig4.fig4_settings`) with the census at the paper's size
    (at quick scale: unchanged)."""
    s = fig4_settings()
    return at_scale(s, replace(s, n_synthetic=ACS_INCOME_A_PEOPLE))


def min_rows() -> int:
    """The size above which a client is attacked: :data:`LARGE_CLIENT` at paper scale."""
    return at_scale(QUICK_MIN_ROWS, LARGE_CLIENT)


def _federation(seed: int, source: str, s: AIASettings):
    """The task of ``seed`` and its federation, trained as Fig. 4 trains it (deterministic)."""
    task = make_task("Income-A", source, seed, s)
    model = mlp(task.n_features, s.hidden)
    run = federate(model, task.clients, s.rounds, max(s.active_rounds),
                   LocalSGD(lr=s.lr, epochs=s.epochs, batch_size=s.batch_size), seed)
    return task, model, run


def large_clients(seed: int, source: str = "synthetic") -> list[int]:
    """The clients of ``seed``'s task with more than :func:`min_rows` training rows."""
    task = make_task("Income-A", source, seed, large_settings())
    return [c for c, n in enumerate(task.sizes) if n > min_rows()]


PHASES = ("passive", "active")


def phase_grad(model, log, clients, att, c: int, phase: str, s: AIASettings, seed: int) -> GradientAIAResult:
    """The gradient-based AIA (eq. 2) of client ``c`` over the passive round sets (``phase=
    "passive"``, App. B.5's sets of rounds < T) or the attack rounds' sets (``"active"``), exactly as
    :func:`.part3_pipeline.gradient_aia_all` runs it (the same sets, learning rates and seed
    streams): ``GradientAIAResult.merge`` of the two is that function's result for ``c``."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}.")
    T, A = s.rounds, max(s.active_rounds)
    act_rounds = list(range(T, T + A))
    act_sets = sorted({rs for r in s.active_rounds for rs in first_rounds_sets(act_rounds[:r])}, key=len)
    gkw = dict(learning_rates=s.grad_learning_rates, iterations=s.grad_iterations, patience=s.grad_patience,
               tolerance=s.grad_tolerance, relaxation=s.grad_relaxation, sampler=s.grad_sampler)
    X, y = clients[c].X, clients[c].y
    if phase == "passive":
        return gradient_aia(model, eavesdrop(log, c, range(T)), X, y, att, seed=child_seed(seed, 11, c), **gkw)
    used = sorted({t for rs in act_sets for t in rs})
    return gradient_aia(model, eavesdrop(log, c, used), X, y, att, round_sets=list(act_sets),
                        seed=child_seed(seed, 12, c), **gkw)


def attack_point(seed: int, client: int, phase: str, source: str = "synthetic") -> dict:
    """One point: ``seed``'s federation on the census at the paper's size (trained again in every
    point, since it is deterministic and cheaper than the attack), then :func:`phase_grad` of
    ``client``: her accuracy (a fraction) and mean cosine at every configuration of the phase. A passive
    point also keeps every client's size and passive Ours accuracy (her last returned model)."""
    s, t0 = large_settings(), time.perf_counter()
    task, model, run = _federation(seed, source, s)
    clients, att = task.clients, task.attribute
    t_train = time.perf_counter() - t0
    res = phase_grad(model, run.log, clients, att, client, phase, s, seed)
    acc = res.accuracy(att.true_index(clients[client].X))
    out = {"seed": seed, "client": client, "phase": phase, "source": task.source, "rows": clients[client].n,
           "state_code": task.meta["state_codes"][client], "round_sets": [list(r) for r in res.round_sets],
           "learning_rates": list(res.learning_rates), "accuracy": acc.tolist(),
           "cosine": [[None if math.isnan(v) else v for v in row] for row in res.cosine.tolist()],
           "iterations": res.iterations.tolist()}
    if phase == "passive":
        last = [last_returned(run.log, c, before=s.rounds) for c in range(len(clients))]
        out |= {"sizes": list(task.sizes), "passive_ours": [100 * a for a in per_client_accuracy(model, last, clients, att)]}
    out["seconds"] = {"training": t_train, "total": time.perf_counter() - t0}
    return out


@dataclass
class _Scored:
    """A client's stored configurations, as :func:`.part3_pipeline.grad_rows` reads a result."""

    round_sets: list
    learning_rates: tuple
    acc: torch.Tensor
    cosine: torch.Tensor

    def accuracy(self, _truth=None) -> torch.Tensor:
        return self.acc


def seed_record(points: list[dict]) -> dict:
    """One seed's entry from its points: per large client, her accuracy at every configuration
    (passive sets, then the attack rounds' sets: Fig. 4's active-50 row may use any of them), its
    minimum ``lo`` and maximum ``hi``, and her accuracy at Grad's rule (the configuration of the
    highest size-weighted mean cosine, :func:`.part3_pipeline.grad_rows`) among the large clients."""
    by = {(p["client"], p["phase"]): p for p in points}
    big = sorted({p["client"] for p in points})
    first = by[(big[0], "passive")]
    scored = []
    for c in big:
        ps, ac = by[(c, "passive")], by[(c, "active")]
        scored.append(_Scored(ps["round_sets"] + ac["round_sets"], tuple(ps["learning_rates"]),
                              torch.tensor(ps["accuracy"] + ac["accuracy"], dtype=torch.float64),
                              torch.tensor([[math.nan if v is None else v for v in row]
                                            for row in ps["cosine"] + ac["cosine"]], dtype=torch.float64)))
    allowed = list(range(len(scored[0].round_sets)))
    grad, grad_wo, choice = grad_rows(scored, [None] * len(big), [by[(c, "passive")]["rows"] for c in big], allowed)
    large = [{"client": c, "state_code": by[(c, "passive")]["state_code"], "rows": by[(c, "passive")]["rows"],
              "lo": 100 * float(r.acc.min()), "hi": 100 * float(r.acc.max()),
              "accuracy": (100 * r.acc).tolist(), "grad_rule_among_large": choice["Grad"]["per_client"][i],
              "passive_ours": first["passive_ours"][c]} for i, (c, r) in enumerate(zip(big, scored))]
    return {"seed": first["seed"], "source": first["source"], "sizes": first["sizes"],
            "passive_ours": first["passive_ours"], "min_rows": min_rows(), "large": large,
            "round_sets": scored[0].round_sets, "learning_rates": list(scored[0].learning_rates),
            "grad_among_large": {"Grad": grad, "Grad-w-O": grad_wo, "choice": choice},
            "seconds": sum(p["seconds"]["total"] for p in points)}


def summary(per_seed: list[dict]) -> dict:
    """Over seeds and large clients: the mean of ``lo``, ``hi`` and of the accuracy at Grad's
    rule among the large clients (Fig. 4's row is a mean over clients)."""
    large = [c for p in per_seed for c in p["large"]]
    mean = lambda k: sum(c[k] for c in large) / len(large)  # noqa: E731
    return {"clients": len(large), "lo": mean("lo"), "hi": mean("hi"),
            "grad_rule_among_large": mean("grad_rule_among_large"),
            "largest": max(max(p["sizes"]) for p in per_seed)}


def plan(seeds: Sequence[int], source: str = "synthetic") -> dict[int, list[Point]]:
    """Per seed, its points: one per large client (:func:`large_clients`) and phase (:data:`PHASES`)."""
    pts: dict[int, list[Point]] = {}
    for sd in map(int, seeds):
        big = large_clients(sd, source)
        if not big:
            raise RuntimeError(f"part3_fig4_large: no client of seed {sd} has over {min_rows():,} training rows; "
                               "the census is too small for this experiment.")
        pts[sd] = [Point(f"seed={sd}_client={c}_{ph}", "flbook.experiments.part3_fig4_large:attack_point",
                         (sd, c, ph, source)) for c in big for ph in PHASES]
    return pts


def run_only(seeds: Sequence[int], keys: Sequence[str], jobs: int = 1, source: str = "synthetic") -> list[str]:
    """Run (or find current) only the points named ``keys`` among :func:`plan`'s (to fit a run into
    the time at hand: a passive point on California is about 2.5 h of two threads); returns the
    keys of the plan's points that are still missing. Writes no result file."""
    from flprivacy.config import scale
    from .points import load_point, points_dir

    pts = [p for ps in plan(seeds, source).values() for p in ps]
    unknown = sorted(set(keys) - {p.key for p in pts})
    if unknown:
        raise ValueError(f"--only: unknown point(s) {unknown}; the points of seeds {list(seeds)} are "
                         f"{[p.key for p in pts]}.")
    run_points(NAME, [p for p in pts if p.key in set(keys)], jobs=jobs)
    sc = scale()
    folder = points_dir(NAME, sc)
    return [p.key for p in pts if load_point(folder / f"{p.key}.json", p, sc) is None]


def run_points_of(seeds: Sequence[int], jobs: int = 1, source: str = "synthetic") -> dict:
    """The result record from one point per seed, large client and phase (:data:`PHASES`);
    ``seconds`` is the points' summed CPU seconds."""
    start = time.perf_counter()
    pts = plan(seeds, source)
    recs = run_points(NAME, [p for ps in pts.values() for p in ps], jobs=jobs)
    per_seed = [seed_record([recs[p.key]["data"] for p in ps]) for ps in pts.values()]
    points_record = provenance(recs)
    return {"task": "Income-A", "source": per_seed[0]["source"], "settings": asdict(large_settings()),
            "min_rows": min_rows(), "seeds": [int(sd) for sd in seeds], "per_seed": per_seed,
            "summary": summary(per_seed), "seconds": points_record["one_core_seconds"],
            "wall_seconds_since_start": time.perf_counter() - start, "jobs": jobs, "points_record": points_record}


def main(argv: Sequence[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", nargs="+", type=seed_int, default=None)
    p.add_argument("--jobs", type=positive_int, default=1, help="points run at once, one process each")
    p.add_argument("--only", nargs="+", default=None, metavar="POINT",
                   help="run only these points (e.g. seed=0_client=42_active) and write no result file")
    add_threads_option(p)
    args = p.parse_args(argv)
    use_threads(args)
    seeds = tuple(large_settings().seeds if args.seeds is None else args.seeds)
    if args.only:
        left = run_only(seeds, args.only, jobs=args.jobs)
        print(f"{len(left)} point(s) still to run: {' '.join(left) or 'none; run without --only to write the file'}")
        return {"missing": left}
    out = run_points_of(seeds, jobs=args.jobs)
    sm = out["summary"]
    print(f"  {sm['clients']} large client(s) over {len(seeds)} seed(s): active Grad accuracy between "
          f"{sm['lo']:.1f}% and {sm['hi']:.1f}% (mean over clients of the min and max over configurations); "
          f"{sm['grad_rule_among_large']:.1f}% at Grad's rule among the large clients")
    print("wrote", save_result(NAME, out, seeds=seeds))
    return out


if __name__ == "__main__":
    main()
