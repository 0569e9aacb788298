"""Wilson et al. (2025) Fig. 6 right and App. F: controlled runs on local iterations at the paper's η = 0.03.

    python -m flbook.experiments.local_iterations_controls      # three seeds (about 10 CPU-minutes)

Two questions about the factors chapter's local-iteration results (the attack of
:func:`flbook.experiments.part4_factors.run_case`, 100 iterations, LeNet-5 on MNIST test images):

- ``fixed_B``: clients of 8 images each, K = 2, 4, 8 (so N = 16, 32, 64), the design of the
  chapter's live grid and of the paper (which uses 16 per client). Lemma 1's factor (K-1)/N is
  1/16, 3/32, 7/64: it hardly grows with K.
- ``fixed_N``: N = 16 images split among K = 2, 4, 8 clients (8, 4, 2 each): (K-1)/N is 1/16,
  3/16, 7/16, seven times larger at K = 8 than at K = 2, while the number of images to invert
  stays the same.

For each design, K and seed: the super-client attack at τ = 1, 3, 8 and the App. F upper bound
(the true K clients replayed, labels grouped) at τ = 3 and 8, all at η = 0.03 (App. E: "the FL
learning rate ... is fixed at 0.03"). App. F's "gap" is upper bound minus super-client SSIM at
the same τ; its claim "the gap ... increases with more clients" is tested in both designs. The
K = 2 rows of ``fixed_B`` at τ = 1 and 3 are also the factors chapter's live local-iteration
check run at the paper's η instead of the chapter's 0.3. Writes
``book/results/local_iterations_controls.json`` (``_quick`` at quick scale: the same cases).
"""

from __future__ import annotations

import argparse
import time

from flprivacy.config import base_seed, child_seed, scale
from . import add_threads_option, positive_int, save_result, use_threads
from .part4_factors import Case, default_attack, run_case

FL_LR = 0.03
CLIENTS = (2, 4, 8)
DESIGNS = {"fixed_B": lambda K: (8,) * K, "fixed_N": lambda K: (16 // K,) * K}
"""Client sizes per design and K: 8 images per client, or N = 16 split evenly."""
RUNS = (("super", 1), ("super", 3), ("upper", 3), ("super", 8), ("upper", 8))
"""(variant, τ) of every (design, K, seed); at τ = 1 the upper bound is the super-client (eq. 3 is exact)."""


def seeds(n: int = 3) -> list[int]:
    """The factors chapter's live seeds (children 0, 1 of the book's seed, branch 4) and more."""
    return [child_seed(base_seed(), 4, s) for s in range(n)]


def cases(seed_list: list[int]) -> list[tuple[str, Case]]:
    """Every (design, case); the K = 2 cases are the same in both designs and run once (``fixed_B``)."""
    out = []
    for design, sizes in DESIGNS.items():
        for K in CLIENTS:
            if design == "fixed_N" and K == 2:
                continue  # (8, 8): the fixed_B case
            for s in seed_list:
                out += [(design, Case("local_iterations", sizes(K), tau=tau, fl_lr=FL_LR, variant=v, seed=s))
                        for v, tau in RUNS]
    return out


def main(n_seeds: int = 3) -> dict:
    seed_list = seeds(n_seeds)
    attack = default_attack()
    todo = cases(seed_list)
    print(f"{len(todo)} cases, scale {scale()!r}, {attack.iterations} attack iterations", flush=True)
    t0 = time.perf_counter()
    data = dict(fl_lr=FL_LR, clients=list(CLIENTS), designs={d: {K: list(f(K)) for K in CLIENTS} for d, f in DESIGNS.items()},
                attack=dict(iterations=attack.iterations), cases=[])
    for i, (design, case) in enumerate(todo):
        r = run_case(case, attack)
        data["cases"].append(dict(design=design, K=case.K, N=case.N, tau=case.tau, variant=case.variant, seed=case.seed,
                                  ssim=r["ssim"], peer_ssim=r["peer_ssim"], replay_error=r["replay_error"],
                                  seconds=r["seconds"]))
        print(f"[{time.perf_counter() - t0:6.0f}s] {i + 1}/{len(todo)} {design} K={case.K} τ={case.tau} {case.variant}: "
              f"SSIM {r['ssim']:.3f}, replay error {r['replay_error']:.3g}", flush=True)
        if (i + 1) % 15 == 0 or i + 1 == len(todo):
            data["wall_seconds"] = time.perf_counter() - t0
            save_result("local_iterations_controls", data, seeds=seed_list)
    return data


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=positive_int, default=3, help="number of seeds (default 3)")
    add_threads_option(parser)
    args = parser.parse_args()
    use_threads(args)
    main(args.seeds)
