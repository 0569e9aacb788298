"""FedInverse (Wu et al. 2024): a curious client inverts the *global* model (GMI, with HSIC).

Wu et al. (ICLR 2024, "FedInverse: Evaluating privacy leakage in federated learning") let a
benign-looking FL participant run a model-inversion (MI) attack on the global model θ^T it receives:
it looks for inputs that the model assigns to a target class with high confidence, searching only
among realistic images. Of the three MI attackers they test (GMI, KED-MI, VMI), this module builds
GMI (Zhang et al. 2020, "The secret revealer"), the one their MNIST figure uses (reproduced as
Wilson et al. 2025, Fig. 9, panels "MI" and "MI-HSIC"):

1. **The prior.** A Wasserstein GAN with gradient penalty (Gulrajani et al. 2017) trained on
   *public* images, disjoint from every client's data: generator G: z ∈ R^100 -> image, critic
   D (:class:`MnistGenerator`, :class:`WganCritic`, :func:`train_gan`). As in the authors' MNIST
   setup (their ``GMI/attack_batchhsic_fl.py`` attacks a 5-class target model, their GAN is trained on
   the other digits), the public data here are the digits 5-9 and the private classes 0-4.
2. **The inversion** (:func:`model_inversion_attack`): for the target classes c (one latent per
   class), minimise over z

       L(z) = L_prior + λ L_id + λ_h L_HSIC,   L_prior = -mean D(G(z)),   L_id = CE(f_θ(G(z)), c),

   GMI's objective (Zhang et al. 2020, eq. 3-5: prior loss + λ identity loss) as FedInverse runs it, and
   FedInverse's HSIC regulariser L_HSIC = nHSIC(G(z)_{1..m}, G(z)_{m+1..2m}): the normalised HSIC
   between the first and second halves of the batch of generated images, minimised so that the
   generator's outputs for different classes stay independent ("HSIC as a regularizer to adjust the
   diversity of the MI attack generator", Wu et al.'s abstract). λ_h = 0 is "MI", λ_h > 0 "MI-HSIC".

The text of Wu et al. is not in the book's library; where this docstring states a setting it is
the authors' public code (github.com/Jun-B0518/FedInverse, ``GMI/attack_batchhsic_fl.py``,
``GMI/train_gan.py``, ``BiDO/hsic.py``), followed here, not copied:

- z ∈ R^100 ~ N(0, I), updated by SGD with Nesterov momentum 0.9, step 0.01, clipped to [-1, 1]
  after each step; λ = 100; λ_h = 0.05 with a Gaussian kernel of width σ = 5 (variance 2σ²d);
  several random restarts ("seeds"), each a full run from a fresh z.
- nHSIC(X, Y) = Σ_ij (R_X ∘ R_Yᵀ)_ij with R = K̃ (K̃ + ε m I)^{-1}, K̃ = K H the kernel matrix
  right-multiplied by the centring matrix H = I - 11ᵀ/m, ε = 1e-5 (:func:`normalized_hsic`).
- G and D: GMI's ``GeneratorMNIST`` / ``DGWGAN32`` (a linear layer to 4x4, three stride-2 5x5
  transposed convolutions to 32x32, sigmoid; the critic mirrors it with instance norm), trained
  with Adam(β = (0.5, 0.999)) and a gradient penalty of weight 10, one generator step every
  ``n_critic`` critic steps.

Deviations (CPU scale, named): the networks are ``width`` = 32 channels wide instead of 64, the
GAN trains for a time budget of minutes (``python -m flbook.experiments.train_fedinverse_gan``),
the public images are the MNIST *training* digits 5-9 among the 20,000 the book has offline, padded
28 -> 32 with 2 black pixels (the authors resize to 32x32), and the generated 32x32 images are
cropped back to 28x28 for the attacked LeNet-5.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import generator as make_generator
from ..validation import as_tensor, check_finite, check_int, check_positive, check_seed
from ..weights import load_weights, save_weights

Z_DIM = 100
"""Dimension of the generator's latent z (GMI's ``in_dim``)."""
IMAGE_SIZE = 32
PAD = 2
PUBLIC_CLASSES = (5, 6, 7, 8, 9)
"""The digits the GAN is trained on (public); the attacked federation holds the others."""
PRIVATE_CLASSES = (0, 1, 2, 3, 4)


# ---- the GAN ---------------------------------------------------------------------------------------
class MnistGenerator(nn.Module):
    """GMI's ``GeneratorMNIST``: z (100) -> linear to 4·width x 4 x 4 -> three stride-2 5x5 transposed
    convolutions (BatchNorm + ReLU between) -> 1x32x32 in [0, 1] (sigmoid)."""

    def __init__(self, z_dim: int = Z_DIM, width: int = 32):
        super().__init__()
        check_int("z_dim", z_dim, "MnistGenerator", minimum=1)
        check_int("width", width, "MnistGenerator", minimum=1)
        self.z_dim, self.width = int(z_dim), int(width)

        def up(i: int, o: int) -> nn.Sequential:
            return nn.Sequential(nn.ConvTranspose2d(i, o, 5, 2, padding=2, output_padding=1, bias=False),
                                 nn.BatchNorm2d(o), nn.ReLU())

        self.l1 = nn.Sequential(nn.Linear(z_dim, width * 4 * 4 * 4, bias=False), nn.BatchNorm1d(width * 4 * 4 * 4),
                                nn.ReLU())
        self.l2 = nn.Sequential(up(width * 4, width * 2), up(width * 2, width),
                                nn.ConvTranspose2d(width, 1, 5, 2, padding=2, output_padding=1), nn.Sigmoid())

    def forward(self, z: Tensor) -> Tensor:
        return self.l2(self.l1(z).view(z.shape[0], -1, 4, 4))


class WganCritic(nn.Module):
    """GMI's ``DGWGAN32``: 1x32x32 -> three stride-2 5x5 convolutions (instance norm + LeakyReLU 0.2)
    -> a 4x4 convolution to one score per image."""

    def __init__(self, width: int = 32):
        super().__init__()
        check_int("width", width, "WganCritic", minimum=1)
        self.width = int(width)

        def down(i: int, o: int) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(i, o, 5, 2, 2), nn.InstanceNorm2d(o, affine=True), nn.LeakyReLU(0.2))

        self.net = nn.Sequential(nn.Conv2d(1, width, 5, 2, 2), nn.LeakyReLU(0.2), down(width, width * 2),
                                 down(width * 2, width * 4), nn.Conv2d(width * 4, 1, 4))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x).view(-1)


def pad_images(images: Tensor) -> Tensor:
    """MNIST 28x28 -> 32x32 with 2 background (0) pixels on each side; 32x32 images are returned as is."""
    images = as_tensor("images", images, where="pad_images", floating=True)
    if images.dim() != 4 or images.shape[1] != 1 or images.shape[-1] != images.shape[-2] \
            or images.shape[-1] not in (28, 32):
        raise ValueError(f"pad_images: images has shape {tuple(images.shape)}; expected (n, 1, 28, 28) MNIST digits "
                         "(or (n, 1, 32, 32), returned unchanged).")
    return images if images.shape[-1] == 32 else F.pad(images, (PAD,) * 4)


def crop_images(images: Tensor) -> Tensor:
    """32x32 generator output -> the 28x28 centre the attacked MNIST model reads."""
    return images[..., PAD:IMAGE_SIZE - PAD, PAD:IMAGE_SIZE - PAD]


@dataclass
class TrainedGan:
    """A trained generator and critic, with the critic losses (one per critic step) and settings."""

    generator: MnistGenerator
    critic: WganCritic
    losses: list[float]
    seconds: float
    settings: dict = field(default_factory=dict)


def gradient_penalty(critic: nn.Module, real: Tensor, fake: Tensor, generator: torch.Generator) -> Tensor:
    """WGAN-GP's penalty E[(‖∇_x̂ D(x̂)‖₂ - 1)²] at x̂ = x + α (x̃ - x), α ~ U(0, 1) per image."""
    alpha = torch.rand((real.shape[0], 1, 1, 1), generator=generator)
    x = (real + alpha * (fake - real)).requires_grad_(True)
    (g,) = torch.autograd.grad(critic(x).sum(), x, create_graph=True)
    return ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()


