"""Song, Wang & Zuazua (2025), Table IV, Fig. 1 and Fig. 4, and the cost of the BO protocol.

    python -m flprivacy.experiments.awa_table4                        # quick scale (tens of minutes, CPU)
    FLPRIVACY_SCALE=paper python -m flprivacy.experiments.awa_table4  # paper scale (ResNet-18; needs a GPU)

For each seed, a client holds N = 4 CIFAR-10 images of four different classes and trains one
FedAvg round from an untrained model in each of the four cases (E, B) = (1, 1), (4, 1), (1, 4),
(2, 2) with SGD (η = 10⁻³). The server attacks θ_t, θ_{t+1} with

- DLG (unweighted eq. 10, exact replay; not in case 4),
- AGIC (one combined step, layer-weighted cosine),
- AWA (Alg. 2: Q tuned by Bayesian optimisation over Table II, then the final attack; case 4
  attacks the interpolated first epoch),

all with Adam at step size 0.1 and labels known (Song §5.1), and scores the N reconstructions
(Hungarian-matched) by PSNR, SSIM and MSE. The AWA runs record the cumulative minimum of the BO
objective (Fig. 1) and PSNR/SSIM along the final attack (Fig. 4).

``--benchmark`` also measures the cost of the BO protocol on case 4 of the first seed: Song's
protocol (every trial a full attack) next to the sped-up one (short trials, median pruning),
iterations and seconds, and the quality each reaches.

Quick scale deviates from the paper: a small CNN with BatchNorm (``small_cnn``, width 16) on
images average-pooled to 16x16, ``ITER`` attack iterations instead of 1,000 and a short BO.
Writes ``book/results/awa_table4.json`` (``awa_table4_quick.json`` at quick scale), saved after
every (seed, case) so that an interrupted run keeps its progress.
"""

from __future__ import annotations

import argparse
import functools
import time

import torch
import torch.nn.functional as F

from ..attacks import awa
from ..config import at_scale, base_seed, child_seed, generator
from ..data import load_cifar10
from ..metrics import quality
from ..models import resnet18, small_cnn
from . import add_threads_option, positive_int, save_result, use_threads

#: Song et al., Table IV (ResNet-18, CIFAR-10 32x32, N = 4, 1,000 Adam iterations at 0.1).
PAPER_TABLE_IV = {
    "case 1": {"DLG": dict(psnr=14.06, ssim=0.534, mse=0.042), "AGIC": dict(psnr=15.89, ssim=0.689, mse=0.028),
               "AWA": dict(psnr=22.40, ssim=0.935, mse=0.006)},
    "case 2": {"DLG": dict(psnr=16.43, ssim=0.739, mse=0.024), "AGIC": dict(psnr=16.07, ssim=0.631, mse=0.035),
               "AWA": dict(psnr=20.40, ssim=0.901, mse=0.009)},
    "case 3": {"DLG": dict(psnr=14.05, ssim=0.505, mse=0.044), "AGIC": dict(psnr=15.63, ssim=0.718, mse=0.029),
               "AWA": dict(psnr=22.47, ssim=0.936, mse=0.006)},
    "case 4": {"DLG": None, "AGIC": dict(psnr=16.41, ssim=0.734, mse=0.025),
               "AWA": dict(psnr=19.68, ssim=0.882, mse=0.011)},
}

SETTINGS = at_scale(
    quick=dict(model="small_cnn(width=16)", side=16, n_images=4, client_lr=1e-3, attack_lr=0.1, iterations=300,
               n_trials=8, n_startup_trials=4, trial_iterations=100, prune=True, report_every=25, seeds=3,
               curve_every=25, bench_trials=10, bench_startup=4),
    paper=dict(model="resnet18", side=32, n_images=4, client_lr=1e-3, attack_lr=0.1, iterations=1000,
               n_trials=50, n_startup_trials=12, trial_iterations=1000, prune=False, report_every=50, seeds=1,
               curve_every=50, bench_trials=50, bench_startup=12),
)


@functools.lru_cache(maxsize=1)
def _cifar() -> tuple[torch.Tensor, torch.Tensor]:
    return load_cifar10("test")


