"""The approximate and weighted attack (AWA) of Song, Wang & Zuazua (2025) and its baselines.

A FedAvg client trains E epochs, each over B mini-batches of its N images (N/B images each),
reshuffling its data at the start of every epoch (Song Alg. 1). The attacker (the server)
observes θ_t and θ_{t+1} and knows η, E, B and N (Remark 2.1).

- **Scenarios** (§3, :class:`Scenario`): (E, B) = (1, 1), (E>1, 1), (1, B>1) can be replayed
  exactly: full-batch epochs do not depend on the order of the images, and a single shuffled
  epoch is replayed by a dummy stored in the shuffled order. With E>1 and B>1 the client
  reshuffles between epochs, the attacker cannot know which images shared a mini-batch in
  epoch 2, and no replay is exact (:func:`replay_gap` measures it).
- **Interpolation** (eq. 19-20, :func:`interpolate`): θ̃_{t,e} = θ_t + (e/E)(θ_{t+1} - θ_t)
  approximates the model after epoch e; attacking epoch e alone from θ̃_{t,e-1} is
  Scenario 3 (one epoch of B mini-batches, exactly replayable).
- **Layer-weighted loss** (eq. 23, :func:`weighted_distance`) with linearly increasing weights
  per layer kind (eq. 24, :func:`linear_weights`) and the weight q_en on the layers whose
  update has the largest relative error in mean *and* variance (eq. 25-30,
  :func:`enhanced_layers`, :func:`layer_weights`).
- **Bayesian optimisation** of Q = (q_cv, q_bn, q_fc, q_en, p_mean, p_var) over the ranges of
  Table II (:data:`TABLE_II`), minimising eq. 33 (Optuna's GP sampler with expected
  improvement, eq. 35-40): :mod:`.awa_search`, whose :func:`~flprivacy.attacks.awa_search.tune_weights`
  and :class:`~flprivacy.attacks.awa_search.WeightSearch` are importable from here too.
- **Baselines**: DLG (eq. 10: unweighted squared L2 on the exactly replayed update,
  :func:`dlg_attack`) and AGIC (Xu et al. 2022: one gradient step on a combined batch with a
  layer-weighted cosine loss, :func:`agic_attack`).

Sign convention: as in :mod:`.inversion`, an update is θ - θ' (the paper writes
Δθ = θ' - θ); every distance here is invariant to flipping both signs.
Labels are known to the attacker, as in Song §5.1.

Every attack runs on the device of θ_t (a CPU or a GPU): move θ_t, θ_{t+1}, the images and the
labels there first (``awa_table4_resnet18`` runs Table IV on a GPU this way). The dummy's
initialisation is drawn on the CPU, so a seed gives the same start on every device.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import generator as make_generator
from ..federation import local_sgd
from ..models import FLModel
from ..validation import as_tensor, check_finite, check_int, check_positive, check_seed
from .inversion import Reconstruction, decode_dummy, dummy_latent, update_distance

__all__ = [
    "AWAWeights", "Layer", "PAPER_SCENARIOS", "Scenario", "TABLE_II", "UNWEIGHTED", "agic_attack", "awa_attack",
    "client_update", "dlg_attack", "enhanced_layers", "interpolate", "layer_weights", "linear_weights",
    "model_layers", "replay", "replay_gap", "weighted_distance",
]


# ---- §3: the four FedAvg scenarios ---------------------------------------------------------------
@dataclass(frozen=True)
class Scenario:
    """A client's local training: ``epochs`` E passes over its data, each split into ``batches``
    B mini-batches (Song §3; B = 1 is full-batch gradient descent)."""

    epochs: int
    batches: int

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs, "Scenario", minimum=1)
        check_int("batches", self.batches, "Scenario", minimum=1)

    @property
    def replayable(self) -> bool:
        """Whether the attacker can replay the client's training exactly (Song §3), which holds
        unless E > 1 and B > 1, where the per-epoch reshuffling is unknown (Scenario 4)."""
        return self.epochs == 1 or self.batches == 1

    @property
    def case(self) -> int:
        """Song's scenario number, 1 = (1, 1), 2 = (E>1, 1), 3 = (1, B>1), 4 = (E>1, B>1)."""
        return 1 + (self.epochs > 1) + 2 * (self.batches > 1)


#: The four cases of Song §5.2 and Table IV, with N = 4 images; (E, B) = (1, 1), (4, 1), (1, 4), (2, 2).
PAPER_SCENARIOS: tuple[Scenario, ...] = (Scenario(1, 1), Scenario(4, 1), Scenario(1, 4), Scenario(2, 2))


def _check_batches(n: int, batches: int, where: str, name: str = "X") -> int:
    check_int("batches", batches, where, minimum=1)
    if n % batches:
        raise ValueError(f"{where}: the {n} images ({name}) must split into batches={batches} mini-batches of equal "
                         f"size (Song §2.2 assumes N divisible by B); choose batches dividing {n}.")
    return n // batches


