"""FedAvg's local update (Diana et al. 2025, Alg. 2) for all sampled clients at once.

:func:`flprivacy.federation.local_sgd` trains one client: K = E⌈S_c/B⌉ steps of
θ ← θ − η ∇(1/|b|) Σ_{i∈b} ℓ(θ, x_i, y_i). When every client of a round runs the same
:class:`~flprivacy.federation.LocalSGD` on the same architecture, the C clients' steps are the
same arithmetic on C parameter vectors, so this module runs them as one tensor program: the
parameters as a ``(C, d)`` matrix, each step's mini-batches gathered into a ``(C, B, ·)`` block
(clients of different sizes padded, the padding weighted 0), the forward pass and the gradient
(written by hand for the supported layers, so no autograd graph is built) as batched matrix
products. Each client keeps its own random stream: its mini-batches are drawn by
:func:`~flprivacy.federation.batch_schedule` from its own generator, exactly as the per-client
path draws them, so the two paths give the same models up to floating-point rounding (the
order of the sums differs), which ``tests/test_batched.py`` checks.

Supported: models whose module is an ``nn.Linear`` or an ``nn.Sequential`` of ``nn.Linear``
and ``nn.ReLU`` layers (linear and logistic regression, the MLP of Diana et al.), with the
losses ``mse``, ``cross_entropy`` (class indices or probabilities) and ``bce``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .models import FLModel
from .validation import NonFiniteError


@dataclass(frozen=True)
class _Linear:
    w: slice  # where the weight (out, in) sits in θ
    b: slice | None
    n_in: int
    n_out: int


def _plan(model: FLModel) -> list[_Linear | str] | None:
    """The layer list of a supported model (Linear layers and "relu"), or None."""
    mod = model.module
    layers = [mod] if isinstance(mod, nn.Linear) else list(mod) if isinstance(mod, nn.Sequential) else None
    if layers is None or model.loss_name not in ("mse", "cross_entropy", "bce"):
        return None
    plan: list[_Linear | str] = []
    offset = 0
    for layer in layers:
        if isinstance(layer, nn.Linear):
            nw = layer.weight.numel()
            w = slice(offset, offset + nw)
            offset += nw
            b = None
            if layer.bias is not None:
                b = slice(offset, offset + layer.out_features)
                offset += layer.out_features
            plan.append(_Linear(w, b, layer.in_features, layer.out_features))
        elif isinstance(layer, nn.ReLU):
            plan.append("relu")
        else:
            return None
    if offset != model.dim or not plan or not isinstance(plan[0], _Linear):
        return None
    return plan


def supports(model: FLModel) -> bool:
    """True when :func:`batched_local_sgd` can train ``model`` (see the module docstring)."""
    return isinstance(model, FLModel) and _plan(model) is not None


def _output_grad(loss: str, out: Tensor, y: Tensor) -> Tensor:
    """dℓ/d(output) per sample, shape of ``out`` ``(C, B, k)``; the losses of
    :mod:`flprivacy.models` (mse: ℓ = ‖f − y‖², cross-entropy on logits, BCE on a logit)."""
    if loss == "mse":
        return 2.0 * (out - y.to(out.dtype).reshape(out.shape))
    if loss == "bce":
        return torch.sigmoid(out) - y.to(out.dtype).reshape(out.shape)
    p = torch.softmax(out, dim=-1)
    if y.dtype in (torch.int64, torch.int32, torch.int16, torch.uint8):
        return p - torch.nn.functional.one_hot(y.long(), out.shape[-1]).to(out.dtype)
    return p - y.to(out.dtype)


def batched_grad(model: FLModel, thetas: Tensor, X: Tensor, y: Tensor, weights: Tensor) -> Tensor:
    """∇_θ of each client's weighted mean loss Σ_i w_ci ℓ(θ_c, x_ci, y_ci) / Σ_i w_ci, for all
    clients at once.

    Args:
        model: a supported model (:func:`supports`).
        thetas: ``(C, d)`` parameters, one row per client.
        X: ``(C, B, n_features)`` mini-batches (padding rows allowed).
        y: ``(C, B)`` targets (class indices, or ``(C, B, k)`` probabilities / regression targets).
        weights: ``(C, B)``, 1 for a real sample and 0 for padding. A client whose row is all
            zeros gets a zero gradient (it has finished its local steps).

    Returns:
        ``(C, d)`` gradients, equal to :meth:`FLModel.grad` on each client's real rows up to
        floating-point rounding.
    """
    plan = _plan(model)
    if plan is None:
        raise ValueError(f"batched_grad: model {model!r} is not supported; use a linear model or an MLP of Linear "
                         "and ReLU layers with an mse, cross_entropy or bce loss, or the per-client path.")
    C = thetas.shape[0]
    h = X.to(thetas.dtype)
    inputs: list[Tensor] = []
    masks: list[Tensor] = []
    for layer in plan:
        if layer == "relu":
            masks.append(h > 0)
            h = torch.relu(h)
            continue
        assert isinstance(layer, _Linear)
        inputs.append(h)
        W = thetas[:, layer.w].view(C, layer.n_out, layer.n_in)
        h = torch.bmm(h, W.transpose(1, 2))
        if layer.b is not None:
            h = h + thetas[:, layer.b].unsqueeze(1)
    denom = weights.sum(1).clamp_min(1.0).to(thetas.dtype)
    dz = _output_grad(model.loss_name, h, y) * (weights.to(thetas.dtype) / denom.unsqueeze(1)).unsqueeze(-1)
    grad = torch.empty_like(thetas)
    for layer in reversed(plan):
        if layer == "relu":
            dz = dz * masks.pop()
            continue
        assert isinstance(layer, _Linear)
        hin = inputs.pop()
        grad[:, layer.w] = torch.bmm(dz.transpose(1, 2), hin).reshape(C, -1)
        if layer.b is not None:
            grad[:, layer.b] = dz.sum(1)
        if inputs:  # no gradient needed for the data itself
            W = thetas[:, layer.w].view(C, layer.n_out, layer.n_in)
            dz = torch.bmm(dz, W)
    return grad


def batched_local_sgd(model: FLModel, thetas: Tensor, data: Sequence[tuple[Tensor, Tensor]], *, lr: float,
                      schedules: Sequence[Sequence[Tensor | None]]) -> Tensor:
    """Alg. 2 for C clients at once: each client c runs SGD from ``thetas[c]`` on its data
    ``data[c] = (X_c, y_c)`` over its own mini-batches ``schedules[c]`` (index tensors, or None
    for the full batch, as :func:`~flprivacy.federation.batch_schedule` yields them).

    Returns:
        ``(C, d)``: the returned models θ_c(K_c).

    Raises:
        NonFiniteError: a client's model became non-finite (naming the client's position and lr).
    """
    C = len(data)
    if thetas.ndim != 2 or thetas.shape[0] != C or len(schedules) != C:
        raise ValueError(f"batched_local_sgd: thetas must be (C, d) with C = len(data) = len(schedules); got "
                         f"{tuple(thetas.shape)}, {C} data sets, {len(schedules)} schedules.")
    sizes = [int(X.shape[0]) for X, _ in data]
    n_max = max(sizes)
    Xs = torch.zeros((C, n_max, *data[0][0].shape[1:]), dtype=thetas.dtype)
    ys = torch.zeros((C, n_max, *data[0][1].shape[1:]), dtype=data[0][1].dtype)
    for c, (X, y) in enumerate(data):
        Xs[c, : sizes[c]] = X
        ys[c, : sizes[c]] = y
    steps = [list(s) for s in schedules]
    k_max = max((len(s) for s in steps), default=0)
    rows = torch.arange(C).unsqueeze(1)
    theta = thetas.detach().clone()
    for k in range(k_max):
        batches = [(torch.arange(sizes[c]) if steps[c][k] is None else steps[c][k]) if k < len(steps[c])
                   else torch.zeros(0, dtype=torch.long) for c in range(C)]
        b_max = max(int(b.numel()) for b in batches)
        idx = torch.zeros((C, b_max), dtype=torch.long)
        w = torch.zeros((C, b_max))
        for c, b in enumerate(batches):
            idx[c, : b.numel()] = b
            w[c, : b.numel()] = 1.0
        theta = theta - lr * batched_grad(model, theta, Xs[rows, idx], ys[rows, idx], w)
    bad = (~torch.isfinite(theta)).any(1)
    if bool(bad.any()):
        c = int(bad.nonzero()[0])
        raise NonFiniteError(
            f"batched_local_sgd: the local model of client position {c} became non-finite (NaN/inf) during local "
            f"training with lr={lr}: the learning rate is most likely too large for this data; lower lr or "
            "standardise the features.")
    return theta
