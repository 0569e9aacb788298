"""Gradient inversion: reconstructing training images from model updates.

The attacker holds a model update ``U = θ - θ'`` (a client's, or the average of all clients'),
knows how it was produced (architecture, θ, local learning rate η, number of local steps τ) and
searches for dummy images X̂ whose *replayed* local training yields the same update:

    X̂ = argmin_X  D( θ - LocalSGD_τ(θ; X, Y),  U ) + α TV(X).

- **DLG** (Zhu et al. 2019): D = squared L2 distance, L-BFGS, labels optimised jointly.
- **iDLG** (Zhao et al. 2020): the label of a single image is read off the sign of the last
  layer's gradient (:func:`idlg_label`), then only the image is optimised.
- **Inverting gradients** (Geiping et al. 2020): D = 1 - cosine similarity, plus a total
  variation prior α TV(X), Adam with a step schedule, pixels kept in the data range.
- **Curious client** (Wilson et al. 2025, §3.1, eq. 1-3): U is the averaged update of all K
  clients, read from two consecutive global models (:mod:`flprivacy.threats`); it is inverted as
  if one *super-client* had trained on all N = Σ_k N_k images (:func:`curious_client_attack`).
  The dummy is a low-resolution image upsampled bicubically by a factor 4 (Yue et al. 2023).
  App. F's upper bound replays the true K clients instead (``client_sizes``).
- **Lemma 1** (Wilson App. A): the super-client's update differs from FedAvg's by
  E[δ(τ)] = τ(τ-1)/2 · η² · (K-1)/N · Cov(J, g) + O(η³) (:func:`super_client_divergence`,
  :func:`jacobian_gradient_covariance`, :func:`lemma1_prediction`).

The replay is :func:`flprivacy.clients.local_sgd` with ``create_graph=True``: second-order
autograd through τ full-batch gradient steps.
"""

from __future__ import annotations

import inspect
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm import tqdm

from .._keywords import check_keywords, spell_keywords
from ..config import generator as make_generator
from ..federation import local_sgd
from ..metrics import quality
from ..models import FLModel
from ..threats import GlobalModels
from ..validation import NonFiniteError, as_tensor, check_finite, check_int, check_positive, check_seed

__all__ = [
    "LocalTraining", "Reconstruction", "curious_client_attack", "decode_dummy", "dlg_init", "dummy_latent",
    "idlg_label", "invert_update", "jacobian_gradient_covariance", "labels_from_counts", "last_layer",
    "lemma1_prediction", "own_image_score", "replay_local", "replay_update", "restore_label_counts",
    "super_client_divergence", "total_variation", "update_distance",
]

Distance = Literal["l2", "cosine"]
Optimizer = Literal["adam", "lbfgs"]


# ---- the attacked model ----------------------------------------------------------------------
def dlg_init(model: FLModel, seed: int = 0, scale: float = 0.5) -> Tensor:
    """θ^0 with every weight and bias drawn uniformly from [-scale, scale] (``scale=0.5``: the
    initialisation of the DLG reference code, Zhu et al. 2019).

    Gradient inversion attacks an *untrained* model (Wilson §4: "after the first FL round"). With
    PyTorch's default initialisation the sigmoid LeNet-5's gradient hardly depends on its input
    pixels and update matching stalls; this wider initialisation is the one the attack
    literature uses.
    """
    check_int("seed", seed, "dlg_init")
    check_positive("scale", scale, "dlg_init")
    g = make_generator(seed)
    return ((torch.rand(model.dim, generator=g, dtype=torch.float64) * 2 - 1) * scale).to(model.dtype)


