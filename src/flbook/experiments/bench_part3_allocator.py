"""A paper-scale Part III point and the gradient-based AIA at ACS Income-A's largest client, under
glibc's default allocator and with freed memory kept, side by side.

    python -m flbook.experiments.bench_part3_allocator          # ~15 minutes of one core

Why: the gradient-based AIA of Diana et al. (eq. 2, App. B.5) allocates and frees, at every one of
its iterations, products of tens to hundreds of megabytes (every round's virtual gradients for
every configuration). glibc serves each block that large with a fresh ``mmap``, whose pages the
kernel maps and zero-fills on first touch, and returns it at ``free``: the same cost that
:mod:`.awa_bench` measured for AWA. The setting that keeps freed memory for reuse
(:data:`~flbook.experiments.KEEP_FREED_MEMORY_ENV`, what ``make reproduce`` gives every command
it runs) changes where tensors live, not what they hold.

An allocator setting holds for a whole process, so each measurement runs in a child process of
this command, the two settings alternating, on one torch thread
(:func:`~flbook.experiments.time_allocators`):

- ``point``: one point of Table 1 at the paper's settings (Income-L on the synthetic census,
  seed 0, :data:`.part3_table1.PAPER_SETTINGS`: T = 100, active +10/+50, 50 Optuna trials per
  client, the gradient-based grid), :func:`.part3_pipeline.run_pipeline`'s per-step seconds and
  its rows, which must be equal number for number;
- ``large``: :func:`~flprivacy.attacks.gradient_aia.gradient_aia` as ``part3_fig4_large`` runs it
  (the authors' relaxation and sampler, the full grid of round sets and learning rates) on a client
  of 36,000 rows, California's size in the census of 1,664,500 people, with generated data and
  ``--large-rounds`` rounds, the default cache (its statistics do not fit it, so they are recomputed
  at every iteration, as in that command's passive phase); seconds per iteration, and the
  predictions and cosines, which must be equal.

Each child's record holds its wall, user and kernel (system) CPU seconds and minor page faults.
Writes ``book/results/bench_part3_allocator.json`` (fixed scale: the settings do not depend on
``FLPRIVACY_SCALE``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import time

import torch

from . import ALLOCATORS, KEEP_FREED_MEMORY_ENV, positive_int, save_result, seed_int, time_allocators

NAME = "bench_part3_allocator"
LARGE_ROWS = 36_000
"""California's rows in part3_fig4_large's census of 1,664,500 people (the largest client)."""


def _usage() -> dict:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return {"user": r.ru_utime, "system": r.ru_stime, "minor_faults": r.ru_minflt}


def _digest(*tensors: torch.Tensor) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def child_point(seed: int) -> dict:
    """One Table 1 point at the paper's settings: Income-L, synthetic census."""
    from .part3_pipeline import make_task, run_pipeline
    from .part3_table1 import PAPER_SETTINGS

    s = PAPER_SETTINGS["Income-L"]
    t0 = time.perf_counter()
    res = run_pipeline(make_task("Income-L", "synthetic", seed, s), s, seed)
    return {"wall": time.perf_counter() - t0, **_usage(), "steps": res["timings"], "rows": res["rows"]}


def child_large(rounds: int, iterations: int) -> dict:
    """The gradient-based AIA on one generated client of :data:`LARGE_ROWS` rows."""
    from flprivacy import mlp
    from flprivacy.attacks.gradient_aia import gradient_aia
    from flprivacy.data.attributes import SensitiveAttribute
    from flprivacy.log import ClientMessages

    g = torch.Generator().manual_seed(0)
    n, d = LARGE_ROWS, 37
    X = torch.randn(n, d, generator=g)
    X[:, 0] = (X[:, 0] > 0).float()
    y = torch.randn(n, generator=g)
    model = mlp(d, 128)
    sent = torch.stack([model.init_params(t) for t in range(rounds)])
    msgs = ClientMessages(0, torch.arange(rounds), sent, sent - 1e-2 * torch.randn(sent.shape, generator=g),
                          torch.zeros(rounds, dtype=torch.bool))
    t0 = time.perf_counter()
    res = gradient_aia(model, msgs, X, y, SensitiveAttribute.binary(0), iterations=iterations, patience=None,
                       relaxation="input", sampler="sigmoid")
    wall = time.perf_counter() - t0
    return {"wall": wall, "wall_per_iteration": wall / iterations, **_usage(),
            "result": _digest(res.predictions, res.cosine)}


def main(argv: list[str] | None = None) -> dict | None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=seed_int, default=0, help="the point's seed")
    p.add_argument("--large-rounds", type=positive_int, default=10, help="observed rounds of the large client")
    p.add_argument("--large-iterations", type=positive_int, default=2, help="attack iterations of the large client")
    p.add_argument("--repeats", type=positive_int, default=1, help="alternating rounds of the point (medians)")
    p.add_argument("--large-repeats", type=positive_int, default=2, help="alternating rounds of the large client")
    p.add_argument("--what", choices=("point", "large"), default=None, help="internal: what a child measures")
    p.add_argument("--child", choices=ALLOCATORS, default=None,
                   help="internal: the allocator setting a child runs under (set by its environment); print JSON, save nothing")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    if a.child is not None:
        print(json.dumps(child_point(a.seed) if a.what == "point" else child_large(a.large_rounds, a.large_iterations)))
        return None
    t0 = time.perf_counter()
    args = ["--seed", str(a.seed), "--large-rounds", str(a.large_rounds), "--large-iterations", str(a.large_iterations)]
    data = {"settings": {"point": {"task": "Income-L", "source": "synthetic", "seed": a.seed, "settings": "paper"},
                         "large": {"rows": LARGE_ROWS, "rounds": a.large_rounds, "iterations": a.large_iterations,
                                   "relaxation": "input", "sampler": "sigmoid"},
                         "threads": 1, "environment": KEEP_FREED_MEMORY_ENV},
            "large": time_allocators(NAME, ["--what", "large", *args], a.large_repeats, "result"),
            "point": time_allocators(NAME, ["--what", "point", *args], a.repeats, "rows")}
    data["seconds"] = time.perf_counter() - t0
    save_result(NAME, data, seeds=[a.seed], scale_="fixed")
    print(f"wrote bench_part3_allocator in {data['seconds']:.0f} s: the point {data['point']['wall_ratio']:.2f}x faster "
          f"(wall) with freed memory kept, the large client {data['large']['wall_ratio']:.2f}x; same numbers: "
          f"{data['point']['same_numbers'] and data['large']['same_numbers']}")
    return data


if __name__ == "__main__":
    main()
