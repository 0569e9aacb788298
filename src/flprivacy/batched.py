"""FedAvg's local update (Diana et al. 2025, Alg. 2) for many clients, and many models per
client, at once.

:func:`flprivacy.clients.local_sgd` trains one client: K = E⌈S_c/B⌉ steps of
θ ← θ − η ∇ (1/B) Σ_{i ∈ batch} ℓ(θ, x_i, y_i). When clients run the same
:class:`~flprivacy.clients.LocalSGD` on the same architecture, their steps are the same
arithmetic on different parameter vectors, so :func:`local_sgd_many` runs them as one tensor
program: each step's mini-batches gathered into one ``(C·M, B, p)`` block (clients of different
sizes padded, the padding masked out of the mean), and the loss and its gradient evaluated by
:class:`flprivacy.stack.LinearStack` with batched matrix products. Each client keeps her own
random stream: her mini-batches are drawn by :func:`~flprivacy.clients.batch_schedule` from
her own generator, exactly as the per-client path draws them, so the two give the same models
up to floating-point rounding (the order of the sums differs).

Two users: ``run_fedavg(..., batched=True)`` (one model per client: the round's global model)
and the active attack's tuning (:func:`flprivacy.attacks.active.simulate_adam_active`: one
model per Adam setting per client).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from .clients import ClientData, LocalSGD, batch_schedule, check_clients
from .models import FLModel
from .stack import LinearStack
from .validation import as_tensor


def supports(model: FLModel) -> bool:
    """True when :func:`local_sgd_many` can train ``model``: ``nn.Linear`` layers and element-wise
    activations (:class:`~flprivacy.stack.LinearStack`)."""
    try:
        LinearStack(model)
    except (NotImplementedError, AttributeError, TypeError):
        return False
    return True


def local_sgd_many(stack: LinearStack, thetas: Sequence[Tensor], clients: Sequence[ClientData], local: LocalSGD,
                   gens: Sequence[torch.Generator]) -> list[Tensor]:
    """The local update (Alg. 2) of every client c applied to her M models ``thetas[c]``
    ``(M, d)`` at once: what :func:`flprivacy.clients.local_sgd` does to each row, with one
    shuffling per client (``gens[c]``) shared by her M models. All clients step together
    (mini-batches padded to B rows and masked); a client stops after her K_c = E⌈S_c/B⌉ steps."""
    check_clients(clients, "local_sgd_many", same_width=True)
    if not isinstance(local, LocalSGD):
        raise TypeError(f"local_sgd_many: local must be a LocalSGD; got {type(local).__name__}.")
    if len(thetas) != len(clients) or len(gens) != len(clients):
        raise ValueError(f"local_sgd_many: give one thetas entry and one generator per client; got {len(clients)} "
                         f"clients, {len(thetas)} thetas, {len(gens)} generators.")
    thetas = [as_tensor(f"thetas[{c}]", t, where="local_sgd_many", ndim=2, dtype=stack.dtype) for c, t in enumerate(thetas)]
    for c, t in enumerate(thetas):
        if t.shape != thetas[0].shape or t.shape[1] != stack.dim:
            raise ValueError(f"local_sgd_many: thetas[{c}] must have shape (M, {stack.dim}) like thetas[0] "
                             f"{tuple(thetas[0].shape)}; got {tuple(t.shape)}.")
        # rows may be +inf: simulate_adam_active keeps a diverged setting at +inf on purpose
    theta = torch.stack(list(thetas))  # (C, M, d)

    def sgd(sel, k: int, g: Tensor) -> None:
        theta[sel] -= local.lr * g

    minibatch_steps(stack, theta, clients, local, gens, sgd)
    return list(theta)


def minibatch_steps(stack: LinearStack, theta: Tensor, clients: Sequence[ClientData], local: LocalSGD,
                    gens: Sequence[torch.Generator], update: Callable[[Tensor | slice, int, Tensor], None]) -> None:
    """The mini-batch schedule of Alg. 2 for every client's M models ``theta`` ``(C, M, d)`` at
    once, with the step left to ``update``: at step k, the gradient ``g`` ``(L, M, d)`` of each
    live client's batch loss at ``theta[sel]`` is passed as ``update(sel, k, g)``, which changes
    ``theta[sel]`` in place (``sel`` is ``slice(None)`` while every client steps, else the index
    of the clients still stepping: client c takes K_c = E⌈S_c/B⌉ steps). Batches are drawn by
    :func:`~flprivacy.clients.batch_schedule` from ``gens[c]`` (one shuffling per client,
    shared by her M models), padded to B rows and masked. :func:`local_sgd_many` is the SGD
    step; :func:`flprivacy.optimum.tuned_local_models` Adam with weight decay."""
    C, M = theta.shape[0], theta.shape[1]
    sizes = [c.n for c in clients]
    steps = [local.n_steps(n) for n in sizes]
    K = max(steps)
    # every client's sequence of mini-batches, exactly as in local_sgd (reshuffled each epoch),
    # as one padded index tensor (C, K, B) with its 0/1 mask
    schedules = [[torch.arange(data.n) if idx is None else idx
                  for idx in batch_schedule(data.n, epochs=local.epochs, batch_size=local.batch_size,
                                            steps=local.steps, shuffle=local.shuffle, generator=gens[c])]
                 for c, data in enumerate(clients)]
    B = max((int(b.numel()) for sch in schedules for b in sch), default=1)
    index = torch.zeros(C, K, B, dtype=torch.long)
    mask = torch.zeros(C, K, B, dtype=stack.dtype)
    for c, sch in enumerate(schedules):
        for k, b in enumerate(sch):
            index[c, k, : b.numel()] = b
            mask[c, k, : b.numel()] = 1
    Xs = torch.zeros(C, max(sizes), *clients[0].X.shape[1:], dtype=stack.dtype)
    ys = torch.zeros(C, max(sizes), *clients[0].y.shape[1:], dtype=clients[0].y.dtype)
    for c, data in enumerate(clients):
        Xs[c, : data.n] = data.X
        ys[c, : data.n] = data.y
    rows = torch.arange(C).unsqueeze(1)
    steps_t = torch.tensor(steps)
    for k in range(K):
        live = (steps_t > k).nonzero().squeeze(1) if k >= min(steps) else None  # clients still stepping
        r = rows if live is None else live.unsqueeze(1)
        Xb, yb, mb = Xs[r, index[r.squeeze(1), k]], ys[r, index[r.squeeze(1), k]], mask[r.squeeze(1), k]
        L = Xb.shape[0]
        if M > 1:  # the client's batch, once per model
            Xb, yb, mb = (t.unsqueeze(1).expand(L, M, *t.shape[1:]).reshape(L * M, *t.shape[1:]) for t in (Xb, yb, mb))
        th = theta if live is None else theta[live]
        g = stack.grad(th.reshape(L * M, -1), Xb, yb, mb)
        update(slice(None) if live is None else live, k, g.view(L, M, -1))
