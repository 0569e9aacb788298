"""Federated learning with a message log: the server.

Implements Algorithm 1 (generic FL: sample clients, broadcast, collect, aggregate) of Diana et
al. 2025 (§2.1, after McMahan et al. 2017; also Xu & Neglia 2021, Algo. 1), with the clients'
local update of Algorithm 2 (E epochs of mini-batch SGD) from :mod:`flprivacy.clients`, whose
names (:class:`~flprivacy.clients.ClientData`, :class:`~flprivacy.clients.LocalSGD`,
:func:`~flprivacy.clients.local_sgd`, ...) are importable from here too. Every run returns a
:class:`~flprivacy.log.MessageLog`: the global model θ^t of every round and, for every (round, client), the
model sent and the model returned. Attacks read the log, through the views in
:mod:`flprivacy.threats`, and nothing else.

An *active* adversary (:class:`flprivacy.threats.Adversary`) may replace the model sent to a
client (Diana §2.2, "malicious adversary").
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import torch
from torch import Tensor
from tqdm import tqdm

from .clients import (  # noqa: F401 - the client side (Alg. 2), importable from here too
    ClientData, LeastSquaresSGD, LocalSGD, LocalTrainer, batch_schedule, check_clients, local_sgd, n_local_steps)
from .config import client_generator, server_generator
from .log import ClientMessages, Exchange, GlobalModels, MessageLog  # noqa: F401 - the log's types, importable from here too
from .models import FLModel
from .validation import DIVERGENCE_FACTOR, DivergenceWarning, NonFiniteError, check_finite, check_int, check_positive, check_seed

if TYPE_CHECKING:  # pragma: no cover
    from .threats import Adversary


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
            (long runs; see :class:`~flprivacy.log.MessageLog`).
        batched: train each round's clients as one tensor program
            (:func:`flprivacy.batched.local_sgd_many`): the same log up to floating-point
            rounding, several times faster for small models. Needs ``local`` to be a
            :class:`~flprivacy.clients.LocalSGD` and a model of linear layers and element-wise activations
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