def _check_image_size(model: FLModel, X: Tensor, where: str) -> None:
    """Images must have the model's side (fully convolutional prefixes accept any size silently)."""
    side = getattr(model.module, "image_size", None)
    if side is not None and tuple(X.shape[-2:]) != (side, side):
        raise ValueError(f"{where}: X must hold images of {side}x{side} pixels for this model; got shape "
                         f"{tuple(X.shape)}.")


def _images_labels(model: FLModel, X: Tensor, y: Tensor, where: str) -> tuple[Tensor, Tensor]:
    X = check_finite("X", as_tensor("X", X, where=where, ndim=4, min_rows=1, dtype=model.dtype), where)
    _check_image_size(model, X, where)
    y = as_tensor("y", y, where=where, ndim=1, rows=X.shape[0])
    if y.dtype.is_floating_point:
        if not bool(torch.isfinite(y).all()) or not bool((y == y.round()).all()):
            raise ValueError(f"{where}: y must hold integer class labels; got {y.tolist()}.")
        y = y.long()
    return X, y


def client_update(model: FLModel, theta: Tensor, X: Tensor, y: Tensor, *, lr: float, epochs: int, batches: int,
                  seed: int = 0) -> tuple[Tensor, list[Tensor]]:
    """A FedAvg client's local training (Song Alg. 1, ClientUpdate): ``epochs`` epochs, each a
    fresh random permutation of the N images split into ``batches`` mini-batches of N/B, one
    SGD step of size ``lr`` per mini-batch (eq. 3).

    Each epoch is :func:`flprivacy.clients.local_sgd` on the permuted images, so this is the
    library's client with its reshuffling made visible.

    Returns:
        ``(theta_next, orders)``: θ_{t+1} and the E permutations used (``orders[e][j]`` is the
        image in position j of epoch e; mini-batch b is positions b·N/B ... (b+1)·N/B - 1).
    """
    where = "client_update"
    theta = check_finite("theta", model._as_theta(theta), where).detach()
    X, y = _images_labels(model, X, y, where)
    check_positive("lr", lr, where)
    check_int("epochs", epochs, where, minimum=1)
    size = _check_batches(X.shape[0], batches, where)
    check_seed("seed", seed, where)
    gen = make_generator(seed)
    orders = []
    for _ in range(epochs):
        order = torch.randperm(X.shape[0], generator=gen) if batches > 1 else torch.arange(X.shape[0])
        theta = local_sgd(model, theta, X[order], y[order], lr=lr, batch_size=size, shuffle=False)
        orders.append(order)
    return theta, orders


def replay(model: FLModel, theta: Tensor, X: Tensor, y: Tensor, *, lr: float, batches: int, epochs: int = 1,
           orders: Sequence[Tensor] | None = None) -> Tensor:
    """The attacker's replay G(X, Y) of local training: the update θ - θ' after ``epochs``
    epochs of ``batches`` mini-batches taken in the given order (eq. 13, 15, 17, 21),
    differentiable in ``X`` (second-order autograd through the SGD steps).

    ``orders`` (one permutation per epoch) defaults to the identity: the dummy is stored in
    the order of the client's (first) shuffle, which is all an attacker can do.
    """
    where = "replay"
    theta = check_finite("theta", model._as_theta(theta), where)
    X = as_tensor("X", X, where=where, ndim=4, min_rows=1, dtype=model.dtype)
    if not X.requires_grad:
        check_finite("X", X, where)
    _check_image_size(model, X, where)
    y = as_tensor("y", y, where=where, rows=X.shape[0])
    check_positive("lr", lr, where)
    check_int("epochs", epochs, where, minimum=1)
    size = _check_batches(X.shape[0], batches, where)
    if orders is not None and len(orders) != epochs:
        raise ValueError(f"replay: orders must hold one permutation per epoch ({epochs}); got {len(orders)}.")
    th = theta
    for e in range(epochs):
        Xe, ye = (X, y) if orders is None else (X[orders[e]], y[orders[e]])
        th = local_sgd(model, th, Xe, ye, lr=lr, batch_size=size, shuffle=False, create_graph=True)
    return theta - th