def train_gan(images: Tensor, *, steps: int, batch_size: int = 64, lr: float = 2e-4, n_critic: int = 5,
              gp_weight: float = 10.0, width: int = 32, seed: int = 0, time_budget: float | None = None,
              progress: Callable[[int, float], None] | None = None) -> TrainedGan:
    """Train GMI's WGAN-GP prior on ``images`` ((n, 1, 28, 28) or (n, 1, 32, 32) in [0, 1]).

    ``steps`` critic steps (each on a fresh batch drawn with replacement), a generator step after
    every ``n_critic``-th; stops early after ``time_budget`` seconds (the settings record the steps
    done). Critic loss: -(mean D(x) - mean D(G(z))) + ``gp_weight`` · GP; generator loss -mean D(G(z))
    (the authors' ``GMI/train_gan.py``).
    """
    check_int("steps", steps, "train_gan", minimum=1)
    check_int("batch_size", batch_size, "train_gan", minimum=2)
    check_int("n_critic", n_critic, "train_gan", minimum=1)
    check_positive("lr", lr, "train_gan")
    check_positive("gp_weight", gp_weight, "train_gan", strict=False)
    check_seed("seed", seed, "train_gan")
    if time_budget is not None:
        check_positive("time_budget", time_budget, "train_gan")
    X = pad_images(images).float()
    check_finite("images", X, "train_gan")
    torch.manual_seed(seed)
    g = make_generator(seed)
    G, D = MnistGenerator(width=width), WganCritic(width=width)
    opt_g = torch.optim.Adam(G.parameters(), lr=lr, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=lr, betas=(0.5, 0.999))
    losses: list[float] = []
    t0 = time.perf_counter()
    done = 0
    for step in range(1, steps + 1):
        real = X[torch.randint(0, X.shape[0], (batch_size,), generator=g)]
        with torch.no_grad():
            fake = G(torch.randn(batch_size, G.z_dim, generator=g))
        wd = D(real).mean() - D(fake).mean()
        loss_d = -wd + gp_weight * gradient_penalty(D, real, fake, g)
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
        losses.append(float(loss_d.detach()))
        if step % n_critic == 0:
            for p in D.parameters():
                p.requires_grad_(False)
            loss_g = -D(G(torch.randn(batch_size, G.z_dim, generator=g))).mean()
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
            for p in D.parameters():
                p.requires_grad_(True)
        done = step
        if progress is not None and (step % 100 == 0 or step == steps):
            progress(step, float(torch.tensor(losses[-100:]).mean()))
        if time_budget is not None and time.perf_counter() - t0 > time_budget:
            break
    G.eval()
    D.eval()
    for p in (*G.parameters(), *D.parameters()):
        p.requires_grad_(False)
    settings = dict(steps=steps, steps_done=done, generator_steps=done // n_critic, batch_size=batch_size, lr=lr,
                    n_critic=n_critic, gp_weight=gp_weight, width=width, z_dim=G.z_dim, seed=seed,
                    n_images=int(X.shape[0]), time_budget=time_budget)
    return TrainedGan(G, D, losses, time.perf_counter() - t0, settings)