# ---- dummy images ----------------------------------------------------------------------------
def dummy_latent(n: int, image_shape: Sequence[int], scale_factor: int = 1, init: str = "uniform",
                 generator: torch.Generator | None = None) -> Tensor:
    """Initial dummy data: ``n`` images of shape ``image_shape = (C, H, W)`` stored at resolution
    ``(H / scale_factor, W / scale_factor)``.

    ``init="uniform"`` draws pixels in [0, 1]; ``"gaussian"`` draws N(0.5, 0.25²) (DLG draws
    N(0, 1) in normalised pixel space).
    """
    check_int("n", n, "dummy_latent", minimum=1)
    if len(image_shape) != 3 or min(int(s) for s in image_shape) < 1:
        raise ValueError(f"dummy_latent: image_shape must be (C, H, W) with positive sizes; got {tuple(image_shape)}.")
    C, H, W = (int(s) for s in image_shape)
    if scale_factor < 1 or H % scale_factor or W % scale_factor:
        raise ValueError(f"scale_factor must be a positive divisor of the image size {H}x{W}, got {scale_factor}.")
    shape = (n, C, H // scale_factor, W // scale_factor)
    if init == "uniform":
        return torch.rand(shape, generator=generator)
    if init == "gaussian":
        return 0.5 + 0.25 * torch.randn(shape, generator=generator)
    raise ValueError(f"init must be 'uniform' or 'gaussian', got {init!r}.")


def decode_dummy(latent: Tensor, image_shape: Sequence[int]) -> Tensor:
    """Images from the dummy latent: bicubic upsampling to ``image_shape`` (Wilson §4, after
    Yue et al. 2023, who encode the dummy at a quarter of the resolution to reduce the number of
    unknowns); the identity when the latent already has full resolution."""
    latent = as_tensor("latent", latent, where="decode_dummy", ndim=4, min_rows=1, floating=True)
    H_, W_ = int(image_shape[1]), int(image_shape[2])
    h_, w_ = latent.shape[-2:]
    if h_ < 1 or w_ < 1 or H_ % h_ or W_ % w_ or H_ // h_ != W_ // w_ or latent.shape[1] != int(image_shape[0]):
        raise ValueError(f"decode_dummy: latent of shape {tuple(latent.shape)} does not divide image_shape "
                         f"{tuple(image_shape)} by one integer factor (same channels).")
    H, W = int(image_shape[1]), int(image_shape[2])
    if latent.shape[-2:] == (H, W):
        return latent
    return F.interpolate(latent, size=(H, W), mode="bicubic", align_corners=False)


def total_variation(images: Tensor) -> Tensor:
    """Anisotropic total variation: mean absolute difference of neighbouring pixels
    (Geiping et al. 2020, eq. 4)."""
    images = as_tensor("images", images, where="total_variation", floating=True)
    dx = (images[..., :, 1:] - images[..., :, :-1]).abs().mean()
    dy = (images[..., 1:, :] - images[..., :-1, :]).abs().mean()
    return dx + dy


# ---- labels ----------------------------------------------------------------------------------
def last_layer(model: FLModel, vector: Tensor) -> tuple[Tensor, Tensor]:
    """The (weight, bias) blocks of the classifier's last linear layer inside a flat vector
    (a model, gradient or update), shapes ``(C, h)`` and ``(C,)``."""
    parts = list(model.unflatten(vector).items())
    if len(parts) < 2 or parts[-1][1].ndim != 1 or parts[-2][1].ndim != 2 or parts[-2][1].shape[0] != parts[-1][1].shape[0]:
        raise ValueError(
            "label restoration needs a classifier whose last layer is nn.Linear with a bias (e.g. flprivacy.lenet5); "
            f"the last parameters here are {[(n, tuple(p.shape)) for n, p in parts[-2:]]}."
        )
    return parts[-2][1], parts[-1][1]


def idlg_label(model: FLModel, update: Tensor) -> int:
    """iDLG (Zhao et al. 2020, §3): the label of a **single** training image from its gradient.

    With cross-entropy, the last layer's weight gradient is (p - onehot(y)) aᵀ, where a ≥ 0 is the
    penultimate activation (sigmoid or ReLU): only the row of the true class is negative. The
    same holds for an update θ - θ' = η Σ_u g_u when the local steps barely change p.
    """
    if model.loss_name != "cross_entropy":
        raise ValueError("idlg_label needs a cross-entropy classifier.")
    update = check_finite("update", model._as_theta(update, "update"), "idlg_label")
    W, _ = last_layer(model, update)
    return int(W.sum(1).argmin())


@torch.no_grad()
def restore_label_counts(model: FLModel, theta: Tensor, update: Tensor, n_images: int, *, lr: float,
                         steps: int = 1, probe: Tensor | None = None, generator: torch.Generator | None = None,
                         image_shape: Sequence[int] | None = None, local: LocalTraining | None = None,
                         transform: Callable[[Tensor], Tensor] | None = None) -> Tensor:
    """How many of the ``n_images`` behind an update belong to each class (batch label restoration).

    The bias of the last layer has gradient (1/N) Σ_i (p_i - onehot(y_i)), so the update
    U = η Σ_{u<τ} ḡ(θ_u) has bias block U_b = η (Σ_u p̄(θ_u) - τ n/N), with n the class counts:

        n ≈ N (Σ_u p̄(θ_u) - U_b / η) / τ.

    The mean softmax p̄(θ_u) is estimated on ``probe`` images (the curious client's own data, or
    uniform noise when None) at models interpolated along the update, θ_u ≈ θ - (u/τ) U (the
    trajectory is unknown). This is the count estimator of label-restoration attacks such as
    Geng et al. (2021) and Ma et al. (2023), whose instance-wise method Wilson et al. assume;
    counts are rounded to integers summing to N by largest remainders.

    With ``local`` (:class:`LocalTraining`: momentum, mini-batches) step u's gradient weighs
    w_u = η Σ_{u' >= u} m^(u'-u) in the update (``lr`` and ``steps`` are then not used), and

        n ≈ N (Σ_u w_u p̄(θ_u) - U_b) / Σ_u w_u,

    which assumes every mini-batch holds the classes in the proportions of the whole local set
    (exact for full batches). ``transform`` maps probe pixels to the model's input. Noise
    probes are drawn on the CPU and moved to ``theta``'s device.

    Returns:
        integer counts, shape ``(n_classes,)``, summing to ``n_images``.
    """
    if model.loss_name != "cross_entropy":
        raise ValueError("restore_label_counts needs a cross-entropy classifier.")
    check_int("n_images", n_images, "restore_label_counts", minimum=1)
    check_positive("lr", lr, "restore_label_counts")
    check_int("steps", steps, "restore_label_counts", minimum=1)
    theta, update = model._as_theta(theta), model._as_theta(update, "update")
    check_finite("theta", theta, "restore_label_counts")
    check_finite("update", update, "restore_label_counts", "the observed models are broken (training diverged?)")
    _, Ub = last_layer(model, update)
    if probe is not None:
        probe = check_finite("probe", as_tensor("probe", probe, where="restore_label_counts", min_rows=1), "restore_label_counts")
        probe = probe.to(theta.device)
        try:
            model.forward(theta, probe[:1])
        except ValueError as e:
            raise ValueError(f"restore_label_counts: probe does not fit the model: {e}") from None
    if probe is None:
        if image_shape is None:
            raise ValueError("give probe images or image_shape (to draw uniform-noise probes).")
        probe = torch.rand((64, *image_shape), generator=generator)
    probe = probe.to(theta.device)
    if transform is not None:
        probe = transform(probe)
    if local is None:
        weights = [float(lr)] * steps
    else:
        if not isinstance(local, LocalTraining):
            raise TypeError(f"restore_label_counts: local must be a LocalTraining; got {type(local).__name__}.")
        weights = local.step_weights(n_images)
    tau = len(weights)
    p_sum = torch.zeros_like(Ub, dtype=torch.float64)
    for u in range(tau):
        th = theta - (u / tau) * update
        p_sum += (weights[u] / lr if local is None else weights[u]) * model.forward(th, probe).softmax(-1).double().mean(0)
    if local is None:
        est = n_images * (p_sum - Ub.double() / lr) / steps
    else:
        est = n_images * (p_sum - Ub.double()) / sum(weights)
    if not bool(torch.isfinite(est).all()):
        raise NonFiniteError(f"restore_label_counts: the count estimate is non-finite ({est.tolist()}); the model "
                             "gives non-finite probabilities on the probe images (diverged model or non-finite probe).")
    est = est.clamp(min=0)
    if float(est.sum()) <= 0:
        est = torch.ones_like(est)
    est = est * (n_images / est.sum())
    counts = est.floor().long()
    short = n_images - int(counts.sum())
    if short > 0:
        counts[torch.argsort(est - counts, descending=True)[:short]] += 1
    return counts


def labels_from_counts(counts: Tensor) -> Tensor:
    """The label vector with ``counts[c]`` copies of class c, sorted."""
    counts = as_tensor("counts", counts, where="labels_from_counts", ndim=1, min_rows=1)
    if counts.dtype.is_floating_point and not bool((counts == counts.round()).all()):
        raise ValueError(f"labels_from_counts: counts must be whole numbers; got {counts.tolist()}.")
    if bool((counts < 0).any()):
        raise ValueError(f"labels_from_counts: counts must be >= 0; got {counts.tolist()}.")
    return torch.repeat_interleave(torch.arange(counts.numel()), counts.long())


# ---- the client's local training, as the attacker replays it ----------------------------------
@dataclass(frozen=True)
class LocalTraining:
    """What the attacker knows of a client's local training, to replay it.

    ``torch.optim.SGD(lr, momentum)`` (no dampening, no weight decay, the buffer starting at
    the first gradient) on mini-batches of ``batch_size`` (None: the whole local set) for
    ``epochs`` passes, or exactly ``steps`` SGD steps when given. This is how Flower's
    quickstart ClientApps train (SGD with momentum 0.9, batch 32); the default (``momentum=0``,
    full batch, one epoch) is the plain full-batch gradient descent of Wilson et al. eq. 1.

    What the replay assumes where the client's training is not observable: the dummy images
    are split into consecutive batches in their own order, every epoch alike. The order of
    the dummies is the attacker's to choose, so the first epoch is replayed exactly; a client
    that reshuffles between epochs (a ``DataLoader(shuffle=True)``) groups its images
    differently in later epochs, which the replay does not know.
    """

    lr: float
    momentum: float = 0.0
    batch_size: int | None = None
    epochs: int = 1
    steps: int | None = None

    def __post_init__(self) -> None:
        check_positive("lr", self.lr, "LocalTraining")
        if not 0 <= float(self.momentum) < 1:
            raise ValueError(f"LocalTraining: momentum must be in [0, 1), got {self.momentum!r}.")
        if self.batch_size is not None:
            check_int("batch_size", self.batch_size, "LocalTraining", minimum=1)
        check_int("epochs", self.epochs, "LocalTraining", minimum=1)
        if self.steps is not None:
            check_int("steps", self.steps, "LocalTraining", minimum=1)

    def schedule(self, n: int) -> list[slice]:
        """The rows of each SGD step, for ``n`` local images."""
        b = n if self.batch_size is None else min(int(self.batch_size), n)
        epoch = [slice(i, min(i + b, n)) for i in range(0, n, b)]
        k = self.steps if self.steps is not None else self.epochs * len(epoch)
        return [epoch[i % len(epoch)] for i in range(k)]

    def step_weights(self, n: int) -> list[float]:
        """How much each step's gradient weighs in the update θ - θ': lr Σ_{u' >= u} m^(u'-u)."""
        k = len(self.schedule(n))
        m = float(self.momentum)
        return [float(self.lr) * sum(m ** j for j in range(k - u)) for u in range(k)]


def replay_local(model: FLModel, theta: Tensor, X: Tensor, y: Tensor, local: LocalTraining,
                 transform: Callable[[Tensor], Tensor] | None = None) -> Tensor:
    """θ - θ' for the local training ``local`` on ``(X, y)``, differentiable in ``X``
    (``transform`` maps the images to the model's input, e.g. the client's normalisation)."""
    if not isinstance(local, LocalTraining):
        raise TypeError(f"replay_local: local must be a LocalTraining; got {type(local).__name__}.")
    Xin = X if transform is None else transform(X)
    start = theta.detach().requires_grad_(True)
    th, buf = start, None
    for rows in local.schedule(X.shape[0]):
        loss = model.loss(th, Xin[rows], y[rows])
        (g,) = torch.autograd.grad(loss, th, create_graph=True)
        buf = g if buf is None else local.momentum * buf + g
        th = th - local.lr * buf
    return start - th


# ---- the objective ----------------------------------------------------------------------------
def replay_update(model: FLModel, theta: Tensor, X: Tensor, y: Tensor, *, lr: float, steps: int,
                  client_sizes: Sequence[int] | None = None) -> Tensor:
    """The update θ - θ' that local training on ``(X, y)`` produces, differentiable in ``X``.

    One client (``client_sizes=None``): τ = ``steps`` full-batch gradient steps of size ``lr`` on
    all rows (Wilson eq. 1; the super-client of eq. 3 when the rows are every client's images).
    With ``client_sizes = (N_1, ..., N_K)`` the rows are split in that order into K clients, each
    trains alone, and the updates are averaged with weights N_k / N (FedAvg, Wilson eq. 2): the
    App. F upper bound.
    """
    check_positive("lr", lr, "replay_update")
    check_int("steps", steps, "replay_update", minimum=1)
    theta = check_finite("theta", model._as_theta(theta), "replay_update")
    X = as_tensor("X", X, where="replay_update", min_rows=1)
    if not X.requires_grad:  # the dummy of an attack is checked by invert_update's divergence test instead
        check_finite("X", X, "replay_update")
    if client_sizes is None:
        return theta - local_sgd(model, theta, X, y, lr=lr, steps=steps, create_graph=True)
    sizes = [int(s) for s in client_sizes]
    if sum(sizes) != X.shape[0] or min(sizes) < 1:
        raise ValueError(f"client_sizes {sizes} must be positive and sum to the number of images {X.shape[0]}.")
    N = X.shape[0]
    out = torch.zeros_like(theta)
    for Xk, yk in zip(X.split(sizes), y.split(sizes)):
        out = out + (Xk.shape[0] / N) * (theta - local_sgd(model, theta, Xk, yk, lr=lr, steps=steps, create_graph=True))
    return out


def update_distance(pred: Tensor, target: Tensor, kind: Distance = "l2") -> Tensor:
    """D(pred, target): squared L2 distance (DLG; Wilson eq. 3) or 1 - cosine similarity
    (Geiping et al. 2020, eq. 4)."""
    pred = check_finite("pred", as_tensor("pred", pred, where="update_distance", floating=True), "update_distance")
    target = check_finite("target", as_tensor("target", target, where="update_distance", floating=True), "update_distance")
    if pred.shape != target.shape or pred.numel() == 0:
        raise ValueError(f"update_distance: pred and target must be non-empty and of the same shape; got "
                         f"{tuple(pred.shape)} and {tuple(target.shape)}.")
    if kind == "l2":
        return ((pred - target) ** 2).sum()
    if kind == "cosine":
        return 1 - F.cosine_similarity(pred, target, dim=0, eps=1e-12)
    raise ValueError(f"kind (the distance) must be 'l2' or 'cosine', got {kind!r}.")


def _step_schedule(opt: torch.optim.Optimizer, iterations: int) -> torch.optim.lr_scheduler.MultiStepLR:
    """The inverting-gradients code's ``lr_decay`` (Geiping et al. 2020): the step size divided by
    10 at 3/8, 5/8 and 7/8 of ``iterations``; call its ``step()`` once per iteration."""
    return torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[int(iterations * f) for f in (3 / 8, 5 / 8, 7 / 8)],
                                                gamma=0.1)


