"""Image reconstruction quality: MSE, PSNR, SSIM, and matching reconstructions to ground truth.

A gradient-inversion attack returns its images in an arbitrary order (the loss it minimises is
invariant to permuting the dummy batch), so before scoring we pair every ground-truth image with
one reconstruction by a minimum-cost assignment (the Hungarian algorithm,
:func:`scipy.optimize.linear_sum_assignment`). PSNR and SSIM (Wang et al. 2004) come from
scikit-image, not from hand-written code.

LPIPS (Zhang et al. 2018), the primary metric of Wilson et al. 2025, is :func:`flprivacy.lpips.lpips`
(AlexNet, v0.1 heads, from weights shipped in ``data/weights`` and verified against the metric's
authors' example images). The book's tables report SSIM and PSNR beside it.

All functions take images as tensors ``(n, C, H, W)`` with values in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy.ndimage import uniform_filter
from scipy.optimize import linear_sum_assignment
from skimage.metrics import peak_signal_noise_ratio
from torch import Tensor

from .validation import as_tensor, check_finite, check_positive

__all__ = ["Quality", "match_images", "mse", "psnr", "quality", "ssim"]


def _images(name: str, x: Tensor) -> Tensor:
    """Images as a finite floating tensor (NumPy converted)."""
    x = as_tensor(name, x, where="metrics", floating=True)
    check_finite(name, x, "metrics")
    return x


def _check_pair(x: Tensor, y: Tensor) -> None:
    if x.ndim != 4 or y.ndim != 4:
        raise ValueError(f"x and y must be 4-d image tensors (n, C, H, W); got shapes {tuple(x.shape)} and {tuple(y.shape)}.")
    if x.shape != y.shape or x.shape[0] == 0:
        raise ValueError(
            f"x and y must be non-empty image batches of the same shape to be compared pairwise, got {tuple(x.shape)} and "
            f"{tuple(y.shape)}; pair them first with match_images()."
        )


def mse(x: Tensor, y: Tensor) -> Tensor:
    """Mean squared error per image pair, shape ``(n,)``."""
    x, y = _images("x", x), _images("y", y)
    _check_pair(x, y)
    return ((x.detach().double() - y.detach().double()) ** 2).flatten(1).mean(1)


def psnr(x: Tensor, y: Tensor, data_range: float = 1.0) -> Tensor:
    """Peak signal-to-noise ratio 10 log10(R^2 / MSE) in dB per image pair (scikit-image),
    shape ``(n,)``; ``inf`` for identical images."""
    x, y = _images("x", x), _images("y", y)
    check_positive("data_range", data_range, "psnr")
    _check_pair(x, y)
    a, b = x.detach().double().cpu().numpy(), y.detach().double().cpu().numpy()
    with np.errstate(divide="ignore"):
        vals = [peak_signal_noise_ratio(bi, ai, data_range=data_range) for ai, bi in zip(a, b)]
    return torch.tensor(vals, dtype=torch.float64)


def _ssim_window(h: int, w: int) -> int:
    """scikit-image's default 7x7 window, shrunk to the largest odd size that fits tiny images."""
    side = min(7, h, w)
    return side if side % 2 == 1 else side - 1


def ssim(x: Tensor, y: Tensor, data_range: float = 1.0) -> Tensor:
    """Structural similarity (Wang et al. 2004) per image pair, shape ``(n,)``.

    scikit-image's ``structural_similarity`` with its default uniform 7x7 window (smaller for
    images under 7 pixels), averaged over colour channels; 1 means identical.
    """
    x, y = _images("x", x), _images("y", y)
    check_positive("data_range", data_range, "ssim")
    _check_pair(x, y)
    a, b = x.detach().double().cpu().numpy(), y.detach().double().cpu().numpy()
    win = _ssim_window(a.shape[2], a.shape[3])
    if win < 3:
        raise ValueError(f"SSIM needs images of at least 3x3 pixels, got {a.shape[2]}x{a.shape[3]}.")
    return torch.from_numpy(_ssim_batch(b, a, data_range, win))


def _ssim_batch(im1: np.ndarray, im2: np.ndarray, data_range: float, win: int) -> np.ndarray:
    """scikit-image's ``structural_similarity(im1[i], im2[i], data_range=data_range,
    channel_axis=0, win_size=win)`` for every pair ``i`` of the float64 arrays ``(n, C, H, W)``,
    the same operations in the same order (its uniform filter, sample covariance, crop and mean,
    channel by channel), with the filters run on all images at once."""
    n, c = im1.shape[:2]
    a, b = im1.reshape(n * c, *im1.shape[2:]), im2.reshape(n * c, *im2.shape[2:])
    size = (1, win, win)  # no filtering across images

    def filt(v: np.ndarray) -> np.ndarray:
        return uniform_filter(v, size=size)

    cov_norm = win**2 / (win**2 - 1)
    ux, uy = filt(a), filt(b)
    uxx, uyy, uxy = filt(a * a), filt(b * b), filt(a * b)
    vx = cov_norm * (uxx - ux * ux)
    vy = cov_norm * (uyy - uy * uy)
    vxy = cov_norm * (uxy - ux * uy)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    a1, a2, b1, b2 = 2 * ux * uy + c1, 2 * vxy + c2, ux**2 + uy**2 + c1, vx + vy + c2
    S = (a1 * a2) / (b1 * b2)
    pad = (win - 1) // 2
    per_channel = np.array([s[pad:s.shape[0] - pad, pad:s.shape[1] - pad].mean(dtype=np.float64) for s in S])
    return np.array([v.mean() for v in per_channel.reshape(n, c)])


