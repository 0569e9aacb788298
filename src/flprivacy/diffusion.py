"""Diffusion post-processing of reconstructed images (Wilson et al. 2025, §3.2-3.3).

A curious client's raw reconstructions are low-resolution dummies upsampled bicubically, with
the artefacts of an imperfect inversion. Wilson et al. improve them with a pretrained diffusion
model in two ways, both written here on top of a small DDPM (Ho et al. 2020) that the book
trains itself (:func:`train_ddpm`; the U-Net and the noise schedule come from ``diffusers``):

- **Direct (pixel-level) post-processing** (§3.2): DDRM (Kawar et al. 2022) solves the linear
  inverse problem y = H x + σ_y z with the diffusion model as prior, in the spectral space of
  H = U Σ Vᵀ. For the curious-client attack H is the pseudo-inverse of the attack's bicubic
  upsampler (:func:`upsampler_operator`): the low-resolution dummy is the measurement.
  :func:`ddrm_restore`.
- **Semantic post-processing, MDE** (§3.3, eq. 4): optimise the initial noise X_T of the frozen
  model so that its deterministic sample matches the raw reconstruction, with the noise
  predictions treated as constants. :func:`mde`.

For the controlled experiments on Fig. 7, :func:`simulate_raw` makes the raw image an attack would
return if its only error were Gaussian noise on the dummy (DDRM's own measurement model), and
:func:`lpips_digits` scores 28x28 digits in LPIPS, the paper's metric.

Weights are stored as ``safetensors`` (no pickle; :func:`load_ddpm` checks the SHA-256 too).
"""

from __future__ import annotations

import copy
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

from .config import generator as make_generator
from .validation import NonFiniteError, as_tensor, check_finite, check_int, check_positive, check_seed
from .weights import load_weights, save_weights, sha256_file

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model classes build from arguments; never download

IMAGE_SIZE = 32
"""Side of the DDPM's images, 32, that is MNIST's 28x28 padded by 2 background pixels on each side."""
PAD = 2
N_CLASSES = 10
NULL_CLASS = N_CLASSES
"""Class index of the unconditional model (labels dropped in training with probability ``p_uncond``)."""


# ---- the model ------------------------------------------------------------------------------------
def ddpm_config() -> dict:
    """Arguments of the compact class-conditional ``diffusers.UNet2DModel`` (about 0.69 M parameters):
    three resolutions 32/16/8 with 16/32/64 channels, one residual block per level, self-attention
    at 8x8, 11 class embeddings (10 digits + the unconditional class)."""
    return dict(sample_size=IMAGE_SIZE, in_channels=1, out_channels=1, layers_per_block=1,
                block_out_channels=(16, 32, 64), norm_num_groups=8, num_class_embeds=N_CLASSES + 1,
                down_block_types=("DownBlock2D", "DownBlock2D", "AttnDownBlock2D"),
                up_block_types=("AttnUpBlock2D", "UpBlock2D", "UpBlock2D"))


def build_unet(config: dict | None = None):
    """A fresh ``UNet2DModel`` (built offline from arguments) with :func:`ddpm_config` or ``config``."""
    from diffusers import UNet2DModel

    return UNet2DModel(**(ddpm_config() if config is None else config))


def scheduler(n_train_steps: int = 1000):
    """The DDPM noise schedule (Ho et al. 2020: linear β from 1e-4 to 0.02 over T = 1000 steps)."""
    from diffusers import DDPMScheduler

    return DDPMScheduler(num_train_timesteps=n_train_steps, beta_schedule="linear", beta_start=1e-4, beta_end=0.02)


def to_model_space(images: Tensor) -> Tensor:
    """[0, 1] images of 28x28 (or already 32x32) to the model's [-1, 1] 32x32 space (zero pad = black)."""
    images = as_tensor("images", images, where="to_model_space", ndim=4, min_rows=1, dtype=torch.float32)
    check_finite("images", images, "to_model_space")
    if images.shape[-2:] == (IMAGE_SIZE - 2 * PAD, IMAGE_SIZE - 2 * PAD):
        images = F.pad(images, (PAD,) * 4)
    elif images.shape[-2:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"to_model_space: images must be 28x28 or 32x32, got {tuple(images.shape[-2:])}.")
    return images * 2 - 1


