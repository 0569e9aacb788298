"""Federated learning with a message log.

Implements Algorithm 1 (generic FL: sample clients, broadcast, collect, aggregate) and
Algorithm 2 (the FedAvg local update: E epochs of mini-batch SGD) of Diana et al. 2025 (§2.1,
after McMahan et al. 2017; also Xu & Neglia 2021, Algos. 1-2). Every run returns a
:class:`~flprivacy.log.MessageLog`: the global model θ^t of every round and, for every (round, client), the
model sent and the model returned. Attacks read the log, through the views in
:mod:`flprivacy.threats`, and nothing else.

An *active* adversary (:class:`flprivacy.threats.Adversary`) may replace the model sent to a
client (Diana §2.2, "malicious adversary").
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

import torch
from torch import Tensor
from tqdm import tqdm

from .config import client_generator, server_generator
from .log import ClientMessages, Exchange, GlobalModels, MessageLog  # noqa: F401 - the log's types, importable from here too
from .models import FLModel, design
from .validation import DIVERGENCE_FACTOR, DivergenceWarning, NonFiniteError, as_tensor, check_finite, check_int, check_positive, check_seed

if TYPE_CHECKING:  # pragma: no cover
    from .threats import Adversary


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


@dataclass
class FLRun:
    """The result of :func:`run_fedavg`: the final global model θ^T and the message log."""

    theta: Tensor
    log: MessageLog
    model: FLModel
    seed: int
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LeastSquaresSGD(LocalSGD):
    """FedAvg's local update (Diana Alg. 2) for least-squares linear regression, in closed form.

    Same hyper-parameters, mini-batches and random stream as :class:`~flprivacy.federation.LocalSGD` (both
    follow :func:`flprivacy.federation.batch_schedule`), but the mini-batch gradient
    (2/``|b|``) X_bᵀ(X_b θ - y_b) is computed directly instead of through autograd: about ten times
    faster for the thousands of short runs of Part II. ``tests/test_part2_common.py`` checks it
    against :class:`~flprivacy.federation.LocalSGD` to 1e-12. θ = (w, b) with the bias last, as
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


# ---- Algorithm 1: the server -----------------------------------------------------------------
def client_weights(clients: Sequence[ClientData], weighting: Literal["size", "uniform"]) -> Tensor:
    """p_c of eq. (1): proportional to S_c (``"size"``) or 1/``|C|`` (``"uniform"``)."""
    if len(clients) == 0:
        raise ValueError("client_weights: clients is empty; give at least one ClientData.")
    if weighting == "size":
        w = torch.tensor([c.n for c in clients], dtype=torch.float64)
    elif weighting == "uniform":
        w = torch.ones(len(clients), dtype=torch.float64)
    else:
        raise ValueError(f"weighting must be 'size' or 'uniform', got {weighting!r}.")
    return w / w.sum()


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


