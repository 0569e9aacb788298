"""Fig. 4 of Diana et al. 2025: smaller clients leak more (Income-A, Table 1's setting, 50
active rounds).

Income-A splits the census by state, so client sizes span two orders of magnitude. For each
seed the Part III pipeline (:func:`flbook.experiments.part3_pipeline.run_pipeline`) runs on
Income-A with Table 1's settings and one attack length (50 active rounds at paper scale), and
every client's accuracy is kept beside her size: Ours passive (last returned model), Ours active
(Alg. 4), Model-w-O (her optimal local model) and, with ``--grad``, Grad and Grad-w-O at the
configuration chosen for all clients. The trend is Spearman's ρ(size, accuracy) per seed; with
no relation, ρ over m clients is about N(0, 1/(m - 1)), so the mean over k seeds has the
one-sided 0.14 % level -3/√(k(m - 1)).

    python -m flbook.experiments.part3_fig4                          # quick scale
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_fig4 --seeds 0 1 2

The gradient-based rows dominate the cost at paper scale (about 36 of the 40 CPU-minutes of one
seed of ``part3_table1 --task Income-A``), hence off unless ``--grad``. Writes
``book/results/part3_fig4_synthetic[_quick].json``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, replace

import torch

from . import add_threads_option, save_result, seed_int, use_threads
from .part3_pipeline import AIASettings, make_task, run_pipeline
from .part3_table1 import settings


def fig4_settings() -> AIASettings:
    """Table 1's Income-A settings with its longer attack only (Fig. 4: 50 active rounds)."""
    s = settings("Income-A")
    return replace(s, active_rounds=(max(s.active_rounds),))


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    def ranks(v):
        t = torch.tensor(v, dtype=torch.float64)
        order = t.argsort()
        r = torch.empty_like(t)
        r[order] = torch.arange(len(v), dtype=torch.float64)
        for u in t.unique():  # ties: their mean rank
            m = t == u
            r[m] = r[m].mean()
        return r
    a, b = ranks(x), ranks(y)
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / (a.norm() * b.norm()))


def trend(per_seed: list[dict]) -> dict:
    """Per row: Spearman's ρ(size, accuracy) of every seed, their mean and the no-relation level
    -3/√(k(m - 1)) (k seeds, m clients)."""
    rows = [r for r in per_seed[0]["per_client"] if r != "sizes"]
    k, m = len(per_seed), len(per_seed[0]["per_client"]["sizes"])
    out = {"level": -3 / math.sqrt(k * (m - 1)), "clients": m, "seeds": k}
    for row in rows:
        rho = [spearman(p["per_client"]["sizes"], p["per_client"][row]) for p in per_seed]
        out[row] = {"rho": rho, "mean_rho": sum(rho) / k}
    return out


def run(seeds: Sequence[int], source: str = "synthetic", grad: bool = False, log=print) -> dict:
    s = fig4_settings()
    start = time.perf_counter()
    per_seed = []
    for seed in seeds:
        t = time.perf_counter()
        task = make_task("Income-A", source, seed, s)
        res = run_pipeline(task, s, seed, grad=grad)
        pc = res["details"]["per_client"]
        if grad:
            A = max(s.active_rounds)
            for row in ("passive", f"active-{A}"):
                for name in ("Grad", "Grad-w-O"):
                    pc[f"{row}/{name}"] = res["details"][f"{row}/grad_choice"][name]["per_client"]
        per_seed.append({"seed": seed, "rows": res["rows"], "per_client": pc, "timings": res["timings"],
                         "seconds": time.perf_counter() - t})
        log(f"  seed {seed}: {per_seed[-1]['seconds']:.0f} s")
    return {"task": "Income-A", "source": task.source, "settings": asdict(s), "grad": grad,
            "seeds": list(seeds), "per_seed": per_seed, "trend": trend(per_seed),
            "seconds": time.perf_counter() - start}


def main(argv: Sequence[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", nargs="+", type=seed_int, default=None)
    p.add_argument("--grad", action="store_true", help="also the gradient-based rows (most of the cost)")
    add_threads_option(p)
    args = p.parse_args(argv)
    use_threads(args)
    seeds = tuple(fig4_settings().seeds if args.seeds is None else args.seeds)
    out = run(seeds, grad=args.grad)
    tr = out["trend"]
    for row, v in tr.items():
        if isinstance(v, dict):
            print(f"  {row:22s} mean rho {v['mean_rho']:+.3f}  per seed {[round(r, 3) for r in v['rho']]}")
    print(f"  no-relation level (one-sided 0.14%): {tr['level']:.3f} over {tr['clients']} clients, {tr['seeds']} seeds")
    print("wrote", save_result("part3_fig4_synthetic", out, seeds=seeds))
    return out


if __name__ == "__main__":
    main()
