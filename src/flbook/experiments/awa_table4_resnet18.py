"""Song et al. Table IV at the paper's model: ResNet-18 on 32x32 CIFAR-10, on a GPU.

    python -m flbook.experiments.awa_table4_resnet18 --device cuda --cases 2 --workers 6   # case 2's six runs: 5 min on one H200
    python -m flbook.experiments.awa_table4_resnet18 --iterations 2              # a CPU smoke test (minutes)
    python -m flbook.experiments.awa_table4_resnet18 --device cuda --bo --models resnet18-bn-eval resnet18-sigmoid --cases 1 --workers 2

The book's ``awa_table4`` at paper scale runs Song's whole protocol (a Bayesian optimisation of
50 trials of 1,000 iterations per case, then the final attack): about 110 hours of one CPU thread
(``awa_table4_cost.json``; about 240 before the fused loss and the allocator setting). This command runs the part of Table IV that does not need our own
BO, at the paper's settings (Song §5.1 and Table I): the first paper-scale image set of
``awa_table4`` (N = 4 CIFAR-10 test images of four classes), one FedAvg round from an untrained
model with client SGD at η = 10⁻³ in each case (E, B) of §5.2, and 1,000 Adam iterations at
0.1 with the labels known, for

- DLG (eq. 10 on the exactly replayed update; not in case 4, Table IV's dashes),
- AGIC (:func:`flprivacy.attacks.awa.agic_attack`),
- AWA with the paper's own Q* of the case (Table III) in place of a BO of ours (Alg. 2 line 16:
  the final attack with Q*),

on three models:

- ``resnet18``: the library's ResNet-18 (ReLU, BatchNorm with the batch's statistics), the
  model §5.1 names ("ResNet18 [he2016deep]"); the attacks are the library's step for step;
- ``resnet18-sigmoid``: the same network with sigmoid activations, as the ResNet of Zhu et al.'s
  DLG code, with the loss divided by η² (``awa_diagnostics`` found that these two changes are what
  lets DLG and AWA recover an image at ResNet-18; AGIC's cosine loss does not depend on the scale);
- ``resnet18-bn-eval``: the ReLU ResNet-18 with BatchNorm normalising by a fresh model's running
  statistics (mean 0, variance 1) instead of the batch's, loss divided by η²: the other change
  ``awa_diagnostics`` found to let DLG recover an image (one image, 200 iterations), here at the
  whole grid.

DLG and AWA run through ``awa_diagnostics.run_variant`` (the library's attacks step for step,
plus the η² option), AGIC through the library. Every run's scores (Hungarian-matched PSNR,
SSIM, MSE, and SSIM as Song §5.1 writes it), eq. 33's objective, its reconstructed images
(8-bit, :func:`decode_images`; the client's images are ``awa_table4.client_images`` of the seed)
and its seconds per iteration go to its own file
``book/results/awa_table4_resnet18/<model>_case<k>_<method>.json``, so an interrupted run resumes.
``--bo`` runs our own Bayesian optimisation of Q (Song Alg. 2, :func:`~flprivacy.attacks.awa_search.tune_weights`)
at each (model, case) instead of the grid, in the book's pruned protocol (:data:`BO`: Song's 50
trials with 12 random starts and the final attack of 1,000 iterations, but trials of 200
iterations stopped at the median; Q = 1, DLG's loss, enqueued first), the η² scale on the two
control models as in the grid. Each study is an SQLite file
``awa_table4_resnet18/bo/<model>_case<k>.db`` (Optuna's RDB storage), so an interrupted search
resumes trial by trial and a partial study can be committed and read; the result file
``awa_table4_resnet18/bo/<model>_case<k>.json`` (written when the final attack is done) records
:func:`.awa_table4.bo_summary`, every trial and the final attack's scores and images.

``--workers W`` runs W processes at once (a GPU is idle between the small kernels of one
attack); the files record W next to the timings. On a GPU the convolutions' backward passes
use atomic additions, so two runs with the same seed agree to rounding, not bit for bit.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from flprivacy.attacks import awa, awa_search
from flprivacy.config import base_seed, child_seed
from ..papers.song import CASES, TABLE_III, TABLE_IV
from flprivacy.models import FLModel
from . import keep_freed_memory, positive_int, result_path, save_result
from .awa_diagnostics import Variant, make_model, run_variant, scores
from .awa_table4 import bo_summary, client_images
from ..names.awa_table4_resnet18 import NAME, Run, bo_name  # noqa: F401 - the grid's file names

MODELS = ("resnet18", "resnet18-sigmoid", "resnet18-bn-eval")
METHODS = ("DLG", "AGIC", "AWA")


def grid(models: tuple[str, ...] = MODELS, cases: tuple[str, ...] = tuple(CASES)) -> list[Run]:
    """Every (model, case, method) with a Table IV cell (no DLG in case 4), costliest first."""
    runs = [Run(m, c, k) for m in models for c in cases for k in METHODS if TABLE_IV[c][k] is not None]
    return sorted(runs, key=lambda r: -r.cost)


def stored_images(data: dict) -> torch.Tensor:
    """The reconstruction a run's file holds (``images``; the first GPU files: ``images_uint8``)."""
    return decode_images(data["images"] if "images" in data else data["images_uint8"])