def from_model_space(x: Tensor, crop: bool = True) -> Tensor:
    """Inverse of :func:`to_model_space`: [-1, 1] 32x32 to [0, 1] (28x28 when ``crop``), clamped."""
    x = as_tensor("x", x, where="from_model_space", ndim=4, min_rows=1, dtype=torch.float32)
    check_finite("x", x, "from_model_space")
    if x.shape[-2:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"from_model_space: x must be (n, C, 32, 32) model-space images, got {tuple(x.shape)}.")
    out = ((x + 1) / 2).clamp(0, 1)
    return out[..., PAD:-PAD, PAD:-PAD] if crop else out


# ---- training ---------------------------------------------------------------------------------------
@dataclass
class TrainedDDPM:
    """A trained model with its training record (``losses``: mean loss per logged block of steps)."""

    model: torch.nn.Module
    losses: list[float]
    seconds: float
    settings: dict = field(default_factory=dict)


def train_ddpm(images: Tensor, labels: Tensor | None = None, *, steps: int, batch_size: int = 64, lr: float = 1e-3,
               seed: int = 0, p_uncond: float = 0.1, ema_decay: float = 0.995, config: dict | None = None,
               log_every: int = 50, time_budget: float | None = None,
               progress: Callable[[int, float], None] | None = None) -> TrainedDDPM:
    """Train a DDPM with the ε-prediction loss of Ho et al. (2020, Alg. 1):
    E_{x_0, t, ε} ‖ε - ε_θ(√ᾱ_t x_0 + √(1-ᾱ_t) ε, t, c)‖², class label c dropped to the null class
    with probability ``p_uncond``; Adam with a linear warm-up over the first 100 steps, then a
    constant rate; the returned model holds the exponential moving average of the weights (decay
    ``min(ema_decay, (1 + s) / (10 + s))`` at step s).

    Args:
        images: ``(n, 1, 28, 28)`` or ``(n, 1, 32, 32)`` training images in [0, 1].
        labels: ``(n,)`` class labels in 0..9 (None: unconditional, all null class).
        steps: optimiser steps.
        seed: seeds the initialisation, the batches, the timesteps and the noise.
        time_budget: stop after this many seconds (the steps done are in ``settings["steps_done"]``;
            rerunning with ``steps`` equal to them gives the same weights, since the rate does not
            depend on the total).
    """
    check_int("steps", steps, "train_ddpm", minimum=1)
    check_int("batch_size", batch_size, "train_ddpm", minimum=1)
    check_positive("lr", lr, "train_ddpm")
    check_seed("seed", seed, "train_ddpm")
    if not 0 <= p_uncond <= 1 or not 0 <= ema_decay < 1:
        raise ValueError(f"train_ddpm: p_uncond must be in [0, 1] and ema_decay in [0, 1); got {p_uncond}, {ema_decay}.")
    x0_all = check_finite("images", to_model_space(images), "train_ddpm")
    n = x0_all.shape[0]
    if labels is None:
        labels = torch.full((n,), NULL_CLASS, dtype=torch.long)
    labels = as_tensor("labels", labels, where="train_ddpm", ndim=1).long()
    if labels.shape[0] != n or labels.min() < 0 or labels.max() > NULL_CLASS:
        raise ValueError(f"train_ddpm: labels must be ({n},) integers in 0..{NULL_CLASS}, got shape {tuple(labels.shape)}.")
    torch.manual_seed(seed)
    model = build_unet(config)
    ema = {k: v.detach().clone() for k, v in model.state_dict().items()}
    sched = scheduler()
    abar = sched.alphas_cumprod
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    lr_sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100))
    g = make_generator(seed)
    losses, block = [], []
    t0 = time.perf_counter()
    model.train()
    done = 0
    for step in range(steps):
        idx = torch.randint(0, n, (min(batch_size, n),), generator=g)
        x0, c = x0_all[idx], labels[idx].clone()
        c[torch.rand(c.shape[0], generator=g) < p_uncond] = NULL_CLASS
        t = torch.randint(0, abar.shape[0], (x0.shape[0],), generator=g)
        eps = torch.randn(x0.shape, generator=g)
        xt = sched.add_noise(x0, eps, t)  # √ᾱ_t x_0 + √(1-ᾱ_t) ε
        loss = (model(xt, t, class_labels=c).sample - eps).pow(2).mean()
        if not torch.isfinite(loss):
            raise NonFiniteError(f"train_ddpm: the loss became {float(loss)} at step {step}; lower lr (now {lr}).")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        lr_sched.step()
        decay = min(ema_decay, (1 + step) / (10 + step))
        with torch.no_grad():
            for k, v in model.state_dict().items():
                if v.dtype.is_floating_point:
                    ema[k].mul_(decay).add_(v.detach(), alpha=1 - decay)
                else:
                    ema[k].copy_(v)
        block.append(float(loss.detach()))
        if len(block) == log_every:
            losses.append(sum(block) / len(block))
            block = []
            if progress is not None:
                progress(step + 1, losses[-1])
        done = step + 1
        if time_budget is not None and time.perf_counter() - t0 > time_budget:
            break
    if block:
        losses.append(sum(block) / len(block))
    model.load_state_dict(ema)
    model.eval()
    settings = dict(steps=steps, steps_done=done, time_budget=time_budget, batch_size=batch_size, lr=lr, seed=seed, p_uncond=p_uncond, ema_decay=ema_decay,
                    log_every=log_every, n_images=n, config=ddpm_config() if config is None else config)
    return TrainedDDPM(model=model, losses=losses, seconds=time.perf_counter() - t0, settings=settings)