def run_fedavg(
    model: FLModel,
    clients: Sequence[ClientData],
    *,
    rounds: int,
    local: LocalTrainer,
    server_lr: float = 1.0,
    clients_per_round: int | None = None,
    weighting: Literal["size", "uniform"] = "size",
    seed: int = 0,
    theta0: Tensor | None = None,
    adversary: Adversary | None = None,
    record_clients: Sequence[int] | None = None,
    record_rounds: Sequence[int] | None = None,
    progress: bool = False,
    log_dir: str | Path | None = None,
    batched: bool = False,
) -> FLRun:
    """Train ``model`` with FedAvg (Diana Alg. 1 with the local update of Alg. 2).

    Each round t: sample ``clients_per_round`` clients uniformly without replacement (all when
    None); send each the global model θ^t (or what ``adversary`` forges); run ``local`` on it;
    aggregate θ^{t+1} = θ^t + η_g Σ_c p̃_c (θ_c^t - θ^t), with p̃_c the weights p_c
    renormalised over the aggregated clients. Exchanges whose sent model was forged are left
    out of the aggregate unless ``adversary.aggregate_forged``.

    Args:
        model: the architecture.
        clients: local datasets D_c.
        rounds: number of rounds T.
        local: the client's update, e.g. ``LocalSGD(lr=..., epochs=..., batch_size=...)``.
        server_lr: global learning rate η_g (1 gives plain averaging).
        clients_per_round: ``|C_s^t|``; None for full participation.
        weighting: p_c by dataset size or uniform (eq. 1).
        seed: seeds θ^0 (unless given), client sampling and every client's batch shuffling
            (each client has its own stream, so one client's randomness does not depend on
            the others).
        theta0: initial global model; default ``model.init_params(seed)``.
        adversary: an active adversary that may replace sent models (see
            :mod:`flprivacy.threats`).
        record_clients, record_rounds: restrict which exchanges the log stores (default all);
            global models are always stored.
        progress: show a progress bar.
        log_dir: keep the message log's models in a file in this folder instead of in memory
            (long runs; see :class:`~flprivacy.log.MessageLog`).
        batched: train each round's clients as one tensor program
            (:func:`flprivacy.batched.local_sgd_many`): the same log up to floating-point
            rounding, several times faster for small models. Needs ``local`` to be a
            :class:`LocalSGD` and a model of linear layers and element-wise activations
            (:func:`flprivacy.batched.supports`). The adversary then forges every sampled
            client's model before any of them trains, so it reads the log up to the previous
            round (as every adversary of the library does).

    Returns:
        :class:`FLRun` with the final model and the :class:`~flprivacy.log.MessageLog`.

    Raises:
        NonFiniteError: a client returns, or the aggregation produces, a non-finite model; the
            message names the round, the client and the likely cause.

    Warns:
        DivergenceWarning: once, when the global model's norm exceeds
            ``DIVERGENCE_FACTOR`` (:mod:`flprivacy.validation`, 1e8) times max(‖θ^0‖, 1), naming the round
            and the learning rates (training that diverges without overflowing yet).
    """
    where = "run_fedavg"
    if not isinstance(model, FLModel):
        raise TypeError(f"{where}: model must be an FLModel (e.g. flprivacy.mlp(...)); got {type(model).__name__}.")
    check_int("rounds", rounds, where, minimum=0)
    check_seed("seed", seed, where)
    check_positive("server_lr", server_lr, where)
    if not callable(local):
        raise TypeError(f"{where}: local must be a local trainer such as LocalSGD(lr=...); got {type(local).__name__}.")
    check_clients(clients, where)
    m = len(clients) if clients_per_round is None else int(clients_per_round)
    if not 1 <= m <= len(clients):
        raise ValueError(f"clients_per_round must be in 1..{len(clients)}, got {clients_per_round}.")
    if theta0 is None:
        theta0 = model.init_params(seed)
    theta = model._as_theta(theta0, "theta0").detach().clone()
    check_finite("theta0", theta, where)
    try:
        model.forward(theta, clients[0].X[:1])
    except ValueError as e:
        raise ValueError(f"{where}: clients[0].X does not fit the model: {e}") from None

    if batched:
        from .batched import local_sgd_many, supports
        from .stack import LinearStack
        if not isinstance(local, LocalSGD):
            raise ValueError(f"{where}: batched=True needs local=LocalSGD(...) (got {type(local).__name__}); "
                             "use batched=False for other local trainers.")
        if not supports(model):
            raise ValueError(f"{where}: batched=True does not support {model!r}; it trains models of nn.Linear "
                             "layers and element-wise activations (linear models, MLPs). Use batched=False.")
        check_clients(clients, where, same_width=True)
        stack = LinearStack(model)
    p = client_weights(clients, weighting)
    log = MessageLog(len(clients), p, [c.n for c in clients], server_lr, directory=log_dir)
    server_gen = server_generator(seed)
    client_gens = [client_generator(seed, c) for c in range(len(clients))]
    rec_c = None if record_clients is None else set(int(c) for c in record_clients)
    rec_t = None if record_rounds is None else set(int(t) for t in record_rounds)

    scale0, warned = max(float(theta.norm()), 1.0), False  # for the divergence warning
    for t in tqdm(range(rounds), desc="FedAvg rounds", disable=not progress, leave=False):
        if m == len(clients):
            sampled = list(range(len(clients)))
        else:
            sampled = sorted(torch.randperm(len(clients), generator=server_gen)[:m].tolist())
        log.begin_round(theta, sampled, adversary)
        keep = [(rec_c is None or c in rec_c) and (rec_t is None or t in rec_t) for c in sampled]
        if batched:  # forge all, train all at once, then record in the same order
            sends = [log.sent_model(c) for c in sampled]
            trained = [th[0] for th in local_sgd_many(stack, [s.unsqueeze(0) for s, _ in sends],
                                                      [clients[c] for c in sampled], local,
                                                      [client_gens[c] for c in sampled])]
            for c, (sent, forged), returned, k in zip(sampled, sends, trained, keep):
                log.record_reply(c, sent, returned, forged, keep=k)
        else:
            for c, k in zip(sampled, keep):
                sent, forged = log.sent_model(c)
                try:
                    returned = local(model, sent.clone(), clients[c], client_gens[c]).detach()
                except NonFiniteError as e:
                    raise NonFiniteError(f"round {t}, client {c}: {e}") from None
                log.record_reply(c, sent, returned, forged, keep=k)
        theta = log.close_round()
        if not warned and float(theta.norm()) > DIVERGENCE_FACTOR * scale0:
            warned = True
            lr = getattr(local, "lr", None)
            warnings.warn(
                f"run_fedavg: round {t}: the global model's norm is {float(theta.norm()):.3g}, over "
                f"{DIVERGENCE_FACTOR:.0e} times its start ({scale0:.3g}): training is diverging"
                + (f" (client lr={lr}, server_lr={server_lr}); lower the learning rate" if lr is not None else
                   f" (server_lr={server_lr}); lower the local trainer's learning rate")
                + " or standardise the features.", DivergenceWarning, stacklevel=2)
    log.finish(theta)
    settings = dict(rounds=rounds, local=local, server_lr=server_lr, clients_per_round=clients_per_round,
                    weighting=weighting)
    return FLRun(theta=theta, log=log, model=model, seed=seed, settings=settings)