def seed() -> int:
    """The first paper-scale image set of ``awa_table4`` (its seeds are child_seed(base, 100 + k))."""
    return child_seed(base_seed(), 100)


def encode_images(images: torch.Tensor) -> dict:
    """Images in [0, 1] as 8-bit pixels in base64 with their shape (for the chapter's figure)."""
    px = images.detach().cpu().clamp(0, 1).mul(255).round().to(torch.uint8)
    return {"shape": list(px.shape), "uint8_base64": base64.b64encode(px.numpy().tobytes()).decode()}


def decode_images(stored: dict | list) -> torch.Tensor:
    """The images of :func:`encode_images` (or nested lists of 8-bit pixels) as floats in [0, 1]."""
    if isinstance(stored, list):
        return torch.tensor(stored, dtype=torch.uint8).float() / 255
    raw = np.frombuffer(base64.b64decode(stored["uint8_base64"]), dtype=np.uint8).reshape(stored["shape"])
    return torch.from_numpy(raw.copy()).float() / 255


@dataclass
class Client:
    """The attacked client of a grid cell: the first paper-scale image set (``X, y`` on the CPU for
    scoring, ``Xd, yd`` on the device), the untrained model θ_t on the device and the case's (E, B)."""

    model_name: str
    case: str
    device: torch.device
    model: FLModel
    theta: torch.Tensor
    X: torch.Tensor
    y: torch.Tensor
    Xd: torch.Tensor
    yd: torch.Tensor
    E: int
    B: int

    @property
    def scaled(self) -> bool:
        """Whether the attack's loss is divided by η²: the two controls match gradients."""
        return self.model_name != "resnet18"

    @property
    def device_name(self) -> str:
        return torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"

    def update(self) -> tuple[torch.Tensor, torch.Tensor]:
        """θ_{t+1} after the client's local training (SGD at η = 10⁻³) and the labels in its first order."""
        theta_next, orders = awa.client_update(self.model, self.theta, self.Xd, self.yd, lr=1e-3, epochs=self.E,
                                               batches=self.B, seed=child_seed(seed(), 2))
        return theta_next, self.yd[orders[0]]

    def synchronize(self) -> None:
        """Wait for the device's queued kernels (so that a run's seconds are complete)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize()


def client(model_name: str, case: str, device: str) -> Client:
    """The attacked client of the cell ``(model_name, case)`` with its data and θ_t on ``device``."""
    s = seed()
    E, B = CASES[case]
    X, y = client_images(s, 4, 32)
    model = make_model(model_name)
    dev = torch.device(device)
    return Client(model_name, case, dev, model, model.init_params(child_seed(s, 1)).to(dev), X, y, X.to(dev),
                  y.to(dev), E, B)


def run_one(r: Run, *, iterations: int, device: str) -> dict:
    """One attack of the grid; returns its scores, timings and images."""
    c = client(r.model, r.case, device)
    s, E, B = seed(), c.E, c.B
    if r.method == "AGIC":
        theta_next, labels = c.update()
        rec = awa.agic_attack(c.model, c.theta, theta_next, labels=labels, image_shape=(3, 32, 32), lr=1e-3,
                              epochs=E, batches=B, attack_lr=0.1, iterations=iterations, seed=child_seed(s, 3))
        out = dict(scores(rec.images, c.X), seconds=rec.seconds, evaluations=rec.settings["iterations_run"], Q=None)
    else:
        v = Variant(name=f"{r.method}, {r.model}, {r.case}", change="Table IV cell at ResNet-18", method=r.method,
                    model=r.model, n_images=4, epochs=E, batches=B, gradient_scale=c.scaled)
        out = run_variant(v, c.model, c.theta, c.Xd, c.yd, iterations=iterations, seed=s)
    c.synchronize()
    images = out.pop("images")
    return dict(out, model=r.model, case=r.case, E=E, B=B, method=r.method, iterations=iterations,
                gradient_scale=c.scaled and r.method != "AGIC", device=str(c.device), device_name=c.device_name,
                seconds_per_iteration=out["seconds"] / max(1, out["evaluations"]),
                Q_source="Song Table III" if r.method == "AWA" else None,
                Q_table_iii=TABLE_III[r.case] if r.method == "AWA" else None,
                images=encode_images(images))


#: The pruned BO protocol of ``--bo`` (Song's: n_trials=50, n_startup_trials=12, trials of 1,000 iterations, no pruning).
BO = dict(n_trials=50, n_startup_trials=12, iterations=1000, trial_iterations=200, prune=True, report_every=50)


def bo_db(model: str, case: str) -> Path:
    """The SQLite file of a BO's Optuna study, beside its result file."""
    return result_path(bo_name(model, case), "paper").with_suffix(".db")


