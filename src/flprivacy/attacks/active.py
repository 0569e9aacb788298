"""The active reconstruction of a client's local model (Diana et al. 2025, §4.2, Alg. 4).

A malicious server keeps, for each target client c, a model θ_c^a. In every attack round it
sends θ_c^a instead of the global model; the client trains on it and returns θ_c; the server
treats θ_c^a - θ_c as a gradient of the client's local risk and takes an Adam step (Kingma & Ba
2015). After the attack rounds θ_c^a approximates the client's optimal local model
θ_c^* = argmin L_c, on which the model-based AIA (eq. 3) is run.

- :class:`AdamActive` is Alg. 4 as a :class:`flprivacy.threats.Adversary` for
  :func:`flprivacy.federation.run_fedavg`;
- :func:`simulate_adam_active` replays the attack for many Adam hyper-parameters at once
  (the client's local SGD on a batch of models);
- :func:`tune_adam_active` picks Adam's learning rate and betas with Optuna to minimise the
  clients' training loss (App. B.5: lr ∈ [0.1, 50], β1, β2 ∈ [0.6, 0.999], 50 trials), for all
  clients at once (the authors' code) or for each client (``per_client``: App. B.5, "to minimize
  each client's training loss"). The replayed local update is plain SGD or, for clients that
  train with DP-SGD, the same DP-SGD (:func:`flprivacy.defences.dp_sgd_many`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import optuna
import torch
from torch import Tensor

from ..config import child_seed, generator
from ..defences import DPLocalSGD, dp_sgd_many
from ..federation import ClientData, LocalSGD
from ..log import MessageLog
from ..models import FLModel
from ..threats import Adversary
from ..validation import NonFiniteError, as_tensor, check_finite, check_int, check_positive, check_seed
from ..batched import check_clients, local_sgd_many
from ..stack import LinearStack

ADAM_LR_RANGE: tuple[float, float] = (0.1, 50.0)
"""Range in which Adam's learning rate is tuned, on a log scale (App. B.5)."""
ADAM_BETA_RANGE: tuple[float, float] = (0.6, 0.999)
"""Range in which β1 and β2 are tuned (App. B.5)."""


@dataclass
class _AdamState:
    theta: Tensor
    m: Tensor
    v: Tensor
    step: int = 0
    pending: int | None = None  # attack round whose reply has not been used yet