def replay_gap(model: FLModel, theta: Tensor, X: Tensor, y: Tensor, *, lr: float, epochs: int, batches: int,
               seed: int = 0) -> float:
    """Relative error ‖Ĝ - G‖ / ‖G‖ of the attacker's best exact replay (Song §3).

    The client trains with :func:`client_update`; the attacker, who holds the images in the
    order of the first epoch's shuffle (the best it can do), replays every epoch in that order.
    Zero up to rounding for Scenarios 1-3; for Scenario 4 the later epochs' mini-batches differ
    (unless the shuffle happens to repeat the first partition) and the gap is of order
    η² E B ‖∇²ℓ‖ ‖∇ℓ‖ / ‖G‖.
    """
    theta_next, orders = client_update(model, theta, X, y, lr=lr, epochs=epochs, batches=batches, seed=seed)
    theta = model._as_theta(theta).detach()
    X, y = _images_labels(model, X, y, "replay_gap")
    first = orders[0]
    with torch.enable_grad():
        guess = replay(model, theta, X[first], y[first], lr=lr, batches=batches, epochs=epochs).detach()
    truth = theta - theta_next
    return float((guess - truth).norm() / truth.norm().clamp_min(torch.finfo(truth.dtype).tiny))


# ---- §4.1: interpolated intermediate models ------------------------------------------------------
def interpolate(theta: Tensor, theta_next: Tensor, epochs: int) -> tuple[Tensor, Tensor]:
    """Interpolated intermediate models (Song eq. 19-20).

    θ̃_{t,e} = θ_t + (e/E)(θ_{t+1} - θ_t), e = 0..E, and the per-epoch updates
    Δθ̃_{t,e} = θ̃_{t,e-1} - θ̃_{t,e} (library sign θ - θ'), all equal to (θ_t - θ_{t+1})/E.

    Returns:
        ``(models, updates)`` of shapes ``(E + 1, d)`` (row 0 is θ_t, row E is θ_{t+1}) and ``(E, d)``.
    """
    where = "interpolate"
    theta = check_finite("theta", as_tensor("theta", theta, where=where, ndim=1, min_rows=1, floating=True), where)
    theta_next = check_finite("theta_next", as_tensor("theta_next", theta_next, where=where, ndim=1,
                                                       dtype=theta.dtype), where)
    if theta_next.shape != theta.shape:
        raise ValueError(f"interpolate: theta and theta_next must have the same shape; got {tuple(theta.shape)} and "
                         f"{tuple(theta_next.shape)}.")
    check_int("epochs", epochs, where, minimum=1)
    e = torch.arange(epochs + 1, dtype=theta.dtype, device=theta.device).unsqueeze(1)
    models = (theta_next - theta) / epochs * e + theta
    return models, models[:-1] - models[1:]


# ---- §4.2: layers and their weights --------------------------------------------------------------
@dataclass(frozen=True)
class Layer:
    """One layer of the update (Song eq. 22): a module with parameters, its kind
    (``"cv"`` convolution, ``"bn"`` BatchNorm, ``"fc"`` dense) and its slice of θ."""

    name: str
    kind: str
    start: int
    stop: int


_KINDS: tuple[tuple[type[nn.Module], str], ...] = (
    (nn.Conv2d, "cv"), (nn.Conv1d, "cv"), (nn.modules.batchnorm._BatchNorm, "bn"), (nn.Linear, "fc"))


def model_layers(model: FLModel) -> list[Layer]:
    """The layers l = 1..L of a model in the order of θ, each with its kind (Song eq. 22, 24)."""
    if not isinstance(model, FLModel):
        raise TypeError(f"model_layers: model must be an FLModel; got {type(model).__name__}.")
    offsets, pos = {}, 0
    for name, numel in zip(model._names, model._numels):
        offsets[name] = (pos, pos + numel)
        pos += numel
    layers = []
    for mname, mod in model.module.named_modules():
        own = [f"{mname}.{p}" if mname else p for p, _ in mod.named_parameters(recurse=False)]
        if not own:
            continue
        kind = next((k for cls, k in _KINDS if isinstance(mod, cls)), None)
        if kind is None:
            raise ValueError(f"model_layers: layer {mname!r} ({type(mod).__name__}) is not a convolution, BatchNorm or "
                             "dense layer; Song eq. 24 weights only these three kinds.")
        spans = sorted(offsets[n] for n in own)
        if any(a[1] != b[0] for a, b in zip(spans, spans[1:])):
            raise ValueError(f"model_layers: the parameters of {mname!r} are not contiguous in θ.")
        layers.append(Layer(mname, kind, spans[0][0], spans[-1][1]))
    layers.sort(key=lambda l: l.start)
    return layers


def _check_layers(layers: Sequence[Layer], where: str, dim: int | None = None) -> list[Layer]:
    if not isinstance(layers, (list, tuple)) or not layers or not all(isinstance(l, Layer) for l in layers):
        raise ValueError(f"{where}: layers must be a non-empty list of Layer (from model_layers(model)); got {layers!r}.")
    if dim is not None and layers[-1].stop != dim:
        raise ValueError(f"{where}: the layers cover {layers[-1].stop} entries but the update has {dim}; build them "
                         "with model_layers(model) for this model.")
    return list(layers)


