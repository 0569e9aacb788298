"""Xu & Neglia's learned mapping (2021, §4, Algo. 3): local model reconstruction for any model.

The attacker observes the messages (θ^t sent, θ_c^t returned) of one client, fits a network G
from θ to the update θ - θ_c on them (eq. 6), and returns argmin_θ ||G(θ)||² (eq. 7): the model at
which the learned local update vanishes, where the client would stop training.
:func:`learned_mapping_reconstruction` attacks one client, :func:`learned_mapping_reconstruction_batch`
several at once; :func:`decode_mapping` and :func:`follow_mapping` solve eq. 7 again on fitted maps,
optionally restricted to the span of the observed updates (:func:`update_span`).

For least-squares regression the exact reconstruction of :mod:`.reconstruction` (Xu & Neglia,
Obs. 1; Diana et al. 2025, Alg. 3) needs no learning; G's inputs are the same messages
(:data:`~flprivacy.attacks.reconstruction.Messages`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Literal, get_type_hints

import torch
from torch import Tensor, nn
from tqdm import tqdm

from .._keywords import check_keywords, spell_keywords
from ..config import generator as make_generator
from ..validation import as_tensor, check_finite, check_int, check_positive, check_seed
from .reconstruction import Messages, _pairs


# ---- Xu & Neglia Algo. 3: the learned mapping -------------------------------------------------
class UpdateMapping(nn.Module):
    """G: θ ↦ predicted update θ - θ_c (Xu & Neglia §4: one hidden layer of ``hidden`` ReLU units),
    for a batch of ``b`` independent attacks at once (weights ``(b, ...)``, one network per attack).

    Inputs are ``(θ - center) / in_scale`` (by default center 0 and scale 1: the raw model, as in
    the paper), outputs are in units of the updates' root-mean-square size ``out_scale``. ``hidden=0`` makes G affine, the exact form of the update map for full-batch
    least squares (Xu eq. 5). Initialisation as ``nn.Linear`` (uniform ±1/sqrt(fan_in)).
    """

    def __init__(self, b: int, d: int, hidden: int, center: Tensor, in_scale: Tensor, out_scale: Tensor,
                 generator: torch.Generator):
        super().__init__()
        self.hidden = hidden

        def uniform(*shape: int, fan_in: int) -> nn.Parameter:
            bound = 1.0 / math.sqrt(fan_in)
            return nn.Parameter((torch.rand(*shape, generator=generator) * 2 - 1) * bound)

        if hidden > 0:
            self.W1, self.b1 = uniform(b, d, hidden, fan_in=d), uniform(b, 1, hidden, fan_in=d)
            self.W2, self.b2 = uniform(b, hidden, d, fan_in=hidden), uniform(b, 1, d, fan_in=hidden)
        else:
            self.W1, self.b1 = uniform(b, d, d, fan_in=d), uniform(b, 1, d, fan_in=d)
        self.register_buffer("center", center.clone())  # (b, d)
        self.register_buffer("in_scale", in_scale.clone())  # (b,)
        self.register_buffer("out_scale", out_scale.clone())  # (b,)

    def normalized(self, z: Tensor) -> Tensor:
        """G in normalised units: ``z`` is ``(b, n, d)`` normalised inputs."""
        h = torch.baddbmm(self.b1, z, self.W1)
        if self.hidden > 0:
            h = torch.baddbmm(self.b2, torch.relu(h), self.W2)
        return h

    def forward(self, theta: Tensor) -> Tensor:
        """Predicted updates for models ``theta`` of shape ``(b, n, d)``, ``(b, d)``, or ``(d,)``
        / ``(n, d)`` when b = 1, in the models' units."""
        squeeze = theta.ndim == 1 or (theta.ndim == 2 and self.center.shape[0] == 1 and theta.shape[0] != 1)
        t = theta.to(self.center.dtype)
        if t.ndim == 1:
            t = t[None, None]
        elif t.ndim == 2:
            t = t[None] if squeeze else t[:, None]
        z = (t - self.center[:, None]) / self.in_scale[:, None, None]
        out = self.normalized(z) * self.out_scale[:, None, None]
        if theta.ndim == 1:
            return out[0, 0]
        return out[0] if squeeze else out[:, 0]


