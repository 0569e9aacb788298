"""A client's local optimum θ_c^* = argmin_θ L_c(θ): what the reconstruction attacks estimate
and what the oracle Model-w-O attacks.

- :func:`least_squares_optimum`: least squares in closed form (QR), the target of Alg. 3 and of
  Xu & Neglia's Observation 1;
- :func:`regularised_optimum`: any model with a small L2 term, by full-batch L-BFGS (Xu & Neglia
  §4, Adult: the small PhD clients are linearly separable, so the plain optimum is at infinity);
- the Model-w-O optimum of Diana et al. §5.3, Adam run to convergence from many starts at once:
  :func:`flprivacy.attacks.inference.optimal_local_models`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .federation import ClientData
from .models import FLModel, design


def least_squares_optimum(data: ClientData) -> Tensor:
    """θ_c^* = argmin ‖[X, 1] θ − y‖² of a least-squares client (intercept last), by QR least
    squares in float64."""
    if not isinstance(data, ClientData):
        raise TypeError(f"least_squares_optimum: data must be a ClientData(X, y); got {type(data).__name__}.")
    X1 = design(data.X.to(torch.float64))
    return torch.linalg.lstsq(X1, data.y.to(torch.float64).unsqueeze(1)).solution.squeeze(1)


def regularised_optimum(model: FLModel, data: ClientData, l2: float, iterations: int) -> Tensor:
    """argmin_θ L_c(θ) + l2 ‖θ‖² by full-batch L-BFGS (strong Wolfe line search), from θ = 0."""
    if not isinstance(data, ClientData):
        raise TypeError(f"regularised_optimum: data must be a ClientData(X, y); got {type(data).__name__}.")
    if not (l2 >= 0) or int(iterations) < 1:
        raise ValueError(f"regularised_optimum: need l2 >= 0 and iterations >= 1; got l2={l2}, iterations={iterations}.")
    theta = torch.zeros(model.dim, dtype=model.dtype, requires_grad=True)
    opt = torch.optim.LBFGS([theta], max_iter=int(iterations), line_search_fn="strong_wolfe")

    def closure():  # noqa: ANN202
        opt.zero_grad()
        loss = model.loss(theta, data.X, data.y) + l2 * theta.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return theta.detach()