# ---- weights: safetensors + a JSON record with the hash ---------------------------------------------
def weights_path(variant: str = "") -> Path:
    """``data/weights/fedinverse_gan_mnist.safetensors`` of the project checkout (committed; the
    authors' split, public digits 5-9), or with ``variant="all"`` ``fedinverse_gan_mnist_all.safetensors``
    (a control prior trained on all ten digits of the same public images)."""
    if variant not in ("", "all"):
        raise ValueError(f"weights_path: variant={variant!r}; expected '' (digits 5-9) or 'all' (all ten digits).")
    name = "fedinverse_gan_mnist" + ("_all" if variant else "") + ".safetensors"
    return Path(__file__).resolve().parents[3] / "data" / "weights" / name


def save_gan(gan: TrainedGan, path: str | Path, record: dict) -> dict:
    """Write generator and critic to ``path`` (safetensors, keys ``G.*`` and ``D.*``) and ``record`` with
    the architecture and the file's SHA-256 to ``path`` with suffix ``.json``
    (:func:`flprivacy.weights.save_weights`); return the full record."""
    state = {f"G.{k}": v for k, v in gan.generator.state_dict().items()}
    state |= {f"D.{k}": v for k, v in gan.critic.state_dict().items()}
    return save_weights(state, path, {**record, "architecture": dict(z_dim=gan.generator.z_dim,
                                                                     width=gan.generator.width)})