def linear_weights(layers: Sequence[Layer], q_cv: float, q_bn: float, q_fc: float) -> Tensor:
    """Linearly increasing weights per layer kind (Song eq. 24a-c).

    The l-th layer of a kind with L_kind layers gets (q_kind - 1)/(L_kind - 1) · (l - 1) + 1,
    from 1 at its first layer to q_kind at its last; a kind with a single layer gets q_kind.

    Returns:
        ``(L,)`` float64 weights in the order of ``layers``.
    """
    where = "linear_weights"
    layers = _check_layers(layers, where)
    q = {"cv": check_positive("q_cv", q_cv, where), "bn": check_positive("q_bn", q_bn, where),
         "fc": check_positive("q_fc", q_fc, where)}
    out = torch.ones(len(layers), dtype=torch.float64)
    for kind, qk in q.items():
        idx = [i for i, l in enumerate(layers) if l.kind == kind]
        Lk = len(idx)
        for l, i in enumerate(idx, start=1):
            out[i] = qk if Lk == 1 else (qk - 1) / (Lk - 1) * (l - 1) + 1
    return out


def _layer_stats(u: Tensor, layers: Sequence[Layer]) -> tuple[Tensor, Tensor]:
    mean = torch.stack([u[l.start:l.stop].mean() for l in layers])
    var = torch.stack([u[l.start:l.stop].var(unbiased=False) for l in layers])
    return mean, var


def enhanced_layers(pred: Tensor, target: Tensor, layers: Sequence[Layer], p_mean: float, p_var: float) -> Tensor:
    """The layers 𝒫 whose weight is set to q_en (Song eq. 25-30).

    e_mean^(l) = ``|μ(Δθ̂^(l)) - μ(Δθ^(l))| / |μ(Δθ^(l))|`` and e_var^(l) likewise with the
    variance σ² (eq. 25-26); 𝒫_mean holds the ⌈p_mean · L⌉ layers of largest e_mean
    (eq. 28), 𝒫_var the ⌈p_var · L⌉ of largest e_var (eq. 29), and 𝒫 = 𝒫_mean ∩ 𝒫_var (eq. 30).

    Returns:
        a boolean mask of shape ``(L,)``.
    """
    where = "enhanced_layers"
    pred = check_finite("pred", as_tensor("pred", pred, where=where, ndim=1, floating=True), where).detach()
    target = check_finite("target", as_tensor("target", target, where=where, ndim=1, dtype=pred.dtype), where)
    if pred.shape != target.shape:
        raise ValueError(f"enhanced_layers: pred and target must have the same shape; got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}.")
    layers = _check_layers(layers, where, pred.numel())
    for name, p in (("p_mean", p_mean), ("p_var", p_var)):
        check_positive(name, p, where, strict=False, maximum=1.0)
    return _enhanced_mask(_layer_stats(pred.double(), layers), _layer_stats(target.detach().double(), layers),
                          p_mean, p_var)


def _enhanced_mask(pred_stats: tuple[Tensor, Tensor], target_stats: tuple[Tensor, Tensor], p_mean: float,
                   p_var: float) -> Tensor:
    """𝒫 of eq. 25-30 from the per-layer (mean, variance) of the dummy's and the target update."""
    (m_hat, v_hat), (m, v) = pred_stats, target_stats
    L = m.numel()
    tiny = torch.finfo(torch.float64).tiny
    e_mean = (m_hat - m).abs() / m.abs().clamp_min(tiny)
    e_var = (v_hat - v).abs() / v.abs().clamp_min(tiny)
    n_mean, n_var = math.ceil(p_mean * L), math.ceil(p_var * L)
    top_mean = torch.zeros(L, dtype=torch.bool, device=m.device)
    top_mean[torch.argsort(e_mean, descending=True, stable=True)[:n_mean]] = True
    top_var = torch.zeros(L, dtype=torch.bool, device=m.device)
    top_var[torch.argsort(e_var, descending=True, stable=True)[:n_var]] = True
    return top_mean & top_var


@dataclass(frozen=True)
class AWAWeights:
    """Q = (q_cv, q_bn, q_fc, q_en, p_mean, p_var) (Song eq. 31). The default weights are all
    1 with no enhancement, which turns eq. 23 into DLG's unweighted loss (eq. 10)."""

    q_cv: float = 1.0
    q_bn: float = 1.0
    q_fc: float = 1.0
    q_en: float = 1.0
    p_mean: float = 0.0
    p_var: float = 0.0

    def __post_init__(self) -> None:
        for name in ("q_cv", "q_bn", "q_fc", "q_en"):
            check_positive(name, getattr(self, name), "AWAWeights")
        for name in ("p_mean", "p_var"):
            check_positive(name, getattr(self, name), "AWAWeights", strict=False, maximum=1.0)

    def as_dict(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in ("q_cv", "q_bn", "q_fc", "q_en", "p_mean", "p_var")}


