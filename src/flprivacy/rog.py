"""ROG's GAN post-processor (Yue et al. 2023), the baseline of Wilson et al.'s Fig. 8 and App. G Fig. 15.

Yue et al.'s attack ROG ("Gradient Obfuscation Gives a False Sense of Security in Federated
Learning", USENIX Security 2023) inverts a gradient into a *low-resolution* image (a 4x bicubically
downsampled latent, their "encoder") and then post-processes it with a learned image-to-image
network. Their public code (github.com/KAI-YUE/rog, ``src/attack/attacker.py``) post-processes with
two branches, averaged 50/50: a class-conditional generator (``Ccgenerator``, trained as a GAN
against a patch discriminator) applied to the upsampled reconstruction, and a denoiser followed by
USRNet super-resolution. Wilson et al. compare their direct post-processor with "the GAN used by
Yue et al." (App. G), so this module builds the GAN branch:

- :class:`RogGenerator`: the code's ``Ccgenerator`` scaled to 32x32 one-channel digits. A U-Net:
  a 5x5 convolution and three stride-2 convolutions with instance normalisation (the encoder), three
  transposed convolutions back up with skip connections, each followed by a 3x3 convolution whose
  batch normalisation takes a class-conditional gain and bias (``ccbn``: gain = 1 + E_g[y], bias =
  E_b[y], from embeddings of the label; zero-initialised here, so training starts from plain batch
  normalisation, where the code keeps nn.Embedding's N(0, 1) default), and an output ``(tanh + 1) / 2`` in [0, 1]. The label is the
  one the attack recovered. As in the public code, the transposed convolutions are followed by ReLU
  only (the code computes a conditional normalisation there and discards its result).
- :class:`PatchDiscriminator`: the code's ``Discriminator`` (spectrally normalised convolutions,
  BatchNorm, LeakyReLU 0.2, a sigmoid per patch), scaled down the same way.
- :func:`train_rog`: the public repository ships pretrained weights (ImageNet, 128x128, RGB) but no
  training script, and the book has no access to the paper's training section offline; we train
  the pair as a conditional GAN in the pix2pix way (Isola et al. 2017), the standard recipe for a
  U-Net generator against a sigmoid patch discriminator: binary cross-entropy for the discriminator,
  adversarial cross-entropy plus ``l1_weight`` x L1 to the clean image for the generator, Adam
  (2e-4, betas 0.5/0.999). The training pairs are synthetic: a clean MNIST *training* digit and the
  raw reconstruction an attack with Gaussian error on its 14x14 dummy would return
  (:func:`degrade`, the measurement model of :func:`flprivacy.diffusion.simulate_raw`, with a noise
  level drawn per image). The attacked images are MNIST *test* digits, so held out.
- :func:`rog_postprocess`: applies the trained generator to raw reconstructions.

Weights are stored like the DDPM's: ``safetensors`` plus a JSON record with the command, seed,
data and SHA-256, checked by :func:`load_rog`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import generator as make_generator
from .diffusion import IMAGE_SIZE, N_CLASSES, PAD, upsampler_operator
from .weights import load_weights, save_weights, sha256_file
from .validation import NonFiniteError, as_tensor, check_finite, check_int, check_positive, check_seed

SIDE = IMAGE_SIZE - 2 * PAD
"""Side of the digits the post-processor takes and returns, 28 (padded to 32 inside)."""


def rog_config() -> dict:
    """The scaled-down sizes: ``width`` is the first layer's channels (64 in the public code for
    128x128 RGB; 16 here for 32x32 digits, every layer scaled by the same 1/4), ``disc_width``
    the discriminator's (64 in the code)."""
    return dict(width=16, disc_width=16, n_classes=N_CLASSES, channels=1)