# ---- the attack -------------------------------------------------------------------------------
@dataclass
class Reconstruction:
    """The result of a gradient-inversion attack.

    Attributes:
        images: reconstructed images ``(n, C, H, W)`` in [0, 1], in arbitrary order (pair them
            with the ground truth by :func:`flprivacy.metrics.match_images`).
        labels: the labels used (hard labels; argmax of the soft labels for DLG).
        loss: the objective at every iteration.
        seconds: wall-clock time of the optimisation.
        settings: the attack's arguments.
    """

    images: Tensor
    labels: Tensor
    loss: list[float]
    seconds: float
    settings: dict = field(default_factory=dict)

    @property
    def seconds_per_iteration(self) -> float:
        return self.seconds / max(1, len(self.loss))


def invert_update(
    model: FLModel,
    theta: Tensor,
    target: Tensor,
    *,
    image_shape: Sequence[int],
    labels: Tensor | None = None,
    n_images: int | None = None,
    lr: float = 1.0,
    steps: int = 1,
    client_sizes: Sequence[int] | None = None,
    distance: Distance = "l2",
    tv: float = 0.0,
    optimizer: Optimizer = "adam",
    attack_lr: float = 0.1,
    iterations: int = 1000,
    schedule: bool = False,
    scale_factor: int = 1,
    init: str = "uniform",
    clamp: bool = True,
    seed: int = 0,
    progress: bool = False,
    callback: Callable[[int, Tensor], None] | None = None,
    local: LocalTraining | None = None,
    transform: Callable[[Tensor], Tensor] | None = None,
    device: torch.device | str | None = None,
) -> Reconstruction:
    """Reconstruct the images behind a model update by update matching.

    Minimises D(θ - LocalSGD_τ(θ; X̂, Ŷ), target) + tv · TV(X̂) over the dummy images X̂.

    Args:
        model: the architecture; ``theta`` the model the update started from.
        target: the observed update θ - θ' (for a single gradient g, use ``lr=1, steps=1`` and
            ``target = g``).
        image_shape: ``(C, H, W)``.
        labels: known or restored labels, shape ``(n,)``; None optimises soft labels jointly
            (DLG), which needs ``n_images``.
        lr, steps: the local learning rate η and number of full-batch local steps τ to replay.
        client_sizes: replay these K clients instead of one (App. F upper bound; labels must be
            grouped by client in that order).
        distance: ``"l2"`` (DLG, Wilson eq. 3) or ``"cosine"`` (Geiping et al.).
        tv: weight α of the total-variation prior.
        optimizer: ``"adam"`` (Wilson; Geiping) or ``"lbfgs"`` (DLG; one iteration is one L-BFGS
            step of up to 20 function evaluations).
        attack_lr: the optimiser's step size (Wilson §4: 0.1 with Adam; DLG: 1 with L-BFGS).
        iterations: optimiser steps.
        schedule: divide the Adam step size by 10 at 3/8, 5/8 and 7/8 of the iterations
            (Geiping et al.).
        scale_factor: optimise the dummy at 1/scale_factor resolution, upsampled bicubically
            (Wilson §4: 4).
        init: ``"uniform"`` or ``"gaussian"`` initial dummy pixels.
        clamp: project the dummy pixels onto [0, 1] after each Adam step (box constraint).
        seed: seeds the dummy initialisation.
        progress: show a progress bar.
        callback: called as ``callback(iteration, images)`` after each step (e.g. to record
            snapshots).
        local: the client's local training when it is known (:class:`LocalTraining`: momentum,
            mini-batches, epochs); replaces ``lr`` and ``steps``, which then keep their
            defaults. None replays ``steps`` full-batch plain SGD steps of size ``lr``.
        transform: maps the dummy images (pixels in [0, 1]) to the model's input, e.g. the
            client's normalisation ``lambda x: (x - mean) / std``; None feeds pixels as they are.
        device: where the attack runs (default: ``theta``'s device). The dummy is drawn on the
            CPU from ``seed`` and then moved, so a device gives the same starting point.
    """
    theta, target = model._as_theta(theta), model._as_theta(target, "target")
    check_seed("seed", seed, "invert_update")
    if labels is not None:
        labels = as_tensor("labels", labels, where="invert_update", ndim=1, min_rows=1)
    check_finite("theta", theta, "invert_update")
    check_finite("target", target, "invert_update", "the observed update is broken (training diverged?)")
    if labels is None and n_images is None:
        raise ValueError("give the labels (known or restored), or n_images to optimise soft labels as DLG does.")
    n = int(labels.numel()) if labels is not None else int(n_images)
    if labels is not None and n_images is not None and int(n_images) != n:
        raise ValueError(f"n_images={n_images} but {n} labels were given.")
    if steps < 1 or lr <= 0 or iterations < 1:
        raise ValueError(f"need steps >= 1, lr > 0 and iterations >= 1; got steps={steps}, lr={lr}, iterations={iterations}.")
    if optimizer not in ("adam", "lbfgs"):
        raise ValueError(f"optimizer must be 'adam' or 'lbfgs', got {optimizer!r}.")
    if local is not None:
        if not isinstance(local, LocalTraining):
            raise TypeError(f"invert_update: local must be a LocalTraining; got {type(local).__name__}.")
        if (lr, steps) != (1.0, 1) or client_sizes is not None:
            raise ValueError("invert_update: give either local=LocalTraining(...) or lr/steps/client_sizes, not both.")
    if transform is not None and not callable(transform):
        raise TypeError(f"invert_update: transform must be callable; got {type(transform).__name__}.")
    dev = theta.device if device is None else torch.device(device)
    theta = theta.detach().to(dev)
    target = target.detach().to(dev)
    gen = make_generator(seed)
    latent = dummy_latent(n, image_shape, scale_factor, init, gen).to(model.dtype).to(dev).requires_grad_(True)
    params = [latent]
    soft = None
    if labels is None:
        n_classes = last_layer(model, theta)[1].numel()
        soft = torch.randn(n, n_classes, generator=gen).to(model.dtype).to(dev).requires_grad_(True)
        params.append(soft)
    else:
        labels = labels.long().to(dev)

    def objective() -> Tensor:
        X = decode_dummy(latent, image_shape)
        y = labels if soft is None else soft.softmax(-1)
        if local is not None:
            pred = replay_local(model, theta, X, y, local, transform)
        else:
            Xin = X if transform is None else transform(X)
            pred = replay_update(model, theta, Xin, y, lr=lr, steps=steps, client_sizes=client_sizes)
        loss = update_distance(pred, target, distance)
        if tv > 0:
            loss = loss + tv * total_variation(X)
        return loss

    if optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(params, lr=attack_lr)
        sched = _step_schedule(opt, iterations) if schedule else None
    else:
        # DLG's optimiser: each step runs up to 20 quasi-Newton iterations; tolerances are off
        # because update-matching losses are tiny in absolute terms.
        opt = torch.optim.LBFGS(params, lr=attack_lr, max_iter=20, history_size=100, line_search_fn="strong_wolfe",
                                tolerance_grad=0.0, tolerance_change=0.0)
        sched = None

    history: list[float] = []
    t0 = time.perf_counter()
    for it in tqdm(range(iterations), desc="inversion", disable=not progress, leave=False):
        if optimizer == "adam":
            opt.zero_grad(set_to_none=True)
            loss = objective()
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            if clamp:
                with torch.no_grad():
                    latent.clamp_(0, 1)
        else:
            last: list[Tensor] = []

            def closure() -> Tensor:
                opt.zero_grad(set_to_none=True)
                value = objective()
                value.backward()
                last.append(value.detach())
                return value

            opt.step(closure)
            loss = last[-1]
        value = float(loss.detach())
        if not math.isfinite(value):
            warnings.warn(f"inversion diverged at iteration {it} (objective {value}); returning the last finite iterate. "
                          "Lower attack_lr or use Adam.", RuntimeWarning, stacklevel=2)
            break
        history.append(value)
        if callback is not None:
            with torch.no_grad():
                callback(it, decode_dummy(latent, image_shape).clamp(0, 1))
    seconds = time.perf_counter() - t0
    with torch.no_grad():
        images = decode_dummy(latent, image_shape).clamp(0, 1).detach()
        out_labels = labels if soft is None else soft.argmax(-1)
    settings = dict(lr=lr, steps=steps, client_sizes=None if client_sizes is None else list(client_sizes),
                    distance=distance, tv=tv, optimizer=optimizer, attack_lr=attack_lr, iterations=iterations,
                    schedule=schedule, scale_factor=scale_factor, init=init, clamp=clamp, seed=seed)
    if local is not None:
        settings["local"] = local
    if transform is not None:
        settings["transform"] = transform
    return Reconstruction(images=images, labels=out_labels.detach().clone(), loss=history, seconds=seconds,
                          settings=settings)