def load_gan(path: str | Path | None = None, sha256: str | None = None) -> tuple[MnistGenerator, WganCritic, dict]:
    """Load a GAN saved by :func:`save_gan` (:func:`flprivacy.weights.load_weights`: safetensors only,
    nothing unpickled; the file's SHA-256 must equal its record's, or ``sha256``); every tensor must
    fit the architecture.

    Returns ``(generator, critic, record)``, both in eval mode with frozen parameters.
    """
    state, record = load_weights(weights_path() if path is None else path, where="load_gan", sha256=sha256,
                                 remake="train them with `python -m flbook.experiments.train_fedinverse_gan`")
    arch = record.get("architecture", {})
    G = MnistGenerator(z_dim=arch.get("z_dim", Z_DIM), width=arch.get("width", 32))
    D = WganCritic(width=arch.get("width", 32))
    G.load_state_dict({k[2:]: v for k, v in state.items() if k.startswith("G.")}, strict=True)
    D.load_state_dict({k[2:]: v for k, v in state.items() if k.startswith("D.")}, strict=True)
    for m in (G, D):
        m.eval()
        for p in m.parameters():
            p.requires_grad_(False)
    return G, D, record


# ---- FedInverse's HSIC regulariser -------------------------------------------------------------------
def normalized_hsic(x: Tensor, y: Tensor, sigma: float = 5.0, eps: float = 1e-5) -> Tensor:
    """FedInverse's normalised HSIC between paired samples ``x`` and ``y`` ((m, ...) each, m >= 2).

    With Gaussian kernels K_ij = exp(-‖x_i - x_j‖² / (2σ²d)) (d features), K̃ = K H (H = I - 11ᵀ/m),
    R = K̃ (K̃ + ε m I)^{-1}: nHSIC = Σ_ij (R_X)_ij (R_Y)_ji (the authors' ``hsic_normalized_cca``
    in ``BiDO/hsic.py``; Wu et al. minimise it between the two halves of the generated batch).
    Differentiable in ``x`` and ``y``; 0 <= nHSIC <= m - 1 up to the ε ridge (R_X, R_Y are near
    projections onto the (m-1)-dimensional centred space).
    """
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise TypeError(f"normalized_hsic: x and y must be tensors; got {type(x).__name__} and {type(y).__name__}.")
    if x.shape[0] != y.shape[0] or x.shape[0] < 2:
        raise ValueError(f"normalized_hsic: x and y must hold the same number m >= 2 of samples; got {x.shape[0]} and "
                         f"{y.shape[0]}.")
    check_positive("sigma", sigma, "normalized_hsic")
    check_positive("eps", eps, "normalized_hsic")
    m = x.shape[0]
    H = torch.eye(m, dtype=x.dtype, device=x.device) - torch.full((m, m), 1.0 / m, dtype=x.dtype, device=x.device)

    def centred(a: Tensor) -> Tensor:
        a = a.reshape(m, -1)
        K = torch.exp(-torch.cdist(a, a).pow(2) / (2 * sigma ** 2 * a.shape[1]))
        Kc = K @ H
        return Kc @ torch.linalg.inv(Kc + eps * m * torch.eye(m, dtype=a.dtype))

    return (centred(x) * centred(y).T).sum()


# ---- the inversion -----------------------------------------------------------------------------------
@dataclass
class InversionResult:
    """Model-inversion output: ``images`` (restarts·c, 1, 28, 28) in [0, 1], restart-major (row
    r·c + j is restart r's image of ``labels[j]``); ``labels`` the target class of each row;
    ``predicted`` / ``confidence`` the attacked model's argmax and softmax probability of the target;
    ``loss`` the total loss per iteration (summed over restarts' batches: restart-major list)."""

    images: Tensor
    labels: Tensor
    predicted: Tensor
    confidence: Tensor
    z: Tensor
    loss: list[float]
    seconds: float
    settings: dict = field(default_factory=dict)

    @property
    def attack_accuracy(self) -> float:
        """Share of inverted images the attacked model assigns to their target class."""
        return float((self.predicted == self.labels).float().mean())