# ---- weights: safetensors + a JSON record with the hash (flprivacy.weights) -----------------------------
def save_ddpm(model: torch.nn.Module, path: str | Path, record: dict) -> dict:
    """Write the weights to ``path`` (safetensors) and ``record`` plus the model config and the
    file's SHA-256 to ``path`` with suffix ``.json`` (:func:`flprivacy.weights.save_weights`);
    return the full record."""
    config = {k: list(v) if isinstance(v, tuple) else v for k, v in model.config.items() if k in ddpm_config()}
    return save_weights(model.state_dict(), path, {**record, "config": config})


def weights_path() -> Path:
    """``data/weights/ddpm_mnist32.safetensors`` of the project checkout (committed)."""
    return Path(__file__).resolve().parents[2] / "data" / "weights" / "ddpm_mnist32.safetensors"


def load_ddpm(path: str | Path | None = None, sha256: str | None = None) -> tuple[torch.nn.Module, dict]:
    """Load a DDPM saved by :func:`save_ddpm` with safe loading (:func:`flprivacy.weights.load_weights`):
    ``safetensors`` holds tensors only (nothing is unpickled or executed), the file's SHA-256 must
    equal the one recorded in its JSON (or ``sha256`` when given), and every tensor must match
    the architecture.

    Returns ``(model in eval mode, record)``.
    """
    state, record = load_weights(weights_path() if path is None else path, where="load_ddpm", sha256=sha256,
                                 remake="train them with `python -m flbook.experiments.train_ddpm` (the chapter "
                                        "names the exact command)")
    config = {k: tuple(v) if isinstance(v, list) else v for k, v in record.get("config", ddpm_config()).items()}
    model = build_unet({**ddpm_config(), **config})
    model.load_state_dict(state, strict=True)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, record


# ---- the measurement operator of the curious-client attack ------------------------------------------
def bicubic_matrix(low: int, high: int) -> Tensor:
    """The ``(high, low)`` matrix of 1-D bicubic upsampling as the attack's
    :func:`~flprivacy.attacks.inversion.decode_dummy` does it (``align_corners=False``): the
    2-D upsampler is ``Z ↦ B Z Bᵀ``."""
    check_int("low", low, "bicubic_matrix", minimum=1)
    check_int("high", high, "bicubic_matrix", minimum=1)
    if high < low:
        raise ValueError(f"bicubic_matrix: high ({high}) must be at least low ({low}); it upsamples.")
    eye = torch.eye(low, dtype=torch.float64)
    # upsample each basis image e_i e_0ᵀ along the first axis only
    cols = F.interpolate(eye.view(low, 1, low, 1), size=(high, 1), mode="bicubic", align_corners=False)
    return cols.view(low, high).T.contiguous()


