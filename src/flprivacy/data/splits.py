"""Splitting a data set among clients, and each client's train/validation split."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ..config import generator
from ..federation import ClientData
from ..validation import as_tensor, check_finite, check_int, check_seed


def train_val_split(X: Tensor, y: Tensor, val_fraction: float = 0.1, seed: int = 0) -> ClientData:
    """A client's data with ``val_fraction`` of its rows held out for validation (90/10 in
    Diana et al. 2025, §5.1). At least one row stays in training."""
    X = as_tensor("X", X, where="train_val_split", min_rows=1)
    y = as_tensor("y", y, where="train_val_split")
    if y.ndim == 0 or y.shape[0] != X.shape[0]:
        raise ValueError(f"train_val_split: X has {X.shape[0]} rows but y has shape {tuple(y.shape)}; give one target per row.")
    check_finite("X", X, "train_val_split")
    check_finite("y", y, "train_val_split")
    check_seed("seed", seed, "train_val_split")
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}.")
    n = X.shape[0]
    n_val = min(int(round(val_fraction * n)), n - 1)
    perm = torch.randperm(n, generator=generator(seed))
    tr, va = perm[n_val:], perm[:n_val]
    if n_val == 0:
        return ClientData(X[tr], y[tr])
    return ClientData(X[tr], y[tr], X[va], y[va])


def split_iid(n: int, n_clients: int, seed: int = 0, sizes: Sequence[int] | None = None) -> list[Tensor]:
    """Row indices of an i.i.d. split of ``n`` rows among ``n_clients``: a random permutation
    cut into equal parts (sizes differ by at most one), or into ``sizes`` if given."""
    check_int("n", n, "split_iid", minimum=1)
    check_int("n_clients", n_clients, "split_iid", minimum=1)
    check_seed("seed", seed, "split_iid")
    if n_clients < 1 or n_clients > n:
        raise ValueError(f"cannot split {n} rows among {n_clients} clients; need 1 <= n_clients <= n.")
    perm = torch.randperm(n, generator=generator(seed))
    if sizes is None:
        return list(perm.tensor_split(n_clients))
    if len(sizes) != n_clients or sum(sizes) > n or min(sizes) < 1:
        raise ValueError(f"sizes must be {n_clients} positive numbers summing to at most {n}, got {list(sizes)}.")
    return list(perm[: sum(sizes)].split(list(sizes)))


def make_clients(X: Tensor, y: Tensor, n_clients: int, *, val_fraction: float = 0.1, seed: int = 0,
                 sizes: Sequence[int] | None = None) -> list[ClientData]:
    """Split ``(X, y)`` i.i.d. among ``n_clients``, each keeping ``val_fraction`` for validation."""
    X = as_tensor("X", X, where="make_clients", min_rows=1)
    y = as_tensor("y", y, where="make_clients")
    check_seed("seed", seed, "make_clients")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}.")
    parts = split_iid(X.shape[0], n_clients, seed, sizes)
    return [train_val_split(X[idx], y[idx], val_fraction, seed=seed + 1 + c) for c, idx in enumerate(parts)]


XU_ADULT_EDUCATION = ("Bachelors", "Masters", "Prof-school", "Doctorate")
"""Education levels "at least bachelor" kept by Xu & Neglia 2021 (§4, Adult)."""


def xu_adult_split(df, n_clients: int = 10, age_cuts: tuple[int, int] = (38, 52), seed: int = 0) -> list[Tensor]:
    """The non-i.i.d. Adult split of Xu & Neglia 2021 (§4): keep the rows whose education is at
    least a bachelor's degree; give the PhDs (``education == "Doctorate"``) to the first three
    clients by age (< 38, 38-52, > 52) and spread every other row uniformly at random over the
    remaining ``n_clients - 3`` clients.

    Args:
        df: the Adult table (e.g. :func:`flprivacy.data.tabular.load_adult` with ``split="all"``), with
            columns ``education`` and ``age``.
        n_clients: total number of clients (10 in the paper); at least 4.
        age_cuts: (a, b): client 0 gets PhDs younger than a, client 1 those aged a..b, client 2
            those older than b.
        seed: the shuffle of the non-PhD rows.

    Returns:
        One tensor of row positions (``df.iloc`` indices) per client.
    """
    check_seed("seed", seed, "xu_adult_split")
    import numpy as np

    if n_clients < 4:
        raise ValueError(f"n_clients: the split needs at least 4 clients (3 PhD clients + others), got {n_clients}.")
    missing = {"education", "age"} - set(df.columns)
    if missing:
        raise ValueError(f"df lacks the column(s) {sorted(missing)}; pass the raw Adult table (flprivacy.data.load_adult).")
    edu = df["education"].astype(str).str.strip().to_numpy()
    age = df["age"].to_numpy()
    kept = np.isin(edu, XU_ADULT_EDUCATION)
    phd = kept & (edu == "Doctorate")
    lo, hi = age_cuts
    groups = [np.flatnonzero(phd & (age < lo)), np.flatnonzero(phd & (age >= lo) & (age <= hi)),
              np.flatnonzero(phd & (age > hi))]
    rest = np.flatnonzero(kept & ~phd)
    perm = torch.randperm(len(rest), generator=generator(seed)).numpy()
    groups += [rest[part] for part in np.array_split(perm, n_clients - 3)]
    return [torch.as_tensor(np.sort(g), dtype=torch.long) for g in groups]
