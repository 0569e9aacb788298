"""Why DLG and AWA recover nothing at Song et al.'s model: controlled experiments.

    python -m flbook.experiments.awa_diagnostics          # ResNet-18, 32x32, N = 1 and 4, 200 iterations (~75 CPU-min)

At the paper's setting (ResNet-18 on 32x32 CIFAR-10, client SGD at η = 10⁻³, Adam at 0.1,
labels known) the book's DLG and AWA reach SSIM near 0 where Song et al.'s Table IV reports
0.534 (DLG) and 0.935 (AWA) in case 1. This command changes one thing at a time, starting from
the library's attack, on one client (N = 1 image, case 1: E = B = 1, the first quick-scale image
seed) for ``--iterations`` objective evaluations, and scores every reconstruction both with the
book's SSIM (scikit-image's 7x7 window) and with SSIM as Song §5.1 writes it (one window: the
image's global means, variances and covariance; :func:`global_ssim`):

- the baseline: eq. 10 (DLG) or eq. 23 with Table III's Q for case 1 (AWA) on the replayed
  update, uniform [0, 1] start, clamped to [0, 1] after each Adam step. The update at η = 10⁻³
  is η times the gradient, so the loss is 10⁻⁶ times the gradient-matching loss; Adam's step
  m/(√v + ε) ignores that scale while |∂loss/∂x| ≫ ε = 10⁻⁸, which the file records
  (``first_grad_mean_abs``);
- Zhu et al.'s original DLG (their public code): N(0, 1) start, no clamp, soft labels optimised
  jointly (softmax of free logits), L-BFGS (step 1, up to 20 inner iterations per step, history
  100), gradient matching; the same number of objective evaluations;
- the loss divided by η² alone, and the N(0, 1) start without clamp alone;
- a sigmoid ResNet-18 (the ResNet of Zhu et al.'s code uses sigmoid activations, twice
  differentiable; ReLU's second derivative is 0), DLG and AWA, N = 1 and N = 4;
- BatchNorm in evaluation mode with a fresh model's statistics (an affine layer) instead of
  the batch's statistics;
- normalised inputs (the model sees (x - μ)/σ with CIFAR-10's channel statistics, as the
  inverting-gradients code does; the client trains on the same normalised images);
- a ReLU CNN (the book's small CNN with ReLU, 32x32, width 16) in cases 1 and 4 with Table
  III's Q, DLG against AWA, N = 4 (the quick model is a sigmoid CNN on 16x16, where L2 matching is easiest);
- the optimisation tricks of the inverting-gradients code (Geiping et al. 2020, ``inversefed``, in
  the CIFAR-10 configuration its users run: ``cost_fn='sim'``, ``total_variation=1e-1``,
  ``lr_decay=True``, ``init='randn'``, Adam at 0.1), one at a time and then together: Adam's step
  divided by 10 at 3/8, 5/8 and 7/8 of the budget (``lr_decay``; on DLG and on AWA), the cosine
  distance 1 - cos(Δθ̂, Δθ) instead of eq. 10's squared L2 (``cost_fn='sim'``), the cosine plus a
  total-variation prior of weight 0.1 (``total_variation=1e-1``,
  :func:`~flprivacy.attacks.inversion.total_variation`), and all of them with its start, N(0, 1)
  in the normalised space (μ + σ N(0, 1) in pixels; method "IG": not one of Table IV's attacks, so
  no paper cell decides it). Song et al. name TV among others' regularisers (§1) and use none.

The sigmoid and evaluation-mode rows divide the loss by η² too: their update is so small that
the pixel gradient falls below Adam's ε. ``objective_start`` is eq. 33 at a uniform grey image
(a reference for how far an attack moved). Each ResNet-18 run costs 3-6 CPU-minutes at N = 1
(about 50 CPU-minutes for the whole file on one thread).

Writes ``book/results/awa_diagnostics.json`` (fixed scale), saved after every run; a rerun with the
same ``--iterations`` keeps the finished runs and adds the missing ones (``--only`` reruns named ones).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from flprivacy.attacks import awa
from flprivacy.attacks.inversion import _step_schedule, total_variation, update_distance
from flprivacy.config import base_seed, child_seed, generator
from ..papers.song import TABLE_III, TABLE_IV
from flprivacy.metrics import quality
from flprivacy.models import FLModel, ResNet18, resnet18, small_cnn
from . import add_threads_option, keep_freed_memory, positive_int, save_result, use_threads
from .awa_table4 import client_images

#: CIFAR-10's per-channel mean and standard deviation of the training images (the usual constants).
CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


def global_ssim(x: Tensor, y: Tensor, data_range: float = 1.0) -> Tensor:
    """SSIM as Song et al. §5.1 write it: one window per image and channel,
    (2μ_Dμ_D' + c1)(2σ_DD' + c2) / ((μ_D² + μ_D'² + c1)(σ_D² + σ_D'² + c2)) with
    c1 = (0.01 H)², c2 = (0.03 H)² (H the data range), averaged over channels.

    Returns:
        ``(n,)`` one value per image pair (``x[i]`` against ``y[i]``, shapes ``(n, C, H, W)``).
    """
    if x.shape != y.shape or x.ndim != 4:
        raise ValueError(f"global_ssim: x and y must both have shape (n, C, H, W); got {tuple(x.shape)} and "
                         f"{tuple(y.shape)}.")
    a, b = x.double().flatten(2), y.double().flatten(2)
    ma, mb = a.mean(-1), b.mean(-1)
    va, vb = a.var(-1, unbiased=False), b.var(-1, unbiased=False)
    cov = ((a - ma[..., None]) * (b - mb[..., None])).mean(-1)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = (2 * ma * mb + c1) * (2 * cov + c2) / ((ma ** 2 + mb ** 2 + c1) * (va + vb + c2))
    return s.mean(-1)


class _Normalised(nn.Module):
    """A model that sees (x - μ)/σ, the channel statistics held as constants (not buffers)."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net
        self.image_size = getattr(net, "image_size", None)
        self.mean = torch.tensor(CIFAR_MEAN).view(1, 3, 1, 1)
        self.std = torch.tensor(CIFAR_STD).view(1, 3, 1, 1)

    def forward(self, x: Tensor) -> Tensor:
        return self.net((x - self.mean) / self.std)