@dataclass
class SeparableOperator:
    """A linear measurement H x = A X Aᵀ on ``(…, n, n)`` images (H = A ⊗ A) with its SVD, the
    form DDRM needs (Kawar et al. 2022, §3.1): A = U_A diag(s_A) V_Aᵀ gives H = U Σ Vᵀ with
    U = U_A ⊗ U_A, V = V_A ⊗ V_A and singular values s_i s_j (zero outside the ``m x m`` block).

    Attributes:
        A: the ``(m, n)`` 1-D operator.
    """

    A: Tensor
    U: Tensor = field(init=False)
    s: Tensor = field(init=False)
    V: Tensor = field(init=False)

    def __post_init__(self) -> None:
        A = as_tensor("A", self.A, where="SeparableOperator", ndim=2, min_rows=1, floating=True).to(torch.float64)
        check_finite("A", A, "SeparableOperator")
        if A.shape[0] > A.shape[1]:
            raise ValueError(f"SeparableOperator: A must be (m, n) with m <= n (a downsampling), got {tuple(A.shape)}.")
        U, s, Vh = torch.linalg.svd(A, full_matrices=True)
        if s.min() <= s.max() * 1e-10:
            raise ValueError("SeparableOperator: A is rank deficient; DDRM here needs a full-row-rank operator.")
        self.A, self.U, self.s, self.V = A.float(), U.float(), s.float(), Vh.T.contiguous().float()

    @property
    def m(self) -> int:
        return self.A.shape[0]

    @property
    def n(self) -> int:
        return self.A.shape[1]

    def to(self, device: torch.device | str) -> SeparableOperator:
        """The same operator with its matrices on ``device``."""
        out = copy.copy(self)
        out.A, out.U, out.s, out.V = (v.to(device) for v in (self.A, self.U, self.s, self.V))
        return out

    def singular_values(self) -> Tensor:
        """The ``(n, n)`` array of singular values of H in spectral coordinates (zero = null space)."""
        out = torch.zeros(self.n, self.n, device=self.s.device)
        out[: self.m, : self.m] = self.s[:, None] * self.s[None, :]
        return out

    def forward(self, x: Tensor) -> Tensor:
        """H x."""
        return self.A @ x @ self.A.T

    def Vt(self, x: Tensor) -> Tensor:
        """Vᵀ x: the spectral coordinates of an image."""
        return self.V.T @ x @ self.V

    def V_(self, xbar: Tensor) -> Tensor:
        """V x̄: back to pixels."""
        return self.V @ xbar @ self.V.T

    def y_bar(self, y: Tensor) -> Tensor:
        """ȳ = Σ⁺ Uᵀ y on the ``(n, n)`` spectral grid (zero where Σ is zero)."""
        uy = self.U.T @ y @ self.U
        out = torch.zeros(*y.shape[:-2], self.n, self.n, dtype=y.dtype, device=y.device)
        out[..., : self.m, : self.m] = uy / (self.s[:, None] * self.s[None, :])
        return out


def upsampler_operator(low: int = 14, high: int = 28, pad: int = PAD) -> SeparableOperator:
    """The measurement of the curious-client attack in the DDPM's 32x32 space.

    The attack's raw reconstruction is r = B z Bᵀ, a ``low x low`` dummy z upsampled bicubically
    (B = :func:`bicubic_matrix`). Read as a measurement of the true image x, the dummy that best
    explains x is z = B⁺ x B⁺ᵀ (least squares), so the measurement operator is the
    pseudo-inverse of the upsampler, applied after cropping the model's ``pad`` border:
    A = B⁺ C. Since B⁺ B = I, the dummy is recovered from the raw image exactly: y = H r.
    """
    check_int("pad", pad, "upsampler_operator", minimum=0)
    B = bicubic_matrix(low, high)
    crop = torch.zeros(high, high + 2 * pad, dtype=torch.float64)
    crop[:, pad: pad + high] = torch.eye(high, dtype=torch.float64)
    return SeparableOperator(torch.linalg.pinv(B) @ crop)