def bo_storage(model: str, case: str) -> str:
    """:func:`bo_db` as the storage of :func:`~flprivacy.attacks.awa_search.tune_weights` (its folder created)."""
    path = bo_db(model, case)
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


def bo_one(model_name: str, case: str, *, device: str, settings: dict = BO) -> dict:
    """Our BO of Q (:func:`~flprivacy.attacks.awa_search.tune_weights`) at one (model, case) of the grid:
    the same client, update and dummy start as the grid's runs; returns the search and the final
    attack's scores."""
    c = client(model_name, case, device)
    theta_next, labels = c.update()
    res = awa_search.tune_weights(c.model, c.theta, theta_next, labels=labels, image_shape=(3, 32, 32), lr=1e-3,
                           epochs=c.E, batches=c.B, attack_lr=0.1, seed=child_seed(seed(), 3), gradient_scale=c.scaled,
                           storage=bo_storage(model_name, case), study_name=bo_name(model_name, case), **settings)
    c.synchronize()
    rec = res.reconstruction
    out = scores(rec.images.cpu(), c.X)
    images = out.pop("images")
    return dict(out, model=model_name, case=case, E=c.E, B=c.B, method="AWA (our BO)", settings=dict(settings),
                gradient_scale=c.scaled, objective=rec.settings["objective"], **bo_summary(res),
                values=res.values, params=res.params, trial_iterations_run=res.iterations, stopped=res.stopped,
                total_iterations=res.total_iterations, search_seconds=res.search_seconds,
                final_seconds=res.final_seconds, seconds_per_iteration=res.final_seconds / max(1, rec.settings["iterations_run"]),
                device=str(c.device), device_name=c.device_name, images=encode_images(images))


def done(r: Run, iterations: int) -> bool:
    """Whether the run's file exists with this iteration budget."""
    path = result_path(r.file_name, "paper")
    return path.is_file() and json.loads(path.read_text())["data"].get("iterations") == iterations


def work(runs: list[Run], *, iterations: int, device: str, workers: int, commit: str | None,
         bo: bool = False) -> None:
    for r in runs:
        if bo:
            if result_path(bo_name(r.model, r.case), "paper").is_file():
                continue
            data = bo_one(r.model, r.case, device=device)
            name = bo_name(r.model, r.case)
        else:
            if done(r, iterations):
                continue
            data = run_one(r, iterations=iterations, device=device)
            name = r.file_name
        data["workers"] = workers
        path = save_result(name, data, seeds=[seed()], scale_="paper")
        if commit:  # a copy of the tree on another machine: its .git may be absent or stale
            rec = json.loads(path.read_text())
            rec["commit_git"], rec["commit"] = rec["commit"], commit
            path.write_text(json.dumps(rec, indent=1) + "\n")
        print(f"{r.model} {r.case} {'our BO' if bo else r.method}: SSIM {data['ssim']:.3f}, PSNR {data['psnr']:.1f} dB, "
              f"{data['seconds_per_iteration'] * 1000:.0f} ms/iteration", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cuda (default cpu)")
    parser.add_argument("--iterations", type=positive_int, default=1000, help="Adam iterations (Table I: 1,000)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--cases", nargs="+", type=int, default=[1, 2, 3, 4], choices=[1, 2, 3, 4])
    parser.add_argument("--workers", type=positive_int, default=1, help="processes running at once")
    parser.add_argument("--bo", action="store_true", help="our BO of Q (pruned protocol, BO) per (model, case), "
                        "resumable from its SQLite study, instead of the grid")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--commit", default=None, help="the commit whose tree runs (a copy on a device machine may carry no .git or a stale one); "
                             "recorded as commit, git's own view as commit_git")
    args = parser.parse_args(argv)
    # float32 as on a CPU: no TF32 (10-bit mantissa) in the GPU's convolutions and products
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_num_threads(1 if args.workers > 1 else torch.get_num_threads())
    keep_freed_memory()  # replayed training frees and re-allocates large tensors every iteration
    runs = grid(tuple(args.models), tuple(f"case {k}" for k in args.cases))
    if args.bo:  # one study per (model, case): the AWA cells
        runs = [r for r in runs if r.method == "AWA"]
    if args.worker is not None:
        work(runs[args.worker::args.workers], iterations=args.iterations, device=args.device, workers=args.workers,
             commit=args.commit, bo=args.bo)
        return
    t0 = time.perf_counter()
    if args.workers == 1:
        work(runs, iterations=args.iterations, device=args.device, workers=1, commit=args.commit, bo=args.bo)
    else:
        base = [sys.executable, "-m", f"flbook.experiments.{NAME}", *(argv if argv is not None else sys.argv[1:])]
        procs = [subprocess.Popen([*base, "--worker", str(k)]) for k in range(args.workers)]
        codes = [p.wait() for p in procs]
        if any(codes):
            raise SystemExit(f"{NAME}: worker exit codes {codes}")
    print(f"{NAME}: {len(runs)} runs in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
