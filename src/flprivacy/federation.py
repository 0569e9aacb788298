"""Federated learning with a message log.

Implements Algorithm 1 (generic FL: sample clients, broadcast, collect, aggregate) and
Algorithm 2 (the FedAvg local update: E epochs of mini-batch SGD) of Diana et al. 2025 (§2.1,
after McMahan et al. 2017; also Xu & Neglia 2021, Algos. 1-2). Every run returns a
:class:`MessageLog`: the global model θ^t of every round and, for every (round, client), the
model sent and the model returned. Attacks read the log, through the views in
:mod:`flprivacy.threats`, and nothing else.

An *active* adversary (:class:`flprivacy.threats.Adversary`) may replace the model sent to a
client (Diana §2.2, "malicious adversary").
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

import torch
from torch import Tensor
from tqdm import tqdm

from .config import child_seed, generator
from .models import FLModel
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


# ---- the message log --------------------------------------------------------------------------
class Exchange(NamedTuple):
    """One round-trip between the server and a client."""

    round: int
    client: int
    sent: Tensor  # θ_c^t(0): the model the client received
    returned: Tensor  # θ_c^t(K): the model the client sent back
    forged: bool  # True if an active adversary replaced the sent model


@dataclass
class ClientMessages:
    """The messages M_c = {(θ^t, θ_c^t), t ∈ T_c} exchanged with one client, stacked.

    ``sent[i]`` and ``returned[i]`` are the models of round ``rounds[i]``.
    """

    client: int
    rounds: Tensor  # (n,) long
    sent: Tensor  # (n, d)
    returned: Tensor  # (n, d)
    forged: Tensor  # (n,) bool

    def __len__(self) -> int:
        return int(self.rounds.numel())

    def select(self, index: Tensor | Sequence[int] | slice) -> ClientMessages:
        """The messages at positions ``index`` (not round numbers; see :meth:`at_rounds`)."""
        if not isinstance(index, slice):
            index = torch.as_tensor(index, dtype=torch.long)
        return ClientMessages(self.client, self.rounds[index], self.sent[index], self.returned[index], self.forged[index])

    def at_rounds(self, rounds: Sequence[int]) -> ClientMessages:
        """The messages of the given rounds; raises if one was not observed."""
        pos = {int(r): i for i, r in enumerate(self.rounds.tolist())}
        missing = [r for r in rounds if int(r) not in pos]
        if missing:
            raise KeyError(
                f"client {self.client} has no recorded messages in rounds {missing}; observed rounds are "
                f"{self.rounds.tolist()[:10]}{'...' if len(self) > 10 else ''}."
            )
        return self.select([pos[int(r)] for r in rounds])

    @property
    def pseudo_gradients(self) -> Tensor:
        """θ^t - θ_c^t for every observed round (Diana eq. 2), shape (n, d)."""
        return self.sent - self.returned


class _ModelStore:
    """Append-only storage of equal-length model vectors, in memory or on disk.

    In memory, vectors are copied into preallocated chunks of ``chunk`` rows (no per-tensor
    allocation, so no heap fragmentation), and :meth:`get` returns views. On disk
    (``directory`` given), every vector is appended to one binary file (``<dir>/*.models``,
    removed when the store is garbage-collected) and :meth:`get` reads it back with one
    ``pread``; nothing is memory-mapped, so the process's resident memory stays flat.
    """

    def __init__(self, directory: str | Path | None = None, chunk: int = 256):
        self.directory = None if directory is None else Path(directory)
        self.chunk = int(chunk)
        self.n = 0
        self.d: int | None = None
        self.dtype: torch.dtype | None = None
        self._chunks: list[Tensor] = []
        self._fd: int | None = None
        self.path: Path | None = None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=self.directory, prefix="messagelog-", suffix=".models")
            self._fd, self.path = fd, Path(name)

    def __del__(self) -> None:  # pragma: no cover - best effort clean-up
        if getattr(self, "_fd", None) is not None:
            try:
                os.close(self._fd)
                os.remove(self.path)
            except OSError:
                pass
            self._fd = None

    def append(self, v: Tensor) -> int:
        v = v.detach().reshape(-1)
        if self.d is None:
            self.d, self.dtype = v.numel(), v.dtype
        elif v.numel() != self.d:
            raise ValueError(f"MessageLog: every model must have {self.d} parameters; got a vector of {v.numel()}.")
        v = v.to(self.dtype)
        i = self.n
        if self._fd is not None:
            data = v.contiguous().cpu().numpy().tobytes()
            os.pwrite(self._fd, data, i * len(data))
        else:
            if i % self.chunk == 0:
                self._chunks.append(torch.empty(self.chunk, self.d, dtype=self.dtype))
            self._chunks[i // self.chunk][i % self.chunk].copy_(v)
        self.n += 1
        return i

    def get(self, i: int) -> Tensor:
        if self._fd is not None:
            size = self.d * self.dtype.itemsize
            raw = os.pread(self._fd, size, i * size)
            return torch.frombuffer(bytearray(raw), dtype=self.dtype)
        return self._chunks[i // self.chunk][i % self.chunk]

    @property
    def nbytes(self) -> int:
        return 0 if self.d is None else self.n * self.d * self.dtype.itemsize


class _GlobalList(list):
    """``MessageLog.global_models`` in memory: a list of views into the log's store (``append``
    copies the model into the store once)."""

    def __init__(self, log: MessageLog):
        super().__init__()
        self._log = log

    def append(self, theta: Tensor) -> None:
        i = self._log._store.append(theta)
        self._log._global_idx.append(i)
        super().append(self._log._store.get(i))


class _GlobalModels(Sequence):
    """``MessageLog.global_models`` on disk: a read-only sequence that reads each model back."""

    def __init__(self, log: MessageLog):
        self._log = log

    def __len__(self) -> int:
        return len(self._log._global_idx)

    def __getitem__(self, t):  # noqa: ANN001
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(len(self)))]
        return self._log._store.get(self._log._global_idx[t])

    def append(self, theta: Tensor) -> None:
        self._log._global_idx.append(self._log._store.append(theta))
        self._log._last_global = theta.detach().clone() if self._log._store._fd is not None else None


class MessageLog:
    """Everything exchanged during a federated run.

    Attributes:
        global_models: θ^0, ..., θ^T: the global model at the start of each round and the
            final one (``len == rounds + 1``); a list-like sequence of tensors.
        participants: the sampled clients C_s^t of each round.
        weights: the aggregation weights p_c (summing to 1).
        n_samples: S_c of every client.
        server_lr: the global learning rate η_g of the aggregation.

    Storage: every model is stored once. A sent model equal to the round's global model (every
    honest exchange) is not stored again but refers to it, so the log holds (T+1) global
    models plus one returned model per recorded exchange (plus the forged sent models). With
    ``directory`` the models live in a file there instead of in memory (for long runs); the
    reading API (:meth:`exchange`, :meth:`client_messages`, ``global_models[t]``) is the same;
    on disk ``global_models`` is a sequence rather than a list (``torch.stack`` needs
    :meth:`global_trajectory`). Memory is measured by ``python -m flprivacy.experiments.bench_memory``
    (``book/results/bench_memory.json``: 10 clients, a 69k-parameter float32 MLP, 1,000 rounds).
    """

    def __init__(self, n_clients: int, weights: Tensor, n_samples: list[int], server_lr: float,
                 directory: str | Path | None = None):
        self.n_clients = n_clients
        self.weights = weights
        self.n_samples = n_samples
        self.server_lr = server_lr
        self._store = _ModelStore(directory)
        self._global_idx: list[int] = []
        self._last_global: Tensor | None = None
        self.global_models = _GlobalList(self) if directory is None else _GlobalModels(self)
        self.participants: list[list[int]] = []
        self._exchanges: dict[tuple[int, int], tuple[int, int, bool]] = {}

    def __repr__(self) -> str:
        return (f"MessageLog(rounds={self.rounds}, clients={self.n_clients}, "
                f"recorded exchanges={len(self._exchanges)})")

    @property
    def rounds(self) -> int:
        """Number of completed rounds T."""
        return len(self.participants)

    @property
    def stored_models(self) -> int:
        """How many model vectors the log holds (global, returned and forged sent models)."""
        return self._store.n

    @property
    def nbytes(self) -> int:
        """Bytes of model vectors held (in memory, or on disk with ``directory``)."""
        return self._store.nbytes

    def _global_equal(self, t: int, v: Tensor) -> bool:
        if not 0 <= t < len(self._global_idx):
            return False
        g = self._last_global if (self._last_global is not None and t == len(self._global_idx) - 1) else self.global_models[t]
        return g.shape == v.shape and g.dtype == v.dtype and bool(torch.equal(g, v))

    def record(self, exchange: Exchange) -> None:
        t, c = int(exchange.round), int(exchange.client)
        if not exchange.forged and self._global_equal(t, exchange.sent):
            sent = self._global_idx[t]
        else:
            sent = self._store.append(exchange.sent)
        self._exchanges[(t, c)] = (sent, self._store.append(exchange.returned), bool(exchange.forged))

    def _make(self, key: tuple[int, int]) -> Exchange:
        sent, returned, forged = self._exchanges[key]
        return Exchange(key[0], key[1], self._store.get(sent), self._store.get(returned), forged)

    def exchange(self, round: int, client: int) -> Exchange:
        """The exchange with ``client`` in ``round``."""
        try:
            return self._make((round, client))
        except KeyError:
            raise KeyError(
                f"no recorded exchange for client {client} in round {round}: the client was not sampled "
                "that round, or the run did not record it (see run_fedavg's record_clients/record_rounds)."
            ) from None

    def exchanges(self, client: int | None = None) -> list[Exchange]:
        """All recorded exchanges (of one client if given), in round order."""
        keys = sorted(k for k in self._exchanges if client is None or k[1] == client)
        return [self._make(k) for k in keys]

    def client_messages(self, client: int, rounds: Sequence[int] | None = None) -> ClientMessages:
        """Stacked messages of one client (all its recorded rounds, or the given ones)."""
        if isinstance(client, bool) or not isinstance(client, int) or not 0 <= client < self.n_clients:
            raise ValueError(f"client must be in 0..{self.n_clients - 1}, got {client!r}.")
        keys = sorted(k for k in self._exchanges if k[1] == client)
        if rounds is not None:
            wanted = set(int(r) for r in rounds)
            keys = [k for k in keys if k[0] in wanted]
        if not keys:
            raise ValueError(f"client {client} has no recorded exchanges{'' if rounds is None else ' in those rounds'}.")
        ex = [self._make(k) for k in keys]
        return ClientMessages(
            client=client,
            rounds=torch.tensor([e.round for e in ex], dtype=torch.long),
            sent=torch.stack([e.sent for e in ex]),
            returned=torch.stack([e.returned for e in ex]),
            forged=torch.tensor([e.forged for e in ex], dtype=torch.bool),
        )

    def last_returned(self, client: int, before: int | None = None) -> Tensor | None:
        """The latest model ``client`` returned (before round ``before`` if given), or None."""
        best = None
        for (t, c) in self._exchanges:
            if c == client and (before is None or t < before) and (best is None or t > best):
                best = t
        return None if best is None else self._store.get(self._exchanges[(best, client)][1])

    def global_trajectory(self) -> Tensor:
        """θ^0..θ^T stacked, shape (T+1, d)."""
        return torch.stack(list(self.global_models))


@dataclass
class FLRun:
    """The result of :func:`run_fedavg`: the final global model θ^T and the message log."""

    theta: Tensor
    log: MessageLog
    model: FLModel
    seed: int
    settings: dict = field(default_factory=dict)


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
            (long runs; see :class:`MessageLog`).
        batched: train each round's clients as one tensor program
            (:func:`flprivacy.batched.local_sgd_many`): the same log up to floating-point
            rounding, several times faster for small models. Needs ``local`` to be a
            :class:`LocalSGD` and a model of linear layers and element-wise activations
            (:func:`flprivacy.batched.supports`). The adversary then forges every sampled
            client's model before any of them trains, so it reads the log up to the previous
            round (as every adversary of the library does).

    Returns:
        :class:`FLRun` with the final model and the :class:`MessageLog`.

    Raises:
        NonFiniteError: a client returns, or the aggregation produces, a non-finite model; the
            message names the round, the client and the likely cause.

    Warns:
        DivergenceWarning: once, when the global model's norm exceeds
            :data:`~flprivacy.validation.DIVERGENCE_FACTOR` times max(‖θ^0‖, 1), naming the round
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
    if isinstance(clients, ClientData) or not isinstance(clients, Sequence):
        raise TypeError(f"{where}: clients must be a list of ClientData; got {type(clients).__name__}.")
    if len(clients) == 0:
        raise ValueError("run_fedavg needs at least one client (clients is empty).")
    for i, cd in enumerate(clients):
        if not isinstance(cd, ClientData):
            raise TypeError(f"{where}: clients[{i}] must be a ClientData(X, y); got {type(cd).__name__}.")
        check_finite(f"clients[{i}].X", cd.X, where)
        check_finite(f"clients[{i}].y", cd.y, where)
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
        from .batched import check_clients, local_sgd_many, supports
        from .stack import LinearStack
        if not isinstance(local, LocalSGD):
            raise ValueError(f"{where}: batched=True needs local=LocalSGD(...) (got {type(local).__name__}); "
                             "use batched=False for other local trainers.")
        if not supports(model):
            raise ValueError(f"{where}: batched=True does not support {model!r}; it trains models of nn.Linear "
                             "layers and element-wise activations (linear models, MLPs). Use batched=False.")
        check_clients(clients, where)
        stack = LinearStack(model)
    p = client_weights(clients, weighting)
    log = MessageLog(len(clients), p, [c.n for c in clients], server_lr, directory=log_dir)
    server_gen = generator(child_seed(seed, 1))
    client_gens = [generator(child_seed(seed, 2, c)) for c in range(len(clients))]
    rec_c = None if record_clients is None else set(int(c) for c in record_clients)
    rec_t = None if record_rounds is None else set(int(t) for t in record_rounds)

    scale0, warned = max(float(theta.norm()), 1.0), False  # for the divergence warning
    for t in tqdm(range(rounds), desc="FedAvg rounds", disable=not progress, leave=False):
        log.global_models.append(theta)
        if m == len(clients):
            sampled = list(range(len(clients)))
        else:
            sampled = sorted(torch.randperm(len(clients), generator=server_gen)[:m].tolist())
        log.participants.append(sampled)

        update = torch.zeros_like(theta)
        total = 0.0
        if batched:  # forge all, train all at once, then record and aggregate in the same order
            forgeds = [adversary.forge(t, c, theta, log) if adversary is not None else None for c in sampled]
            sents = [theta if f is None else f.detach().to(theta.dtype) for f in forgeds]
            trained = [th[0] for th in local_sgd_many(stack, [s.unsqueeze(0) for s in sents],
                                                      [clients[c] for c in sampled], local,
                                                      [client_gens[c] for c in sampled])]
        for i, c in enumerate(sampled):
            if batched:
                forged, sent, returned = forgeds[i], sents[i], trained[i]
            else:
                forged = adversary.forge(t, c, theta, log) if adversary is not None else None
                sent = theta if forged is None else forged.detach().to(theta.dtype)
                try:
                    returned = local(model, sent.clone(), clients[c], client_gens[c]).detach()
                except NonFiniteError as e:
                    raise NonFiniteError(f"round {t}, client {c}: {e}") from None
            if not bool(torch.isfinite(returned).all()):
                raise NonFiniteError(
                    f"round {t}, client {c}: the returned model is non-finite (NaN/inf); the local trainer diverged "
                    f"(learning rate too large?){' on a forged model' if forged is not None else ''}.")
            if (rec_c is None or c in rec_c) and (rec_t is None or t in rec_t):
                log.record(Exchange(t, c, sent, returned, forged is not None))
            if forged is None or adversary.aggregate_forged:
                update += float(p[c]) * (returned - theta)
                total += float(p[c])
        if total > 0:
            theta = theta + server_lr * update / total
        if not bool(torch.isfinite(theta).all()):
            raise NonFiniteError(f"round {t}: the aggregated global model is non-finite (NaN/inf) although every "
                                 f"client returned a finite one; server_lr={server_lr} is likely too large.")
        if not warned and float(theta.norm()) > DIVERGENCE_FACTOR * scale0:
            warned = True
            lr = getattr(local, "lr", None)
            warnings.warn(
                f"run_fedavg: round {t}: the global model's norm is {float(theta.norm()):.3g}, over "
                f"{DIVERGENCE_FACTOR:.0e} times its start ({scale0:.3g}): training is diverging"
                + (f" (client lr={lr}, server_lr={server_lr}); lower the learning rate" if lr is not None else
                   f" (server_lr={server_lr}); lower the local trainer's learning rate")
                + " or standardise the features.", DivergenceWarning, stacklevel=2)
    log.global_models.append(theta)
    settings = dict(rounds=rounds, local=local, server_lr=server_lr, clients_per_round=clients_per_round,
                    weighting=weighting)
    return FLRun(theta=theta, log=log, model=model, seed=seed, settings=settings)