def simulate_raw(truth: Tensor, *, low: int = 14, sigma_y: float = 0.0, seed: int = 0) -> Tensor:
    """The raw reconstruction of an attack whose only error is Gaussian noise on its dummy: the
    least-squares ``low x low`` dummy of each true image, z = H x (:func:`upsampler_operator`),
    plus ``sigma_y`` N(0, 1) noise per dummy pixel (model scale, as in :func:`ddrm_restore`),
    upsampled bicubically to 28x28 as the attack's ``decode_dummy`` does. Not clipped, so that
    H r = y exactly (``B⁺B = I``); the metrics clip to [0, 1] when they score it.

    It isolates the prior: DDRM on these images faces exactly the measurement model it assumes
    (y = H x + σ_y n), so what it gains or loses against the bicubic image itself is the prior's
    doing, not the attack's. ``truth``: ``(n, 1, 28, 28)`` images in [0, 1]."""
    truth = as_tensor("truth", truth, where="simulate_raw", ndim=4, min_rows=1, dtype=torch.float32)
    check_finite("truth", truth, "simulate_raw")
    if truth.shape[1:] != (1, IMAGE_SIZE - 2 * PAD, IMAGE_SIZE - 2 * PAD):
        raise ValueError(f"simulate_raw: truth must be (n, 1, 28, 28) images in [0, 1], got {tuple(truth.shape)}.")
    check_int("low", low, "simulate_raw", minimum=1)
    if (IMAGE_SIZE - 2 * PAD) % low:
        raise ValueError(f"simulate_raw: low must divide 28 (the attack's dummy is 28 / scale factor), got {low}.")
    check_positive("sigma_y", sigma_y, "simulate_raw", strict=False)
    check_seed("seed", seed, "simulate_raw")
    y = upsampler_operator(low=low).forward(to_model_space(truth)[:, 0])
    y = y + sigma_y * torch.randn(y.shape, generator=make_generator(seed))
    raw = F.interpolate(y.unsqueeze(1), size=(IMAGE_SIZE - 2 * PAD,) * 2, mode="bicubic", align_corners=False)
    return (raw + 1) / 2


def lpips_digits(images: Tensor, truth: Tensor) -> Tensor:
    """LPIPS (Zhang et al. 2018; AlexNet v0.1, :func:`flprivacy.lpips.lpips`), Wilson et al.'s
    metric (§4), of paired 28x28 images in [0, 1]: both are first resized to 64x64 bilinearly, the
    patch size its linear heads were calibrated on (see :mod:`flprivacy.lpips`). Returns ``(n,)``;
    lower is closer."""
    from .lpips import lpips

    images = check_finite("images", as_tensor("images", images, where="lpips_digits", ndim=4, min_rows=1,
                                              dtype=torch.float32), "lpips_digits")
    truth = check_finite("truth", as_tensor("truth", truth, where="lpips_digits", ndim=4, min_rows=1,
                                            dtype=torch.float32), "lpips_digits")
    if images.shape != truth.shape:
        raise ValueError(f"lpips_digits: images and truth must be paired, same shape; got {tuple(images.shape)} and "
                         f"{tuple(truth.shape)} (pair them first with flprivacy.metrics.match_images).")
    up = lambda x: F.interpolate(x.clamp(0, 1), size=64, mode="bilinear", align_corners=False).clamp(0, 1)  # noqa: E731
    return lpips(up(images), up(truth)).float()


# ---- shared sampling pieces ---------------------------------------------------------------------------
def _timesteps(n_steps: int, n_train: int) -> list[int]:
    """``n_steps`` timesteps from T-1 down to 0, evenly spaced (DDIM/DDRM skip-step sampling)."""
    return torch.linspace(n_train - 1, 0, n_steps).round().long().tolist()


def _labels(labels: Tensor | None, n: int, where: str, device: torch.device | None = None) -> Tensor:
    if labels is None:
        return torch.full((n,), NULL_CLASS, dtype=torch.long, device=device)
    labels = as_tensor("labels", labels, where=where, ndim=1).long()
    if labels.shape[0] != n or labels.min() < 0 or labels.max() > NULL_CLASS:
        raise ValueError(f"{where}: labels must be ({n},) class indices in 0..{NULL_CLASS} "
                         f"({NULL_CLASS} = unconditional); got shape {tuple(labels.shape)}.")
    return labels if device is None else labels.to(device)


def _device(model, device: torch.device | str | None) -> torch.device:
    """``device``, or the model's (its first parameter's; the CPU for a parameterless model)."""
    if device is not None:
        return torch.device(device)
    p = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
    return p.device if p is not None else torch.device("cpu")


def _eps(model, x: Tensor, t: int, labels: Tensor, batch: int = 64) -> Tensor:
    tt = torch.full((x.shape[0],), t, dtype=torch.long, device=x.device)
    with torch.no_grad():
        return torch.cat([model(x[i:i + batch], tt[i:i + batch], class_labels=labels[i:i + batch]).sample
                          for i in range(0, x.shape[0], batch)])


# ---- DDRM (Kawar et al. 2022) -------------------------------------------------------------------------
@dataclass
class DDRMResult:
    """``images``: restored ``(n, 1, 28, 28)`` in [0, 1]; ``x0``: the last sample in model space
    (32x32, [-1, 1], unclamped); ``measurement``: y = H(raw) in model space."""

    images: Tensor
    x0: Tensor
    measurement: Tensor


