"""Image data sets: MNIST, CIFAR-10 and scikit-learn's 8x8 digits.

Every loader returns ``(images, labels)``: float images in [0, 1] of shape ``(n, C, H, W)``
and integer labels of shape ``(n,)``.
"""

from __future__ import annotations

import gzip
import pickle
import tarfile
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from .files import REGISTRY, DataNotFoundError, data_dir, fetch

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


class DataSourceWarning(UserWarning):
    """A loader used a documented substitute source (e.g. a lossy copy of a data set)."""


def _check_n(n: int | None, where: str) -> None:
    """``n`` (number of images) must be None or a positive integer: a negative slice bound
    would silently drop images from the end instead."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
        raise ValueError(f"{where}: n must be a positive number of images or None (all); got {n!r}.")


def _read_idx(path: Path) -> np.ndarray:
    """Read an MNIST idx file (gzip-compressed): magic 2049 (labels) or 2051 (images)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    if magic not in (2049, 2051):
        raise ValueError(f"{path} is not an MNIST idx file (magic number {magic}).")
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_mnist(split: str = "test", n: int | None = None) -> tuple[Tensor, Tensor]:
    """MNIST (LeCun et al. 1998): ``split="test"`` (10,000 images) or ``"train"`` (60,000).

    Returns the first ``n`` images (all when None) as ``(n, 1, 28, 28)`` floats in [0, 1].
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}.")
    _check_n(n, "load_mnist")
    prefix = "t10k" if split == "test" else "train"
    images = _read_idx(fetch(f"mnist/{prefix}-images-idx3-ubyte.gz"))[:n]
    labels = _read_idx(fetch(f"mnist/{prefix}-labels-idx1-ubyte.gz"))[:n]
    return torch.from_numpy(images.copy()).float().div_(255).unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


def _cifar_from_archive(archive: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    names = ["test_batch"] if split == "test" else [f"data_batch_{i}" for i in range(1, 6)]
    xs, ys = [], []
    with tarfile.open(archive, "r:gz") as tar:
        for name in names:
            f = tar.extractfile(f"cifar-10-batches-py/{name}")
            batch = pickle.load(f, encoding="latin1")
            xs.append(np.asarray(batch["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(batch["labels"], dtype=np.int64))
    return np.concatenate(xs), np.concatenate(ys)


def load_cifar10(split: str = "test", n: int | None = None) -> tuple[Tensor, Tensor]:
    """CIFAR-10 (Krizhevsky 2009) as ``(n, 3, 32, 32)`` floats in [0, 1].

    Source, in order: the original archive ``cifar10/cifar-10-python.tar.gz`` (lossless, both
    splits); for the test split, the JPEG-decoded copy ``cifar10/cifar10_test_decoded_from_jpg.npz``
    (lossy, class-major order; announced with a :class:`DataSourceWarning`); else the original
    archive is downloaded (163 MB).
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}.")
    _check_n(n, "load_cifar10")
    root = data_dir()
    archive = REGISTRY["cifar10/cifar-10-python.tar.gz"]
    jpg = REGISTRY["cifar10/cifar10_test_decoded_from_jpg.npz"]
    if split == "test" and not (root / archive.path).is_file() and (root / jpg.path).is_file():
        warnings.warn(
            "CIFAR-10: using the JPEG-decoded test set (quality 75, mean absolute pixel error ~6/255 against the "
            "lossless originals, images in class-major order) because the original archive "
            f"{archive.path} is not in {root}.", DataSourceWarning, stacklevel=2)
        with np.load(fetch(jpg)) as z:
            x = z["x"].transpose(0, 3, 1, 2)
            y = z["y"].astype(np.int64)
    else:
        try:
            x, y = _cifar_from_archive(fetch(archive), split)
        except DataNotFoundError as e:
            alt = f" For the test split, {jpg.path} (see data/README.md) also works." if split == "test" else ""
            raise DataNotFoundError(str(e) + alt) from None
    x, y = x[:n], y[:n]
    return torch.from_numpy(np.ascontiguousarray(x)).float().div_(255), torch.from_numpy(y)


def load_digits(n: int | None = None) -> tuple[Tensor, Tensor]:
    """scikit-learn's 1,797 handwritten digits, 8x8, as ``(n, 1, 8, 8)`` floats in [0, 1]
    (shipped with scikit-learn; no download)."""
    from sklearn.datasets import load_digits as _sk_digits

    _check_n(n, "load_digits")

    d = _sk_digits()
    x = torch.tensor(d.images[:n], dtype=torch.float32).div_(16).unsqueeze(1)
    return x, torch.tensor(d.target[:n], dtype=torch.int64)