# ---- the networks ---------------------------------------------------------------------------------
class CondBatchNorm(nn.Module):
    """Class-conditional batch normalisation (the code's ``ccbn``, from BigGAN): batch statistics
    without an affine part, then ``x * (1 + E_g[y]) + E_b[y]`` with two label embeddings."""

    def __init__(self, channels: int, n_classes: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(channels, affine=False)
        self.gain = nn.Embedding(n_classes, channels)
        self.bias = nn.Embedding(n_classes, channels)
        nn.init.zeros_(self.gain.weight)
        nn.init.zeros_(self.bias.weight)

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        g = (1 + self.gain(y))[:, :, None, None]
        return self.bn(x) * g + self.bias(y)[:, :, None, None]


class _Conv(nn.Module):
    """Convolution, normalisation (instance norm, or class-conditional batch norm when
    ``n_classes`` is given), ReLU."""

    def __init__(self, cin: int, cout: int, k: int, stride: int, pad: int, n_classes: int | None = None) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, pad)
        self.norm = nn.InstanceNorm2d(cout) if n_classes is None else CondBatchNorm(cout, n_classes)

    def forward(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        x = self.conv(x)
        x = self.norm(x) if y is None or isinstance(self.norm, nn.InstanceNorm2d) else self.norm(x, y)
        return F.relu(x)


class RogGenerator(nn.Module):
    """The conditional U-Net of ROG's public code (``Ccgenerator``), for ``(n, C, 32, 32)`` inputs in [0, 1]."""

    def __init__(self, width: int = 16, n_classes: int = N_CLASSES, channels: int = 1, **_: object) -> None:
        super().__init__()
        w = width
        self.conv1 = _Conv(channels, w, 5, 1, 0)          # after a reflection pad of 2: 32 -> 32
        self.conv2 = _Conv(w, 2 * w, 3, 2, 1)             # 16
        self.conv3 = _Conv(2 * w, 4 * w, 3, 2, 1)         # 8
        self.conv4 = _Conv(4 * w, 8 * w, 3, 2, 1)         # 4
        self.up1 = nn.ConvTranspose2d(8 * w, 8 * w, 4, 2, 1)       # 8
        self.conv5 = _Conv(8 * w, 8 * w, 3, 1, 1, n_classes)
        self.up2 = nn.ConvTranspose2d(12 * w, 12 * w, 4, 2, 1)     # 16 (skip from conv3)
        self.conv6 = _Conv(12 * w, 4 * w, 3, 1, 1, n_classes)
        self.up3 = nn.ConvTranspose2d(6 * w, 6 * w, 4, 2, 1)       # 32 (skip from conv2)
        self.conv7 = _Conv(6 * w, 2 * w, 3, 1, 1, n_classes)
        self.conv8 = nn.Conv2d(3 * w, w, 3, 1, 1)                  # skip from conv1
        self.conv9 = nn.Conv2d(channels + w, channels, 3, 1, 1)    # skip from the input

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        x1 = self.conv1(F.pad(x, (2, 2, 2, 2), mode="reflect"))
        x2 = self.conv2(x1)
        x3 = self.conv3(x2)
        x4 = self.conv4(x3)
        d = self.conv5(F.relu(self.up1(x4)), y)
        d = self.conv6(F.relu(self.up2(torch.cat((d, x3), 1))), y)
        d = self.conv7(F.relu(self.up3(torch.cat((d, x2), 1))), y)
        d = self.conv8(torch.cat((d, x1), 1))
        d = self.conv9(torch.cat((d, x), 1))
        return (torch.tanh(d) + 1) / 2


class PatchDiscriminator(nn.Module):
    """ROG's ``Discriminator``: spectrally normalised 3x3 convolutions (stride 2, 2, 1) with
    BatchNorm and LeakyReLU(0.2), then a one-channel convolution and a sigmoid: the probability
    that each 8x8-grid patch of a 32x32 image is real."""

    def __init__(self, disc_width: int = 16, channels: int = 1, **_: object) -> None:
        super().__init__()
        w, sn = disc_width, nn.utils.spectral_norm
        self.net = nn.Sequential(
            sn(nn.Conv2d(channels, w, 3, 2, 1)), nn.BatchNorm2d(w), nn.LeakyReLU(0.2),
            sn(nn.Conv2d(w, 2 * w, 3, 2, 1)), nn.BatchNorm2d(2 * w), nn.LeakyReLU(0.2),
            sn(nn.Conv2d(2 * w, 4 * w, 3, 1, 1)), nn.BatchNorm2d(4 * w), nn.LeakyReLU(0.2),
            sn(nn.Conv2d(4 * w, 1, 3, 1, 1)), nn.LeakyReLU(0.2))

    def forward(self, x: Tensor) -> Tensor:
        return torch.sigmoid(self.net(x))


# ---- data: the degraded inputs ----------------------------------------------------------------------
def _pad(images: Tensor) -> Tensor:
    return F.pad(images, (PAD,) * 4)


def _check_digits(name: str, images: Tensor, where: str) -> Tensor:
    images = as_tensor(name, images, where=where, ndim=4, min_rows=1, dtype=torch.float32)
    check_finite(name, images, where)
    if images.shape[1:] != (1, SIDE, SIDE):
        raise ValueError(f"{where}: {name} must be (n, 1, 28, 28) digit images in [0, 1], got {tuple(images.shape)}.")
    return images


def _check_labels(labels: Tensor, n: int, where: str) -> Tensor:
    labels = as_tensor("labels", labels, where=where, ndim=1).long()
    if labels.shape[0] != n or (n and (labels.min() < 0 or labels.max() >= N_CLASSES)):
        raise ValueError(f"{where}: labels must be ({n},) integers in 0..{N_CLASSES - 1} (the attack's recovered "
                         f"labels), got shape {tuple(labels.shape)}.")
    return labels


def degrade(truth: Tensor, *, sigma_max: float = 0.6, low: int = 14, seed: int = 0) -> Tensor:
    """Synthetic raw reconstructions for training: each true digit's least-squares ``low x low``
    dummy (z = H x, :func:`flprivacy.diffusion.upsampler_operator`) plus Gaussian noise whose level
    σ ~ U(0, ``sigma_max``) is drawn per image (model scale [-1, 1], as σ_y in DDRM), upsampled
    bicubically to 28x28 as the attack decodes its dummy, and clipped to [0, 1]. ``sigma_max = 0.6``
    covers the σ_y the book estimates on real attack output (0.45-0.55 in the diffusion ablation).
    Returns ``(n, 1, 28, 28)``."""
    truth = _check_digits("truth", truth, "degrade")
    check_positive("sigma_max", sigma_max, "degrade", strict=False)
    check_int("low", low, "degrade", minimum=1)
    if SIDE % low:
        raise ValueError(f"degrade: low must divide 28 (the attack's dummy is 28 / scale factor), got {low}.")
    check_seed("seed", seed, "degrade")
    g = make_generator(seed)
    y = upsampler_operator(low=low).forward(_pad(truth)[:, 0] * 2 - 1)
    sigma = sigma_max * torch.rand(y.shape[0], 1, 1, generator=g)
    y = y + sigma * torch.randn(y.shape, generator=g)
    raw = F.interpolate(y.unsqueeze(1), size=(SIDE, SIDE), mode="bicubic", align_corners=False)
    return ((raw + 1) / 2).clamp(0, 1)


# ---- training -------------------------------------------------------------------------------------
@dataclass
class TrainedRog:
    """A trained generator (eval mode) and its record: mean losses per logged block of steps."""

    generator: RogGenerator
    losses: dict[str, list[float]]
    seconds: float
    settings: dict = field(default_factory=dict)


def train_rog(images: Tensor, labels: Tensor, *, steps: int, batch_size: int = 32, lr: float = 2e-4,
              l1_weight: float = 100.0, sigma_max: float = 0.6, seed: int = 0, config: dict | None = None,
              log_every: int = 50, time_budget: float | None = None,
              progress: Callable[[int, dict], None] | None = None) -> TrainedRog:
    """Train ROG's conditional generator against its patch discriminator (see the module text for
    what follows the public code and what follows pix2pix where both are silent).

    Each step draws a batch of clean digits, degrades each (:func:`degrade`, fresh noise every
    step), then: the discriminator minimises ``BCE(D(x), 1) + BCE(D(G(r, y)), 0)``; the generator
    minimises ``BCE(D(G(r, y)), 1) + l1_weight * mean |G(r, y) - x|``. The discriminator sees the
    clean and the generated digits in one batch (its BatchNorm would otherwise normalise each
    batch's own statistics away, the very difference it must detect; the public code has no
    training script to follow here).

    Args:
        images: ``(n, 1, 28, 28)`` clean training digits in [0, 1] (disjoint from the attacked ones).
        labels: ``(n,)`` their classes 0..9.
        steps: optimiser steps (each one step of D and one of G).
        seed: seeds the initialisation, the batches and the degradations: same seed, same weights
            (on one machine and thread count).
        time_budget: stop after this many seconds (``settings["steps_done"]`` says how many ran;
            rerunning with ``steps`` equal to it repeats them, as no rate depends on the total).
    """
    where = "train_rog"
    images = _check_digits("images", images, where)
    n = images.shape[0]
    labels = _check_labels(labels, n, where)
    check_int("steps", steps, where, minimum=1)
    check_int("batch_size", batch_size, where, minimum=2)
    check_positive("lr", lr, where)
    check_positive("l1_weight", l1_weight, where, strict=False)
    check_positive("sigma_max", sigma_max, where, strict=False)
    check_seed("seed", seed, where)
    cfg = {**rog_config(), **(config or {})}
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        G, Dn = RogGenerator(**cfg), PatchDiscriminator(**cfg)
    opt_g = torch.optim.Adam(G.parameters(), lr=lr, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(Dn.parameters(), lr=lr, betas=(0.5, 0.999))
    g = make_generator(seed)
    bce = nn.BCELoss()
    losses: dict[str, list[float]] = {"d": [], "g_adv": [], "g_l1": []}
    block: dict[str, list[float]] = {k: [] for k in losses}
    G.train()
    Dn.train()
    t0, done = time.perf_counter(), 0
    with torch.random.fork_rng():  # spectral norm's power iteration draws from the global generator once
        torch.manual_seed(seed)
        for step in range(steps):
            idx = torch.randint(0, n, (min(batch_size, n),), generator=g)
            x, c = images[idx], labels[idx]
            r = degrade(x, sigma_max=sigma_max, seed=int(torch.randint(0, 2**62, (1,), generator=g)))
            xp, rp = _pad(x), _pad(r)
            fake = G(rp, c)
            # real and generated digits in one batch: with separate batches the discriminator's
            # BatchNorm would normalise away exactly the statistics that tell them apart
            d_both = Dn(torch.cat((xp, fake.detach())))
            d_real, d_fake = d_both[:xp.shape[0]], d_both[xp.shape[0]:]
            loss_d = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
            opt_d.zero_grad(set_to_none=True)
            loss_d.backward()
            opt_d.step()
            d_gen = Dn(torch.cat((xp, fake)))[xp.shape[0]:]  # the same mixed batch as D saw
            adv, l1 = bce(d_gen, torch.ones_like(d_gen)), (fake - xp).abs().mean()
            loss_g = adv + l1_weight * l1
            if not (torch.isfinite(loss_g) and torch.isfinite(loss_d)):
                raise NonFiniteError(f"train_rog: a loss became non-finite at step {step}; lower lr (now {lr}).")
            opt_g.zero_grad(set_to_none=True)
            loss_g.backward()
            opt_g.step()
            for k, v in (("d", loss_d), ("g_adv", adv), ("g_l1", l1)):
                block[k].append(float(v.detach()))
            done = step + 1
            if len(block["d"]) == log_every:
                for k in losses:
                    losses[k].append(sum(block[k]) / len(block[k]))
                    block[k] = []
                if progress is not None:
                    progress(done, {k: v[-1] for k, v in losses.items()})
            if time_budget is not None and time.perf_counter() - t0 > time_budget:
                break
    if block["d"]:
        for k in losses:
            losses[k].append(sum(block[k]) / len(block[k]))
    G.eval()
    for p in G.parameters():
        p.requires_grad_(False)
    settings = dict(steps=steps, steps_done=done, time_budget=time_budget, batch_size=batch_size, lr=lr,
                    l1_weight=l1_weight, sigma_max=sigma_max, seed=seed, log_every=log_every, n_images=n, config=cfg)
    return TrainedRog(generator=G, losses=losses, seconds=time.perf_counter() - t0, settings=settings)


# ---- use ------------------------------------------------------------------------------------------
def rog_postprocess(generator: RogGenerator, raw: Tensor, labels: Tensor, *, batch: int = 256) -> Tensor:
    """ROG's GAN post-processing of raw reconstructions: the generator applied to each
    ``(1, 28, 28)`` image (clipped to [0, 1], padded to 32x32) with the attack's label for it, in
    eval mode (running batch statistics). Returns ``(n, 1, 28, 28)`` in [0, 1], in the order of
    ``raw``."""
    where = "rog_postprocess"
    if not isinstance(generator, RogGenerator):
        raise TypeError(f"{where}: generator must be a RogGenerator (from load_rog or train_rog), got "
                        f"{type(generator).__name__}.")
    raw = _check_digits("raw", raw, where)
    labels = _check_labels(labels, raw.shape[0], where)
    check_int("batch", batch, where, minimum=1)
    was = generator.training
    generator.eval()
    with torch.no_grad():
        out = torch.cat([generator(_pad(raw[i:i + batch].clamp(0, 1)), labels[i:i + batch])
                         for i in range(0, raw.shape[0], batch)])
    generator.train(was)
    return out[..., PAD:-PAD, PAD:-PAD].contiguous()


# ---- weights: safetensors + a JSON record with the hash ---------------------------------------------
def weights_path() -> Path:
    """``data/weights/rog_mnist32.safetensors`` of the project checkout (committed)."""
    return Path(__file__).resolve().parents[2] / "data" / "weights" / "rog_mnist32.safetensors"


def save_rog(generator: RogGenerator, path: str | Path, record: dict) -> dict:
    """Write the generator's weights to ``path`` (safetensors) and ``record`` plus the file's
    SHA-256 to ``path`` with suffix ``.json`` (:func:`flprivacy.weights.save_weights`); return the
    full record."""
    return save_weights(generator.state_dict(), path, record)


def load_rog(path: str | Path | None = None, sha256: str | None = None) -> tuple[RogGenerator, dict]:
    """Load a generator saved by :func:`save_rog` (:func:`flprivacy.weights.load_weights`:
    ``safetensors`` only, nothing unpickled; the file's SHA-256 must equal the one in its JSON
    record, or ``sha256``), and every tensor must match the architecture. Returns
    ``(generator in eval mode, record)``."""
    state, record = load_weights(weights_path() if path is None else path, where="load_rog", sha256=sha256,
                                 remake="train them with `python -m flbook.experiments.train_rog` (the chapter "
                                        "names the exact command)")
    G = RogGenerator(**{**rog_config(), **record.get("settings", {}).get("config", {})})
    G.load_state_dict(state, strict=True)
    G.eval()
    for p in G.parameters():
        p.requires_grad_(False)
    return G, record