def ddrm_restore(model, raw: Tensor, *, sigma_y: float, operator: SeparableOperator | None = None,
                 labels: Tensor | None = None, n_steps: int = 20, eta: float = 0.85, eta_b: float = 1.0,
                 clip: bool = True, seed: int = 0, n_train_steps: int = 1000,
                 device: torch.device | str | None = None) -> DDRMResult:
    """DDRM restoration (Kawar et al. 2022, eq. 7-8 with the initialisation of their §3.3) of the raw
    reconstructions, with the frozen DDPM ``model`` as prior (Wilson et al. §3.2).

    Measurement: y = H x + σ_y z with H = U Σ Vᵀ (:func:`upsampler_operator`: y is the attack's
    low-resolution dummy, in the model's [-1, 1] scale, so σ_y is twice the pixel-scale noise).
    In spectral coordinates x̄ = Vᵀ x, ȳ = Σ⁺ Uᵀ y, and with the variance-exploding noise levels
    σ_t = √((1-ᾱ_t)/ᾱ_t) and x̄_θ,t = Vᵀ x_θ(x_t, t) the model's prediction of x_0, each step
    t → t' (σ' = σ_{t'}) sets, per coefficient i with singular value s_i and ε ~ N(0, 1):

    - s_i = 0: x̄' = x̄_θ + √(1-η²) σ' (x̄_t - x̄_θ)/σ_t + η σ' ε
    - σ' < σ_y/s_i: x̄' = x̄_θ + √(1-η²) σ' (ȳ - x̄_θ)/(σ_y/s_i) + η σ' ε
    - σ' ≥ σ_y/s_i: x̄' = (1-η_b) x̄_θ + η_b ȳ + √(σ'² - σ_y² η_b²/s_i²) ε

    starting from x̄_T = ȳ + √(σ_T² - σ_y²/s_i²) ε (s_i > 0) or σ_T ε (s_i = 0). The last step
    goes to σ' = 0, so with σ_y = 0 and η_b = 1 the output satisfies H x_0 = y exactly.

    Args:
        model: the ε-prediction U-Net (:func:`load_ddpm`).
        raw: ``(n, 1, 28, 28)`` raw reconstructions in [0, 1].
        sigma_y: measurement noise standard deviation in model scale (>= 0).
        labels: class labels to condition on (None: unconditional).
        n_steps: sampling steps (Kawar et al. use 20).
        eta, eta_b: DDRM's η and η_b (their defaults 0.85 and 1).
        clip: clip the prediction x_θ,t to the data range [-1, 1], as the DDPM sampler of Ho et al.
            (and ``diffusers``' ``clip_sample``) does; Kawar et al.'s code does not.
        device: where the restoration runs (default: the model's device). The noise is drawn on
            the CPU from ``seed`` and moved, so a device draws the same noise.
    """
    raw = as_tensor("raw", raw, where="ddrm_restore", ndim=4, min_rows=1, dtype=torch.float32)
    check_finite("raw", raw, "ddrm_restore")
    if raw.shape[1:] != (1, IMAGE_SIZE - 2 * PAD, IMAGE_SIZE - 2 * PAD):
        raise ValueError(f"ddrm_restore: raw must be (n, 1, 28, 28) images in [0, 1], got {tuple(raw.shape)}.")
    check_positive("sigma_y", sigma_y, "ddrm_restore", strict=False)
    check_int("n_steps", n_steps, "ddrm_restore", minimum=1)
    check_seed("seed", seed, "ddrm_restore")
    if not (0 <= eta <= 1 and 0 <= eta_b <= 1):
        raise ValueError(f"ddrm_restore: eta and eta_b must lie in [0, 1], got {eta} and {eta_b}.")
    dev = _device(model, device)
    op = (upsampler_operator() if operator is None else operator).to(dev)
    raw = raw.to(dev)
    n = raw.shape[0]
    c = _labels(labels, n, "ddrm_restore", dev)
    g = make_generator(seed)
    randn = lambda shape: torch.randn(shape, generator=g).to(dev)  # noqa: E731 - CPU draws, then moved
    abar = scheduler(n_train_steps).alphas_cumprod.double()
    sig = lambda t: float(((1 - abar[t]) / abar[t]).sqrt()) if t >= 0 else 0.0  # noqa: E731
    y = op.forward(to_model_space(raw)[:, 0])  # the measurement: H applied to the raw image
    ybar = op.y_bar(y)
    s = op.singular_values()
    pos = s > 0
    s_safe = torch.where(pos, s, torch.ones_like(s))
    noise_level = torch.where(pos, sigma_y / s_safe, torch.zeros_like(s))  # σ_y / s_i
    ts = _timesteps(n_steps, n_train_steps)
    sT = sig(ts[0])
    xbar = torch.where(pos, ybar + (sT ** 2 - noise_level ** 2).clamp(min=0).sqrt() * randn(ybar.shape),
                       sT * randn(ybar.shape))
    for i, t in enumerate(ts):
        t_next = ts[i + 1] if i + 1 < len(ts) else -1
        st, sn = sig(t), sig(t_next)
        x_ve = op.V_(xbar)
        x_vp = (abar[t].sqrt().float().to(dev) * x_ve).unsqueeze(1)
        eps = _eps(model, x_vp, t, c)[:, 0]
        x0 = x_ve - st * eps  # x_θ,t in the VE form: x_t = x_0 + σ_t ε
        if clip:
            x0 = x0.clamp(-1, 1)
        check_finite("the model's prediction", x0, "ddrm_restore", cause="the weights or the input are broken")
        x0bar = op.Vt(x0)
        z = randn(xbar.shape)
        null = x0bar + math.sqrt(1 - eta ** 2) * sn * (xbar - x0bar) / st + eta * sn * z
        below = x0bar + math.sqrt(1 - eta ** 2) * sn * (ybar - x0bar) / noise_level.clamp(min=1e-12) + eta * sn * z
        above = (1 - eta_b) * x0bar + eta_b * ybar + (sn ** 2 - noise_level ** 2 * eta_b ** 2).clamp(min=0).sqrt() * z
        xbar = torch.where(~pos, null, torch.where(sn < noise_level, below, above))
    x_out = op.V_(xbar).unsqueeze(1)
    return DDRMResult(images=from_model_space(x_out), x0=x_out, measurement=y)


