"""Wilson et al. (2025) Fig. 5 with three models, and App. H Figs. 22-23: the curious-client attack
against LeNet-5, ResNet-9 and ResNet-18 as the number of clients grows.

    python -m flbook.experiments.part4_architectures                      # quick grid (about 2 minutes)
    python -m flbook.experiments.part4_architectures --iterations 100     # quick grid, paper's budget
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part4_architectures --resume   # paper scale

One *point* is one model and one number of clients K: a FedAvg round on MNIST in which K clients
each run τ full-batch local steps of size η from an untrained model, and client 0, the curious
client, inverts the averaged update read from θ^0 and θ^1 as one super-client
(:func:`flprivacy.attacks.inversion.curious_client_attack`, Wilson eq. 3), with the label
multiset known (Wilson §3.1 assume labels restored analytically). The reconstructions of all N
images are paired with the truth (Hungarian matching on MSE) and scored by SSIM, PSNR and LPIPS
(the paper's metric, :func:`flprivacy.diffusion.lpips_digits`: AlexNet v0.1 at 64x64). Every point
also records the attacker's model error at the true images (the replay of eq. 3 and of eq. 2
against the observed update) and the float rounding bound it is compared with.

Paper scale (Wilson §4): 16 images per client, 3 local iterations, K in {2, 4, 8}, FL learning
rate 0.03 (App. E), attack step 0.1. The paper does not state the number of attack iterations;
the authors' code (github.com/ethanowilson/curiousclient, ``utils/config.yaml``: ``T_max: 100``)
runs 100, which the paper scale uses. Quick scale: K in {2, 4}, 2 images per client, one local
iteration, short budgets. The models (:data:`ARCHITECTURES`): :func:`flprivacy.models.lenet5`
(sigmoid, DLG's initialisation as in :mod:`.part4_factors`); ResNet-9
(:func:`flprivacy.models.resnet9`) and ResNet-18 (:func:`flprivacy.models.resnet18`), ReLU,
PyTorch's default initialisation, each with BatchNorm (batch statistics) and without it (the
authors' code has no normalisation layer). The attack is the book's
(:class:`.part4_factors.AttackConfig`: cosine + TV, dummy at half resolution).

Each finished point is saved at once as ``book/results/part4_architectures/<arch>_K<K>.json``
(``--resume`` skips points whose file holds the same settings), and the collected file
``book/results/part4_architectures.json`` that the ledger reads is rewritten (quick scale:
``*_quick.json``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch

from flprivacy.config import child_seed, generator, scale
from flprivacy.federation import ClientData, LocalSGD, run_fedavg
from ..ledger.wilson import CLIENTS_MAIN, FL_LR, IMAGES_PER_CLIENT, LOCAL_ITERATIONS
from flprivacy.metrics import match_images, quality
from flprivacy.models import FLModel, ResNet18, _without_batchnorm, lenet5, resnet9, resnet18
from flprivacy.threats import curious_client
from . import load_result, positive_int, result_path, save_result
from .part4_factors import AttackConfig, _mnist

NAME = "part4_architectures"
ARCHITECTURES: tuple[str, ...] = ("lenet5", "resnet9", "resnet18", "resnet9-nobn", "resnet18-nobn")
"""The three models of Wilson et al. Fig. 5 ("LeNet5, ResNet9, and ResNet18"); each ResNet with BatchNorm (batch
statistics, the book's :func:`~flprivacy.models.resnet18`) and without (``-nobn``: the authors' code has no
normalisation layers)."""
LABELS: dict[str, str] = {"lenet5": "LeNet-5", "resnet9": "ResNet-9 (BN)", "resnet18": "ResNet-18 (BN)",
                          "resnet9-nobn": "ResNet-9 (no BN)", "resnet18-nobn": "ResNet-18 (no BN)"}
PAPER_ITERATIONS = 100
"""Attack iterations at paper scale: the authors' code (``utils/config.yaml``, ``T_max: 100``); the paper is silent."""
SHOWN_IMAGES = 8
"""Images of the first peer (client 1) kept in each point's file, truth and reconstruction (App. H grids)."""


