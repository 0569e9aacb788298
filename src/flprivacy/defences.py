"""Defences: federated DP-SGD through Opacus (Diana et al. 2025, App. C.4).

Every client runs her local update (Alg. 2) as DP-SGD (Abadi et al. 2016): per-sample
gradients clipped to norm C, Gaussian noise of standard deviation σC added to their sum,
mini-batches drawn by Poisson sampling with rate q = B/S_c. All three steps -- the per-sample
clipping, the noise and the privacy accounting -- are Opacus's (:class:`opacus.PrivacyEngine`);
this module only wires them into :func:`flprivacy.federation.run_fedavg`:

- the first time a client trains, ``make_private_with_epsilon`` chooses σ so that the client's
  whole training -- ``total_rounds`` rounds of E local epochs, i.e. ``total_rounds·E·⌈S_c/B⌉``
  DP-SGD steps -- is (ε, δ)-DP at the sample level (RDP accountant);
- every later round reuses that σ with ``make_private`` on the same engine, so that the engine's
  accountant records every step the client ever took: :meth:`DPLocalSGD.epsilons` reports the
  ε actually spent, which must not exceed the target.

:func:`dp_sgd_many` replays the same DP-SGD update for many models at once (the same Poisson
sampling rate, flat per-sample clipping, noise σC and averaging by the expected batch size as
Opacus, on one batch and one noise draw shared by the models): what an adversary who tunes
Alg. 4 with the DP trainer in the loop simulates (App. B.5; the authors' code tunes Adam against
the DP clients).

The guarantee is per client and per sample: any one row of a client's data changes the
distribution of everything she ever sends by at most (ε, δ). It says nothing about what the
rows have *in common* -- the correlation between the sensitive attribute and the target in her
population -- which is what attribute inference exploits.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import torch
from torch import Tensor

from .federation import ClientData
from .models import FLModel
from .stack import LinearStack
from .validation import as_tensor, check_finite, check_int, check_positive

__all__ = ["DPLocalSGD", "PAPER_CLIP_GRID", "clipped_grad_sum", "dp_sgd_many"]

PAPER_CLIP_GRID: dict[str, tuple[float, ...]] = {
    "Medical": (5e5, 7e5, 9e5, 1e6, 3e6, 5e6, 7e6, 9e6),
    "Income-L": (1e6, 3e6, 5e6, 7e6, 9e6, 1e7, 3e7, 5e7),
    "Income-A": (1e6, 3e6, 5e6, 7e6, 9e6, 1e7, 3e7, 5e7),
}
"""The clipping norms of App. C.4 ("Hyperparameters for defense"); the targets are in dollars,
hence the large norms."""


@dataclass
class _ClientDP:
    engine: object
    dataset: object
    noise_multiplier: float
    sample_rate: float


@dataclass
class DPLocalSGD:
    """Client c's local update as DP-SGD through Opacus (Diana App. C.4; Abadi et al. 2016).

    A :class:`flprivacy.clients.LocalTrainer`: ``run_fedavg(..., local=DPLocalSGD(...))``.
    One instance keeps one Opacus ``PrivacyEngine`` per client (keyed by the client's data
    object), so that its accountant covers all rounds of the run.

    Args:
        lr: client learning rate η.
        max_grad_norm: per-sample clipping norm C.
        target_epsilon, target_delta: the (ε, δ) budget of each client's whole training.
        total_rounds: the number of rounds in which the client will train (passive and active);
            σ is chosen for ``total_rounds·E`` epochs.
        epochs: local epochs E per round.
        batch_size: expected Poisson batch size B (sample rate q = B/S_c).
        accountant: Opacus's accountant (``"rdp"``, ``"prv"`` or ``"gdp"``).

    Raises:
        ValueError: non-positive lr, clipping norm, ε, or δ outside (0, 1).
    """

    lr: float
    max_grad_norm: float
    target_epsilon: float
    target_delta: float
    total_rounds: int
    epochs: int = 1
    batch_size: int = 32
    accountant: str = "rdp"
    _clients: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        where = "DPLocalSGD"
        check_positive("lr", self.lr, where)
        check_positive("max_grad_norm", self.max_grad_norm, where)
        check_positive("target_epsilon", self.target_epsilon, where)
        if not (isinstance(self.target_delta, (int, float)) and 0 < self.target_delta < 1):
            raise ValueError(f"{where}: target_delta must be in (0, 1) (e.g. 1e-5, below 1/S_c); got {self.target_delta!r}.")
        check_int("total_rounds", self.total_rounds, where, minimum=1)
        check_int("epochs", self.epochs, where, minimum=1)
        check_int("batch_size", self.batch_size, where, minimum=1)
        if self.accountant not in ("rdp", "prv", "gdp"):
            raise ValueError(f"{where}: accountant must be 'rdp', 'prv' or 'gdp'; got {self.accountant!r}.")

    def __call__(self, model: FLModel, theta: Tensor, data: ClientData, generator: torch.Generator) -> Tensor:
        from opacus import PrivacyEngine
        from torch.utils.data import DataLoader, TensorDataset

        module = model.to_module(theta).train()
        opt = torch.optim.SGD(module.parameters(), lr=self.lr)
        X = data.X.to(model.dtype)
        key = id(data)
        st = self._clients.get(key)
        dataset = TensorDataset(X, data.y) if st is None else st.dataset  # one dataset object: one accountant
        loader = DataLoader(dataset, batch_size=min(self.batch_size, data.n), generator=generator)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ss]ecure RNG.*")
            warnings.filterwarnings("ignore", message=".*full backward hook.*")
            warnings.filterwarnings("ignore", message=".*[Oo]ptimal order.*")
            if st is None:
                engine = PrivacyEngine(accountant=self.accountant)
                module, opt, loader = engine.make_private_with_epsilon(
                    module=module, optimizer=opt, data_loader=loader, target_epsilon=self.target_epsilon,
                    target_delta=self.target_delta, epochs=self.total_rounds * self.epochs,
                    max_grad_norm=self.max_grad_norm, noise_generator=generator)
                self._clients[key] = _ClientDP(engine, dataset, float(opt.noise_multiplier), float(loader.sample_rate))
            else:
                module, opt, loader = st.engine.make_private(
                    module=module, optimizer=opt, data_loader=loader, noise_multiplier=st.noise_multiplier,
                    max_grad_norm=self.max_grad_norm, noise_generator=generator)
            for _ in range(self.epochs):
                for xb, yb in loader:
                    opt.zero_grad(set_to_none=True)
                    if xb.shape[0] == 0:  # Poisson sampling may draw an empty batch: noise-only step
                        out = module(X[:1]) * 0.0
                        out.sum().backward()
                    else:
                        model._loss(module(xb), model._as_targets(yb, xb)).mean().backward()
                    opt.step()
        out = torch.cat([p.detach().reshape(-1) for p in module._module.parameters()]).to(model.dtype)
        return out

    def noise_multiplier(self, data: ClientData) -> float:
        """σ chosen by Opacus for the client holding ``data`` (after her first round)."""
        return self._clients[id(data)].noise_multiplier

    def steps_per_epoch(self, data: ClientData) -> int:
        """⌈S_c/B⌉: Opacus's Poisson loader draws this many batches per epoch, each row with
        probability q = 1/⌈S_c/B⌉."""
        return math.ceil(data.n / min(self.batch_size, data.n))

    def planned_noise_multiplier(self, data: ClientData) -> float:
        """The σ that ``make_private_with_epsilon`` chooses for ``data``: the same call to
        Opacus's ``get_noise_multiplier`` (target ε, δ, q = 1/⌈S_c/B⌉, ``total_rounds·E``
        epochs), without training."""
        st = self._clients.get(id(data))
        if st is not None:
            return st.noise_multiplier
        from opacus.accountants.utils import get_noise_multiplier

        return float(get_noise_multiplier(target_epsilon=self.target_epsilon, target_delta=self.target_delta,
                                          sample_rate=1 / self.steps_per_epoch(data),
                                          epochs=self.epochs * self.total_rounds, accountant=self.accountant))

    def epsilons(self, clients: list[ClientData]) -> list[float]:
        """ε spent by each client so far, as Opacus's accountant reports it at ``target_delta``
        (NaN for a client who never trained)."""
        out = []
        for c in clients:
            st = self._clients.get(id(c))
            out.append(math.nan if st is None else float(st.engine.get_epsilon(self.target_delta)))
        return out


def dp_sgd_many(stack: LinearStack, thetas: Tensor, data: ClientData, dp: DPLocalSGD,
                generator: torch.Generator) -> Tensor:
    """One round of ``dp``'s local DP-SGD (Abadi et al. 2016, as Opacus runs it) from each of the
    M models ``thetas`` ``(M, d)`` of one client, at once.

    Each of the E⌈S_c/B⌉ steps draws one Poisson batch (rate q = 1/⌈S_c/B⌉) and one Gaussian
    noise vector N(0, σ²C²I), shared by the M models; every model clips its per-sample gradients
    to norm C (one flat norm over all parameters), adds the noise to their sum, divides by
    Opacus's expected batch size ⌊S_c q⌋ and takes an SGD step with ``dp.lr``. σ is the one
    ``dp`` uses for this client (:meth:`DPLocalSGD.planned_noise_multiplier`). The privacy
    accountant is not touched: this is the adversary's simulation, not the client's training.

    Returns:
        the ``(M, d)`` models after the round.
    """
    where = "dp_sgd_many"
    if not isinstance(dp, DPLocalSGD):
        raise TypeError(f"{where}: dp must be a DPLocalSGD; got {type(dp).__name__}.")
    thetas = as_tensor("thetas", thetas, where=where, floating=True)
    if thetas.ndim != 2 or thetas.shape[1] != stack.dim or thetas.shape[0] == 0:
        raise ValueError(f"{where}: thetas must have shape (M, {stack.dim}) with M >= 1 models; got "
                         f"{tuple(thetas.shape)}. Stack the models with torch.stack([...]).")
    check_finite("thetas", thetas, where)
    n = data.n
    K = dp.steps_per_epoch(data)
    q, batch = 1.0 / K, int(n * (1.0 / K))
    sigma, C = dp.planned_noise_multiplier(data), float(dp.max_grad_norm)
    X, y = data.X.to(stack.dtype), data.y
    theta = thetas.to(stack.dtype).clone()
    for _ in range(dp.epochs * K):
        rows = (torch.rand(n, generator=generator) < q).nonzero().squeeze(1)
        noise = torch.randn(stack.dim, generator=generator, dtype=stack.dtype) * (sigma * C)
        g = _clipped_sum(stack, theta, X[rows], y[rows], C) if rows.numel() else torch.zeros_like(theta)
        theta -= dp.lr * (g + noise) / batch
    return theta


def clipped_grad_sum(stack: LinearStack, thetas: Tensor, X: Tensor, y: Tensor, max_grad_norm: float,
                     mask: Tensor | None = None) -> Tensor:
    """Σ_j min(1, C/(‖g_j‖ + 10⁻⁶)) g_j for each of the M models ``thetas`` ``(M, d)``: the sum of
    the per-sample gradients g_j = ∇ℓ(θ_m, x_j, y_j), each clipped to norm C = ``max_grad_norm``
    (one flat norm over all parameters, as Opacus's ``DPOptimizer.clip_and_accumulate``), what
    DP-SGD adds its noise to. ``X`` is ``(n, p)`` (shared by the models) or ``(M, n, p)`` with
    ``y`` ``(M, n)``; a 0/1 ``mask`` ``(M, n)`` leaves out model m's rows with mask 0 (clients'
    Poisson batches of different sizes padded to one tensor). Per-sample gradients come from
    :meth:`flprivacy.stack.LinearStack.per_sample_signals` (Δ_j ⊗ A_j per linear layer), never
    materialised per sample. Used by :func:`dp_sgd_many` and by the DP oracle of
    :func:`flprivacy.optimum.tuned_local_models`.

    Returns:
        the ``(M, d)`` sums.
    """
    where = "clipped_grad_sum"
    if not isinstance(stack, LinearStack):
        raise TypeError(f"{where}: stack must be a flprivacy.stack.LinearStack; got {type(stack).__name__}.")
    thetas = as_tensor("thetas", thetas, where=where, floating=True)
    if thetas.ndim != 2 or thetas.shape[1] != stack.dim or thetas.shape[0] == 0:
        raise ValueError(f"{where}: thetas must have shape (M, {stack.dim}) with M >= 1 models; got "
                         f"{tuple(thetas.shape)}.")
    check_finite("thetas", thetas, where)
    check_positive("max_grad_norm", max_grad_norm, where)
    X = as_tensor("X", X, where=where, floating=True)
    y = as_tensor("y", y, where=where)
    n = X.shape[-2] if X.ndim >= 2 else -1
    if X.ndim not in (2, 3) or (X.ndim == 3 and X.shape[0] != thetas.shape[0]) or n == 0:
        raise ValueError(f"{where}: X must be (n, p) or (M, n, p) with M = {thetas.shape[0]} and n >= 1 rows; "
                         f"got {tuple(X.shape)}.")
    if X.shape[-1] != stack.linears[0].n_in:
        raise ValueError(f"{where}: X must have {stack.linears[0].n_in} columns (the model's input width); got "
                         f"{tuple(X.shape)}.")
    check_finite("X", X, where)
    if y.shape[-1:] != (n,) or y.ndim > X.ndim - 1:
        raise ValueError(f"{where}: y must have one entry per row of X ({n}); got shape {tuple(y.shape)}.")
    if y.is_floating_point():
        check_finite("y", y, where)
    if mask is not None:
        mask = as_tensor("mask", mask, where=where)
        if mask.shape != (thetas.shape[0], n):
            raise ValueError(f"{where}: mask must have shape (M, n) = ({thetas.shape[0]}, {n}); got "
                             f"{tuple(mask.shape)}.")
    return _clipped_sum(stack, thetas.to(stack.dtype), X, y, float(max_grad_norm), mask)


def _clipped_sum(stack: LinearStack, theta: Tensor, X: Tensor, y: Tensor, C: float,
                 mask: Tensor | None = None) -> Tensor:
    """:func:`clipped_grad_sum` without the checks (the hot loop of DP-SGD)."""
    M = theta.shape[0]
    inputs, deltas = stack.per_sample_signals(theta, X, y)
    if mask is not None:
        deltas = [d * mask.to(d.dtype).unsqueeze(-1) for d in deltas]
    sq = torch.zeros(M, X.shape[-2], dtype=stack.dtype)
    for layer, a, d in zip(stack.linears, inputs, deltas):
        sq += (d * d).sum(-1) * ((a * a).sum(-1) + (1.0 if layer.b is not None else 0.0))
    factor = (C / (sq.sqrt() + 1e-6)).clamp(max=1.0).unsqueeze(-1)  # Opacus's flat clipping
    g = torch.zeros_like(theta)
    for layer, a, d in zip(stack.linears, inputs, deltas):
        fd = d * factor
        g[:, layer.w] = torch.bmm(fd.transpose(1, 2), a).reshape(M, -1)
        if layer.b is not None:
            g[:, layer.b] = fd.sum(1)
    return g