def estimate_sigma_y(raw: Tensor, truth: Tensor, operator: SeparableOperator | None = None) -> float:
    """The measurement noise σ_y (model scale) from pairs of raw reconstructions and true images,
    e.g. the curious client's *own* images, which it knows (Wilson §3.1): the root mean square of
    y - H x over the measured coefficients."""
    raw = check_finite("raw", as_tensor("raw", raw, where="estimate_sigma_y", ndim=4, min_rows=1, dtype=torch.float32),
                       "estimate_sigma_y")
    truth = check_finite("truth", as_tensor("truth", truth, where="estimate_sigma_y", ndim=4, min_rows=1,
                                            dtype=torch.float32), "estimate_sigma_y")
    if raw.shape != truth.shape:
        raise ValueError(f"estimate_sigma_y: raw and truth must have the same shape, got {tuple(raw.shape)} and "
                         f"{tuple(truth.shape)}; pair them first (flprivacy.metrics.match_images).")
    op = upsampler_operator() if operator is None else operator
    r = op.forward(to_model_space(raw)[:, 0]) - op.forward(to_model_space(truth)[:, 0])
    return float(r.pow(2).mean().sqrt())


# ---- MDE (Wilson et al. §3.3, eq. 4) --------------------------------------------------------------------
def ddim_sample(model, x_T: Tensor, labels: Tensor | None = None, *, n_steps: int = 10, n_train_steps: int = 1000,
                grad: bool = False, clip: bool = True) -> Tensor:
    """The deterministic DDIM sampler (η = 0; Song et al. 2021) μ_θ(X_T, T), from ``x_T`` of shape
    ``(n, 1, 32, 32)`` to x_0 in model space: x_{t'} = √ᾱ_{t'} x̂_0 + √(1-ᾱ_{t'}) ε_θ(x_t, t) with
    x̂_0 = (x_t - √(1-ᾱ_t) ε_θ)/√ᾱ_t, ending at ᾱ = 1. With ``grad`` the result is differentiable in
    ``x_T`` with every ε_θ held constant (MDE's rule, Wilson §3.3). With ``clip`` each x̂_0 is clipped
    to [-1, 1] as in Ho et al.'s sampler; the clipping is held constant too (identity in the gradient)."""
    check_int("n_steps", n_steps, "ddim_sample", minimum=1)
    x_T = as_tensor("x_T", x_T, where="ddim_sample", ndim=4, min_rows=1, dtype=torch.float32)
    check_finite("x_T", x_T, "ddim_sample")
    if x_T.shape[1:] != (1, IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"ddim_sample: x_T must be (n, 1, 32, 32) noise, got {tuple(x_T.shape)}.")
    c = _labels(labels, x_T.shape[0], "ddim_sample", x_T.device)
    abar = scheduler(n_train_steps).alphas_cumprod.to(x_T.device)
    x = x_T
    ts = _timesteps(n_steps, n_train_steps)
    for i, t in enumerate(ts):
        a = abar[t]
        a_next = abar[ts[i + 1]] if i + 1 < len(ts) else torch.tensor(1.0, device=x_T.device)
        eps = _eps(model, x.detach(), t, c)  # a constant: no gradient through the network
        x0 = (x - (1 - a).sqrt() * eps) / a.sqrt()
        if clip:
            x0 = x0 + (x0.clamp(-1, 1) - x0).detach()
        x = a_next.sqrt() * x0 + (1 - a_next).sqrt() * eps
    return x if grad else x.detach()