class AdamActive(Adversary):
    """Alg. 4 of Diana et al.: send each target her own (Adam-updated) model.

    In attack round t for target c: first use the reply to the previous attack round (the
    pseudo-gradient θ_c^a - θ_c) for one Adam step on θ_c^a, then send θ_c^a. The first attack
    round sends the latest model c returned (Alg. 4, line 1), or ``init_models[c]``.
    :meth:`estimate` applies the last pending step and returns θ_c^a.

    Args:
        targets: attacked clients.
        start_round: first attack round.
        n_rounds: number of attack rounds ``|T_c^a|`` (consecutive from ``start_round``).
        lr, betas, eps: Adam's hyper-parameters (tune them with :func:`tune_adam_active`).
        init_models: optional ``{client: θ}`` to start from (e.g. when the attack phase is a
            separate :func:`~flprivacy.federation.run_fedavg` call continuing a passive run).
        per_client: optional ``{client: (lr, (β1, β2))}`` replacing ``lr`` and ``betas`` for
            those clients (Adam tuned per client, App. B.5).
    """

    def __init__(self, targets: Iterable[int], start_round: int, n_rounds: int, lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 init_models: Mapping[int, Tensor] | None = None,
                 per_client: Mapping[int, tuple[float, tuple[float, float]]] | None = None):
        check_positive("lr", lr, "AdamActive")
        check_int("start_round", start_round, "AdamActive")
        check_positive("eps", eps, "AdamActive")
        if n_rounds < 1 or lr <= 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"need n_rounds >= 1, lr > 0 and betas in [0, 1); got {n_rounds}, {lr}, {betas}.")
        self.targets = set(int(c) for c in targets)
        self.rounds = range(int(start_round), int(start_round) + int(n_rounds))
        self.lr, self.betas, self.eps = float(lr), (float(betas[0]), float(betas[1])), float(eps)
        self.init_models = dict(init_models or {})
        self.per_client = {int(c): (float(lr_c), (float(b[0]), float(b[1]))) for c, (lr_c, b) in (per_client or {}).items()}
        for c, (lr_c, b) in self.per_client.items():
            if not (lr_c > 0 and all(0 <= v < 1 for v in b)):
                raise ValueError(f"AdamActive: per_client[{c}] needs lr > 0 and betas in [0, 1); got {lr_c}, {b}.")
        self.state: dict[int, _AdamState] = {}

    def forge(self, round: int, client: int, global_model: Tensor, log: MessageLog) -> Tensor | None:
        if client not in self.targets or round not in self.rounds:
            return None
        st = self.state.get(client)
        if st is None:
            start = self.init_models.get(client)
            if start is None:
                start = log.last_returned(client, before=round)
            if start is None:
                raise RuntimeError(
                    f"AdamActive: client {client} has returned no model before round {round} and no init_models "
                    "entry was given; start the attack after an honest exchange or pass init_models."
                )
            st = self.state[client] = _AdamState(start.detach().clone(), torch.zeros_like(start), torch.zeros_like(start))
        else:
            self._step(client, log)
        st.pending = round
        return st.theta.clone()

    def _step(self, client: int, log: MessageLog) -> None:
        st = self.state[client]
        if st.pending is None:
            return
        reply = log.exchange(st.pending, client).returned
        lr, betas = self.per_client.get(client, (self.lr, self.betas))
        adam_step(st, st.theta - reply.to(st.theta.dtype), lr, betas, self.eps)
        st.pending = None

    def estimate(self, client: int, log: MessageLog) -> Tensor:
        """θ_c^a after the last attack round (Alg. 4, line 6)."""
        if client not in self.state:
            raise KeyError(f"client {client} was never attacked (targets {sorted(self.targets)}, rounds {self.rounds}).")
        self._step(client, log)
        return self.state[client].theta.clone()

    def estimates(self, log: MessageLog) -> dict[int, Tensor]:
        """:meth:`estimate` of every attacked client."""
        return {c: self.estimate(c, log) for c in sorted(self.state)}


def adam_step(st, grad: Tensor, lr, betas, eps) -> None:
    """One Adam step (Kingma & Ba 2015, Alg. 1) on ``st.theta`` with moments ``st.m``, ``st.v``;
    ``lr`` and betas may be tensors broadcasting against the rows of ``theta``."""
    b1, b2 = betas
    st.step += 1
    st.m.mul_(b1).add_((1 - b1) * grad)
    st.v.mul_(b2).add_((1 - b2) * grad * grad)
    mhat = st.m / (1 - b1**st.step)
    vhat = st.v / (1 - b2**st.step)
    st.theta.sub_(lr * mhat / (vhat.sqrt() + eps))