#: Song et al.'s Table II as printed: the search range of each component of Q.
_SONG_TABLE_II: dict[str, tuple[float, float]] = {"q_cv": (1.0, 1000.0), "q_bn": (1.0, 1000.0), "q_fc": (1.0, 1000.0),
                                                  "q_en": (1.0, 1000.0), "p_mean": (0.0, 0.5), "p_var": (0.0, 0.5)}

#: The default search ranges of Q in :func:`~flprivacy.attacks.awa_search.tune_weights` (Song Table II;
#: a test holds them equal to the paper's table as the book's ledger records it).
TABLE_II: dict[str, tuple[float, float]] = dict(_SONG_TABLE_II)

#: The corner Q = (1, 1, 1, 1, 0, 0) of Table II's box, where eq. 23 is DLG's unweighted eq. 10
#: (every layer weight 1 and no enhanced layer, since ⌈0·L⌉ = 0).
UNWEIGHTED: dict[str, float] = {"q_cv": 1.0, "q_bn": 1.0, "q_fc": 1.0, "q_en": 1.0, "p_mean": 0.0, "p_var": 0.0}


def layer_weights(pred: Tensor, target: Tensor, layers: Sequence[Layer], Q: AWAWeights) -> Tensor:
    """The weights q^(l) of eq. 23: linear per kind (eq. 24), then q_en on the enhanced layers
    𝒫 (eq. 27, 30)."""
    if not isinstance(Q, AWAWeights):
        raise TypeError(f"layer_weights: Q must be an AWAWeights; got {type(Q).__name__}.")
    w = linear_weights(layers, Q.q_cv, Q.q_bn, Q.q_fc)
    mask = enhanced_layers(pred, target, layers, Q.p_mean, Q.p_var)
    w[mask] = float(Q.q_en)
    return w


def weighted_distance(pred: Tensor, target: Tensor, layers: Sequence[Layer], weights: Tensor) -> Tensor:
    """Σ_l q^(l) ‖Δθ̂^(l) - Δθ^(l)‖² (Song eq. 23); with all weights 1 it is DLG's eq. 10
    (:func:`flprivacy.attacks.inversion.update_distance` with ``kind="l2"``). Computed as one
    weighted elementwise sum over θ (each parameter carries its layer's weight), which equals
    the per-layer sum up to rounding and avoids slicing the update layer by layer."""
    where = "weighted_distance"
    pred = as_tensor("pred", pred, where=where, ndim=1, floating=True)
    if not pred.requires_grad:
        check_finite("pred", pred, where)
    target = check_finite("target", as_tensor("target", target, where=where, ndim=1, dtype=pred.dtype), where)
    if pred.shape != target.shape:
        raise ValueError(f"weighted_distance: pred and target must have the same shape; got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}.")
    layers = _check_layers(layers, where, pred.numel())
    weights = check_finite("weights", as_tensor("weights", weights, where=where, ndim=1, rows=len(layers),
                                                floating=True), where)
    if bool((weights < 0).any()):
        raise ValueError(f"weighted_distance: weights must be >= 0; got {weights.tolist()}.")
    return _fused_distance(pred, target, _per_parameter(weights, layers, pred.numel(), pred.dtype, pred.device))


def _per_parameter(weights: Tensor, layers: Sequence[Layer], dim: int, dtype: torch.dtype = torch.float64,
                   device: torch.device | str | None = None) -> Tensor:
    """The layer weights q^(l) of eq. 23 spread over θ: entry i holds the weight of the layer that
    owns parameter i (0 for a parameter in no layer), so that eq. 23 is one weighted elementwise
    sum Σ_i w_i (Δθ̂_i - Δθ_i)², without slicing the update per layer."""
    out = torch.zeros(dim, dtype=dtype, device=device)
    for l, w in zip(layers, weights.tolist()):
        out[l.start:l.stop] = w
    return out


def _fused_distance(pred: Tensor, target: Tensor, w: Tensor) -> Tensor:
    """Σ_i w_i (pred_i - target_i)²: eq. 23 with per-parameter weights (one elementwise pass; its
    backward is 2 w (pred - target), with no per-layer zero-filled gradient)."""
    diff = pred - target
    return (w * diff * diff).sum()


class _WeightedLoss:
    """Eq. 23 with Q's weights for a fixed target, as one weighted elementwise sum.

    The per-parameter weights of eq. 24 and the target's per-layer statistics (eq. 25-26) are
    computed once; each call recomputes only the dummy's statistics and the enhanced set 𝒫
    (eq. 27-30) and overwrites the weight of the layers in 𝒫 by q_en."""

    def __init__(self, layers: Sequence[Layer], target: Tensor, Q: AWAWeights) -> None:
        self.layers, self.Q = list(layers), Q
        self.target_stats = _layer_stats(target.detach().double(), layers)
        self.base = _per_parameter(linear_weights(layers, Q.q_cv, Q.q_bn, Q.q_fc), layers, target.numel(),
                                  target.dtype, target.device)

    def _mask(self, pred: Tensor) -> Tensor:
        return _enhanced_mask(_layer_stats(pred.detach().double(), self.layers), self.target_stats, self.Q.p_mean,
                              self.Q.p_var)

    def __call__(self, pred: Tensor, target: Tensor) -> Tensor:
        w = self.base
        mask = self._mask(pred)
        if bool(mask.any()):
            w = w.clone()
            for i in torch.nonzero(mask).flatten().tolist():
                w[self.layers[i].start:self.layers[i].stop] = float(self.Q.q_en)
        return _fused_distance(pred, target, w)