def model_inversion_attack(model, theta: Tensor, generator: nn.Module, critic: nn.Module, classes: Sequence[int], *,
                           iterations: int = 1500, lr: float = 0.01, momentum: float = 0.9, identity_weight: float = 100.0,
                           hsic_weight: float = 0.0, sigma: float = 5.0, clip: float = 1.0, restarts: int = 1,
                           seed: int = 0, device: torch.device | str | None = None) -> InversionResult:
    """FedInverse's GMI attack on the global model θ (``hsic_weight`` = 0: "MI"; 0.05: "MI-HSIC").

    For each restart, draw z ~ N(0, I) (one row per class in ``classes``) and take ``iterations``
    Nesterov-momentum steps on L(z) = -mean D(G(z)) + λ CE(f_θ(crop(G(z))), c) + λ_h nHSIC(first half,
    second half of G(z)), clipping z to [-``clip``, ``clip``] after each step (the settings of the
    authors' ``GMI/attack_batchhsic_fl.py``; see the module docstring). The HSIC term needs at least
    two classes.

    Args:
        model: the attacked :class:`~flprivacy.models.FLModel` (28x28 MNIST input), evaluated at ``theta``.
        theta: the global model's flat parameters (what every client receives).
        generator, critic: the public-data GAN (:func:`load_gan`).
        classes: the target classes, each an output index of ``model``.
        seed: the restarts draw their z from seeds derived from it (restart r: ``seed`` + r).
        device: where the attack runs (default: ``theta``'s device); the generator and critic
            must be there too. Each z is drawn on the CPU and moved, so a device starts from
            the same latent codes.
    """
    from ..models import FLModel

    if not isinstance(model, FLModel):
        raise TypeError(f"model_inversion_attack: model must be a flprivacy FLModel; got {type(model).__name__}.")
    theta = as_tensor("theta", theta, where="model_inversion_attack", ndim=1, floating=True)
    if theta.numel() != model.dim:
        raise ValueError(f"model_inversion_attack: theta has {theta.numel()} entries but the model has "
                         f"{model.dim} parameters; pass the global model's flat parameters.")
    check_finite("theta", theta, "model_inversion_attack")
    for name, net in (("generator", generator), ("critic", critic)):
        if not isinstance(net, nn.Module):
            raise TypeError(f"model_inversion_attack: {name} must be a torch module (from load_gan); got "
                            f"{type(net).__name__}.")
    cls = [check_int("classes", c, "model_inversion_attack", minimum=0) for c in classes]
    if not cls:
        raise ValueError("model_inversion_attack: classes is empty; name at least one target class.")
    check_int("iterations", iterations, "model_inversion_attack", minimum=1)
    check_int("restarts", restarts, "model_inversion_attack", minimum=1)
    check_positive("lr", lr, "model_inversion_attack")
    check_positive("momentum", momentum, "model_inversion_attack", strict=False, maximum=1.0)
    check_positive("identity_weight", identity_weight, "model_inversion_attack", strict=False)
    check_positive("hsic_weight", hsic_weight, "model_inversion_attack", strict=False)
    check_positive("sigma", sigma, "model_inversion_attack")
    check_positive("clip", clip, "model_inversion_attack")
    check_seed("seed", seed, "model_inversion_attack")
    if hsic_weight > 0 and len(cls) < 4:
        raise ValueError(f"model_inversion_attack: hsic_weight > 0 compares two halves of the batch of {len(cls)} "
                         "classes; give at least 4 classes (2 per half) or hsic_weight=0.")
    z_dim = getattr(generator, "z_dim", Z_DIM)
    dev = theta.device if device is None else torch.device(device)
    for name, net in (("generator", generator), ("critic", critic)):
        p0 = next(net.parameters(), None)
        if p0 is not None and p0.device.type != dev.type:
            raise ValueError(f"model_inversion_attack: the {name} is on {p0.device} but the attack runs on {dev}; "
                             f"move it there ({name}.to({str(dev)!r})).")
    labels = torch.tensor(cls, dtype=torch.long, device=dev)
    theta = theta.detach().to(model.dtype).to(dev)
    with torch.no_grad():
        n_out = model.forward(theta, torch.zeros(1, 1, 28, 28, dtype=model.dtype, device=dev)).shape[1]
    if max(cls) >= n_out:
        raise ValueError(f"model_inversion_attack: class {max(cls)} is not an output of the model ({n_out} classes).")
    c, half = len(cls), len(cls) // 2
    images, zs, losses = [], [], []
    t0 = time.perf_counter()
    for r in range(restarts):
        z = torch.randn(c, z_dim, generator=make_generator(seed + r)).to(dev)
        v = torch.zeros_like(z)
        for _ in range(iterations):
            z.requires_grad_(True)
            fake = generator(z)
            prior = -critic(fake).mean()
            identity = F.cross_entropy(model.forward(theta, crop_images(fake).to(model.dtype)), labels)
            loss = prior + identity_weight * identity
            if hsic_weight > 0:
                loss = loss + hsic_weight * normalized_hsic(fake[:half], fake[half:2 * half], sigma=sigma)
            (grad,) = torch.autograd.grad(loss, z)
            losses.append(float(loss.detach()))
            with torch.no_grad():  # Nesterov momentum, as the authors' code writes it
                v_prev = v
                v = momentum * v - lr * grad
                z = (z + (-momentum * v_prev + (1 + momentum) * v)).clamp(-clip, clip)
        with torch.no_grad():
            images.append(crop_images(generator(z)))
            zs.append(z.detach())
    X = torch.cat(images).float()
    with torch.no_grad():
        p = torch.softmax(model.forward(theta, X.to(model.dtype)), dim=1)
    all_labels = labels.repeat(restarts)
    check_finite("images", X, "model_inversion_attack", "the inversion diverged; lower lr")
    settings = dict(iterations=iterations, lr=lr, momentum=momentum, identity_weight=identity_weight,
                    hsic_weight=hsic_weight, sigma=sigma, clip=clip, restarts=restarts, seed=seed, classes=cls)
    return InversionResult(X, all_labels, p.argmax(1), p[torch.arange(X.shape[0], device=dev), all_labels].float(),
                           torch.cat(zs), losses, time.perf_counter() - t0, settings)