# ---- replaying the attack for many hyper-parameters ----------------------------------------------
def simulate_adam_active(model: FLModel, clients: Sequence[ClientData], starts: Sequence[Tensor],
                         local: LocalSGD | DPLocalSGD, n_rounds: int, lr: Tensor, beta1: Tensor, beta2: Tensor, *,
                         eps: float = 1e-8, seed: int = 0, replies: bool = False) -> list[Tensor] | tuple[list[Tensor], list[Tensor]]:
    """Alg. 4 on each client for M hyper-parameter settings at once.

    Client c starts from ``starts[c]``; each of ``n_rounds`` rounds she runs ``local`` on the M
    forged models (one shuffling per round, shared by the M models; for a
    :class:`~flprivacy.defences.DPLocalSGD`, one Poisson batch and one noise draw per step, see
    :func:`~flprivacy.defences.dp_sgd_many`), and every model takes an Adam step on its
    pseudo-gradient with its own (lr, β1, β2).

    A setting whose estimate diverges (Adam's step too large) ends with every entry +inf, which
    :func:`tune_adam_active` scores as an infinite loss.

    Returns:
        one ``(M, d)`` tensor of final estimates θ_c^a per client; with ``replies``, also the
        ``(M, d)`` models each client returned in the last attack round.
    """
    where = "simulate_adam_active"
    check_clients(clients, where)
    check_int("n_rounds", n_rounds, where, minimum=0)
    check_seed("seed", seed, where)
    check_positive("eps", eps, where)
    if len(starts) != len(clients):
        raise ValueError(f"{where}: give one start per client; got {len(clients)} clients and {len(starts)} starts.")
    starts = [model._as_theta(as_tensor(f"starts[{c}]", s, where=where), f"starts[{c}]") for c, s in enumerate(starts)]
    for c, s in enumerate(starts):
        check_finite(f"starts[{c}]", s, where)
    hp = [as_tensor(n, v, where=where, ndim=(0, 1), dtype=torch.float64).reshape(-1) for n, v in
          (("lr", lr), ("beta1", beta1), ("beta2", beta2))]
    if not hp[0].numel() or any(h.numel() != hp[0].numel() for h in hp):
        raise ValueError(f"{where}: lr, beta1, beta2 must hold the same number M >= 1 of settings; got "
                         f"{[h.numel() for h in hp]}.")
    if not bool((torch.isfinite(hp[0]) & (hp[0] > 0)).all()):
        raise ValueError(f"{where}: every lr must be finite and > 0; got {hp[0].tolist()[:10]}.")
    for n, h in (("beta1", hp[1]), ("beta2", hp[2])):
        if not bool(((h >= 0) & (h < 1)).all()):
            raise ValueError(f"{where}: every {n} must lie in [0, 1); got {h.tolist()[:10]}.")
    stack = LinearStack(model)
    lr, beta1, beta2 = (torch.as_tensor(v, dtype=model.dtype).view(1, -1, 1) for v in (lr, beta1, beta2))
    M, C = lr.shape[1], len(clients)
    gens = [generator(child_seed(seed, 7, c)) for c in range(C)]
    theta = torch.stack([s.to(model.dtype).expand(M, -1) for s in starts]).clone()  # (C, M, d)
    st = _AdamState(theta, torch.zeros_like(theta), torch.zeros_like(theta))
    returned = st.theta.clone()
    for _ in range(n_rounds):
        if isinstance(local, DPLocalSGD):
            returned = torch.stack([dp_sgd_many(stack, st.theta[c].nan_to_num(posinf=0.0), clients[c], local, gens[c])
                                    for c in range(C)])
        else:
            returned = torch.stack(local_sgd_many(stack, list(st.theta), clients, local, gens))
        adam_step(st, st.theta - returned, lr, (beta1, beta2), eps)
        bad = ~torch.isfinite(st.theta).all(-1, keepdim=True)
        if bool(bad.any()):  # a diverged setting stays diverged; keep it from producing NaN warnings
            st.theta.copy_(torch.where(bad, torch.full_like(st.theta, float("inf")), st.theta))
    return (list(st.theta), list(returned)) if replies else list(st.theta)


@dataclass
class AdamTuning:
    """Result of :func:`tune_adam_active`."""

    lr: float
    betas: tuple[float, float]
    loss: float  # the clients' mean training loss at the chosen setting
    study: optuna.Study
    estimates: list[Tensor]  # each client's θ_c^a at the chosen setting (from the replay)