def _agic_weights(layers: Sequence[Layer]) -> Tensor:
    """AGIC's linearly increasing layer weights: 1, 2, ..., L in depth order (Xu et al. 2022;
    Song et al. do not give AGIC's values, so this is the plainest linear choice)."""
    return torch.arange(1, len(layers) + 1, dtype=torch.float64)


def _weighted_cosine(pred: Tensor, target: Tensor, layers: Sequence[Layer], weights: Tensor) -> Tensor:
    """Σ_l w_l (1 - cos(Δθ̂^(l), Δθ^(l))) / Σ_l w_l: AGIC's layer-weighted cosine loss."""
    cos = torch.stack([F.cosine_similarity(pred[l.start:l.stop], target[l.start:l.stop], dim=0, eps=1e-12)
                       for l in layers])
    w = weights.to(cos)
    return (w * (1 - cos)).sum() / w.sum()


# ---- the attack loop ------------------------------------------------------------------------------
def _run(model: FLModel, start: Tensor, target: Tensor, labels: Tensor, image_shape: Sequence[int], *,
         loss_fn: Callable[[Tensor, Tensor], Tensor], lr: float, batches: int, epochs: int, attack_lr: float,
         iterations: int, seed: int, clamp: bool = True,
         report: Callable[[int, float], bool] | None = None, report_every: int = 0,
         callback: Callable[[int, Tensor], None] | None = None) -> tuple[Reconstruction, int]:
    """Adam on the dummy images (Song Alg. 2, RecAttack). ``report(it, f)`` receives the
    unweighted eq. 33 distance every ``report_every`` iterations and returns True to stop."""
    gen = make_generator(seed)
    n = labels.numel()
    latent = dummy_latent(n, image_shape, 1, "uniform", gen).to(device=start.device, dtype=model.dtype)
    latent.requires_grad_(True)
    opt = torch.optim.Adam([latent], lr=attack_lr)
    history: list[float] = []
    t0 = time.perf_counter()
    done = 0
    for it in range(iterations):
        opt.zero_grad(set_to_none=True)
        X = decode_dummy(latent, image_shape)
        pred = replay(model, start, X, labels, lr=lr, batches=batches, epochs=epochs)
        loss = loss_fn(pred, target)
        value = float(loss.detach())
        if not math.isfinite(value):
            warnings.warn(f"attack diverged at iteration {it} (objective {value}); returning the last finite iterate. "
                          "Lower attack_lr.", RuntimeWarning, stacklevel=3)
            break
        loss.backward()
        opt.step()
        if clamp:
            with torch.no_grad():
                latent.clamp_(0, 1)
        history.append(value)
        done = it + 1
        if callback is not None:
            with torch.no_grad():
                callback(it, latent.detach().clamp(0, 1))
        if report is not None and report_every and (it + 1) % report_every == 0 and it + 1 < iterations:
            if report(it + 1, float(((pred.detach() - target) ** 2).sum())):
                break
    seconds = time.perf_counter() - t0
    images = latent.detach().clamp(0, 1)
    return Reconstruction(images=images, labels=labels.clone(), loss=history, seconds=seconds), done


def _objective(model: FLModel, start: Tensor, target: Tensor, images: Tensor, labels: Tensor, *, lr: float,
               batches: int, epochs: int) -> float:
    """Song eq. 33: f(Q) = ‖G(X̂*) - Δθ‖², the unweighted squared distance of the final dummy's
    replayed update to the (interpolated) target."""
    with torch.enable_grad():
        pred = replay(model, start, images, labels, lr=lr, batches=batches, epochs=epochs).detach()
    return float(update_distance(pred, target, "l2"))


@dataclass
class _Problem:
    start: Tensor
    target: Tensor
    labels: Tensor
    lr: float
    batches: int
    epochs: int
    epoch: int
    approximate: bool


