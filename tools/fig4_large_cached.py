"""Run ``python -m flbook.experiments.part3_fig4_large`` with the gradient-based AIA's per-round
statistics kept in memory (``gradient_aia``'s ``max_cache_mb``), for a machine that has the memory.

Why: at 36,000 rows (California) the statistics of the passive phase's 100 rounds do not fit the
default cache (1,024 MB) and are recomputed at every one of the attack's 100 iterations, which is
most of a point's 2.5 hours on two threads. Kept in memory they cost about 644 float32 numbers per
candidate row and round, 18.5 GB for California's passive point (the module's docstring gives the
measured 2.8x per iteration). The cache changes when the statistics are computed, not how: the
same tensors, in the same order, so the point's numbers are the same; ``--check`` shows it on the
quick-scale points (cache off against cache on, every number compared exactly) before anything is run.

Run it under glibc's setting that keeps freed memory too (``MALLOC_MMAP_MAX_=0
MALLOC_TRIM_THRESHOLD_=2147483647``, what ``make reproduce`` gives its commands): on generated data
of 36,000 rows and 10 rounds, one thread, an iteration (runs of 4 and 2 iterations, their difference halved) took 7.8 s with neither, 3.5 s with the cache,
3.1 s with the allocator setting and 1.0 s with both (2026-11-29; the part3_fig4_large docstring).

The point files are the command's own (same function, arguments, scale and library code), so the
command without this wrapper finds them current; their ``command`` field names this wrapper.

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647 FLPRIVACY_SCALE=paper \
        python tools/fig4_large_cached.py --cache-mb 20000 --seeds 0 1 --only seed=0_client=4_passive --threads 2
    python tools/fig4_large_cached.py --check     # quick scale: cache off vs on, exact equality
"""

from __future__ import annotations

import argparse
import functools
import sys


def _patched(cache_mb: int):
    from flprivacy.attacks import gradient_aia as ga
    from flbook.experiments import part3_fig4_large as large

    large.gradient_aia = functools.partial(ga.gradient_aia, max_cache_mb=cache_mb)
    return large


def check() -> None:
    """Every quick-scale point of seed 0 with no cache (statistics recomputed at every iteration) and
    with a cache that holds them: the data must be equal, number for number."""
    import os

    os.environ["FLPRIVACY_SCALE"] = "quick"  # the check is the quick-scale points, whatever the shell sets
    from flprivacy.attacks import gradient_aia as ga
    from flbook.experiments import part3_fig4_large as large

    plan = large.plan([0])[0]
    for p in plan:
        out = {}
        for mb in (0, 4096):
            d = _patched(mb).attack_point(*p.args)
            d.pop("seconds")
            out[mb] = d
        same = out[0] == out[4096]
        print(f"{p.key}: cache off vs on {'identical' if same else 'DIFFERENT'}", flush=True)
        if not same:
            raise SystemExit(f"{p.key}: the cached run differs from the recomputing one")
    large.gradient_aia = ga.gradient_aia


def main(argv: list[str] | None = None) -> None:
    from flbook.experiments import positive_int

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cache-mb", type=positive_int, default=None, help="gradient_aia's max_cache_mb for every point (a positive integer)")
    p.add_argument("--check", action="store_true", help="compare cache off and on at quick scale, run nothing else")
    args, rest = p.parse_known_args(argv)
    if args.check:
        check()
        return
    if args.cache_mb is None:
        p.error("--cache-mb is required (e.g. 20000 for California's passive point)")
    _patched(args.cache_mb).main(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