def tune_adam_active(model: FLModel, clients: Sequence[ClientData], starts: Sequence[Tensor],
                     local: LocalSGD | DPLocalSGD, n_rounds: int, *, n_trials: int = 50, batch: int = 10, lr_range: tuple[float, float] = ADAM_LR_RANGE,
                     beta_range: tuple[float, float] = ADAM_BETA_RANGE, seed: int = 0) -> AdamTuning:
    """Choose Adam's (lr, β1, β2) for Alg. 4 with Optuna (App. B.5).

    The objective is the clients' training loss (mean over the targets, weighted by their
    sizes) of the estimates θ_c^a after ``n_rounds`` attack rounds, as in the paper; note that
    it needs the clients' data, so this tuning is itself an oracle. Trials are asked in waves
    of ``batch`` and evaluated together by :func:`simulate_adam_active` (Optuna's ask-and-tell
    interface), the TPE sampler seeded with ``seed``. ``local`` is the client update the
    adversary replays: plain SGD, or the clients' own DP-SGD (the authors' code tunes with the
    DP trainer in the loop).
    """
    if n_trials < 1 or batch < 1:
        raise ValueError(f"need n_trials >= 1 and batch >= 1, got {n_trials}, {batch}.")
    check_seed("seed", seed, "tune_adam_active")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed % 2**32, n_startup_trials=min(10, n_trials), constant_liar=True)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    stack = LinearStack(model)
    sizes = torch.tensor([c.n for c in clients], dtype=torch.float64)
    best: tuple[float, list[Tensor]] = (math.inf, [])
    done = 0
    while done < n_trials:
        trials = [study.ask() for _ in range(min(batch, n_trials - done))]
        params = [(t.suggest_float("lr", *lr_range, log=True), t.suggest_float("beta1", *beta_range),
                   t.suggest_float("beta2", *beta_range)) for t in trials]
        lr, b1, b2 = (torch.tensor(col) for col in zip(*params))
        finals = simulate_adam_active(model, clients, starts, local, n_rounds, lr, b1, b2, seed=seed)
        with torch.no_grad():
            losses = torch.stack([stack.loss(th.nan_to_num(posinf=0.0), c.X, c.y).double()
                                  .masked_fill(~torch.isfinite(th).all(1), math.inf)
                                  for th, c in zip(finals, clients)])  # (clients, M)
        value = (losses * sizes.unsqueeze(1)).sum(0) / sizes.sum()
        value = torch.nan_to_num(value, nan=math.inf)
        for i, t in enumerate(trials):
            study.tell(t, float(value[i]) if math.isfinite(value[i]) else 1e300)
            if value[i] < best[0]:
                best = (float(value[i]), [f[i].clone() for f in finals])
        done += len(trials)
    if not math.isfinite(best[0]):
        raise NonFiniteError(f"tune_adam_active: every one of the {n_trials} Adam settings diverged (non-finite estimates); "
                             f"lower lr_range={lr_range} or check the clients' local learning rate.")
    bp = study.best_params
    return AdamTuning(lr=bp["lr"], betas=(bp["beta1"], bp["beta2"]), loss=best[0], study=study, estimates=best[1])


def tune_adam_active_per_client(model: FLModel, clients: Sequence[ClientData], starts: Sequence[Tensor],
                                local: LocalSGD | DPLocalSGD, n_rounds: int, *, n_trials: int = 50, batch: int = 10,
                                seed: int = 0) -> dict[int, AdamTuning]:
    """:func:`tune_adam_active` for each client alone: App. B.5, Adam's hyper-parameters "are
    optimized to minimize each client's training loss". Client c's study is seeded with
    ``child_seed(seed, c)``. Returns ``{c: AdamTuning}``; pass
    ``per_client={c: (t.lr, t.betas)}`` to :class:`AdamActive`."""
    if len(starts) != len(clients):
        raise ValueError(f"tune_adam_active_per_client: give one start per client; got {len(clients)} clients and "
                         f"{len(starts)} starts.")
    return {c: tune_adam_active(model, [clients[c]], [starts[c]], local, n_rounds, n_trials=n_trials, batch=batch,
                                seed=child_seed(seed, c)) for c in range(len(clients))}


class SendBackAll(Adversary):
    """The active adversary of the gradient-based baseline (Chen et al. 2022; Diana §2.3): in
    every attack round, send each target her own latest returned model instead of θ^t, so
    that she keeps training on her local data (:class:`flprivacy.threats.SendBack` for many
    targets at once). ``init_models[c]`` is sent when c has returned nothing yet in this run
    (an attack phase run as a separate :func:`~flprivacy.federation.run_fedavg` call)."""

    def __init__(self, targets: Iterable[int], rounds: Iterable[int], init_models: Mapping[int, Tensor] | None = None):
        self.targets = set(int(c) for c in targets)
        self.rounds = set(int(r) for r in rounds)
        self.init_models = dict(init_models or {})

    def forge(self, round: int, client: int, global_model: Tensor, log: MessageLog) -> Tensor | None:
        if client not in self.targets or round not in self.rounds:
            return None
        try:  # the usual case, full participation: the reply of the previous round
            return log.exchange(round - 1, client).returned
        except KeyError:
            last = log.last_returned(client, before=round)
        if last is None:
            last = self.init_models.get(client)
        if last is None:
            raise RuntimeError(f"SendBackAll: client {client} returned no model before round {round}.")
        return last