def _problem(model: FLModel, theta: Tensor, theta_next: Tensor, labels: Tensor, image_shape: Sequence[int], *,
             lr: float, epochs: int, batches: int, epoch: int, approximate: bool | None, where: str) -> _Problem:
    theta = check_finite("theta", model._as_theta(theta), where).detach()
    theta_next = check_finite("theta_next", model._as_theta(theta_next, "theta_next"), where,
                              "the observed model is broken (training diverged?)").detach()
    labels = as_tensor("labels", labels, where=where, ndim=1, min_rows=1)
    if labels.dtype.is_floating_point or labels.dtype == torch.bool:
        raise TypeError(f"{where}: labels must be integer class indices; got {labels.dtype}.")
    labels = labels.long()
    if len(image_shape) != 3 or min(int(s) for s in image_shape) < 1:
        raise ValueError(f"{where}: image_shape must be (C, H, W) with positive sizes; got {tuple(image_shape)}.")
    check_positive("lr", lr, where)
    check_int("epochs", epochs, where, minimum=1)
    _check_batches(labels.numel(), batches, where, "labels")
    check_int("epoch", epoch, where, minimum=1)
    if epoch > epochs:
        raise ValueError(f"{where}: epoch must be in 1..epochs={epochs}; got {epoch}.")
    scen = Scenario(epochs, batches)
    approximate = (not scen.replayable) if approximate is None else bool(approximate)
    if approximate:
        models, updates = interpolate(theta, theta_next, epochs)
        return _Problem(models[epoch - 1], updates[epoch - 1], labels, lr, batches, 1, epoch, True)
    if not scen.replayable:
        raise ValueError(f"{where}: (E, B) = ({epochs}, {batches}) is Scenario 4; the client's reshuffling between "
                         "epochs cannot be replayed exactly (Song §3). Use approximate=True (interpolation, eq. 19-20).")
    return _Problem(theta, theta - theta_next, labels, lr, batches, epochs, 0, False)


def awa_attack(model: FLModel, theta: Tensor, theta_next: Tensor, *, labels: Tensor, image_shape: Sequence[int],
               lr: float, epochs: int = 1, batches: int = 1, Q: AWAWeights | None = None, epoch: int = 1,
               approximate: bool | None = None, attack_lr: float = 0.1, iterations: int = 1000, seed: int = 0,
               gradient_scale: bool = False, callback: Callable[[int, Tensor], None] | None = None) -> Reconstruction:
    """RecAttack of Song Alg. 2: reconstruct a client's N images from θ_t and θ_{t+1}.

    Scenarios 1-3 are replayed exactly (``approximate=None`` chooses); Scenario 4 attacks epoch
    ``epoch`` alone, from θ̃_{t,e-1} with target Δθ̃_{t,e} (eq. 19-21; Song uses e = 1). Each
    iteration recomputes the weights of eq. 24 and 27 from the current dummy update and takes
    an Adam step on the weighted loss eq. 23. ``settings["objective"]`` is f(Q) (eq. 33).

    Args:
        labels: the N known labels (Song §5.1).
        lr, epochs, batches: the client's η, E and B (N divisible by B).
        Q: the layer-weight parameters; None is all ones (the unweighted eq. 10).
        attack_lr, iterations: Adam's step size and steps (Song Table I: 0.1 and 1,000).
        seed: seeds the dummy initialisation (uniform pixels in [0, 1]).
        gradient_scale: divide eq. 23 by η² (not in the paper), so that the loss compares
            gradients rather than η-scaled gradients; ``awa_diagnostics`` (§9 of the chapter) found
            this, with sigmoid activations or BatchNorm on running statistics, needed at ResNet-18.
        callback: called as ``callback(iteration, images)`` after each step.
    """
    where = "awa_attack"
    check_seed("seed", seed, where)
    check_positive("attack_lr", attack_lr, where)
    check_int("iterations", iterations, where, minimum=1)
    Q = AWAWeights() if Q is None else Q
    if not isinstance(Q, AWAWeights):
        raise TypeError(f"{where}: Q must be an AWAWeights; got {type(Q).__name__}.")
    _check_flag("gradient_scale", gradient_scale, where)
    pb = _problem(model, theta, theta_next, labels, image_shape, lr=lr, epochs=epochs, batches=batches, epoch=epoch,
                  approximate=approximate, where=where)
    rec, _ = _awa_run(model, pb, image_shape, Q, attack_lr=attack_lr, iterations=iterations, seed=seed,
                      gradient_scale=gradient_scale, callback=callback)
    return rec


def _check_flag(name: str, value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name} must be True or False; got {value!r}.")
    return value