@dataclass
class LearnedMappingResult:
    """Result of :func:`learned_mapping_reconstruction` (one attack) or one entry of
    :func:`learned_mapping_reconstruction_batch`.

    Attributes:
        theta: θ̂_c^*, the minimiser of ||G(θ)||² found from ``theta_init``.
        theta_init: where the minimisation of eq. (7) started (the last returned model by default).
        mapping_loss: the final value of eq. (6), mean over messages of ||G(θ^t) - (θ^t - θ_c^t)||².
        relative_mapping_loss: the same divided by the mean ||θ^t - θ_c^t||² (0: perfect fit;
            1: no better than predicting zero).
        fit_curve: relative eq. (6) during fitting; ``decode_curve``: ||G(θ)||² during eq. (7).
        mapping: the fitted networks (shared by all entries of a batch; ``index`` is this entry's).
    """

    theta: Tensor
    theta_init: Tensor
    mapping_loss: float
    relative_mapping_loss: float
    fit_curve: list[float]
    decode_curve: list[float]
    mapping: UpdateMapping
    index: int = 0

    def predict(self, theta: Tensor) -> Tensor:
        """G(θ) of this attack, for ``(d,)`` or ``(n, d)`` models."""
        t = theta.to(self.mapping.center.dtype)
        t2 = t[None] if t.ndim == 1 else t
        z = (t2 - self.mapping.center[self.index]) / self.mapping.in_scale[self.index]
        sub = _select(self.mapping, self.index)
        out = sub.normalized(z[None])[0] * self.mapping.out_scale[self.index]
        return out[0] if t.ndim == 1 else out


def _select(G: UpdateMapping, i: int) -> UpdateMapping:
    """A view of network ``i`` of a batched mapping."""
    sub = UpdateMapping.__new__(UpdateMapping)
    nn.Module.__init__(sub)
    sub.hidden = G.hidden
    sub.W1, sub.b1 = nn.Parameter(G.W1[i:i + 1].detach(), False), nn.Parameter(G.b1[i:i + 1].detach(), False)
    if G.hidden > 0:
        sub.W2, sub.b2 = nn.Parameter(G.W2[i:i + 1].detach(), False), nn.Parameter(G.b2[i:i + 1].detach(), False)
    sub.register_buffer("center", G.center[i:i + 1])
    sub.register_buffer("in_scale", G.in_scale[i:i + 1])
    sub.register_buffer("out_scale", G.out_scale[i:i + 1])
    return sub


def _adam_decode(G: UpdateMapping, z0: Tensor, steps: int, lr: float, basis: Tensor | None = None,
                 checkpoints: Sequence[int] = (), progress: bool = False
                 ) -> tuple[Tensor, list[Tensor], dict[int, Tensor]]:
    """Eq. (7) by Adam in normalised units from ``z0`` ``(b, d)``: minimise ||G(z)||² over z, or over
    z = z0 + U a when ``basis`` U ``(b, d, k)`` is given. Returns the final z, the curve of
    ||G||² (normalised units) and the iterates after each step count in ``checkpoints``."""
    a = torch.zeros(z0.shape[0], basis.shape[2], dtype=z0.dtype) if basis is not None else z0.clone()
    a.requires_grad_(True)

    def point() -> Tensor:
        return z0 + torch.bmm(basis, a[:, :, None])[:, :, 0] if basis is not None else a

    opt_z = torch.optim.Adam([a], lr=lr)
    curve, snaps, marks = [], {}, set(checkpoints)
    if 0 in marks:
        snaps[0] = z0.detach().clone()
    for i in tqdm(range(steps), desc="minimise ||G|| (eq. 7)", disable=not progress, leave=False):
        opt_z.zero_grad()
        obj = G.normalized(point()[:, None]).pow(2).sum(2)[:, 0]  # (b,) ||G(θ)||², normalised units
        obj.sum().backward()
        opt_z.step()
        curve.append(obj.detach())
        if i + 1 in marks:
            snaps[i + 1] = point().detach().clone()
    return point().detach(), curve, snaps


def update_span(messages: Sequence[Messages], rtol: float = 1e-2) -> Tensor:
    """Orthonormal bases ``(b, d, k)`` of the spans of the observed updates θ^t - θ_c^t, one per
    message set: the right singular vectors whose singular value is at least ``rtol`` times the
    largest (k the largest such count over the sets; shorter bases are padded with zero columns,
    which do not move a decoded point). Used to restrict eq. (7) to the directions the client's
    updates explored."""
    check_positive("rtol", rtol, "update_span", strict=False)
    if not messages:
        raise ValueError("update_span: messages must hold at least one message set (e.g. [eavesdrop(log, c)]); got none.")
    bases = []
    for m in messages:
        s_, r_ = _pairs(m)
        check_finite("messages", s_ - r_, "update_span", "the updates θ^t - θ_c^t; drop those rounds first")
        _, sv, vh = torch.linalg.svd((s_ - r_).to(torch.float64), full_matrices=False)
        bases.append(vh[sv >= rtol * sv[0]].T)
    k = max(b_.shape[1] for b_ in bases)
    return torch.stack([torch.nn.functional.pad(b_, (0, k - b_.shape[1])) for b_ in bases]).to(torch.float32)