# ---- scoring a class representative ------------------------------------------------------------------
def nearest_same_class(images: Tensor, labels: Tensor, truth: Tensor, truth_labels: Tensor) -> Tensor:
    """For each inverted image, the index of the ground-truth image *of its label* with the highest SSIM.

    Model inversion recovers a representative of a class, not one client's image, so it is scored
    against the closest real image of the class it targets (the most favourable pairing for the
    attack; Wu et al. score by attack accuracy and FID instead). Several images may pick the same
    ground truth. Raises if a label has no ground-truth image.
    """
    from ..metrics import ssim

    images = as_tensor("images", images, where="nearest_same_class", ndim=4, floating=True)
    truth = as_tensor("truth", truth, where="nearest_same_class", ndim=4, floating=True)
    labels = as_tensor("labels", labels, where="nearest_same_class", ndim=1)
    truth_labels = as_tensor("truth_labels", truth_labels, where="nearest_same_class", ndim=1)
    if labels.shape[0] != images.shape[0] or truth_labels.shape[0] != truth.shape[0]:
        raise ValueError(f"nearest_same_class: one label per image needed; got {images.shape[0]} images with "
                         f"{labels.shape[0]} labels and {truth.shape[0]} ground-truth images with "
                         f"{truth_labels.shape[0]} labels.")
    if images.shape[1:] != truth.shape[1:]:
        raise ValueError(f"nearest_same_class: images {tuple(images.shape)} and truth {tuple(truth.shape)} must have "
                         "the same image shape.")
    index = torch.empty(images.shape[0], dtype=torch.long)
    for i in range(images.shape[0]):
        cand = torch.nonzero(truth_labels == labels[i]).flatten()
        if cand.numel() == 0:
            raise ValueError(f"nearest_same_class: no ground-truth image of class {int(labels[i])}; give truth that "
                             "holds every targeted class.")
        s = ssim(images[i:i + 1].expand(cand.numel(), -1, -1, -1).clamp(0, 1), truth[cand].clamp(0, 1))
        index[i] = cand[int(s.argmax())]
    return index
