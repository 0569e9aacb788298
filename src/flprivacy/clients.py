"""A client of federated learning: her local dataset and her local update.

Implements the client side of FedAvg, Algorithm 2 of Diana et al. 2025 (§2.1, after McMahan
et al. 2017; also Xu & Neglia 2021, Algo. 2): :class:`ClientData` holds a client's dataset
D_c, and :func:`local_sgd` (with its hyper-parameters in :class:`LocalSGD`) runs E epochs of
mini-batch SGD on the model she receives, the mini-batches drawn by :func:`batch_schedule`.
The server loop that samples clients, sends them the global model and aggregates their
replies (Algorithm 1) is :func:`flprivacy.federation.run_fedavg`; the same local update for
many clients at once is :func:`flprivacy.batched.local_sgd_many`. Every name here is also
importable from :mod:`flprivacy.federation`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from .models import FLModel, design
from .validation import NonFiniteError, as_tensor, check_finite, check_int, check_positive


# ---- client data ----------------------------------------------------------------------------
@dataclass
class ClientData:
    """One client's local dataset D_c: training rows ``(X, y)`` and optional validation rows.

    ``X`` has one row per sample (tabular ``(S_c, n_features)`` or images ``(S_c, C, H, W)``);
    ``y`` has ``S_c`` entries.
    """

    X: Tensor
    y: Tensor
    X_val: Tensor | None = None
    y_val: Tensor | None = None

    def __post_init__(self) -> None:
        self.X = as_tensor("X", self.X, where="ClientData")
        self.y = as_tensor("y", self.y, where="ClientData")
        if self.X_val is not None:
            self.X_val = as_tensor("X_val", self.X_val, where="ClientData")
        if self.y_val is not None:
            self.y_val = as_tensor("y_val", self.y_val, where="ClientData")
        if self.X.ndim == 0 or self.y.ndim == 0:
            raise ValueError(f"ClientData: X and y need one row per sample; got X {tuple(self.X.shape)}, "
                             f"y {tuple(self.y.shape)}.")
        for name, X, y in (("", self.X, self.y), ("_val", self.X_val, self.y_val)):
            if (X is None) != (y is None):
                raise ValueError(f"ClientData: give both X{name} and y{name}, or neither.")
            if X is not None and X.shape[0] != y.shape[0]:
                raise ValueError(
                    f"ClientData: X{name} has {X.shape[0]} rows but y{name} has {y.shape[0]}; "
                    "they must describe the same samples."
                )
        if self.X.shape[0] == 0:
            raise ValueError("ClientData: a client needs at least one training sample (X is empty).")
        for name, v in (("X", self.X), ("y", self.y), ("X_val", self.X_val), ("y_val", self.y_val)):
            if v is not None:
                check_finite(name, v, "ClientData")

    @property
    def n(self) -> int:
        """Number of training samples S_c."""
        return int(self.X.shape[0])


# ---- Algorithm 2: the local update ------------------------------------------------------------
def n_local_steps(n_samples: int, *, epochs: int = 1, batch_size: int | None = None, steps: int | None = None) -> int:
    """K = E⌈S_c/B⌉ local SGD steps (B = S_c when ``batch_size`` is None or larger), or ``steps``."""
    check_int("n_samples", n_samples, "n_local_steps", minimum=1)
    check_int("epochs", epochs, "n_local_steps", minimum=0)
    check_int("batch_size", batch_size, "n_local_steps", minimum=1, allow_none=True)
    if steps is not None:
        return check_int("steps", steps, "n_local_steps", minimum=0)
    B = n_samples if batch_size is None else min(int(batch_size), n_samples)
    return epochs * math.ceil(n_samples / B)


def batch_schedule(n_samples: int, *, epochs: int = 1, batch_size: int | None = None, steps: int | None = None,
                   shuffle: bool = True, generator: torch.Generator | None = None) -> Iterator[Tensor | None]:
    """The mini-batches of Alg. 2, one per local step: K = E⌈S_c/B⌉ of them (or ``steps``),
    epoch after epoch, the samples reshuffled at the start of each epoch (one ``randperm`` from
    ``generator``) when ``shuffle``. Yields index tensors, or ``None`` for the full batch (B ≥ S_c),
    which draws no random numbers. Every local update in the library follows this schedule, so
    they all consume the client's random stream identically."""
    check_int("n_samples", n_samples, "batch_schedule", minimum=1)
    B = n_samples if batch_size is None else min(int(batch_size), n_samples)
    if B < 1:
        raise ValueError(f"need at least one sample and batch_size >= 1; got {n_samples} samples, "
                         f"batch_size={batch_size}.")
    K = n_local_steps(n_samples, epochs=epochs, batch_size=B, steps=steps)
    k = 0
    while k < K:
        if B == n_samples:  # full batch: the order of samples does not change the mean gradient
            batches: Sequence[Tensor | None] = [None]
        else:
            order = torch.randperm(n_samples, generator=generator) if shuffle else torch.arange(n_samples)
            batches = order.split(B)
        for idx in batches:
            if k == K:
                return
            yield idx
            k += 1