def decode_mapping(results: Sequence[LearnedMappingResult], *, steps: int, lr: float = 1e-2,
                   theta_init: Tensor | None = None, basis: Tensor | None = None,
                   checkpoints: Sequence[int] = ()) -> dict[int, Tensor]:
    """Eq. (7) again on already fitted maps (the entries of one
    :func:`learned_mapping_reconstruction_batch` call, in order): Adam on ||G(θ)||² from
    ``theta_init`` (default each result's ``theta_init``), optionally restricted to θ_init + span
    ``basis`` (``(b, d, k)``, e.g. :func:`update_span`). Returns the decoded models ``(b, d)`` after
    each step count in ``checkpoints`` and after ``steps`` (key ``steps``)."""
    where = "decode_mapping"
    check_int("steps", steps, where, minimum=0)
    check_positive("lr", lr, where)
    if not results:
        raise ValueError("decode_mapping: results must hold at least one LearnedMappingResult (from "
                         "learned_mapping_reconstruction_batch); got none.")
    G = results[0].mapping
    if any(r.mapping is not G for r in results) or [r.index for r in results] != list(range(len(results))):
        raise ValueError("decode_mapping: results must be all the entries of one learned_mapping_reconstruction_batch "
                         "call, in order.")
    b, d = len(results), G.center.shape[1]
    if theta_init is None:
        start = torch.stack([r.theta_init for r in results])
    else:
        start = check_finite("theta_init", as_tensor("theta_init", theta_init, where=where, floating=True), where)
        if start.numel() != b * d:
            raise ValueError(f"{where}: theta_init must be (b, d) = ({b}, {d}), one start per result; got "
                             f"{tuple(start.shape)}. Pass None to start from each result's theta_init.")
    start = start.to(G.center.dtype).reshape(b, d)
    if basis is not None:
        basis = check_finite("basis", as_tensor("basis", basis, where=where, floating=True), where)
        if basis.ndim != 3 or basis.shape[:2] != start.shape:
            raise ValueError(f"{where}: basis must be (b, d, k) = ({b}, {d}, k); got {tuple(basis.shape)}. "
                             "Build it with update_span(messages).")
    z0 = (start - G.center) / G.in_scale[:, None]
    B = None if basis is None else basis.to(z0.dtype)
    zf, _, snaps = _adam_decode(G, z0, steps, lr, B, tuple(checkpoints))
    snaps[steps] = zf
    return {k: z * G.in_scale[:, None] + G.center for k, z in snaps.items()}


@torch.no_grad()
def follow_mapping(results: Sequence[LearnedMappingResult], *, steps: int, alpha: float = 1.0,
                   theta_init: Tensor | None = None, checkpoints: Sequence[int] = ()) -> dict[int, Tensor]:
    """Another way to solve eq. (7) on already fitted maps (the entries of one
    :func:`learned_mapping_reconstruction_batch` call, in order): follow the learned local update
    instead of minimising ||G(θ)||², i.e. the fixed-point iteration θ ← θ - α G(θ), ``steps`` times
    from ``theta_init`` (default each result's ``theta_init``). G(θ) predicts θ - Local_Update(θ)
    (:class:`UpdateMapping`), so at α = 1 each step is the client's local update as G learned it, and a
    fixed point is a zero of G, the point eq. (7) looks for. Returns the iterates ``(b, d)`` after each
    step count in ``checkpoints`` and after ``steps`` (key ``steps``)."""
    where = "follow_mapping"
    check_int("steps", steps, where, minimum=0)
    check_positive("alpha", alpha, where)
    decode_mapping(results, steps=0, theta_init=theta_init)  # the same checks of results and theta_init
    G = results[0].mapping
    b, d = len(results), G.center.shape[1]
    theta = (torch.stack([r.theta_init for r in results]) if theta_init is None
             else torch.as_tensor(theta_init)).to(G.center.dtype).reshape(b, d)
    marks = set(checkpoints)
    out = {0: theta.clone()} if 0 in marks else {}
    for i in range(int(steps)):
        theta = theta - alpha * G(theta)
        if i + 1 in marks:
            out[i + 1] = theta.clone()
    check_finite("the followed iterates", theta, where, f"use a smaller alpha than {alpha}")
    out[int(steps)] = theta
    return out