def match_images(reconstructions: Tensor, truth: Tensor) -> Tensor:
    """Pair each ground-truth image with a distinct reconstruction, minimising the total MSE.

    Solves the linear assignment problem on the pairwise MSE matrix (Hungarian algorithm,
    :func:`scipy.optimize.linear_sum_assignment`). There may be more reconstructions than
    ground-truth images (e.g. an attacker who overestimates N), not fewer.

    Returns:
        ``index`` of shape ``(len(truth),)`` such that ``reconstructions[index[i]]`` is paired
        with ``truth[i]``.
    """
    reconstructions, truth = _images("reconstructions", reconstructions), _images("truth", truth)
    if truth.shape[0] == 0:
        raise ValueError("match_images: truth is empty; give at least one ground-truth image.")
    if reconstructions.ndim != 4 or truth.ndim != 4 or reconstructions.shape[1:] != truth.shape[1:]:
        raise ValueError(
            "match_images: reconstructions and truth must be image batches (n, C, H, W) of the same image shape; got "
            f"{tuple(reconstructions.shape)} and {tuple(truth.shape)}."
        )
    if reconstructions.shape[0] < truth.shape[0]:
        raise ValueError(
            f"cannot pair {truth.shape[0]} ground-truth images with only {reconstructions.shape[0]} "
            "reconstructions; each needs its own."
        )
    r = reconstructions.detach().double().flatten(1)
    t = truth.detach().double().flatten(1)
    cost = torch.cdist(t, r) ** 2 / t.shape[1]  # (n_truth, n_recon) pairwise MSE
    rows, cols = linear_sum_assignment(cost.cpu().numpy())
    index = torch.empty(truth.shape[0], dtype=torch.long)
    index[torch.as_tensor(rows)] = torch.as_tensor(cols, dtype=torch.long)
    return index


@dataclass
class Quality:
    """Per-image quality of matched reconstructions.

    Attributes:
        index: ``reconstructions[index[i]]`` was paired with ``truth[i]``.
        mse, psnr, ssim: per ground-truth image, shape ``(n,)``.
    """

    index: Tensor
    mse: Tensor
    psnr: Tensor
    ssim: Tensor

    def summary(self) -> dict[str, float]:
        """Means over images: ``{"mse", "psnr", "ssim"}`` (PSNR averaged over finite values)."""
        finite = self.psnr[torch.isfinite(self.psnr)]
        return {"mse": float(self.mse.mean()), "psnr": float(finite.mean()) if finite.numel() else float("inf"),
                "ssim": float(self.ssim.mean())}

    def frame(self) -> pd.DataFrame:
        """One row per ground-truth image."""
        def host(v: Tensor):  # noqa: ANN202 - a NumPy array, from any device
            return v.detach().cpu().numpy()

        return pd.DataFrame({"matched_reconstruction": host(self.index), "mse": host(self.mse),
                             "psnr": host(self.psnr), "ssim": host(self.ssim)})


def quality(reconstructions: Tensor, truth: Tensor, match: bool = True, data_range: float = 1.0) -> Quality:
    """MSE, PSNR and SSIM of ``reconstructions`` against ``truth``, both clipped to
    [0, ``data_range``] the same way (so identical images always score SSIM 1).

    With ``match`` (default) reconstructions are first paired with ground-truth images by
    :func:`match_images`; otherwise they are compared in the given order.

    Warns (:class:`UserWarning`) when ``truth`` lies outside [0, ``data_range``] (e.g. 0..255
    images with the default ``data_range=1``: pass ``data_range=255``).
    """
    reconstructions, truth = _images("reconstructions", reconstructions), _images("truth", truth)
    check_positive("data_range", data_range, "quality")
    if truth.numel() == 0:
        raise ValueError("quality: truth is empty; give at least one ground-truth image.")
    lo, hi = float(truth.min()), float(truth.max())
    if lo < -1e-6 * data_range or hi > data_range * (1 + 1e-6):
        import warnings

        warnings.warn(f"quality: truth has values in [{lo:.4g}, {hi:.4g}], outside [0, data_range={data_range}]; both "
                      f"batches are clipped to that range. For 0..255 images pass data_range=255.", UserWarning,
                      stacklevel=2)
    truth = truth.detach().clamp(0, data_range)
    rec = reconstructions.detach().clamp(0, data_range)
    if match:
        index = match_images(rec, truth)
    else:
        if rec.shape[0] != truth.shape[0]:
            raise ValueError(f"match=False needs as many reconstructions as images, got {rec.shape[0]} and "
                             f"{truth.shape[0]}.")
        index = torch.arange(truth.shape[0])
    paired = rec[index]
    return Quality(index=index, mse=mse(paired, truth), psnr=psnr(paired, truth, data_range),
                   ssim=ssim(paired, truth, data_range))