def local_sgd(
    model: FLModel,
    theta: Tensor,
    X: Tensor,
    y: Tensor,
    *,
    lr: float,
    epochs: int = 1,
    batch_size: int | None = None,
    steps: int | None = None,
    shuffle: bool = True,
    generator: torch.Generator | None = None,
    create_graph: bool = False,
) -> Tensor:
    """Client c's local update Local_Update^c(θ, D_c) of FedAvg (Diana Alg. 2).

    Runs mini-batch SGD θ ← θ - η g(θ, b), g the mean gradient over batch b, for ``epochs``
    passes over the data split into ⌈S_c/B⌉ batches (reshuffled each epoch when ``shuffle``),
    i.e. K = E⌈S_c/B⌉ steps. ``batch_size=None`` or ``>= S_c`` is full-batch gradient descent.
    ``steps`` instead fixes the number of SGD steps K (Xu & Neglia's "local steps"), cycling
    through reshuffled epochs.

    With ``create_graph=True`` the returned model stays differentiable with respect to ``theta``
    and ``X`` (second-order autograd through the replayed steps, for gradient inversion).

    Returns:
        θ_c(K), the returned model.
    """
    theta = model._as_theta(theta) if create_graph else model._as_theta(theta).detach()
    X = as_tensor("X", X, where="local_sgd", min_rows=1)
    y = as_tensor("y", y, where="local_sgd")
    n = X.shape[0]
    if y.ndim == 0 or X.shape[0] != y.shape[0]:
        raise ValueError(f"local_sgd: X has {X.shape[0]} rows but y has shape {tuple(y.shape)}; give one target per row.")
    check_positive("lr", lr, "local_sgd")
    check_int("epochs", epochs, "local_sgd", minimum=0)
    check_int("steps", steps, "local_sgd", minimum=0, allow_none=True)
    check_int("batch_size", batch_size, "local_sgd", minimum=1, allow_none=True)
    if not create_graph:
        check_finite("X", X, "local_sgd")
        check_finite("y", y, "local_sgd")
        check_finite("theta", theta, "local_sgd", "the model sent to the client is already broken")

    theta = theta if create_graph else theta.detach().clone()
    for idx in batch_schedule(n, epochs=epochs, batch_size=batch_size, steps=steps, shuffle=shuffle,
                              generator=generator):
        Xb, yb = (X, y) if idx is None else (X[idx], y[idx])
        if create_graph:
            theta = theta - lr * model.grad(theta, Xb, yb, create_graph=True)
        else:
            g = model.grad(theta, Xb, yb)
            theta = theta.detach() - lr * g
    if not create_graph and not bool(torch.isfinite(theta).all()):
        raise NonFiniteError(
            f"local_sgd: the local model became non-finite (NaN/inf) during local training with lr={lr}: the "
            "learning rate is most likely too large for this data (gradient descent diverges when "
            "lr > 2/λ_max of the local Hessian); lower lr or standardise the features.")
    return theta


class LocalTrainer(Protocol):
    """What a client runs on the model it receives: ``(model, θ, data, generator) -> θ_c``."""

    def __call__(self, model: FLModel, theta: Tensor, data: ClientData, generator: torch.Generator) -> Tensor: ...


