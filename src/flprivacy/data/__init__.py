"""Data: where files live, loaders, synthetic generators and client splits.

``load(name)`` is the single entry point by name; each loader is also importable.
Files are read from ``$FLPRIVACY_DATA_DIR`` (default ``data/cache``); see :mod:`.files`.
"""

from __future__ import annotations

from collections.abc import Callable

from .files import REGISTRY, ChecksumError, DataNotFoundError, RemoteFile, data_dir, fetch
from .images import CIFAR10_CLASSES, DataSourceWarning, load_cifar10, load_digits, load_mnist
from .splits import make_clients, split_iid, train_val_split
from .synthetic import SyntheticFederation, leaf_synthetic, toy_least_squares
from .tabular import TabularData, encode, load_acs_income, load_adult, load_medical

LOADERS: dict[str, Callable] = {
    "medical": load_medical,
    "adult": load_adult,
    "acs_income": load_acs_income,
    "mnist": load_mnist,
    "cifar10": load_cifar10,
    "digits": load_digits,
}


def load(name: str, **kwargs):
    """Load a data set by name (one of ``LOADERS``), passing ``kwargs`` to its loader."""
    if name not in LOADERS:
        raise ValueError(f"name: unknown data set {name!r}; known data sets: {', '.join(LOADERS)}.")
    return LOADERS[name](**kwargs)


__all__ = [
    "CIFAR10_CLASSES", "ChecksumError", "DataNotFoundError", "DataSourceWarning", "LOADERS", "REGISTRY",
    "RemoteFile", "SyntheticFederation", "TabularData", "data_dir", "encode", "fetch", "leaf_synthetic", "load",
    "load_acs_income", "load_adult", "load_cifar10", "load_digits", "load_medical", "load_mnist", "make_clients",
    "split_iid", "toy_least_squares", "train_val_split",
]