def client_images(seed: int, n: int, side: int) -> tuple[torch.Tensor, torch.Tensor]:
    """N test images of N different classes drawn with ``seed``, pooled to ``side`` x ``side``."""
    X, y = _cifar()
    g = generator(seed)
    classes = torch.randperm(10, generator=g)[:n]
    idx = torch.stack([torch.nonzero(y == c).flatten()[torch.randint(int((y == c).sum()), (1,), generator=g)]
                       for c in classes]).flatten()
    Xs = X[idx]
    if side != X.shape[-1]:
        Xs = F.avg_pool2d(Xs, X.shape[-1] // side)
    return Xs, y[idx]


def make_model(side: int):
    return resnet18() if SETTINGS["model"] == "resnet18" else small_cnn(3, 10, side, width=16)


def run_case(seed: int, scen: awa.Scenario, *, with_dlg: bool = True) -> dict:
    S = SETTINGS
    X, y = client_images(seed, S["n_images"], S["side"])
    model = make_model(S["side"])
    theta = model.init_params(child_seed(seed, 1))
    theta_next, orders = awa.client_update(model, theta, X, y, lr=S["client_lr"], epochs=scen.epochs,
                                           batches=scen.batches, seed=child_seed(seed, 2))
    labels = y[orders[0]]  # labels known (Song §5.1), in the order the attacker replays
    shape = (3, S["side"], S["side"])
    common = dict(labels=labels, image_shape=shape, lr=S["client_lr"], epochs=scen.epochs, batches=scen.batches,
                  attack_lr=S["attack_lr"], iterations=S["iterations"], seed=child_seed(seed, 3))
    out: dict = {"E": scen.epochs, "B": scen.batches}
    if scen.replayable and with_dlg:
        rec = awa.dlg_attack(model, theta, theta_next, **common)
        out["DLG"] = dict(quality(rec.images, X).summary(), seconds=rec.seconds)
    else:
        out["DLG"] = None
    rec = awa.agic_attack(model, theta, theta_next, **common)
    out["AGIC"] = dict(quality(rec.images, X).summary(), seconds=rec.seconds)
    # Fig. 4: PSNR / SSIM along the final attack with Q*
    curve: dict[str, list] = {"iteration": [], "psnr": [], "ssim": []}

    def record(it: int, images: torch.Tensor) -> None:
        if (it + 1) % S["curve_every"] == 0:
            q = quality(images, X).summary()
            curve["iteration"].append(it + 1)
            curve["psnr"].append(q["psnr"])
            curve["ssim"].append(q["ssim"])

    res = awa.tune_weights(model, theta, theta_next, n_trials=S["n_trials"], n_startup_trials=S["n_startup_trials"],
                           trial_iterations=S["trial_iterations"], prune=S["prune"], report_every=S["report_every"],
                           callback=record, **common)
    rec = res.reconstruction
    out["AWA"] = dict(quality(rec.images, X).summary(), seconds=res.search_seconds + res.final_seconds,
                      Q=res.best.as_dict(), bo_values=res.values, bo_cummin=res.cumulative_minimum(),
                      bo_iterations=res.iterations, total_iterations=res.total_iterations, curve=curve)
    return out


def benchmark(seed: int) -> dict:
    """Cost of Song's BO protocol vs the sped-up one on case 4 (same trial budget, same seed)."""
    S = SETTINGS
    X, y = client_images(seed, S["n_images"], S["side"])
    model = make_model(S["side"])
    theta = model.init_params(child_seed(seed, 1))
    theta_next, orders = awa.client_update(model, theta, X, y, lr=S["client_lr"], epochs=2, batches=2,
                                           seed=child_seed(seed, 2))
    common = dict(labels=y[orders[0]], image_shape=(3, S["side"], S["side"]), lr=S["client_lr"], epochs=2, batches=2,
                  attack_lr=S["attack_lr"], iterations=S["iterations"], seed=child_seed(seed, 3),
                  n_trials=S["bench_trials"], n_startup_trials=S["bench_startup"])
    out = {}
    for name, kw in (("full (Song)", dict(trial_iterations=S["iterations"], prune=False)),
                     ("short trials + pruning", dict(trial_iterations=max(1, S["iterations"] // 3), prune=True,
                                                     report_every=S["report_every"]))):
        t0 = time.perf_counter()
        res = awa.tune_weights(model, theta, theta_next, **kw, **common)
        seconds = time.perf_counter() - t0
        q = quality(res.reconstruction.images, X).summary()
        out[name] = dict(total_iterations=res.total_iterations, seconds=seconds, objective=min(res.values),
                         final_objective=res.reconstruction.settings["objective"], trials_stopped=sum(res.stopped),
                         **q)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=positive_int, default=SETTINGS["seeds"], help="number of image sets")
    parser.add_argument("--benchmark", action="store_true", help="also measure the BO protocol's cost")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    use_threads(args)
    seeds = [child_seed(base_seed(), 100 + k) for k in range(args.seeds)]
    data: dict = {"settings": SETTINGS, "paper": PAPER_TABLE_IV, "runs": {}}
    t0 = time.perf_counter()
    for s in seeds:
        for scen in awa.PAPER_SCENARIOS:
            data["runs"].setdefault(str(s), {})[f"case {scen.case}"] = run_case(s, scen)
            data["seconds"] = time.perf_counter() - t0
            save_result("awa_table4", data, seeds=seeds)
            print(f"seed {s} case {scen.case} done after {data['seconds']:.0f} s", flush=True)
    if args.benchmark:
        data["benchmark"] = benchmark(seeds[0])
        data["seconds"] = time.perf_counter() - t0
        save_result("awa_table4", data, seeds=seeds)
    print(f"wrote awa_table4 in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
