"""Many parameter vectors of one model, evaluated and differentiated at once.

Part III's attacks evaluate the *same* architecture at many parameter vectors θ: one per
round of the message log (the gradient-based AIA, Diana et al. 2025 eq. 2), one per Adam
hyper-parameter candidate (the tuning of Alg. 4), one per learning rate (the Model-w-O search).
``torch.func.vmap`` over :meth:`flprivacy.models.FLModel.forward` costs milliseconds per call here; a stack of
``nn.Linear`` layers evaluated with batched matrix products costs tens of microseconds. This
module does the latter for every model made of ``nn.Linear`` layers and parameter-free
element-wise modules (ReLU, sigmoid, tanh, identity): :func:`flprivacy.models.linear_regression`,
:func:`~flprivacy.models.logistic_regression` and :func:`~flprivacy.models.mlp`. FedAvg's batched
engine (:mod:`flprivacy.batched`) trains many clients with it too.

For ReLU and identity activations and the library's three losses, the gradient
(:meth:`LinearStack.loss_and_grad`) is written out by hand: backpropagation through the
stack, ∂ℓ/∂W = Δᵀ A and ∂ℓ/∂b = Σ_rows Δ per linear layer, with Δ the derivative at the layer's
output. Autograd would build the same numbers but slices θ per layer, and every slice's
backward fills a zero tensor of θ's size.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .models import FLModel

_ELEMENTWISE = (nn.ReLU, nn.Sigmoid, nn.Tanh, nn.Identity, nn.LeakyReLU, nn.ELU, nn.GELU, nn.Softplus)


@dataclass(frozen=True)
class _Linear:
    w: slice  # position of the weight (out, in), row-major, in θ
    b: slice | None  # position of the bias in θ
    n_in: int
    n_out: int


class LinearStack:
    """A model of ``nn.Linear`` layers and element-wise activations, evaluated for a batch of
    parameter vectors ``thetas`` of shape ``(M, d)``.

    Raises:
        NotImplementedError: for other architectures (convolutions, normalisation, ...); the
            message names the offending module.
    """

    def __init__(self, model: FLModel):
        mod = model.module
        children = [mod] if isinstance(mod, nn.Linear) else list(mod.children()) if isinstance(mod, nn.Sequential) else None
        if children is None:
            raise NotImplementedError(
                f"this attack needs a model made of nn.Linear layers and element-wise activations "
                f"(linear_regression, logistic_regression, mlp); got {mod.__class__.__name__}."
            )
        offsets, pos = {}, 0
        for name, numel in zip(model._names, model._numels):
            offsets[name] = slice(pos, pos + numel)
            pos += numel
        self.layers: list[_Linear | nn.Module] = []
        for i, child in enumerate(children):
            prefix = "" if child is mod else f"{i}."
            if isinstance(child, nn.Linear):
                b = offsets.get(prefix + "bias")
                self.layers.append(_Linear(offsets[prefix + "weight"], b, child.in_features, child.out_features))
            elif isinstance(child, _ELEMENTWISE):
                self.layers.append(child)
            else:
                raise NotImplementedError(
                    f"this attack supports nn.Linear layers and element-wise activations only; the model has "
                    f"{child.__class__.__name__} at position {i}. Use an MLP (flprivacy.models.mlp) or a linear model."
                )
        self.model = model
        self.dim = model.dim
        self.dtype = model.dtype
        self.linears = [layer for layer in self.layers if isinstance(layer, _Linear)]
        # the hand-written gradient: ReLU/identity between linear layers, none after the last one
        self._manual = (model.loss_name in ("mse", "bce", "cross_entropy")
                        and all(isinstance(la, (_Linear, nn.ReLU, nn.Identity)) for la in self.layers)
                        and isinstance(self.layers[0], _Linear) and isinstance(self.layers[-1], (_Linear, nn.Identity)))

    # ---- forward ------------------------------------------------------------------------------
    def forward(self, thetas: Tensor, X: Tensor, keep: bool = False) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """Outputs ``(M, n, n_out)`` of every model on ``X`` (``(n, p)`` shared, or ``(M, n, p)``).

        With ``keep``, also the input and the pre-activation of every linear layer (for
        per-sample gradients: the gradient of a linear layer for sample j is the outer product
        of the loss's derivative at its output with its input).
        """
        M = thetas.shape[0]
        a = X.to(self.dtype)
        if a.ndim == 2:
            a = a.unsqueeze(0).expand(M, -1, -1)
        inputs, preacts = [], []
        for layer in self.layers:
            if isinstance(layer, _Linear):
                W = thetas[:, layer.w].view(M, layer.n_out, layer.n_in)
                z = torch.bmm(a, W.transpose(1, 2))
                if layer.b is not None:
                    z = z + thetas[:, layer.b].unsqueeze(1)
                if keep:
                    inputs.append(a)
                    preacts.append(z)
                a = z
            else:
                a = layer(a)
        return a, inputs, preacts

    def per_sample_loss_from_output(self, out: Tensor, y: Tensor) -> Tensor:
        """ℓ for outputs ``(M, n, o)`` and targets ``(n,)`` (or ``(M, n)``); returns ``(M, n)``."""
        M, n = out.shape[:2]
        yy = y.expand(M, n) if y.ndim == 1 else y
        return self.model._loss(out.reshape(M * n, -1), yy.reshape(M * n)).view(M, n)

    def per_sample_loss(self, thetas: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """ℓ(θ_m, x_i, y_i) for every model and row, ``(M, n)``."""
        return self.per_sample_loss_from_output(self.forward(thetas, X)[0], y)

    def loss(self, thetas: Tensor, X: Tensor, y: Tensor, mask: Tensor | None = None) -> Tensor:
        """Empirical risk of every model, ``(M,)``. With ``X`` ``(M, n, p)``, ``y`` ``(M, n)``
        and a 0/1 ``mask`` ``(M, n)``, model m's risk is over its rows with mask 1 (clients of
        different sizes padded to one tensor)."""
        ell = self.per_sample_loss(thetas, X, y)
        if mask is None:
            return ell.mean(1)
        return (ell * mask).sum(1) / mask.sum(1)

    def loss_and_grad(self, thetas: Tensor, X: Tensor, y: Tensor, mask: Tensor | None = None,
                      ) -> tuple[Tensor, Tensor]:
        """(risk ``(M,)``, its gradient ``(M, d)``) of every model; models are independent.

        Written out by hand (see the module docstring) for ReLU/identity activations and the
        losses mse, bce and cross-entropy with class indices; autograd otherwise."""
        if self._by_hand(y):
            return self._loss_and_grad_by_hand(thetas, X, y, mask)
        with torch.enable_grad():
            th = thetas.detach().requires_grad_(True)
            loss = self.loss(th, X, y, mask)
            (g,) = torch.autograd.grad(loss.sum(), th)
        return loss.detach(), g

    def grad(self, thetas: Tensor, X: Tensor, y: Tensor, mask: Tensor | None = None) -> Tensor:
        """The gradient ``(M, d)`` of :meth:`loss` alone (what an SGD step needs)."""
        if self._by_hand(y):
            return self._loss_and_grad_by_hand(thetas, X, y, mask, want_loss=False)[1]
        return self.loss_and_grad(thetas, X, y, mask)[1]

    def _by_hand(self, y: Tensor) -> bool:
        """Whether the hand-written gradient applies: ReLU/identity stacks, and class indices
        (not probabilities) for cross-entropy."""
        return self._manual and (self.model.loss_name != "cross_entropy" or not y.dtype.is_floating_point)

    def _loss_and_grad_by_hand(self, thetas: Tensor, X: Tensor, y: Tensor, mask: Tensor | None,
                               want_loss: bool = True) -> tuple[Tensor | None, Tensor]:
        M = thetas.shape[0]
        out, inputs, preacts = self.forward(thetas, X, keep=True)
        n = out.shape[1]
        yy = y.expand(M, n) if y.ndim == 1 else y
        if mask is None:
            weight = torch.full((M, n), 1.0 / n, dtype=self.dtype)
        else:
            mk = mask.to(self.dtype)
            weight = mk / mk.sum(1, keepdim=True)
        loss = (self.per_sample_loss_from_output(out, yy) * weight).sum(1) if want_loss else None
        name = self.model.loss_name
        if name == "mse":  # ℓ = ‖f − y‖²
            d = 2.0 * (out - yy.to(self.dtype).reshape(out.shape))
        elif name == "bce":  # ℓ = BCE(σ(f), y)
            d = torch.sigmoid(out) - yy.to(self.dtype).reshape(out.shape)
        else:  # cross-entropy on logits, class indices
            d = torch.softmax(out, -1) - torch.nn.functional.one_hot(yy.long(), out.shape[-1]).to(self.dtype)
        d = d * weight.unsqueeze(-1)
        grad = torch.empty(M, self.dim, dtype=self.dtype)
        li = len(self.linears) - 1
        for layer in reversed(self.layers):
            if not isinstance(layer, _Linear):
                if isinstance(layer, nn.ReLU):
                    d = torch.ops.aten.threshold_backward(d, preacts[li], 0)   # ReLU' at the pre-activation below
                continue
            a = inputs[li]
            grad[:, layer.w] = torch.bmm(d.transpose(1, 2), a).reshape(M, -1)
            if layer.b is not None:
                grad[:, layer.b] = d.sum(1)
            if li > 0:
                d = torch.bmm(d, thetas[:, layer.w].view(M, layer.n_out, layer.n_in))
            li -= 1
        return loss, grad

    def per_sample_signals(self, thetas: Tensor, X: Tensor, y: Tensor) -> tuple[list[Tensor], list[Tensor]]:
        """For every linear layer: its inputs A ``(M, n, in)`` and Δ = ∂ℓ_j/∂z_j ``(M, n, out)``,
        the derivative of each row's own loss at the layer's pre-activation. The per-sample
        gradient of the layer is Δ_j ⊗ A_j (weight) and Δ_j (bias)."""
        with torch.enable_grad():
            th = thetas.detach().requires_grad_(True)
            out, inputs, preacts = self.forward(th, X, keep=True)
            losses = self.per_sample_loss_from_output(out, y)
            deltas = torch.autograd.grad(losses.sum(), preacts)
        return [a.detach() for a in inputs], [d.detach() for d in deltas]
