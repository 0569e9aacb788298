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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

import torch
from torch import Tensor
from tqdm import tqdm

from .config import child_seed, generator
from .models import FLModel

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
        for name, X, y in (("", self.X, self.y), ("_val", self.X_val, self.y_val)):
            if (X is None) != (y is None):
                raise ValueError(f"ClientData: give both X{name} and y{name}, or neither.")
            if X is not None and X.shape[0] != y.shape[0]:
                raise ValueError(
                    f"ClientData: X{name} has {X.shape[0]} rows but y{name} has {y.shape[0]}; "
                    "they must describe the same samples."
                )
        if self.X.shape[0] == 0:
            raise ValueError("ClientData: a client needs at least one training sample.")

    @property
    def n(self) -> int:
        """Number of training samples S_c."""
        return int(self.X.shape[0])


# ---- Algorithm 2: the local update ------------------------------------------------------------
def n_local_steps(n_samples: int, *, epochs: int = 1, batch_size: int | None = None, steps: int | None = None) -> int:
    """K = E⌈S_c/B⌉ local SGD steps (B = S_c when ``batch_size`` is None or larger), or ``steps``."""
    if steps is not None:
        return steps
    B = n_samples if batch_size is None else min(int(batch_size), n_samples)
    return epochs * math.ceil(n_samples / B)


def batch_schedule(n_samples: int, *, epochs: int = 1, batch_size: int | None = None, steps: int | None = None,
                   shuffle: bool = True, generator: torch.Generator | None = None) -> Iterator[Tensor | None]:
    """The mini-batches of Alg. 2, one per local step: K = E⌈S_c/B⌉ of them (or ``steps``),
    epoch after epoch, the samples reshuffled at the start of each epoch (one ``randperm`` from
    ``generator``) when ``shuffle``. Yields index tensors, or ``None`` for the full batch (B ≥ S_c),
    which draws no random numbers. Every local update in the library follows this schedule, so
    they all consume the client's random stream identically."""
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
    n = X.shape[0]
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"local_sgd: X has {X.shape[0]} rows but y has {y.shape[0]}.")
    if lr <= 0 or epochs < 0 or (steps is not None and steps < 0):
        raise ValueError(f"local_sgd: need lr > 0, epochs >= 0, steps >= 0; got lr={lr}, epochs={epochs}, steps={steps}.")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"local_sgd: batch_size must be >= 1, got {batch_size}.")

    theta = theta if create_graph else theta.detach().clone()
    for idx in batch_schedule(n, epochs=epochs, batch_size=batch_size, steps=steps, shuffle=shuffle,
                              generator=generator):
        Xb, yb = (X, y) if idx is None else (X[idx], y[idx])
        if create_graph:
            theta = theta - lr * model.grad(theta, Xb, yb, create_graph=True)
        else:
            g = model.grad(theta, Xb, yb)
            theta = theta.detach() - lr * g
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


