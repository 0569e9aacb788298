"""Song et al. (2025), Table III beside ours, and Figs. 3-4 (quality along a long AWA attack).

    python -m flbook.experiments.awa_table3        # quick model (small CNN, 16x16), ~8 CPU-min

Table III lists the Q = (q_cv, q_bn, q_fc, q_en, p_mean, p_var) that Bayesian optimisation found
in each case on the authors' images. Q* minimises f(Q) = ‖G(X̂*(Q)) - Δθ‖² (eq. 33) on *their*
problem; this command asks what each Q does on *ours*: on the first quick-scale image set of
``awa_table4`` (same images, model and client update), in each case it runs AWA with

- the paper's Q of that case (Table III),
- our BO's Q* (``awa_table4_quick.json``, the same image set and case),
- Q = 1 (every layer weight 1: DLG's eq. 10),

for the quick budget (``ITER`` = 300 iterations), and records f(Q) there and the reconstruction's
PSNR/SSIM. The run with our Q* continues to ``--long`` iterations (1,500: the horizon of Fig. 4's
"SSIM values exceeding 0.9 within 1500 attack iterations"), recording PSNR/SSIM every 25
iterations (Fig. 4) and the final images' quality (Fig. 3 compares the 3,000-iteration SSIM with
Table IV's 1,000-iteration SSIM; here the long run against the quick budget).

Quick scale deviates from the paper as ``awa_table4`` does (small CNN with BatchNorm, sigmoid,
16x16 images; 300 instead of 1,000 iterations; 1,500 instead of 3,000). Writes
``book/results/awa_table3_quick.json`` (``awa_table3.json`` at paper scale, where the model is
ResNet-18 and our Q* comes from ``awa_table4.json``).
"""

from __future__ import annotations

import argparse
import time

import torch

from flprivacy.attacks import awa
from flprivacy.config import base_seed, child_seed, scale
from ..papers.song import TABLE_III
from flprivacy.metrics import quality
from . import add_threads_option, keep_freed_memory, load_result, positive_int, save_result, use_threads
from .awa_table4 import SETTINGS, observed_case


def run_case(seed: int, scen: awa.Scenario, our_q: dict[str, float], long: int, every: int = 25) -> dict:
    """f(Q) and quality for the paper's Q, our Q* and Q = 1 in one case; the curve of our Q*."""
    S = SETTINGS
    model, X, theta, theta_next, labels, shape = observed_case(seed, scen.epochs, scen.batches)
    common = dict(labels=labels, image_shape=shape, lr=S["client_lr"], epochs=scen.epochs, batches=scen.batches,
                  attack_lr=S["attack_lr"], seed=child_seed(seed, 3))
    budget = S["iterations"]
    pb = awa._problem(model, theta, theta_next, labels, shape, lr=S["client_lr"], epochs=scen.epochs,
                      batches=scen.batches, epoch=1, approximate=None, where="awa_table3")
    out: dict = {"E": scen.epochs, "B": scen.batches}
    for name, Q in (("paper", TABLE_III[f"case {scen.case}"]), ("Q = 1", awa.UNWEIGHTED)):
        rec = awa.awa_attack(model, theta, theta_next, Q=awa.AWAWeights(**Q), iterations=budget, **common)
        out[name] = dict(quality(rec.images, X).summary(), Q=dict(Q), objective=rec.settings["objective"])
    curve: dict[str, list] = {"iteration": [], "psnr": [], "ssim": []}
    at_budget: dict = {}

    def record(it: int, images: torch.Tensor) -> None:
        if it + 1 == budget:
            at_budget.update(quality(images, X).summary(), objective=awa._objective(
                model, pb.start, pb.target, images, pb.labels, lr=pb.lr, batches=pb.batches, epochs=pb.epochs))
        if (it + 1) % every == 0:
            q = quality(images, X).summary()
            curve["iteration"].append(it + 1)
            curve["psnr"].append(q["psnr"])
            curve["ssim"].append(q["ssim"])

    rec = awa.awa_attack(model, theta, theta_next, Q=awa.AWAWeights(**our_q), iterations=long, callback=record,
                         **common)
    out["ours"] = dict(at_budget, Q=dict(our_q))
    out["long"] = dict(quality(rec.images, X).summary(), iterations=long, curve=curve,
                       objective=rec.settings["objective"], seconds=rec.seconds)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", type=positive_int, default=1500, help="iterations of the long attack (Fig. 4)")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    use_threads(args)
    keep_freed_memory()  # replayed training frees and re-allocates large tensors every iteration
    table4 = load_result("awa_table4", scale())
    seed = child_seed(base_seed(), 100)
    if str(seed) not in table4["data"]["runs"]:
        raise SystemExit(f"awa_table3: awa_table4's result has no run for image seed {seed}; run awa_table4 first.")
    bo = table4["data"]["runs"][str(seed)]
    data: dict = dict(settings=SETTINGS, long=args.long, seed=seed, paper=TABLE_III,
                      bo_source=dict(command=table4["command"], date=table4["date"], commit=table4["commit"]),
                      runs={})
    t0 = time.perf_counter()
    for scen in awa.PAPER_SCENARIOS:
        case = f"case {scen.case}"
        data["runs"][case] = run_case(seed, scen, bo[case]["AWA"]["Q"], args.long)
        data["seconds"] = time.perf_counter() - t0
        save_result("awa_table3", data, seeds=[seed])
        r = data["runs"][case]
        print(f"{case}: f(paper Q) {r['paper']['objective']:.3g}, f(our Q*) {r['ours']['objective']:.3g}, "
              f"f(1) {r['Q = 1']['objective']:.3g}; SSIM at {args.long}: {r['long']['ssim']:.3f} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