@dataclass(frozen=True)
class _MappingSettings:
    """The settings of Algo. 3 and their defaults, one source for :func:`learned_mapping_reconstruction`
    and :func:`learned_mapping_reconstruction_batch` (their keyword arguments besides ``theta_init``)."""

    hidden: int = 1000
    fit_steps: int = 2000
    fit_lr: float = 1e-3
    decode_steps: int = 2000
    decode_lr: float = 1e-2
    decode_optimizer: Literal["adam", "lbfgs"] = "adam"
    normalize_inputs: bool = False
    seed: int = 0
    progress: bool = False

    @classmethod
    def of(cls, where: str, settings: dict) -> "_MappingSettings":
        check_keywords(where, settings, (f.name for f in fields(cls)))
        return cls(**settings)


# the settings' keywords and defaults in the two functions' signatures (help, the API pages), after theta_init
_takes_mapping_settings = spell_keywords(
    inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                      annotation=get_type_hints(_MappingSettings)[f.name])
    for f in fields(_MappingSettings))


@_takes_mapping_settings
def learned_mapping_reconstruction_batch(
    messages: Sequence[Messages],
    *,
    theta_init: Tensor | None = None,
    **settings,
) -> list[LearnedMappingResult]:
    """Xu & Neglia's Algo. 3 for several attacks at once (e.g. every client of a run, or every
    seed), as one batched computation: attack i has its own network G_i, fitted on its own
    messages. Adam is elementwise, so fitting the sum of the losses is the same as fitting each
    separately. All message sets must have the same shape ``(n, d)``.

    See :func:`learned_mapping_reconstruction` for the algorithm and the arguments;
    ``theta_init`` here is ``(b, d)``.
    """
    cfg = _MappingSettings.of("learned_mapping_reconstruction_batch", settings)
    check_int("hidden", cfg.hidden, "learned_mapping_reconstruction", minimum=0)
    check_int("fit_steps", cfg.fit_steps, "learned_mapping_reconstruction", minimum=0)
    check_int("decode_steps", cfg.decode_steps, "learned_mapping_reconstruction", minimum=0)
    check_seed("seed", cfg.seed, "learned_mapping_reconstruction")
    pairs = [_pairs(m) for m in messages]
    if not pairs:
        raise ValueError("learned_mapping_reconstruction_batch needs at least one message set.")
    shapes = {tuple(s.shape) for s, _ in pairs}
    if len(shapes) != 1:
        raise ValueError(
            f"all message sets must have the same shape (n, d) to be batched; got {sorted(shapes)}. Attack them "
            "one by one with learned_mapping_reconstruction, or observe the same number of rounds."
        )
    n, d = shapes.pop()
    if n < 2:
        raise ValueError(f"the learned mapping needs at least 2 observed rounds, got {n}.")
    for s, r in pairs:
        if not (torch.isfinite(s).all() and torch.isfinite(r).all()):
            raise ValueError("messages contain NaN or inf; drop those rounds before the attack.")
    dtype = torch.float32
    X = torch.stack([s for s, _ in pairs]).to(dtype)  # (b, n, d) sent models θ^t
    Y = torch.stack([s - r for s, r in pairs]).to(dtype)  # (b, n, d) updates θ^t - θ_c^t (Algo. 3 line 1)
    b = X.shape[0]
    if cfg.normalize_inputs:
        center = X.mean(1)
        in_scale = (X - center[:, None]).pow(2).sum(2).mean(1).sqrt()
        in_scale = torch.where(in_scale > 0, in_scale, torch.ones_like(in_scale))
    else:  # the paper's G reads the raw model vector
        center, in_scale = torch.zeros(b, d, dtype=dtype), torch.ones(b, dtype=dtype)
    out_scale = Y.pow(2).sum(2).mean(1).sqrt()
    out_scale = torch.where(out_scale > 0, out_scale, torch.ones_like(out_scale))
    G = UpdateMapping(b, d, cfg.hidden, center, in_scale, out_scale, make_generator(cfg.seed))
    Z = (X - center[:, None]) / in_scale[:, None, None]
    Yn = Y / out_scale[:, None, None]
    opt = torch.optim.Adam(G.parameters(), lr=cfg.fit_lr)
    fit_curve = []
    for _ in tqdm(range(cfg.fit_steps), desc="fit G (eq. 6)", disable=not cfg.progress, leave=False):
        opt.zero_grad()
        per_attack = (G.normalized(Z) - Yn).pow(2).sum(2).mean(1)  # (b,) eq. (6), normalised units
        per_attack.sum().backward()
        opt.step()
        fit_curve.append(per_attack.detach())
    for p in G.parameters():
        p.requires_grad_(False)
    with torch.no_grad():
        final = (G.normalized(Z) - Yn).pow(2).sum(2).mean(1)
    if theta_init is None:
        start = torch.stack([r[-1] for _, r in pairs]).to(dtype)
    else:
        start = torch.as_tensor(theta_init).to(dtype).reshape(b, d)
    z = ((start - center) / in_scale[:, None]).clone().requires_grad_(True)
    decode_curve = []
    if cfg.decode_optimizer == "adam":
        zf, decode_curve, _ = _adam_decode(G, z.detach(), cfg.decode_steps, cfg.decode_lr, progress=cfg.progress)
        z = zf
    elif cfg.decode_optimizer == "lbfgs":
        # the attacks are independent, so minimising the sum minimises each; L-BFGS copes with the
        # ill-conditioning of ||G||² (for least squares, G = W(θ - θ*) and κ(WᵀW) = κ(W)²)
        opt_z = torch.optim.LBFGS([z], lr=1.0, max_iter=cfg.decode_steps, history_size=50, tolerance_grad=1e-12,
                                  tolerance_change=1e-15, line_search_fn="strong_wolfe")

        def closure() -> Tensor:
            opt_z.zero_grad()
            obj = G.normalized(z[:, None]).pow(2).sum(2)[:, 0]
            decode_curve.append(obj.detach())
            total = obj.sum()
            total.backward()
            return total

        opt_z.step(closure)
    else:
        raise ValueError(f"decode_optimizer must be 'adam' or 'lbfgs', got {cfg.decode_optimizer!r}.")
    theta = z.detach() * in_scale[:, None] + center
    fit_curves = torch.stack(fit_curve, 1) if fit_curve else torch.zeros(b, 0)
    dec_curves = torch.stack(decode_curve, 1) if decode_curve else torch.zeros(b, 0)
    out = []
    for i, (s, _) in enumerate(pairs):
        out.append(LearnedMappingResult(
            theta=theta[i].to(s.dtype), theta_init=start[i].to(s.dtype),
            mapping_loss=float(final[i]) * float(out_scale[i]) ** 2, relative_mapping_loss=float(final[i]),
            fit_curve=fit_curves[i].tolist(), decode_curve=(dec_curves[i] * out_scale[i] ** 2).tolist(),
            mapping=G, index=i))
    return out