def _awa_run(model: FLModel, pb: _Problem, image_shape: Sequence[int], Q: AWAWeights, *, attack_lr: float,
             iterations: int, seed: int, gradient_scale: bool = False,
             report: Callable[[int, float], bool] | None = None, report_every: int = 0,
             callback: Callable[[int, Tensor], None] | None = None) -> tuple[Reconstruction, int]:
    loss_fn: Callable[[Tensor, Tensor], Tensor] = _WeightedLoss(model_layers(model), pb.target, Q)
    if gradient_scale:
        weighted, factor = loss_fn, 1.0 / pb.lr ** 2

        def loss_fn(pred: Tensor, target: Tensor) -> Tensor:
            return weighted(pred, target) * factor

    rec, done = _run(model, pb.start, pb.target, pb.labels, image_shape, loss_fn=loss_fn, lr=pb.lr,
                     batches=pb.batches, epochs=pb.epochs, attack_lr=attack_lr, iterations=iterations, seed=seed,
                     report=report, report_every=report_every, callback=callback)
    rec.settings = dict(method="AWA", Q=Q.as_dict(), approximate=pb.approximate, epoch=pb.epoch, lr=pb.lr,
                        batches=pb.batches, attack_lr=attack_lr, iterations=iterations, iterations_run=done, seed=seed,
                        gradient_scale=gradient_scale,
                        objective=_objective(model, pb.start, pb.target, rec.images, pb.labels, lr=pb.lr,
                                             batches=pb.batches, epochs=pb.epochs))
    return rec, done


def dlg_attack(model: FLModel, theta: Tensor, theta_next: Tensor, *, labels: Tensor, image_shape: Sequence[int],
               lr: float, epochs: int = 1, batches: int = 1, attack_lr: float = 0.1, iterations: int = 1000,
               seed: int = 0) -> Reconstruction:
    """DLG as Song et al. run it (§5.2): the unweighted squared L2 loss eq. 10 on the exactly
    replayed update G_t, labels known, Adam. Raises :class:`ValueError` in Scenario 4, which has
    no exact replay ("DLG encounters difficulties", Table IV's dashes). ``settings["objective"]``
    is eq. 33's f for DLG's reconstruction, comparable with AWA's."""
    where = "dlg_attack"
    check_seed("seed", seed, where)
    check_positive("attack_lr", attack_lr, where)
    check_int("iterations", iterations, where, minimum=1)
    pb = _problem(model, theta, theta_next, labels, image_shape, lr=lr, epochs=epochs, batches=batches, epoch=1,
                  approximate=False, where=where)
    rec, done = _run(model, pb.start, pb.target, pb.labels, image_shape,
                     loss_fn=lambda p, t: update_distance(p, t, "l2"), lr=pb.lr, batches=pb.batches,
                     epochs=pb.epochs, attack_lr=attack_lr, iterations=iterations, seed=seed)
    rec.settings = dict(method="DLG", lr=lr, epochs=epochs, batches=batches, attack_lr=attack_lr,
                        iterations=iterations, iterations_run=done, seed=seed,
                        objective=_objective(model, pb.start, pb.target, rec.images, pb.labels, lr=pb.lr,
                                             batches=pb.batches, epochs=pb.epochs))
    return rec


def agic_attack(model: FLModel, theta: Tensor, theta_next: Tensor, *, labels: Tensor, image_shape: Sequence[int],
                lr: float, epochs: int = 1, batches: int = 1, attack_lr: float = 0.1, iterations: int = 1000,
                seed: int = 0) -> Reconstruction:
    """AGIC (Xu et al. 2022) as described by Song et al. (§1, §5.2).

    The E·B mini-batches of local training form one combined batch, and a *single* gradient
    step on it approximates the whole update: θ_t - θ_{t+1} ≈ η E B ∇ℓ(θ_t; X). The combined
    batch holds every image E times; with the E copies of an image tied to one dummy, its mean
    gradient is that of the N dummies, so the dummy has N images and the step size is η E B.
    The loss is the layer-weighted cosine distance Σ_l w_l (1 - cos_l) / Σ_l w_l with linearly
    increasing w_l = l (Song: "linearly increasing weights to convolutional and fully connected
    layers"; AGIC's exact values are not given, BatchNorm layers are weighted like the others).
    With a cosine loss the step size η E B does not matter: one step's direction does not
    depend on its length.
    """
    where = "agic_attack"
    check_seed("seed", seed, where)
    check_positive("attack_lr", attack_lr, where)
    check_int("iterations", iterations, where, minimum=1)
    pb = _problem(model, theta, theta_next, labels, image_shape, lr=lr, epochs=epochs, batches=batches, epoch=1,
                  approximate=False if Scenario(epochs, batches).replayable else True, where=where)
    layers = model_layers(model)
    w = _agic_weights(layers)
    theta = model._as_theta(theta).detach()
    target = theta - model._as_theta(theta_next, "theta_next").detach()
    rec, done = _run(model, theta, target, pb.labels, image_shape,
                     loss_fn=lambda p, t: _weighted_cosine(p, t, layers, w), lr=lr * epochs * batches, batches=1,
                     epochs=1, attack_lr=attack_lr, iterations=iterations, seed=seed)
    rec.settings = dict(method="AGIC", lr=lr, epochs=epochs, batches=batches, attack_lr=attack_lr,
                        iterations=iterations, iterations_run=done, seed=seed)
    return rec
