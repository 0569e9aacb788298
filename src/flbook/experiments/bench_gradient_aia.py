"""Benchmark: the gradient-based AIA (Diana et al. 2025, eq. 2, App. B.5) with the first layer's
Gram identity (``first_layer="gram"``) against the direct outer product (``"outer"``) and the
library's default choice (``"auto"``); and the authors' relaxation of eq. 2 (``relaxation="input"``,
``sampler="sigmoid"``, what the book's Tables 1-3 run) by the hand-written derivative
(:class:`~flprivacy.attacks.gradient_aia.AnalyticInputObjective`) against autograd through the
input (:class:`~flprivacy.attacks.gradient_aia.InputRelaxationObjective`, the code a reader would
write), beside the mixture with the same sampler.

    python -m flbook.experiments.bench_gradient_aia [--iterations 10] [--repeats 3] [--threads 1]

A paper-scale-sized call: an MLP with 128 hidden units on 37 features, one client with n = 1201
samples and a binary attribute (N = 2·1201 candidate rows), R = 128 observed rounds, the full grid
of round sets and learning rates (K = 30 configurations). Messages are random (the cost does not
depend on their values). Both paths run side by side in one process on the same inputs; the
record holds the median times, their ratio and whether the predictions are equal. Writes
``book/results/bench_gradient_aia.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from . import add_threads_option, save_result, use_threads
from flprivacy import mlp
from flprivacy.attacks import gradient_aia as ga
from flprivacy.data.attributes import SensitiveAttribute
from flprivacy.log import ClientMessages


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--n", type=int, default=1201)
    p.add_argument("--rounds", type=int, default=128)
    add_threads_option(p)
    args = p.parse_args(argv)
    use_threads(args)
    g = torch.Generator().manual_seed(0)
    n, d, R = args.n, 37, args.rounds
    X = torch.randn(n, d, generator=g)
    X[:, 0] = (X[:, 0] > 0).float()
    y = torch.randn(n, generator=g)
    model = mlp(d, 128)
    sent = torch.stack([model.init_params(t) for t in range(R)])
    returned = sent - 1e-2 * torch.randn(sent.shape, generator=g)
    msgs = ClientMessages(0, torch.arange(R), sent, returned, torch.zeros(R, dtype=torch.bool))
    att = SensitiveAttribute.binary(0)
    times: dict[str, list[float]] = {"outer": [], "gram": [], "auto": []}
    preds = {}
    orig = ga.GradientObjective.__init__
    for _ in range(args.repeats):
        for path in ("outer", "gram", "auto"):
            def init(self, *a, _p=path, **k):
                orig(self, *a, **k, first_layer=_p)
            ga.GradientObjective.__init__ = init
            try:
                t0 = time.perf_counter()
                res = ga.gradient_aia(model, msgs, X, y, att, iterations=args.iterations, max_cache_mb=8192)
                times[path].append(time.perf_counter() - t0)
            finally:
                ga.GradientObjective.__init__ = orig
            preds[path] = res.predictions
    # the authors' relaxation: by hand, by autograd, and the mixture with the same sampler
    relax = {"input by hand": "input", "input by autograd": "input", "mixture": "mixture"}
    rtimes: dict[str, list[float]] = {k: [] for k in relax}
    rpreds = {}
    applies = ga.AnalyticInputObjective.__dict__["applies"]  # the staticmethod itself, to put back
    for _ in range(args.repeats):
        for name, relaxation in relax.items():
            if name == "input by autograd":
                ga.AnalyticInputObjective.applies = staticmethod(lambda *a, **k: False)
            try:
                t0 = time.perf_counter()
                res = ga.gradient_aia(model, msgs, X, y, att, iterations=args.iterations, max_cache_mb=8192,
                                      relaxation=relaxation, sampler="sigmoid")
                rtimes[name].append(time.perf_counter() - t0)
            finally:
                ga.AnalyticInputObjective.applies = applies
            rpreds[name] = res.predictions
    med = {k: statistics.median(v) for k, v in times.items()}
    rmed = {k: statistics.median(v) for k, v in rtimes.items()}
    agree = (rpreds["input by hand"] == rpreds["input by autograd"]).double().mean()
    out = {"n": n, "rounds": R, "iterations": args.iterations, "repeats": args.repeats,
           "torch_threads": torch.get_num_threads(), "times_s": times, "median_s": med,
           "ratio_outer_over_gram": med["outer"] / med["gram"],
           "ratio_outer_over_auto": med["outer"] / med["auto"],
           "same_predictions": bool(torch.equal(preds["outer"], preds["gram"]) and torch.equal(preds["outer"], preds["auto"])),
           "input_relaxation": {"sampler": "sigmoid", "times_s": rtimes, "median_s": rmed,
                                "ratio_autograd_over_hand": rmed["input by autograd"] / rmed["input by hand"],
                                "ratio_hand_over_mixture": rmed["input by hand"] / rmed["mixture"],
                                "prediction_agreement_hand_vs_autograd": float(agree)}}
    print(out)
    print("wrote", save_result("bench_gradient_aia", out, seeds=[0], scale_="fixed"))
    return out


if __name__ == "__main__":
    main()