@dataclass(frozen=True)
class Point:
    """One architecture at one number of clients (and the attack's budget)."""

    arch: str
    K: int
    images_per_client: int = IMAGES_PER_CLIENT
    tau: int = LOCAL_ITERATIONS
    fl_lr: float = FL_LR
    iterations: int = PAPER_ITERATIONS
    seed: int = 0

    def __post_init__(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise ValueError(f"Point: arch={self.arch!r}; expected one of {ARCHITECTURES}.")
        for name in ("K", "images_per_client", "tau", "iterations"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Point: {name}={v!r}; expected a positive integer.")
        if self.K < 2:
            raise ValueError(f"Point: K={self.K}; the curious client needs at least one peer (K >= 2).")
        if not self.fl_lr > 0:
            raise ValueError(f"Point: fl_lr={self.fl_lr!r}; expected a positive learning rate.")

    @property
    def N(self) -> int:
        return self.K * self.images_per_client

    def file_name(self) -> str:
        """The per-point result name, ``part4_architectures/<arch>_K<K>``."""
        return f"{NAME}/{self.arch}_K{self.K}"


LIVE_ARCHITECTURES: tuple[str, ...] = ("lenet5", "resnet9-nobn", "resnet18-nobn")
"""The models whose attack the chapter runs live: the paper's three, as the authors' code builds them."""


def quick_points(seed: int = 0, archs: Sequence[str] = LIVE_ARCHITECTURES, iterations: int | None = None) -> list[Point]:
    """The quick grid: K = 2 and 4, 2 images per client, one local iteration, for each of ``archs``.
    Default budgets fit the chapter's minute on one CPU thread: LeNet-5 100 attack iterations, the
    ResNets 10 (one ResNet-18 iteration costs about 1.5 s, a ResNet-9 one about 0.5 s);
    ``iterations`` sets one budget for all."""
    def budget(a: str) -> int:
        return iterations if iterations is not None else (100 if a == "lenet5" else 10)
    return [Point(a, K, images_per_client=2, tau=1, iterations=budget(a), seed=seed) for a in archs for K in (2, 4)]


def paper_points(seed: int = 0, archs: Sequence[str] = ARCHITECTURES, iterations: int | None = None) -> list[Point]:
    """Wilson et al.'s Fig. 5 setting: K in {2, 4, 8}, 16 images per client, τ = 3, η = 0.03,
    :data:`PAPER_ITERATIONS` attack iterations (or ``iterations``), for each of ``archs``."""
    return [Point(a, K, seed=seed, iterations=iterations or PAPER_ITERATIONS) for a in archs for K in CLIENTS_MAIN]


def points(seed: int = 0, archs: Sequence[str] = ARCHITECTURES, iterations: int | None = None) -> list[Point]:
    """The points of the current scale (:func:`flprivacy.config.scale`)."""
    return (paper_points if scale() == "paper" else quick_points)(seed, archs, iterations)


# ---- one point --------------------------------------------------------------------------------------
def attacked_model(arch: str) -> FLModel:
    """The global model for 28x28 one-channel MNIST: LeNet-5 (sigmoid), ResNet-9 or ResNet-18 (ReLU), with or
    without BatchNorm."""
    if arch == "lenet5":
        return lenet5(in_channels=1, n_classes=10, image_size=28)
    if arch == "resnet9":
        return resnet9(in_channels=1, n_classes=10)
    if arch == "resnet18":
        return resnet18(in_channels=1, n_classes=10)
    if arch == "resnet9-nobn":
        return resnet9(in_channels=1, n_classes=10, batchnorm=False)
    if arch == "resnet18-nobn":
        return FLModel(_without_batchnorm(ResNet18(in_channels=1, n_classes=10)), "cross_entropy")
    raise ValueError(f"attacked_model: arch={arch!r}; expected one of {ARCHITECTURES}.")


def initial_model(model: FLModel, arch: str, seed: int) -> torch.Tensor:
    """θ^0: DLG's uniform initialisation for the sigmoid LeNet-5 (as :mod:`.part4_factors`), PyTorch's
    default for the ResNets (the authors' code trains its ResNets from their default initialisation)."""
    from flprivacy.attacks.inversion import dlg_init

    return dlg_init(model, seed) if arch == "lenet5" else model.init_params(seed)


def federation(point: Point):
    """Draw the K clients' images (distinct MNIST test images) and run FedAvg two rounds (the second sends θ^1), so the
    curious client holds θ^0 and θ^1. Returns ``(model, clients, run)``."""
    X, y = _mnist()
    idx = torch.randperm(X.shape[0], generator=generator(child_seed(point.seed, 4, point.N)))[:point.N]
    clients = [ClientData(Xk, yk) for Xk, yk in zip(X[idx].split(point.images_per_client),
                                                    y[idx].split(point.images_per_client))]
    model = attacked_model(point.arch)
    run = run_fedavg(model, clients, rounds=2, local=LocalSGD(lr=point.fl_lr, steps=point.tau),
                     theta0=initial_model(model, point.arch, point.seed), seed=point.seed)
    return model, clients, run


def replay_errors(model: FLModel, clients: Sequence[ClientData], run, *, lr: float, tau: int) -> dict[str, float]:
    """The attacker's model of the update, at the true images, against the observed update
    (θ^0 - θ^1) / η_g: relative errors ‖replay - target‖ / ‖target‖ of the super-client (eq. 3)
    and of the true K clients (eq. 2, FedAvg itself), and the rounding bound of an exact replay:
    each stored model is exact to ε per coordinate, so a difference of two models is off by at
    most ε(‖θ^0‖ + ‖θ^1‖); twice that, relative to the update."""
    from flprivacy.attacks.inversion import replay_update

    view = curious_client(run.log, attacker=0)
    theta_t, theta_next = view.consecutive(0)
    target = (theta_t - theta_next) / view.server_lr
    X = torch.cat([c.X for c in clients])
    y = torch.cat([c.y for c in clients])
    sizes = [c.X.shape[0] for c in clients]
    eps = torch.finfo(theta_t.dtype).eps
    out = {"rounding_bound": float(2 * eps * (theta_t.norm() + theta_next.norm()) / target.norm())}
    for name, cs in (("super", None), ("fedavg", sizes)):
        with torch.enable_grad():
            rep = replay_update(model, theta_t, X, y, lr=lr, steps=tau, client_sizes=cs).detach()
        out[f"replay_error_{name}"] = float((rep - target).norm() / target.norm())
    return out


def score(images: torch.Tensor, truth: torch.Tensor) -> dict:
    """SSIM, PSNR (dB) and LPIPS of the reconstructions against the truth, each image paired with
    a distinct reconstruction (Hungarian matching on MSE): means and per-image values, and the
    pairing ``index`` (``images[index[i]]`` is paired with ``truth[i]``)."""
    from flprivacy.diffusion import lpips_digits

    if images.shape[0] < truth.shape[0]:
        raise ValueError(f"score: {images.shape[0]} reconstructions for {truth.shape[0]} images; each image needs one.")
    index = match_images(images, truth)
    q = quality(images[index], truth, match=False)
    lp = lpips_digits(images[index], truth)
    summary = q.summary()  # PSNR averaged over finite values (an exact image has PSNR = inf)
    return dict(ssim=summary["ssim"], psnr=summary["psnr"], lpips=float(lp.mean()),
                ssim_per_image=[round(float(v), 4) for v in q.ssim], lpips_per_image=[round(float(v), 4) for v in lp],
                index=index)


def run_point(point: Point, attack: AttackConfig | None = None, *, return_images: bool = False) -> dict:
    """Run one point: the federation, the replay errors, the attack and its scores."""
    from flprivacy.attacks.inversion import curious_client_attack

    attack = AttackConfig(iterations=point.iterations) if attack is None else attack
    t0 = time.perf_counter()
    model, clients, run = federation(point)
    X = torch.cat([c.X for c in clients])
    y = torch.cat([c.y for c in clients])
    errors = replay_errors(model, clients, run, lr=point.fl_lr, tau=point.tau)
    view = curious_client(run.log, attacker=0)
    rec = curious_client_attack(model, view, 0, image_shape=(1, 28, 28), local_lr=point.fl_lr, local_steps=point.tau,
                                labels=y.sort().values, distance=attack.distance, tv=attack.tv,
                                attack_lr=attack.attack_lr, scale_factor=attack.scale_factor,
                                iterations=attack.iterations, seed=point.seed)
    s = score(rec.images, X)
    n_k = point.images_per_client
    peers = slice(n_k, None)
    shown = slice(n_k, n_k + min(SHOWN_IMAGES, n_k))
    paired = rec.images[s["index"]]
    out = dict(point=asdict(point), arch=point.arch, K=point.K, N=point.N, attack=asdict(attack), d=model.dim,
               seconds=time.perf_counter() - t0, seconds_per_iteration=rec.seconds_per_iteration,
               loss_first=rec.loss[0], loss_last=rec.loss[-1], **errors,
               **{k: v for k, v in s.items() if k != "index"},
               peer_ssim=float(torch.tensor(s["ssim_per_image"][peers]).mean()),
               peer_lpips=float(torch.tensor(s["lpips_per_image"][peers]).mean()),
               shown_truth=(X[shown] * 255).round().to(torch.uint8).flatten(1).tolist(),
               shown_reconstruction=(paired[shown] * 255).round().to(torch.uint8).flatten(1).tolist())
    if return_images:
        out["images"], out["truth"] = paired, X
    return out


def shown_images(result: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The first peer's images kept in a point's result, ``(truth, reconstruction)``, each ``(n, 1, 28, 28)`` in [0, 1]."""
    def img(key: str) -> torch.Tensor:
        return torch.tensor(result[key], dtype=torch.float32).reshape(-1, 1, 28, 28) / 255
    return img("shown_truth"), img("shown_reconstruction")


def frame(results: Sequence[dict]):
    """Results as a DataFrame, one row per point (architecture, K, N, scores, replay errors, timings)."""
    import pandas as pd

    keys = ("arch", "K", "N", "ssim", "psnr", "lpips", "peer_ssim", "peer_lpips", "replay_error_super",
            "replay_error_fedavg", "rounding_bound", "seconds_per_iteration", "seconds")
    rows = [{**{k: r[k] for k in keys}, "model": LABELS[r["arch"]], "tau": r["point"]["tau"],
             "images_per_client": r["point"]["images_per_client"], "iterations": r["attack"]["iterations"]}
            for r in results]
    return pd.DataFrame(rows)


# ---- the command ------------------------------------------------------------------------------------------
def _save_collected(done: dict[str, dict], seeds: Sequence[int]) -> None:
    data = dict(points=[done[k] for k in sorted(done)], iterations_source="authors' code, utils/config.yaml T_max: 100")
    save_result(NAME, data, seeds=sorted(set(seeds)))


def main(archs: Sequence[str] | None = None, resume: bool = False, iterations: int | None = None, seed: int = 0) -> dict:
    """Run the points of the current scale for ``archs`` (default: all), saving each when it finishes;
    ``iterations`` overrides the attack budget of every point."""
    archs = list(ARCHITECTURES if archs is None else archs)
    unknown = sorted(set(archs) - set(ARCHITECTURES))
    if unknown or not archs:
        raise ValueError(f"archs {unknown or archs} are not architectures; known: {list(ARCHITECTURES)}.")
    if iterations is not None and (isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1):
        raise ValueError(f"iterations={iterations!r}; expected a positive integer.")
    todo = points(seed, archs, iterations)
    done: dict[str, dict] = {}
    for p in points(seed, ARCHITECTURES, iterations):  # every finished point of this scale, other models too
        if result_path(p.file_name()).is_file():
            r = load_result(p.file_name(), scale())["data"]
            if r["point"] == asdict(p):
                done[p.file_name()] = r
    if not resume:
        for p in todo:
            done.pop(p.file_name(), None)
    print(f"{len(todo)} points at scale {scale()!r}, {sum(p.file_name() not in done for p in todo)} to run", flush=True)
    t0 = time.perf_counter()
    for p in todo:
        if p.file_name() in done:
            continue
        torch.set_num_threads(1)
        r = run_point(p)
        save_result(p.file_name(), r, seeds=[p.seed])
        done[p.file_name()] = r
        _save_collected(done, [seed])
        print(f"[{time.perf_counter() - t0:7.0f}s] {LABELS[p.arch]:>17} K={p.K} N={p.N}: SSIM {r['ssim']:.3f}, "
              f"LPIPS {r['lpips']:.3f}, {r['seconds_per_iteration']:.2f} s/iteration", flush=True)
    if done:
        _save_collected(done, [seed])
    return {"points": list(done.values())}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--archs", nargs="*", default=None, help=f"run only these models (default: all of {ARCHITECTURES})")
    parser.add_argument("--iterations", type=positive_int, default=None,
                        help="attack iterations of every point (default: the scale's budget)")
    parser.add_argument("--resume", action="store_true", help="skip points whose result file exists (same settings)")
    args = parser.parse_args()
    try:
        main(args.archs, args.resume, args.iterations)
    except ValueError as e:
        parser.error(str(e))