@dataclass
class MDEResult:
    """``images``: ``(n, 1, 28, 28)`` in [0, 1] after the last iteration; ``history[k]``: the
    images after k iterations (k = 0 is the model's sample from the initial noise) at the recorded
    iterations ``recorded``; ``loss``: eq. 4 per iteration (mean over images)."""

    images: Tensor
    history: list[Tensor]
    recorded: list[int]
    loss: list[float]
    x_T: Tensor


def mde(model, raw: Tensor, labels: Tensor | None = None, *, iterations: int = 50, lr: float = 0.05,
        n_steps: int = 10, seed: int = 0, record_every: int = 1,
        device: torch.device | str | None = None) -> MDEResult:
    """Masked diffusion enhancer (Wilson et al. §3.3, eq. 4) with the book's DDPM in place of MDT:
    X̃_T = argmin_{X_T} ‖μ_θ(X_T, T) - X̂‖², optimised by Adam (rate ``lr``) from X_T ~ N(0, I), where
    μ_θ is the deterministic sampler :func:`ddim_sample` with its noise predictions held constant and
    X̂ the raw reconstruction (in model space). Conditioning on the attack's ``labels`` makes the
    first iterate "a random image from the target class", as in their Fig. 3.

    Args:
        raw: ``(n, 1, 28, 28)`` raw reconstructions in [0, 1].
        iterations: optimisation steps (the paper shows 100 epochs and picks the best by eye).
        record_every: keep the images every this many iterations (for Fig. 3 and over-fitting).
        device: where it runs (default: the model's device); X_T is drawn on the CPU from
            ``seed`` and moved, so a device starts from the same noise.
    """
    raw = as_tensor("raw", raw, where="mde", ndim=4, min_rows=1, dtype=torch.float32)
    check_finite("raw", raw, "mde")
    if raw.shape[1:] != (1, IMAGE_SIZE - 2 * PAD, IMAGE_SIZE - 2 * PAD):
        raise ValueError(f"mde: raw must be (n, 1, 28, 28) images in [0, 1], got {tuple(raw.shape)}.")
    check_int("iterations", iterations, "mde", minimum=0)
    check_int("record_every", record_every, "mde", minimum=1)
    check_positive("lr", lr, "mde")
    check_seed("seed", seed, "mde")
    dev = _device(model, device)
    target = to_model_space(raw).to(dev)
    c = _labels(labels, raw.shape[0], "mde", dev)
    x_T = torch.randn(target.shape, generator=make_generator(seed)).to(dev).requires_grad_(True)
    opt = torch.optim.Adam([x_T], lr=lr)
    history, recorded, losses = [], [], []
    for it in range(iterations + 1):
        out = ddim_sample(model, x_T, c, n_steps=n_steps, grad=True)
        loss = (out - target).pow(2).flatten(1).sum(1).mean()
        if not torch.isfinite(loss):
            raise NonFiniteError(f"mde: the loss became {float(loss)} at iteration {it}; lower lr (now {lr}).")
        if it % record_every == 0 or it == iterations:
            history.append(from_model_space(out.detach()))
            recorded.append(it)
        losses.append(float(loss.detach()))
        if it == iterations:
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return MDEResult(images=history[-1], history=history, recorded=recorded, loss=losses, x_T=x_T.detach())
