"""Model-based attribute inference (Diana et al. 2025, eq. 3 and 4, Prop. 1).

Every sample of client c is (x^p(i), s(i), y(i)): public features, a sensitive attribute and a
public target. The adversary knows the public part and wants s(i). Given a model θ, the
model-based AIA (Kasiviswanathan et al. 2013, Fredrikson et al. 2014) picks for every sample the
candidate value of s that minimises the model's loss: :func:`model_based_aia`,
:func:`candidate_losses`. For least squares the equivalent two-step decoder of eq. 4 is
:func:`two_step_decoder`, and Prop. 1 bounds its accuracy
(:func:`flprivacy.bounds.aia_accuracy_lower_bound`).

Which model to attack is the other half of the attack: the last model a client returned, the
active attack's estimate (:mod:`flprivacy.attacks.active`), Alg. 3's reconstruction
(:mod:`flprivacy.attacks.reconstruction`), or the oracle's optimal local model, "Model-w-O"
(:func:`flprivacy.optimum.optimal_local_models`). The gradient-based AIA is
:mod:`flprivacy.attacks.gradient_aia`.

Parameter vectors of models made of linear layers are evaluated many at once
(:mod:`flprivacy.stack`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ..data.attributes import SensitiveAttribute
from ..models import FLModel
from ..stack import LinearStack
from ..validation import NonFiniteError, as_tensor, check_finite, check_int


def candidate_losses(model: FLModel, theta: Tensor, X: Tensor, y: Tensor, attribute: SensitiveAttribute,
                     *, max_elements: int = 2**24) -> Tensor:
    """ℓ(θ, (x^p(i), s_c, y(i))) for every candidate value c and sample i.

    The candidates are evaluated in chunks so that the expanded inputs (candidates x samples x
    features, x models) hold at most about ``max_elements`` numbers: a K-valued one-hot
    attribute would otherwise need K² n entries at once.

    Returns ``(C, n)`` for θ of shape ``(d,)``, or ``(M, C, n)`` for ``M`` models ``(M, d)``.

    Raises:
        NonFiniteError: θ or the data hold NaN/inf (a NaN model would make every sample pick
            the first candidate).
    """
    where = "candidate_losses"
    X = as_tensor("X", X, where=where, ndim=2)
    y = as_tensor("y", y, where=where)
    if y.ndim == 0 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has shape {tuple(y.shape)}; they must describe the same samples.")
    theta = as_tensor("theta", theta, where=where, ndim=(1, 2))
    theta = model._as_theta(theta) if theta.ndim == 1 else theta.to(model.dtype)
    if theta.shape[-1] != model.dim:
        raise ValueError(f"{where}: theta must have {model.dim} columns (the model's dimension); got {tuple(theta.shape)}.")
    check_finite("theta", theta, where, "the attacked model is broken (training diverged?)")
    check_finite("X", X, where)
    check_finite("y", y, where)
    check_finite("candidates", attribute.candidates, where)
    attribute.check(X)
    C, n = attribute.n_values, X.shape[0]
    M = 1 if theta.ndim == 1 else theta.shape[0]
    step = max(1, int(max_elements) // max(1, n * X.shape[1] * M))
    cand = attribute.candidates.to(X.dtype)
    cols = list(attribute.columns)
    try:
        stack = None if theta.ndim == 1 else LinearStack(model)
    except NotImplementedError:
        stack = None
    parts = []
    with torch.no_grad():
        for c0 in range(0, C, step):
            k = min(step, C - c0)
            Xc = X.unsqueeze(0).repeat(k, 1, 1)
            Xc[:, :, cols] = cand[c0:c0 + k].unsqueeze(1)
            Xc = Xc.reshape(k * n, X.shape[1])
            yc = y.repeat(k) if y.ndim == 1 else y.repeat(k, *([1] * (y.ndim - 1)))
            if theta.ndim == 1:
                parts.append(model.per_sample_loss(theta, Xc, yc).view(k, n))
            elif stack is None:
                parts.append(torch.stack([model.per_sample_loss(t, Xc, yc).view(k, n) for t in theta]))
            else:
                parts.append(stack.per_sample_loss(theta, Xc, yc).view(-1, k, n))
    out = torch.cat(parts, dim=-2)
    if bool(torch.isnan(out).any()):
        raise NonFiniteError(f"{where}: the model's loss is NaN for some candidates although θ and the data are "
                             "finite (overflow in the model?); the attack's answer would be meaningless.")
    return out


def model_based_aia(model: FLModel, theta: Tensor, X: Tensor, y: Tensor, sensitive_columns: Sequence[int],
                    candidates: Tensor) -> Tensor:
    """Solve argmin_s ℓ(θ, (x^p(i), s, y(i))) for every sample (Diana eq. 3).

    The values of ``X`` in ``sensitive_columns`` are ignored (the attacker does not know them);
    every candidate encoding is tried for every sample in one batched forward pass. Works for
    any model and loss: regression (least squares, neural networks) and classification.

    Args:
        model, theta: the attacked model; ``theta`` ``(d,)``, or ``(M, d)`` to attack M models.
        X: ``(n, d_x)`` inputs; the sensitive columns' content is overwritten by candidates.
        y: ``(n,)`` targets (public).
        sensitive_columns: the column(s) of the sensitive attribute (one for a binary
            attribute, the one-hot group for a categorical one).
        candidates: ``(K, len(sensitive_columns))``: the encodings the attribute can take,
            e.g. ``[[0.], [1.]]`` for a binary attribute.

    Returns:
        ``(n,)`` long tensor (``(M, n)`` for M models): the index in ``candidates`` chosen for
        each sample. Ties go to the first candidate.
    """
    X = as_tensor("X", X, where="model_based_aia")
    y = as_tensor("y", y, where="model_based_aia")
    cols = torch.as_tensor(list(sensitive_columns), dtype=torch.long)
    candidates = torch.as_tensor(candidates)
    if candidates.ndim != 2 or candidates.shape[1] != cols.numel():
        raise ValueError(
            f"candidates must have shape (K, {cols.numel()}) (one row per value of the sensitive attribute, "
            f"one column per sensitive column); got {tuple(candidates.shape)}."
        )
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be (n, d) with n = len(y); got X {tuple(X.shape)}, y {tuple(y.shape)}.")
    if cols.numel() == 0 or int(cols.max()) >= X.shape[1] or int(cols.min()) < 0:
        raise ValueError(f"sensitive_columns {cols.tolist()} out of range for X with {X.shape[1]} columns.")
    attribute = SensitiveAttribute(tuple(cols.tolist()), candidates)
    return candidate_losses(model, theta, X, y, attribute).argmin(-2)


def aia_accuracy(predicted: Tensor, true_index: Tensor) -> float:
    """Fraction of samples whose sensitive attribute was inferred correctly."""
    predicted = as_tensor("predicted", predicted, where="aia_accuracy")
    true_index = as_tensor("true_index", true_index, where="aia_accuracy")
    if predicted.numel() == 0:
        raise ValueError("aia_accuracy: predicted is empty; the accuracy of no sample is undefined.")
    if predicted.shape != true_index.shape:
        raise ValueError(f"predicted and true_index must have the same shape; got predicted {tuple(predicted.shape)}, "
                         f"true_index {tuple(true_index.shape)}.")
    return (predicted == true_index).double().mean().item()


def model_based_accuracy(model: FLModel, theta: Tensor, X: Tensor, y: Tensor, attribute: SensitiveAttribute,
                         ) -> float | Tensor:
    """Accuracy of the model-based AIA (eq. 3) of θ on ``(X, y)``; ``(M,)`` for θ of shape ``(M, d)``."""
    X = as_tensor("X", X, where="model_based_accuracy", ndim=2)
    theta = as_tensor("theta", theta, where="model_based_accuracy")
    pred = candidate_losses(model, theta, X, y, attribute).argmin(-2)
    truth = attribute.true_index(X)
    acc = (pred == truth).double().mean(-1)
    return acc.item() if theta.ndim == 1 else acc


def two_step_decoder(theta: Tensor, X: Tensor, y: Tensor, column: int, values: tuple[float, float] = (0.0, 1.0),
                     ) -> tuple[Tensor, Tensor]:
    """The two-step form of the model-based AIA for least squares (proof of Prop. 1, eq. 4).

    For a linear model θ = (w, b) (bias last, as :func:`flprivacy.models.linear_regression`)
    and a binary attribute in ``column`` taking ``values = (v0, v1)``:

    1. s̃ = argmin_{s ∈ R^n} ||P w_p + s w_s + b - y||² = (y - P w_p - b) / w_s, the real-valued
       attribute that fits each sample exactly;
    2. ŝ(i) = index of the value nearest to s̃(i) (for (0, 1): 1 if s̃(i) >= 1/2).

    Returns ``(s_tilde, s_hat)``; ``s_hat`` equals :func:`model_based_aia` (up to exact ties).
    """
    theta = check_finite("theta", as_tensor("theta", theta, where="two_step_decoder"), "two_step_decoder")
    X = check_finite("X", as_tensor("X", X, where="two_step_decoder", ndim=2, min_rows=1), "two_step_decoder")
    y = check_finite("y", as_tensor("y", y, where="two_step_decoder", ndim=1, rows=X.shape[0]), "two_step_decoder")
    check_int("column", column, "two_step_decoder")
    if column >= X.shape[1]:
        raise ValueError(f"two_step_decoder: column={column} is out of range for X with {X.shape[1]} columns.")
    if theta.ndim != 1 or theta.numel() != X.shape[1] + 1:
        raise ValueError(
            f"two_step_decoder needs a linear model θ = (w, b) with {X.shape[1] + 1} entries for X with {X.shape[1]} "
            f"columns (bias last); got shape {tuple(theta.shape)}."
        )
    w, b = theta[:-1].to(torch.float64), theta[-1].to(torch.float64)
    if w[column] == 0:
        raise ValueError("θ[s] = 0: the model ignores the attribute, so the decoder is undefined (Prop. 1 is vacuous).")
    P = X.to(torch.float64).clone()
    P[:, column] = 0.0
    s_tilde = (y.to(torch.float64) - P @ w - b) / w[column]
    v0, v1 = values
    s_hat = ((s_tilde - v0).abs() > (s_tilde - v1).abs()).long()
    return s_tilde, s_hat