# ---- the curious client -------------------------------------------------------------------------
_CURIOUS_INVERSION = ("distance", "tv", "optimizer", "attack_lr", "iterations", "schedule", "progress")
"""The settings of :func:`invert_update` that :func:`curious_client_attack` passes through (its
defaults are invert_update's)."""


@spell_keywords(inspect.signature(invert_update, eval_str=True).parameters[k] for k in _CURIOUS_INVERSION)
def curious_client_attack(
    model: FLModel,
    view: GlobalModels,
    t: int,
    *,
    image_shape: Sequence[int],
    local_lr: float,
    local_steps: int = 3,
    labels: Tensor | None = None,
    n_images: int | None = None,
    server_lr: float | None = None,
    client_sizes: Sequence[int] | None = None,
    probe: Tensor | None = None,
    scale_factor: int = 4,
    seed: int = 0,
    device: torch.device | str | None = None,
    **inversion,
) -> Reconstruction:
    """The curious-client attack of Wilson et al. (2025), §3.1.

    From the two consecutive global models θ^t, θ^{t+1} the client received, the averaged
    update of all K clients is (θ^t - θ^{t+1}) / η_g (eq. 2); it is inverted (eq. 3) as the
    update of a single super-client that ran ``local_steps`` full-batch steps of size
    ``local_lr`` on N dummy images (no knowledge of K or of the clients' sizes).

    Args:
        view: what the curious client observed (:func:`flprivacy.threats.curious_client`).
        t: the round to attack; the client must hold θ^t and θ^{t+1}.
        image_shape: ``(C, H, W)``.
        local_lr, local_steps: the clients' learning rate η and local iterations τ (same for all
            clients, Wilson §3.1).
        labels: the N labels (known, or analytically restored as Wilson assume, after Ma et
            al. 2023); None restores the class counts with :func:`restore_label_counts` on
            ``probe`` images (e.g. the attacker's own).
        n_images: the attacker's guess of N (default: ``view.n_samples_total``; App. B searches it).
        server_lr: the attacker's guess of the global learning rate η_g (default: the true one,
            ``view.server_lr``; App. B).
        client_sizes: the App. F *upper bound*: replay these K clients, labels grouped by client.
        scale_factor: dummy resolution divisor, bicubic upsampling (Wilson §4: 4).
        seed: seeds the label restoration (without ``labels``) and the dummy initialisation.
        device: where the attack runs (default: the observed models' device); random draws
            stay on the CPU and are moved, so a device starts from the same dummy.
        distance, tv, optimizer, attack_lr, iterations, schedule, progress: passed to
            :func:`invert_update`, with its defaults (Wilson §4: L2, Adam, step 0.1).
    """
    check_keywords("curious_client_attack", inversion, _CURIOUS_INVERSION)
    check_positive("local_lr", local_lr, "curious_client_attack")
    check_seed("seed", seed, "curious_client_attack")
    if labels is not None:
        labels = as_tensor("labels", labels, where="curious_client_attack", ndim=1, min_rows=1)
    check_int("local_steps", local_steps, "curious_client_attack", minimum=1)
    theta_t, theta_next = view.consecutive(t)
    eta_g = view.server_lr if server_lr is None else float(server_lr)
    if eta_g <= 0:
        raise ValueError(f"server_lr must be positive, got {server_lr}.")
    if device is not None:
        theta_t, theta_next = theta_t.to(device), theta_next.to(device)
    target = (theta_t - theta_next) / eta_g
    N = int(view.n_samples_total if n_images is None else n_images)
    if labels is None:
        counts = restore_label_counts(model, theta_t, target, N, lr=local_lr, steps=local_steps, probe=probe,
                                      image_shape=image_shape, generator=make_generator(seed))
        labels = labels_from_counts(counts)
    elif labels.numel() != N:
        raise ValueError(f"{labels.numel()} labels given for N = {N} images; pass n_images or matching labels.")
    rec = invert_update(model, theta_t, target, image_shape=image_shape, labels=labels, lr=local_lr, steps=local_steps,
                        client_sizes=client_sizes, scale_factor=scale_factor, seed=seed, device=device, **inversion)
    rec.settings.update(round=t, n_images=N, server_lr=eta_g, attack="curious_client")
    return rec