@dataclass(frozen=True)
class LocalSGD:
    """FedAvg's local update (Diana Alg. 2) with its hyper-parameters.

    Args:
        lr: client learning rate η.
        epochs: local epochs E.
        batch_size: B; ``None`` means full batch.
        steps: if given, exactly this many SGD steps instead of ``epochs`` passes.
        shuffle: reshuffle the samples at each epoch.
    """

    lr: float
    epochs: int = 1
    batch_size: int | None = None
    steps: int | None = None
    shuffle: bool = True

    def __post_init__(self) -> None:
        check_positive("lr", self.lr, "LocalSGD")
        check_int("epochs", self.epochs, "LocalSGD", minimum=0)
        check_int("batch_size", self.batch_size, "LocalSGD", minimum=1, allow_none=True)
        check_int("steps", self.steps, "LocalSGD", minimum=0, allow_none=True)

    def __call__(self, model: FLModel, theta: Tensor, data: ClientData, generator: torch.Generator) -> Tensor:
        return local_sgd(model, theta, data.X, data.y, lr=self.lr, epochs=self.epochs,
                         batch_size=self.batch_size, steps=self.steps, shuffle=self.shuffle,
                         generator=generator)

    def n_steps(self, n_samples: int) -> int:
        """K = E⌈S_c/B⌉ (or ``steps``) for a client with ``n_samples`` samples."""
        return n_local_steps(n_samples, epochs=self.epochs, batch_size=self.batch_size, steps=self.steps)



@dataclass(frozen=True)
class LeastSquaresSGD(LocalSGD):
    """FedAvg's local update (Diana Alg. 2) for least-squares linear regression, in closed form.

    Same hyper-parameters, mini-batches and random stream as :class:`~flprivacy.clients.LocalSGD` (both
    follow :func:`flprivacy.clients.batch_schedule`), but the mini-batch gradient
    (2/``|b|``) X_bᵀ(X_b θ - y_b) is computed directly instead of through autograd: about ten times
    faster for the thousands of short runs of Part II. ``tests/test_part2_common.py`` checks it
    against :class:`~flprivacy.clients.LocalSGD` to 1e-12. θ = (w, b) with the bias last, as
    :func:`~flprivacy.models.linear_regression`.
    """

    def __call__(self, model: FLModel, theta: Tensor, data: ClientData, generator: torch.Generator) -> Tensor:
        X1, y = design(data.X.to(theta.dtype)), data.y.to(theta.dtype)
        if X1.shape[1] != theta.numel():
            raise ValueError(f"LeastSquaresSGD: θ has {theta.numel()} entries but the data need {X1.shape[1]} "
                             "(features plus the intercept, last).")
        theta = theta.detach().clone()
        for idx in batch_schedule(X1.shape[0], epochs=self.epochs, batch_size=self.batch_size, steps=self.steps,
                                  shuffle=self.shuffle, generator=generator):
            Xb, yb = (X1, y) if idx is None else (X1[idx], y[idx])
            theta = theta - self.lr * (2.0 / Xb.shape[0]) * (Xb.T @ (Xb @ theta - yb))
        return theta



def check_clients(clients: Sequence[ClientData], where: str, *, same_width: bool = False) -> None:
    """``clients`` must be a non-empty list of :class:`ClientData` with finite values (and, with
    ``same_width``, tabular ``X`` of one width); raises TypeError/ValueError naming ``where``."""
    if isinstance(clients, ClientData) or not isinstance(clients, Sequence):
        raise TypeError(f"{where}: clients must be a list of ClientData; got {type(clients).__name__}.")
    if len(clients) == 0:
        raise ValueError(f"{where} needs at least one client (clients is empty).")
    p = None
    for i, cd in enumerate(clients):
        if not isinstance(cd, ClientData):
            raise TypeError(f"{where}: clients[{i}] must be a ClientData(X, y); got {type(cd).__name__}.")
        if same_width:
            if cd.X.ndim != 2 or (p is not None and cd.X.shape[1] != p):
                raise ValueError(f"{where}: clients[{i}].X must be (n, {p if p is not None else 'p'}) like the other "
                                 f"clients'; got {tuple(cd.X.shape)}.")
            p = cd.X.shape[1]
        check_finite(f"clients[{i}].X", cd.X, where)
        check_finite(f"clients[{i}].y", cd.y, where)
