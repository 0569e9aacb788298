"""Benchmark: the paper-scale Medical Table 1 (all rows, one seed), with per-step times.

    python -m flbook.experiments.part3_bench [--seed 0] [--threads N]

Runs the paper's settings whatever ``FLPRIVACY_SCALE`` says (T = 100 rounds, active +10/+50,
50 Optuna trials, the full gradient-based grid), prints the time of every step and writes
``book/results/part3_bench.json``. The target is at most 160 s on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from . import add_threads_option, save_result, seed_int, use_threads
from .part3_pipeline import make_task, run_pipeline
from .part3_table1 import PAPER_SETTINGS


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=seed_int, default=0)
    add_threads_option(p)
    args = p.parse_args(argv)
    use_threads(args)
    s = PAPER_SETTINGS["Medical"]
    t0 = time.perf_counter()
    task = make_task("Medical", "medical", args.seed, s)
    res = run_pipeline(task, s, args.seed, log=print)
    total = time.perf_counter() - t0
    print(f"total {total:.1f} s (target: <= 160 s on 2 cores); torch threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    out = {"seed": args.seed, "total_s": total, "steps_s": res["timings"], "rows": res["rows"],
           "load_average_1min": os.getloadavg()[0], "torch_threads": torch.get_num_threads()}
    print("wrote", save_result("part3_bench", out, seeds=[args.seed], scale_="fixed"))
    return out


if __name__ == "__main__":
    main()