class _EvalBatchNorm(nn.BatchNorm2d):
    """BatchNorm in evaluation mode with a fresh model's running statistics (mean 0, variance 1),
    held as constants: y = γ x / √(1 + ε) + β, whatever the batch."""

    def __init__(self, channels: int):
        super().__init__(channels, track_running_stats=False)

    def forward(self, x: Tensor) -> Tensor:
        c = self.num_features
        return F.batch_norm(x, torch.zeros(c, dtype=x.dtype, device=x.device),
                            torch.ones(c, dtype=x.dtype, device=x.device), self.weight, self.bias,
                            training=False, eps=self.eps)


def scores(images: Tensor, X: Tensor) -> dict:
    """A reconstruction's scores against the client's images (on the CPU, whatever their device):
    Hungarian-matched PSNR, SSIM (scikit-image's window) and MSE, SSIM as Song §5.1 writes it
    (``ssim_global``), and the images themselves (``images``, on the CPU)."""
    images, X = images.detach().cpu(), X.cpu()
    q = quality(images, X)
    return dict(q.summary(), ssim_global=float(global_ssim(images[q.index], X).mean()), images=images)


def make_model(name: str) -> FLModel:
    """The diagnostics' models: ``resnet18`` (the library's), ``resnet18-sigmoid``,
    ``resnet18-bn-eval``, ``resnet18-normalised`` and ``relu-cnn`` (small CNN with ReLU at 32x32, width 16)."""
    if name == "resnet18":
        return resnet18()
    if name == "resnet18-sigmoid":
        return FLModel(ResNet18(activation=torch.sigmoid), "cross_entropy")
    if name == "resnet18-normalised":
        return FLModel(_Normalised(ResNet18()), "cross_entropy")
    if name == "resnet18-bn-eval":
        net = ResNet18()
        for mname, mod in list(net.named_modules()):
            for cname, child in list(mod.named_children()):
                if isinstance(child, nn.BatchNorm2d):
                    setattr(mod, cname, _EvalBatchNorm(child.num_features))
        return FLModel(net, "cross_entropy")
    if name == "relu-cnn":
        return small_cnn(3, 10, 32, width=16, activation=nn.ReLU)
    raise ValueError(f"make_model: unknown model {name!r}; use resnet18, resnet18-sigmoid, resnet18-normalised or "
                     "relu-cnn.")