class MessageLog:
    """Everything exchanged during a federated run.

    Attributes:
        global_models: θ^0, ..., θ^T: the global model at the start of each round and the
            final one (``len == rounds + 1``).
        participants: the sampled clients C_s^t of each round.
        weights: the aggregation weights p_c (summing to 1).
        n_samples: S_c of every client.
        server_lr: the global learning rate η_g of the aggregation.
    """

    def __init__(self, n_clients: int, weights: Tensor, n_samples: list[int], server_lr: float):
        self.n_clients = n_clients
        self.weights = weights
        self.n_samples = n_samples
        self.server_lr = server_lr
        self.global_models: list[Tensor] = []
        self.participants: list[list[int]] = []
        self._exchanges: dict[tuple[int, int], Exchange] = {}

    def __repr__(self) -> str:
        return (f"MessageLog(rounds={self.rounds}, clients={self.n_clients}, "
                f"recorded exchanges={len(self._exchanges)})")

    @property
    def rounds(self) -> int:
        """Number of completed rounds T."""
        return len(self.participants)

    def record(self, exchange: Exchange) -> None:
        self._exchanges[(exchange.round, exchange.client)] = exchange

    def exchange(self, round: int, client: int) -> Exchange:
        """The exchange with ``client`` in ``round``."""
        try:
            return self._exchanges[(round, client)]
        except KeyError:
            raise KeyError(
                f"no recorded exchange for client {client} in round {round}: the client was not sampled "
                "that round, or the run did not record it (see run_fedavg's record_clients/record_rounds)."
            ) from None

    def exchanges(self, client: int | None = None) -> list[Exchange]:
        """All recorded exchanges (of one client if given), in round order."""
        return sorted((e for e in self._exchanges.values() if client is None or e.client == client),
                      key=lambda e: (e.round, e.client))

    def client_messages(self, client: int, rounds: Sequence[int] | None = None) -> ClientMessages:
        """Stacked messages of one client (all its recorded rounds, or the given ones)."""
        if not 0 <= client < self.n_clients:
            raise ValueError(f"client must be in 0..{self.n_clients - 1}, got {client}.")
        ex = self.exchanges(client)
        if rounds is not None:
            wanted = set(int(r) for r in rounds)
            ex = [e for e in ex if e.round in wanted]
        if not ex:
            raise ValueError(f"client {client} has no recorded exchanges{'' if rounds is None else ' in those rounds'}.")
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
        for (t, c), e in self._exchanges.items():
            if c == client and (before is None or t < before) and (best is None or t > best.round):
                best = e
        return None if best is None else best.returned

    def global_trajectory(self) -> Tensor:
        """θ^0..θ^T stacked, shape (T+1, d)."""
        return torch.stack(self.global_models)


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
    """p_c of eq. (1): proportional to S_c (``"size"``) or 1/|C| (``"uniform"``)."""
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
        clients_per_round: |C_s^t|; None for full participation.
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

    Returns:
        :class:`FLRun` with the final model and the :class:`MessageLog`.
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds}.")
    if len(clients) == 0:
        raise ValueError("run_fedavg needs at least one client.")
    m = len(clients) if clients_per_round is None else int(clients_per_round)
    if not 1 <= m <= len(clients):
        raise ValueError(f"clients_per_round must be in 1..{len(clients)}, got {clients_per_round}.")
    if theta0 is None:
        theta0 = model.init_params(seed)
    model._check_theta(theta0)
    theta = theta0.detach().to(model.dtype).clone()

    p = client_weights(clients, weighting)
    log = MessageLog(len(clients), p, [c.n for c in clients], server_lr)
    server_gen = generator(child_seed(seed, 1))
    client_gens = [generator(child_seed(seed, 2, c)) for c in range(len(clients))]
    rec_c = None if record_clients is None else set(int(c) for c in record_clients)
    rec_t = None if record_rounds is None else set(int(t) for t in record_rounds)

    for t in tqdm(range(rounds), desc="FedAvg rounds", disable=not progress, leave=False):
        log.global_models.append(theta.clone())
        if m == len(clients):
            sampled = list(range(len(clients)))
        else:
            sampled = sorted(torch.randperm(len(clients), generator=server_gen)[:m].tolist())
        log.participants.append(sampled)

        update = torch.zeros_like(theta)
        total = 0.0
        for c in sampled:
            forged = adversary.forge(t, c, theta, log) if adversary is not None else None
            sent = theta if forged is None else forged.detach().to(theta.dtype)
            returned = local(model, sent.clone(), clients[c], client_gens[c]).detach()
            if (rec_c is None or c in rec_c) and (rec_t is None or t in rec_t):
                log.record(Exchange(t, c, sent.clone(), returned, forged is not None))
            if forged is None or adversary.aggregate_forged:
                update += float(p[c]) * (returned - theta)
                total += float(p[c])
        if total > 0:
            theta = theta + server_lr * update / total
    log.global_models.append(theta.clone())
    settings = dict(rounds=rounds, local=local, server_lr=server_lr, clients_per_round=clients_per_round,
                    weighting=weighting)
    return FLRun(theta=theta, log=log, model=model, seed=seed, settings=settings)