def own_image_score(reconstruction: Reconstruction, own_images: Tensor) -> float:
    """Mean SSIM between the attacker's own images and their best-matching reconstructions.

    Wilson et al. (App. B) choose unknown hyper-parameters (the global learning rate, N) by how
    well the attacker recovers its *own* images, which it knows are in the batch.
    """
    own_images = check_finite("own_images", as_tensor("own_images", own_images, where="own_image_score", ndim=4, min_rows=1),
                              "own_image_score")
    if own_images.shape[1:] != reconstruction.images.shape[1:]:
        raise ValueError(f"own_image_score: own_images have image shape {tuple(own_images.shape[1:])}, the reconstruction "
                         f"{tuple(reconstruction.images.shape[1:])}.")
    return quality(reconstruction.images, own_images).summary()["ssim"]


# ---- Lemma 1 ------------------------------------------------------------------------------------
def super_client_divergence(model: FLModel, theta: Tensor, clients: Sequence[tuple[Tensor, Tensor]], *,
                            lr: float, steps: int) -> Tensor:
    """δ(τ) = W_fed^{t+1} - W_single^{t+1} (Wilson App. A): FedAvg's next global model minus the
    model of one super-client that trains τ full-batch steps on the union of the clients' data.

    Args:
        clients: the K clients' ``(X_k, y_k)``; FedAvg weights them by N_k / N.
    """
    if len(clients) < 1:
        raise ValueError("super_client_divergence needs at least one client (clients is empty).")
    check_positive("lr", lr, "super_client_divergence")
    check_int("steps", steps, "super_client_divergence", minimum=0)
    theta = model._as_theta(theta).detach()
    N = sum(int(X.shape[0]) for X, _ in clients)
    w_fed = torch.zeros_like(theta)
    for X, y in clients:
        w_fed += (X.shape[0] / N) * local_sgd(model, theta, X, y, lr=lr, steps=steps)
    X_all = torch.cat([X for X, _ in clients])
    y_all = torch.cat([y for _, y in clients])
    w_single = local_sgd(model, theta, X_all, y_all, lr=lr, steps=steps)
    return w_fed - w_single