@dataclass(frozen=True)
class Variant:
    """One controlled experiment: what differs from the library's attack."""

    name: str
    change: str
    method: str = "DLG"  # "DLG" (eq. 10), "AWA" (eq. 23 with Table III's Q of the case) or "IG" (inverting gradients)
    model: str = "resnet18"
    n_images: int = 1
    epochs: int = 1
    batches: int = 1
    init: str = "uniform"  # "uniform" [0, 1], "normal" N(0, 1), "cifar" μ_c + σ_c N(0, 1) (normalised: N(0, 1))
    clamp: bool = True
    soft_labels: bool = False
    optimizer: str = "adam"  # "adam" (step 0.1) or "lbfgs"
    gradient_scale: bool = False  # divide the loss by η² (match gradients, not η·gradients)
    schedule: bool = False  # Adam's step / 10 at 3/8, 5/8, 7/8 of the evaluations (inverting gradients)
    distance: str = "l2"  # "l2" (eq. 10, weighted by Q for AWA) or "cosine" (1 - cos of the whole update)
    tv: float = 0.0  # weight of the total-variation prior added to the loss


def variants() -> list[Variant]:
    """The experiments, in the order the chapter's table shows them."""
    base = Variant("ours: DLG", "nothing (the library's dlg_attack: eq. 10, Adam 0.1, uniform start, [0, 1] clamp, "
                   "known labels)")
    awa_ = replace(base, name="ours: AWA", method="AWA", change="nothing (awa_attack with Table III's Q, case 1)")
    return [
        base, awa_,
        replace(base, name="DLG as Zhu et al.", init="normal", clamp=False, soft_labels=True, optimizer="lbfgs",
                gradient_scale=True, change="Zhu et al.'s code: N(0, 1) start, no clamp, soft labels learned jointly, "
                "L-BFGS, gradient matching"),
        replace(base, name="DLG, gradient scale", gradient_scale=True,
                change="loss divided by η² (gradients matched, not η·gradients), the sigmoid row's other change"),
        replace(base, name="DLG, N(0, 1) start, no clamp", init="normal", clamp=False,
                change="Zhu et al.'s start alone: N(0, 1) pixels, never clamped (Adam, known labels)"),
        replace(base, name="DLG, sigmoid ResNet-18", model="resnet18-sigmoid", gradient_scale=True,
                change="sigmoid activations (the ResNet of Zhu et al.'s code), loss divided by η² (its update is "
                "so small that Adam's ε = 1e-8 would dominate)"),
        replace(awa_, name="AWA, sigmoid ResNet-18", model="resnet18-sigmoid", gradient_scale=True,
                change="as above, AWA with Table III's Q (case 1)"),
        replace(base, name="DLG, sigmoid ResNet-18, N = 4", model="resnet18-sigmoid", gradient_scale=True,
                n_images=4, change="sigmoid ResNet-18 with Table IV's N = 4 images"),
        replace(awa_, name="AWA, sigmoid ResNet-18, N = 4", model="resnet18-sigmoid", gradient_scale=True,
                n_images=4, change="as above, AWA with Table III's Q (case 1)"),
        replace(base, name="DLG, BatchNorm eval mode", model="resnet18-bn-eval", gradient_scale=True,
                change="BatchNorm normalising with a fresh model's running statistics (mean 0, variance 1) "
                "instead of the batch's, loss divided by η² (as for the sigmoid model)"),
        replace(base, name="DLG, normalised inputs", model="resnet18-normalised",
                change="images normalised by CIFAR-10's channel mean and std inside the model"),
        replace(base, name="ReLU CNN case 1: DLG", model="relu-cnn", n_images=4,
                change="a ReLU CNN (3 conv + BN, 32x32) instead of ResNet-18, N = 4"),
        replace(base, name="ReLU CNN case 1: AWA", model="relu-cnn", n_images=4, method="AWA",
                change="as above, AWA with Table III's Q (case 1)"),
        replace(base, name="ReLU CNN case 4: AWA", model="relu-cnn", n_images=4, method="AWA", epochs=2, batches=2,
                change="as above, case 4 (E = B = 2), Table III's Q (case 4)"),
        replace(base, name="ReLU CNN case 4: DLG loss", model="relu-cnn", n_images=4, method="AWA", epochs=2,
                batches=2, change="case 4 with Q = 1 (eq. 10 on the interpolated epoch; DLG itself has no case 4)"),
        replace(base, name="DLG, step schedule", schedule=True,
                change="Adam's step divided by 10 at 3/8, 5/8 and 7/8 of the evaluations (the inverting-gradients "
                "code's lr_decay)"),
        replace(awa_, name="AWA, step schedule", schedule=True, change="as above, AWA with Table III's Q (case 1)"),
        replace(base, name="DLG, cosine distance", distance="cosine",
                change="1 - cos(Δθ̂, Δθ) of the whole update instead of eq. 10's squared L2 (inverting gradients' "
                "cost_fn='sim')"),
        replace(base, name="DLG, cosine + TV", distance="cosine", tv=0.1,
                change="the cosine distance plus 0.1 × total variation of the dummy (inverting gradients' "
                "total_variation=1e-1)"),
        replace(base, name="Inverting gradients (Geiping et al.)", method="IG", distance="cosine", tv=0.1,
                schedule=True, init="cifar",
                change="all of inverting gradients' settings: cosine, TV 0.1, the step schedule, N(0, 1) start in "
                "CIFAR-10's normalised space, [0, 1] clamp (not an attack of Table IV)"),
    ]


