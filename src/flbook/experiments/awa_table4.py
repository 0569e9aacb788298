"""Song, Wang & Zuazua (2025), Table IV, Fig. 1 and Fig. 4, and the cost of the BO protocol.

    python -m flbook.experiments.awa_table4                        # quick scale (tens of minutes, CPU)
    FLPRIVACY_SCALE=paper python -m flbook.experiments.awa_table4  # paper scale (ResNet-18; needs a GPU)

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

Each BO's first trial is Q = 1 (every layer weight 1: DLG's unweighted eq. 10, enqueued; not in
the paper); the file records its f(Q) (``f_unweighted``), the best f(Q) (``f_best``) with its Q
(``Q``), whether BO beat f(1) (``bo_beat_unweighted``) and whether Q* is Q = 1 (``best_is_unweighted``),
see :func:`bo_summary`, and DLG's own eq. 33 objective. ``--storage PATH`` keeps the Optuna studies in an SQLite
file (one study per model, seed and case), so that an interrupted BO resumes.

``--cost`` only times a few attack iterations of each method at the paper's setting (ResNet-18,
32x32) and writes ``awa_table4_cost.json`` with the CPU time of the paper's protocol (minutes).

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

from flprivacy.attacks import awa, awa_search
from flprivacy.config import at_scale, base_seed, child_seed, generator
from flprivacy.data import load_cifar10
from flprivacy.metrics import quality
from flprivacy.models import resnet18, small_cnn
from ..papers.song import TABLE_I, TABLE_III, TABLE_IV
from . import add_threads_option, keep_freed_memory, positive_int, save_result, use_threads

#: Song et al., Table IV (ResNet-18, CIFAR-10 32x32, N = 4, 1,000 Adam iterations at 0.1); its home is the ledger.
PAPER_TABLE_IV = TABLE_IV

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


def observed_case(seed: int, epochs: int, batches: int) -> tuple:
    """One case's observation: the client's images X (N of SETTINGS' size), the global model θ, her
    returned model after ``epochs`` x ``batches`` local steps (Song §3), the labels in the order the
    attacker replays them (known, §5.1) and the image shape. Returns ``(model, X, θ, θ', labels, shape)``."""
    S = SETTINGS
    X, y = client_images(seed, S["n_images"], S["side"])
    model = make_model(S["side"])
    theta = model.init_params(child_seed(seed, 1))
    theta_next, orders = awa.client_update(model, theta, X, y, lr=S["client_lr"], epochs=epochs, batches=batches,
                                           seed=child_seed(seed, 2))
    return model, X, theta, theta_next, y[orders[0]], (3, S["side"], S["side"])


def run_case(seed: int, scen: awa.Scenario, *, with_dlg: bool = True, storage: str | None = None) -> dict:
    S = SETTINGS
    model, X, theta, theta_next, labels, shape = observed_case(seed, scen.epochs, scen.batches)
    common = dict(labels=labels, image_shape=shape, lr=S["client_lr"], epochs=scen.epochs, batches=scen.batches,
                  attack_lr=S["attack_lr"], iterations=S["iterations"], seed=child_seed(seed, 3))
    out: dict = {"E": scen.epochs, "B": scen.batches}
    if scen.replayable and with_dlg:
        rec = awa.dlg_attack(model, theta, theta_next, **common)
        out["DLG"] = dict(quality(rec.images, X).summary(), seconds=rec.seconds, objective=rec.settings["objective"])
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

    res = awa_search.tune_weights(model, theta, theta_next, n_trials=S["n_trials"], n_startup_trials=S["n_startup_trials"],
                           trial_iterations=S["trial_iterations"], prune=S["prune"], report_every=S["report_every"],
                           callback=record, storage=storage, study_name=f"awa_table4-{S['model']}-{seed}-case{scen.case}",
                           **common)
    rec = res.reconstruction
    out["AWA"] = dict(quality(rec.images, X).summary(), seconds=res.search_seconds + res.final_seconds,
                      bo_values=res.values, bo_cummin=res.cumulative_minimum(),
                      bo_iterations=res.iterations, total_iterations=res.total_iterations, curve=curve,
                      objective=rec.settings["objective"], **bo_summary(res))
    return out


def bo_summary(res: awa_search.WeightSearch) -> dict:
    """What the file records of one BO against DLG's loss: Q* (``Q``), the enqueued trial's f(1)
    (``f_unweighted``: Q = 1 is DLG's unweighted eq. 10, at the trials' budget), the best f(Q)
    (``f_best``), whether BO beat f(1) (``bo_beat_unweighted``: only if f_best < f(1)) and whether
    Q* is Q = 1 itself (``best_is_unweighted``). With f(1) enqueued, the two booleans are each
    other's negation (Optuna keeps the first of tied trials)."""
    f_best = min(res.values)
    f_one = res.unweighted_value
    return dict(Q=res.best.as_dict(), f_unweighted=f_one, f_best=f_best,
                bo_beat_unweighted=None if f_one is None else f_best < f_one,
                best_is_unweighted=res.best.as_dict() == awa.UNWEIGHTED)


def benchmark(seed: int) -> dict:
    """Cost of Song's BO protocol vs the sped-up one on case 4 (same trial budget, same seed)."""
    S = SETTINGS
    model, X, theta, theta_next, labels, shape = observed_case(seed, 2, 2)
    common = dict(labels=labels, image_shape=shape, lr=S["client_lr"], epochs=2, batches=2,
                  attack_lr=S["attack_lr"], iterations=S["iterations"], seed=child_seed(seed, 3),
                  n_trials=S["bench_trials"], n_startup_trials=S["bench_startup"])
    out = {}
    for name, kw in (("full (Song)", dict(trial_iterations=S["iterations"], prune=False)),
                     ("short trials + pruning", dict(trial_iterations=max(1, S["iterations"] // 3), prune=True,
                                                     report_every=S["report_every"]))):
        t0 = time.perf_counter()
        res = awa_search.tune_weights(model, theta, theta_next, **kw, **common)
        seconds = time.perf_counter() - t0
        q = quality(res.reconstruction.images, X).summary()
        out[name] = dict(total_iterations=res.total_iterations, seconds=seconds, objective=min(res.values),
                         final_objective=res.reconstruction.settings["objective"], trials_stopped=sum(res.stopped),
                         **q)
    return out


def cost(iterations: int = 2) -> dict:
    """Seconds per attack iteration of DLG, AGIC and AWA (Table III's Q) at the paper's setting
    (ResNet-18, 32x32, N = 4, η = 1e-3) in each case, and the CPU time of the paper's protocol:
    per case DLG (not in case 4) and AGIC 1,000 iterations each, AWA 50 trials of 1,000 and the
    final 1,000. The first iteration of each attack is a warm-up and is not timed."""
    X, y = client_images(child_seed(base_seed(), 100), 4, 32)
    model = resnet18()
    theta = model.init_params(child_seed(base_seed(), 1))
    per: dict = {}
    total = 0.0
    n_iter = 0
    for scen in awa.PAPER_SCENARIOS:
        theta_next, orders = awa.client_update(model, theta, X, y, lr=1e-3, epochs=scen.epochs, batches=scen.batches,
                                               seed=0)
        common = dict(labels=y[orders[0]], image_shape=(3, 32, 32), lr=1e-3, epochs=scen.epochs, batches=scen.batches,
                      attack_lr=0.1, seed=0)
        Q = awa.AWAWeights(**TABLE_III[f"case {scen.case}"])
        attacks = {"AGIC": functools.partial(awa.agic_attack, model, theta, theta_next, **common),
                   "AWA": functools.partial(awa.awa_attack, model, theta, theta_next, Q=Q, **common)}
        if scen.replayable:
            attacks["DLG"] = functools.partial(awa.dlg_attack, model, theta, theta_next, **common)
        case: dict = {}
        for name, run in attacks.items():
            t0 = time.perf_counter()
            run(iterations=1)  # warm-up and the set-up both calls share
            t1 = time.perf_counter()
            run(iterations=iterations + 1)
            s_it = (time.perf_counter() - t1 - (t1 - t0)) / iterations
            case[name] = s_it
            n = TABLE_I["bo_trials"] * TABLE_I["attack_iterations"] + TABLE_I["attack_iterations"] if name == "AWA" \
                else TABLE_I["attack_iterations"]
            total += n * s_it
            n_iter += n
        per[f"case {scen.case}"] = case
        print(f"case {scen.case}: " + ", ".join(f"{k} {v:.2f} s/it" for k, v in case.items()), flush=True)
    flat = [v for c in per.values() for v in c.values()]
    return dict(seconds_per_iteration=per, seconds_per_iteration_min=min(flat), seconds_per_iteration_max=max(flat),
                protocol_iterations=n_iter, protocol_cpu_hours=total / 3600, threads=torch.get_num_threads(),
                timed_iterations=iterations, model="resnet18", side=32, n_images=4)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=positive_int, default=SETTINGS["seeds"], help="number of image sets")
    parser.add_argument("--benchmark", action="store_true", help="also measure the BO protocol's cost")
    parser.add_argument("--storage", default=None, metavar="PATH",
                        help="SQLite file keeping the Optuna studies (one per seed and case; a rerun resumes them)")
    parser.add_argument("--cost", action="store_true",
                        help="only measure seconds per attack iteration at the paper's setting (ResNet-18) and the "
                             "paper protocol's CPU time; writes awa_table4_cost.json")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    use_threads(args)
    keep_freed_memory()  # replayed training frees and re-allocates large tensors every iteration
    if args.cost:
        t0 = time.perf_counter()
        data = cost()
        data["seconds"] = time.perf_counter() - t0
        save_result("awa_table4_cost", data, seeds=[base_seed()], scale_="paper")
        print(f"wrote awa_table4_cost in {data['seconds']:.0f} s: {data['protocol_cpu_hours']:.0f} CPU hours")
        return
    seeds = [child_seed(base_seed(), 100 + k) for k in range(args.seeds)]
    data: dict = {"settings": SETTINGS, "paper": PAPER_TABLE_IV, "runs": {}}
    t0 = time.perf_counter()
    for s in seeds:
        for scen in awa.PAPER_SCENARIOS:
            data["runs"].setdefault(str(s), {})[f"case {scen.case}"] = run_case(s, scen, storage=args.storage)
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