def jacobian_gradient_covariance(model: FLModel, theta: Tensor, X: Tensor, y: Tensor, chunk: int = 128) -> Tensor:
    """Cov(J, g) of Wilson App. A (eq. 17c) over the population ``(X, y)``, a vector of size d.

    With g_i = ∇ℓ(θ; z_i) and J_i = ∇²ℓ(θ; z_i), [Cov(J, g)]_a = Σ_b Cov(J_ab, g_b)
    = E[J g] - E[J] E[g]. Per-sample J_i g_i = ∇_θ ½‖g_i‖² (double backpropagation, vectorised
    with ``torch.func.vmap``); E[J] E[g] is a Hessian-vector product of the mean loss.
    """
    check_int("chunk", chunk, "jacobian_gradient_covariance", minimum=1)
    theta = check_finite("theta", model._as_theta(theta).detach(), "jacobian_gradient_covariance")
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    check_finite("X", X, "jacobian_gradient_covariance")
    if X.shape[0] == 0 or X.shape[0] != y.shape[0]:
        raise ValueError(f"jacobian_gradient_covariance: X and y need the same number (>= 1) of rows; got X "
                         f"{tuple(X.shape)}, y {tuple(y.shape)}.")

    def loss_one(th: Tensor, x: Tensor, t: Tensor) -> Tensor:
        return model.per_sample_loss(th, x.unsqueeze(0), t.unsqueeze(0)).squeeze(0)

    grad_one = torch.func.grad(loss_one)

    def half_sq_norm(th: Tensor, x: Tensor, t: Tensor) -> Tensor:
        return 0.5 * (grad_one(th, x, t) ** 2).sum()

    jg_fn = torch.func.vmap(torch.func.grad(half_sq_norm), in_dims=(None, 0, 0))
    E_Jg = torch.zeros_like(theta, dtype=torch.float64)
    for i in range(0, X.shape[0], chunk):
        E_Jg += jg_fn(theta, X[i:i + chunk].to(model.dtype), y[i:i + chunk]).double().sum(0)
    E_Jg /= X.shape[0]
    th = theta.clone().requires_grad_(True)
    (g_bar,) = torch.autograd.grad(model.loss(th, X, y), th, create_graph=True)
    (H_g,) = torch.autograd.grad(g_bar, th, grad_outputs=g_bar.detach())
    return (E_Jg - H_g.double()).to(theta.dtype)


def lemma1_prediction(cov: Tensor, *, lr: float, steps: int, n_clients: int, n_images: int) -> Tensor:
    """Wilson et al. Lemma 1 (eq. 31): E[δ(τ)] ≈ τ(τ-1)/2 · η² · (K-1)/N · Cov(J, g)."""
    cov = as_tensor("cov", cov, where="lemma1_prediction", floating=True)
    check_positive("lr", lr, "lemma1_prediction")
    check_int("steps", steps, "lemma1_prediction", minimum=1)
    check_int("n_clients", n_clients, "lemma1_prediction", minimum=1)
    check_int("n_images", n_images, "lemma1_prediction", minimum=1)
    return steps * (steps - 1) / 2 * lr**2 * (n_clients - 1) / n_images * cov