@_takes_mapping_settings
def learned_mapping_reconstruction(
    messages: Messages,
    *,
    theta_init: Tensor | None = None,
    **settings,
) -> LearnedMappingResult:
    """Xu & Neglia's local model reconstruction heuristic (Algo. 3), for any model.

    1. ΔM_c = {(θ^t, θ^t - θ_c^t)}: the observed updates (line 1).
    2. Fit G (``hidden`` ReLU units, Adam, full batch over the messages) to minimise
       Σ_t ||G(θ^t) - (θ^t - θ_c^t)||² (eq. 6).
    3. Minimise ||G(θ)||² over θ with Adam (eq. 7), starting from ``theta_init`` (default: the
       last returned model, as in the authors' follow-up code, fedkit-learn), and return the
       result: the model at which the learned update vanishes, where the client would stop.

    The paper gives the architecture and the optimiser, not the step counts or learning rates;
    ours are the defaults here. G reads the raw model vector, as in the paper (and the authors'
    follow-up code); its output is in units of the updates' root-mean-square size, which does not
    change the function class. Fed raw models that vary little, the ReLU units keep their
    on/off pattern around the observed models, so G extrapolates almost affinely, like the exact
    map of least squares; ``normalize_inputs=True`` centres and scales the inputs instead, which
    fits as well but extrapolates less linearly (the chapter compares both).

    Args:
        messages: observed pairs (sent, returned) of one client, any model, at least 2 rounds.
        hidden: hidden ReLU units of G (1000 in the paper); 0 gives an affine G.
        fit_steps, fit_lr: Adam steps and learning rate for eq. (6).
        decode_steps, decode_lr: Adam steps and learning rate for eq. (7) (in the models' units,
            or in normalised units with ``normalize_inputs``); for L-BFGS, its iteration cap.
        decode_optimizer: ``"adam"`` (the paper) or ``"lbfgs"`` (quasi-Newton with line search,
            much better on the ill-conditioned ||G(θ)||² of nearly affine maps).
        normalize_inputs: centre the inputs on the observed models' mean and scale them to unit
            spread.
        theta_init: start of eq. (7) (default: the returned model of the last observed round).
        seed: initialisation of G.
        progress: progress bars.
    """
    init = None if theta_init is None else torch.as_tensor(theta_init).reshape(1, -1)
    _MappingSettings.of("learned_mapping_reconstruction", settings)
    return learned_mapping_reconstruction_batch([messages], theta_init=init, **settings)[0]