def attack(v: Variant, iterations: int, seed: int) -> dict:
    """Run one variant on the first quick-scale image seed's images (32x32) and score it."""
    X, y = client_images(seed, v.n_images, 32)
    model = make_model(v.model)
    return run_variant(v, model, model.init_params(child_seed(seed, 1)), X, y, iterations=iterations, seed=seed)


def run_variant(v: Variant, model: FLModel, theta: Tensor, X: Tensor, y: Tensor, *, iterations: int, seed: int,
                lr: float = 1e-3, trace_every: int = 0) -> dict:
    """One variant against a client holding ``X, y`` who trains from ``theta`` at ``lr``: the attack,
    then its scores (windowed and global SSIM, PSNR, MSE, eq. 33 objective, evaluations, seconds).
    It runs on the device of ``theta``, ``X`` and ``y`` (the scores on the CPU).
    The baseline variants are the library's :func:`~flprivacy.attacks.awa.dlg_attack` and
    :func:`~flprivacy.attacks.awa.awa_attack` step for step (same dummy start, loss and clamp).
    ``trace_every = k > 0`` (Adam only) also scores the dummy every k iterations and at the last
    one, as ``trace`` {"iteration", "ssim", "psnr"} (Song Figs. 3-4's curves); the scoring reads the
    dummy without changing the attack's steps."""
    if trace_every < 0 or (trace_every > 0 and v.optimizer != "adam"):
        raise ValueError(f"run_variant: trace_every must be 0 or a positive number of Adam iterations; got {trace_every} "
                         f"with optimizer {v.optimizer!r}.")
    theta_next, orders = awa.client_update(model, theta, X, y, lr=lr, epochs=v.epochs, batches=v.batches,
                                           seed=child_seed(seed, 2))
    labels = y[orders[0]]
    scen = awa.Scenario(v.epochs, v.batches)
    side = X.shape[-1]
    pb = awa._problem(model, theta, theta_next, labels, (3, side, side), lr=lr, epochs=v.epochs, batches=v.batches,
                      epoch=1, approximate=not scen.replayable, where="awa_diagnostics")
    if v.method == "AWA" and "DLG loss" not in v.name:
        Q = awa.AWAWeights(**TABLE_III[f"case {scen.case}"])
    else:
        Q = awa.AWAWeights()
    if v.distance not in ("l2", "cosine"):
        raise ValueError(f"run_variant: variant {v.name!r} has distance {v.distance!r}; use 'l2' or 'cosine'.")
    if v.distance == "cosine" and v.method == "AWA":
        raise ValueError(f"run_variant: variant {v.name!r} asks for the cosine distance with AWA's weighted loss; "
                         "the cosine runs are DLG or IG.")
    weighted = (awa._WeightedLoss(awa.model_layers(model), pb.target, Q) if v.distance == "l2"
                else lambda pred, target: update_distance(pred, target, "cosine"))
    scale = 1.0 / pb.lr ** 2 if v.gradient_scale else 1.0

    gen = generator(child_seed(seed, 3))
    shape = (labels.numel(), *X.shape[1:])
    if v.init not in ("uniform", "normal", "cifar"):
        raise ValueError(f"run_variant: variant {v.name!r} has init {v.init!r}; use 'uniform', 'normal' or 'cifar'.")
    x = (torch.rand(shape, generator=gen) if v.init == "uniform" else torch.randn(shape, generator=gen))
    if v.init == "cifar":  # inversefed draws N(0, 1) in the normalised space: μ + σ z in pixels
        x = torch.tensor(CIFAR_MEAN).view(3, 1, 1) + torch.tensor(CIFAR_STD).view(3, 1, 1) * x
    x = x.to(device=pb.start.device, dtype=model.dtype).requires_grad_(True)  # as dummy_latent(..., "uniform")
    params = [x]
    logits = None
    if v.soft_labels:
        with torch.no_grad():
            n_classes = int(model.forward(pb.start, X[:1].to(model.dtype)).shape[-1])
        logits = torch.randn(labels.numel(), n_classes, generator=gen).to(device=x.device, dtype=model.dtype)
        logits.requires_grad_(True)
        params.append(logits)

    def targets() -> Tensor:
        return F.softmax(logits, -1) if logits is not None else pb.labels

    evals = 0
    first_grad = math.nan

    def closure() -> Tensor:
        nonlocal evals, first_grad
        for p in params:
            p.grad = None
        pred = awa.replay(model, pb.start, x, targets(), lr=pb.lr, batches=pb.batches, epochs=pb.epochs)
        loss = weighted(pred, pb.target) * scale
        if v.tv > 0:
            loss = loss + v.tv * total_variation(x)
        loss.backward()
        if evals == 0:
            first_grad = float(x.grad.abs().mean())
        evals += 1
        return loss

    trace: dict[str, list] = {"iteration": [], "ssim": [], "psnr": []}
    trace_seconds = 0.0  # scoring the trace, not the attack: left out of ``seconds``
    t0 = time.perf_counter()
    diverged = False
    if v.optimizer == "adam":
        opt = torch.optim.Adam(params, lr=0.1)
        sched = _step_schedule(opt, iterations) if v.schedule else None  # as inversion.invert_update(schedule=True)
        for _ in range(iterations):
            loss = closure()
            if not math.isfinite(float(loss.detach())):
                diverged = True
                break
            opt.step()
            if sched is not None:
                sched.step()
            if v.clamp:
                with torch.no_grad():
                    x.clamp_(0, 1)
            if trace_every and (evals % trace_every == 0 or evals == iterations):
                t_score = time.perf_counter()
                q = scores(x.detach().clamp(0, 1), X)
                trace["iteration"].append(evals)
                trace["ssim"].append(q["ssim"])
                trace["psnr"].append(q["psnr"])
                trace_seconds += time.perf_counter() - t_score
    else:
        opt = torch.optim.LBFGS(params, lr=1, max_iter=20, history_size=100)
        while evals < iterations:
            opt.param_groups[0]["max_iter"] = min(20, iterations - evals)
            opt.param_groups[0]["max_eval"] = min(25, iterations - evals)
            before = evals
            loss = opt.step(closure)
            if not math.isfinite(float(loss.detach())) or not bool(torch.isfinite(x).all()):
                diverged = True
                break
            if evals == before:
                break
    seconds = time.perf_counter() - t0 - trace_seconds
    images = x.detach().clamp(0, 1)
    with torch.enable_grad():
        pred = awa.replay(model, pb.start, images, targets().detach(), lr=pb.lr, batches=pb.batches,
                          epochs=pb.epochs).detach()
    out = dict(scores(images, X), objective=float(update_distance(pred, pb.target, "l2")),
               objective_start=float(update_distance(awa.replay(model, pb.start, torch.full_like(images, 0.5),
                                                                pb.labels, lr=pb.lr, batches=pb.batches,
                                                                epochs=pb.epochs).detach(), pb.target, "l2")),
               evaluations=evals, seconds=seconds, diverged=diverged, first_grad_mean_abs=first_grad,
               Q=Q.as_dict())
    if trace_every:
        out["trace"] = trace
        out["trace_seconds"] = trace_seconds
    if logits is not None:
        out["label_accuracy"] = float((logits.detach().argmax(-1) == pb.labels).double().mean())
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=positive_int, default=200,
                        help="objective evaluations per run (Adam steps; L-BFGS closure calls)")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME",
                        help="variant names to (re)run, each one argument (quote it); the others are kept")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    use_threads(args)
    keep_freed_memory()  # replayed training frees and re-allocates large tensors every iteration
    from . import result_path
    import json

    seed = child_seed(base_seed(), 100)
    path = result_path("awa_diagnostics", "fixed")
    runs: dict = {}
    before = 0.0  # seconds of the runs kept from an earlier invocation
    if path.is_file():
        old = json.load(open(path))["data"]
        if old.get("iterations") == args.iterations:
            runs = old.get("runs", {})
            before = float(old.get("seconds", 0.0))
    only = None if args.only is None else set(args.only)
    unknown = (only or set()) - {v.name for v in variants()}
    if unknown:
        raise SystemExit(f"awa_diagnostics: unknown variant(s) {sorted(unknown)}; choose from "
                         f"{[v.name for v in variants()]}.")
    t0 = time.perf_counter()
    for v in variants():
        if (only is not None and v.name not in only) or (only is None and v.name in runs):
            continue
        res = attack(v, args.iterations, seed)
        res.pop("images")
        runs[v.name] = dict(asdict(v), **res)
        print(f"{v.name}: SSIM {res['ssim']:.3f} (global {res['ssim_global']:.3f}), PSNR {res['psnr']:.1f} dB, "
              f"f {res['objective']:.3g}, {res['seconds']:.0f} s", flush=True)
        order = [w.name for w in variants() if w.name in runs]
        data = dict(runs={k: runs[k] for k in order}, iterations=args.iterations, seed=seed, client_lr=1e-3,
                    attack_lr=0.1, side=32, paper_case_1={m: TABLE_IV["case 1"][m] for m in ("DLG", "AWA")},
                    seconds=before + time.perf_counter() - t0)
        save_result("awa_diagnostics", data, seeds=[seed], scale_="fixed")
    print(f"wrote awa_diagnostics in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
