"""A client's local optimum θ_c^* = argmin_θ L_c(θ): what the reconstruction attacks estimate
and what the oracle Model-w-O attacks.

- :func:`least_squares_optimum`: least squares in closed form (QR), the target of Alg. 3 and of
  Xu & Neglia's Observation 1;
- :func:`regularised_optimum`: any model with a small L2 term, by full-batch L-BFGS (Xu & Neglia
  §4, Adult: the small PhD clients are linearly separable, so the plain optimum is at infinity);
- the Model-w-O optimum of Diana et al. §5.3, Adam run to convergence from many starts at once:
  :func:`optimal_local_models`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .batched import minibatch_steps
from .config import child_seed, generator
from .defences import DPLocalSGD, _clipped_sum
from .federation import ClientData, LocalSGD, check_clients
from .models import FLModel, design
from .stack import LinearStack
from .validation import NonFiniteError, as_tensor, check_finite, check_int, check_seed


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


# ---- Model-w-O: the client's optimal local model (Diana et al. §5.3) ---------------------------
MODEL_WO_LEARNING_RATES: tuple[float, ...] = (1e-2, 1e-1, 1.0)
"""Adam learning rates tried by :func:`optimal_local_model` (all at once)."""


@dataclass
class LocalOptimum:
    """Result of :func:`optimal_local_model`: the best model and every candidate's final loss."""

    theta: Tensor
    loss: float
    losses: Tensor  # (starts, learning rates)
    steps: int


def optimal_local_model(model: FLModel, X: Tensor, y: Tensor, starts: Tensor, **kwargs) -> LocalOptimum:
    """θ_c^* = argmin_θ L_c(θ, D_c), approximately, for one client: see
    :func:`optimal_local_models` (same arguments, one client)."""
    return optimal_local_models(model, [(X, y)], [starts], **kwargs)[0]


def optimal_local_models(
    model: FLModel,
    datasets: Sequence[tuple[Tensor, Tensor]],
    starts: Sequence[Tensor],
    *,
    learning_rates: Sequence[float] = MODEL_WO_LEARNING_RATES,
    max_steps: int = 5000,
    pilot_steps: int = 100,
    keep: int = 1,
    tol: float = 1e-4,
    check_every: int = 100,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    chunk_rows: int = 2**13,
) -> list[LocalOptimum]:
    """Each client's optimal local model θ_c^* = argmin_θ L_c(θ, D_c), approximately:
    full-batch Adam run to convergence on her data, the oracle of "Model-w-O" (Diana §5.3:
    "running Adam for a very large number of iterations").

    For every client, every start (warm starts such as her last returned model, or the active
    attack's estimate) is run with every learning rate for ``pilot_steps``; her ``keep``
    candidates with the lowest loss continue (successive halving) until ``max_steps`` or until
    their loss improved by less than ``tol`` (relative) over ``check_every`` steps. The
    candidate with the lowest training loss wins (the oracle knows the client's loss). An
    over-parameterised network keeps lowering its training loss for a long time, so for an MLP
    ``max_steps`` is the budget that defines "convergence". Clients are optimised together
    (padded to a common size, in chunks of about ``chunk_rows`` rows, smallest first).

    Args:
        datasets: ``[(X_c, y_c)]`` of the clients.
        starts: per client, ``(d,)`` or ``(S, d)`` initial models.
    """
    where = "optimal_local_models"
    for name, v in (("max_steps", max_steps), ("pilot_steps", pilot_steps), ("check_every", check_every), ("keep", keep)):
        check_int(name, v, where, minimum=1)
    datasets = [(check_finite("X", as_tensor("X", X, where=where, min_rows=1, dtype=model.dtype), where),
                 check_finite("y", as_tensor("y", y, where=where), where)) for X, y in datasets]
    starts = [check_finite("starts", as_tensor("starts", s, where=where, ndim=(1, 2), dtype=model.dtype), where) for s in starts]
    for s in starts:
        if s.numel() == 0 or s.shape[-1] != model.dim:
            raise ValueError(f"{where}: starts must be (d,) or (S, d) with d = {model.dim} (the model's dimension), "
                             f"S >= 1; got {tuple(s.shape)}.")
    for X, _ in datasets:
        try:
            model.forward(starts[0].reshape(-1, model.dim)[0], X[:1])
        except ValueError as e:
            raise ValueError(f"{where}: X does not fit the model: {e}") from None
    if len(datasets) != len(starts):
        raise ValueError(f"give one start tensor per client: {len(datasets)} data sets, {len(starts)} starts.")
    starts = [s.unsqueeze(0) if s.ndim == 1 else s for s in starts]
    for (X, y), s in zip(datasets, starts):
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}.")
        if s.shape[1] != model.dim:
            raise ValueError(f"starts must have {model.dim} columns (the model's dimension), got {tuple(s.shape)}.")
    try:
        stack = LinearStack(model)
    except NotImplementedError:
        stack = None
    out: list[LocalOptimum | None] = [None] * len(datasets)
    order = sorted(range(len(datasets)), key=lambda c: datasets[c][0].shape[0])
    L = len(learning_rates)
    chunk: list[int] = []
    for pos, c in enumerate(order):
        chunk.append(c)
        n_max = datasets[c][0].shape[0]
        rows = n_max * sum(starts[k].shape[0] * L for k in chunk)
        if rows >= chunk_rows or pos == len(order) - 1 or stack is None:
            for k, res in zip(chunk, _adam_to_convergence(model, stack, [datasets[k] for k in chunk],
                                                          [starts[k] for k in chunk], learning_rates, max_steps,
                                                          pilot_steps, keep, tol, check_every, betas, eps)):
                out[k] = res
            chunk = []
    return out  # type: ignore[return-value]


def _adam_to_convergence(model, stack, datasets, starts, learning_rates, max_steps, pilot_steps, keep, tol,
                         check_every, betas, eps) -> list[LocalOptimum]:
    dtype = model.dtype
    lrs = torch.tensor([float(v) for v in learning_rates], dtype=dtype)
    L = lrs.numel()
    owner_all = torch.cat([torch.full((s.shape[0] * L,), i) for i, s in enumerate(starts)])
    theta0 = torch.cat([s.to(dtype).repeat_interleave(L, 0) for s in starts]).clone()
    lr_all = torch.cat([lrs.repeat(s.shape[0]) for s in starts]).unsqueeze(1)
    if stack is not None:
        n_max = max(X.shape[0] for X, _ in datasets)
        Xp = torch.zeros(len(datasets), n_max, datasets[0][0].shape[1], dtype=dtype)
        yp = torch.zeros(len(datasets), n_max, dtype=datasets[0][1].dtype)
        mask = torch.zeros(len(datasets), n_max, dtype=dtype)
        for i, (X, y) in enumerate(datasets):
            Xp[i, : X.shape[0]], yp[i, : X.shape[0]], mask[i, : X.shape[0]] = X, y, 1.0

    def make_loss_grad(rows: Tensor):
        """Loss and gradient of the candidates ``rows`` (data gathered once per compaction)."""
        o = owner_all[rows]
        if stack is not None:
            Xr, yr, mr = Xp[o], yp[o], mask[o]
            return lambda th: stack.loss_and_grad(th, Xr, yr, mr)

        def lg(th: Tensor) -> tuple[Tensor, Tensor]:
            res = [(model.loss(t, *datasets[i]).detach(), model.grad(t, *datasets[i])) for t, i in zip(th, o.tolist())]
            return torch.stack([r[0] for r in res]), torch.stack([r[1] for r in res])
        return lg

    # the running candidates are kept compact: rows[j] is the original index of row j
    rows = torch.arange(theta0.shape[0])
    theta, lr = theta0.clone(), lr_all.clone()
    m, v = torch.zeros_like(theta), torch.zeros_like(theta)
    loss_grad = make_loss_grad(rows)
    best_loss = torch.nan_to_num(loss_grad(theta)[0], nan=float("inf"))
    best_theta = theta0.clone()
    last_check = best_loss.clone()
    b1, b2 = betas
    step = 0
    for step in range(1, max_steps + 1):
        loss, g = loss_grad(theta)
        better = (loss < best_loss[rows]).nonzero().squeeze(1)
        best_loss[rows[better]] = loss[better]
        best_theta[rows[better]] = theta[better]
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        theta -= lr * (m / (1 - b1**step)) / ((v / (1 - b2**step)).sqrt_() + eps)
        keep_rows = torch.isfinite(theta).all(1)
        if step == pilot_steps:  # successive halving: each client keeps her best `keep` candidates
            for i in range(len(starts)):
                mine = (owner_all[rows] == i).nonzero().squeeze(1)
                ranked = mine[best_loss[rows[mine]].argsort()]
                keep_rows[ranked[keep:]] = False
        if step % check_every == 0:
            stalled = best_loss[rows] > last_check[rows] * (1 - tol)
            last_check[rows] = best_loss[rows]
            keep_rows &= ~stalled
        if not bool(keep_rows.all()):
            rows, theta, lr, m, v = rows[keep_rows], theta[keep_rows], lr[keep_rows], m[keep_rows], v[keep_rows]
            if rows.numel() == 0:
                break
            loss_grad = make_loss_grad(rows)
    results = []
    for i, s in enumerate(starts):
        mine = (owner_all == i).nonzero().squeeze(1)
        k = int(mine[torch.nan_to_num(best_loss[mine], nan=float("inf")).argmin()])
        if not bool(torch.isfinite(best_theta[k]).all()) or not math.isfinite(float(best_loss[k])):
            raise NonFiniteError(f"optimal_local_models: every candidate of client {i} diverged (non-finite loss); "
                                 f"lower the learning_rates {tuple(learning_rates)}.")
        results.append(LocalOptimum(theta=best_theta[k].clone(), loss=float(best_loss[k]),
                                    losses=best_loss[mine].view(s.shape[0], L).clone(), steps=step))
    return results


# ---- Model-w-O as the authors' code computes it (fedkit-learn) ---------------------------------
AUTHORS_LOCAL_SPACE: dict[str, tuple[float, float]] = {"lr": (1e-3, 50.0), "beta1": (0.6, 0.999),
                                                       "beta2": (0.6, 0.999), "weight_decay": (1e-4, 0.1)}
"""The search space of fedkit-learn's ``configs/income/louisiana/hyperparameters/hp_space_local.json``
(lr and weight decay on a log scale)."""


@dataclass
class TunedOptimum:
    """Result of :func:`tuned_local_models` for one client."""

    theta: Tensor  # the model of the best trial
    loss: float  # its training loss (the objective)
    params: dict[str, float]  # the best trial's lr, beta1, beta2, weight_decay
    losses: Tensor  # every trial's training loss, in the order they were asked
    noise_multiplier: float | None = None  # σ of the DP oracle (None: no DP)


def tuned_local_models(model: FLModel, clients: Sequence[ClientData], *, epochs: int = 200, batch_size: int = 32,
                       n_trials: int = 50, batch: int = 10, seed: int = 0,
                       space: dict[str, tuple[float, float]] | None = None, eps: float = 1e-8,
                       dp: DPLocalSGD | None = None, noise_multiplier: float | None = None) -> list[TunedOptimum]:
    """Each client's "optimal local model" as the authors' code of Diana et al. 2025 finds it
    (fedkit-learn ``scripts/run_local_models_optimization.py``, run by
    ``run_local_optimal_model_search.sh`` with 200 rounds and 50 trials): from a fresh
    initialisation, ``epochs`` epochs of mini-batch Adam (batch size ``batch_size``) with L2
    weight decay as ``torch.optim.Adam`` applies it (g ← g + wd·θ), its learning rate, β1, β2 and
    weight decay chosen per client by Optuna (TPE, ``n_trials`` trials) to minimise the client's
    training loss at the end. The paper (§5.3) says only "running Adam for a very large number of
    iterations"; :func:`optimal_local_models` is our reading of that (full-batch Adam to
    convergence from warm starts, no weight decay).

    Trials are asked in waves of ``batch`` per client and all clients' waves trained at once
    (:func:`flprivacy.batched.minibatch_steps`); every trial of client c starts from the same
    initialisation ``model.init_params(seed)`` and sees the same shuffling within a wave (the
    authors' code draws a new initialisation per trial). A trial whose model diverges scores +inf.

    **Under DP** (``dp``: the federation's :class:`~flprivacy.defences.DPLocalSGD`), every Adam step
    takes the DP-SGD gradient, as the authors' code does whenever the federation has a clipping
    norm (``run_local_models_optimization.py``: ``use_dp = simulation_setup["clip_norm"] is not
    None``, then fedkit-learn's ``DPTrainer``, Opacus's ``make_private_with_epsilon`` on the same
    ``torch.optim.Adam``): each of the ``epochs``·⌈S_c/B⌉ steps draws a Poisson batch (rate
    q = 1/⌈S_c/B⌉, Opacus's ``1/len(data_loader)``), sums its per-sample gradients clipped to
    ``dp.max_grad_norm`` (:func:`flprivacy.defences.clipped_grad_sum`), adds N(0, σ²C²I) and
    divides by Opacus's expected batch size ⌊S_c q⌋; Adam then adds wd·θ and steps. σ is the
    one Opacus's ``get_noise_multiplier`` gives for the federation's (``dp.target_epsilon``,
    ``dp.target_delta``) over the oracle's own ``epochs`` epochs at rate q (the DPTrainer passes
    ``epochs=args.num_rounds`` and the federation's ε, δ, clipping norm; ``dp``'s lr, rounds and
    local epochs are not used), per client (:meth:`~flprivacy.defences.DPLocalSGD.planned_noise_multiplier`);
    ``noise_multiplier`` sets σ instead (the DPTrainer's ``make_private`` branch, when the setup
    gives a noise multiplier and no ε). A client's M trials in a wave share her Poisson batches
    and noise draws (the authors' DPTrainer seeds every trial's noise generator with the same
    seed). The paper is silent on DP for the oracle: §5.3 says only "running Adam for a very
    large number of iterations", App. C.4 "Other experimental settings are consistent with those
    used in the neural network experiments".
    """
    import optuna  # imported here: `import flprivacy` does not load Optuna

    where = "tuned_local_models"
    check_clients(clients, where, same_width=True)
    for name, v in (("epochs", epochs), ("batch_size", batch_size), ("n_trials", n_trials), ("batch", batch)):
        check_int(name, v, where, minimum=1)
    check_seed("seed", seed, where)
    if dp is not None and not isinstance(dp, DPLocalSGD):
        raise TypeError(f"{where}: dp must be the federation's flprivacy.defences.DPLocalSGD (its clipping norm, "
                        f"epsilon and delta) or None for the non-private oracle; got {type(dp).__name__}.")
    if noise_multiplier is not None:
        if dp is None:
            raise ValueError(f"{where}: noise_multiplier applies to the DP oracle only; pass dp=DPLocalSGD(...) too, "
                             f"or leave noise_multiplier=None.")
        if isinstance(noise_multiplier, bool) or not isinstance(noise_multiplier, (int, float)) \
                or not math.isfinite(noise_multiplier) or noise_multiplier < 0:
            raise ValueError(f"{where}: noise_multiplier must be a finite number >= 0 (σ; None: from dp's epsilon "
                             f"and delta); got {noise_multiplier!r}.")
    space = dict(AUTHORS_LOCAL_SPACE if space is None else space)
    if set(space) != set(AUTHORS_LOCAL_SPACE) or any(not 0 < lo <= hi for lo, hi in space.values()):
        raise ValueError(f"{where}: space must give 0 < low <= high for each of {sorted(AUTHORS_LOCAL_SPACE)}; "
                         f"got {space}.")
    stack = LinearStack(model)
    C, dtype = len(clients), model.dtype
    theta0 = model.init_params(seed).to(dtype)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    studies = [optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(
        seed=child_seed(seed, c) % 2**32, n_startup_trials=min(10, n_trials), constant_liar=True)) for c in range(C)]
    local = LocalSGD(lr=1.0, epochs=epochs, batch_size=batch_size)  # its schedule only; the step is Adam's
    oracle_dp, sigmas = None, []
    if dp is not None:  # the DPTrainer's privacy: the federation's C, ε, δ over the oracle's own epochs
        oracle_dp = DPLocalSGD(lr=1.0, max_grad_norm=dp.max_grad_norm, target_epsilon=dp.target_epsilon,
                               target_delta=dp.target_delta, total_rounds=epochs, epochs=1, batch_size=batch_size,
                               accountant=dp.accountant)
        with warnings.catch_warnings():  # Opacus's RDP note on the largest order: σ is still the one it picks
            warnings.filterwarnings("ignore", message=".*[Oo]ptimal order.*")
            sigmas = [float(noise_multiplier) if noise_multiplier is not None else oracle_dp.planned_noise_multiplier(c)
                      for c in clients]
    best: list[tuple[float, Tensor | None, dict]] = [(math.inf, None, {})] * C
    losses: list[list[float]] = [[] for _ in range(C)]
    done, wave = 0, 0
    while done < n_trials:
        M = min(batch, n_trials - done)
        trials = [[st.ask() for _ in range(M)] for st in studies]
        hp = {k: torch.tensor([[t.suggest_float(k, *space[k], log=k in ("lr", "weight_decay")) for t in row]
                               for row in trials], dtype=dtype).unsqueeze(-1) for k in ("lr", "beta1", "beta2", "weight_decay")}
        theta = theta0.expand(C, M, -1).clone()
        m, v = torch.zeros_like(theta), torch.zeros_like(theta)

        def adam(sel, k: int, g: Tensor) -> None:
            """torch.optim.Adam's step with weight decay, in place on the clients ``sel``."""
            lr, b1, b2, wd = (hp[n][sel] for n in ("lr", "beta1", "beta2", "weight_decay"))
            th, mk, vk = (t if isinstance(sel, slice) else t[sel] for t in (theta, m, v))
            g.add_(th * wd)
            mk.mul_(b1).addcmul_(1 - b1, g)
            vk.mul_(b2).addcmul_((1 - b2) * g, g)
            denom = (vk / (1 - b2 ** (k + 1))).sqrt_().add_(eps)
            th.addcdiv_(mk * (lr / (1 - b1 ** (k + 1))), denom, value=-1.0)
            if not isinstance(sel, slice):  # advanced indexing copied them: write back
                theta[sel], m[sel], v[sel] = th, mk, vk

        with torch.no_grad():
            gens = [generator(child_seed(seed, 7, c, wave)) for c in range(C)]
            if dp is None:
                minibatch_steps(stack, theta, clients, local, gens, adam)
            else:
                _dp_adam_steps(stack, theta, clients, oracle_dp, sigmas, gens, adam)
            for c, data in enumerate(clients):
                ok = torch.isfinite(theta[c]).all(1)
                loss = stack.loss(theta[c].nan_to_num(posinf=0.0, neginf=0.0), data.X.to(dtype), data.y).double()
                loss = torch.nan_to_num(loss.masked_fill(~ok, math.inf), nan=math.inf)
                for i, t in enumerate(trials[c]):
                    val = float(loss[i])
                    studies[c].tell(t, val if math.isfinite(val) else 1e300)
                    losses[c].append(val)
                    if val < best[c][0]:
                        best[c] = (val, theta[c, i].clone(), dict(t.params))
        done += M
        wave += 1
    out = []
    for c in range(C):
        if best[c][1] is None:
            raise NonFiniteError(f"{where}: every one of the {n_trials} trials of client {c} diverged; narrow the "
                                 f"learning-rate range (space['lr'] = {space['lr']}).")
        out.append(TunedOptimum(theta=best[c][1], loss=best[c][0], params=best[c][2],
                                losses=torch.tensor(losses[c], dtype=torch.float64),
                                noise_multiplier=sigmas[c] if dp is not None else None))
    return out


def _dp_adam_steps(stack: LinearStack, theta: Tensor, clients: Sequence[ClientData], dp: DPLocalSGD,
                   sigmas: Sequence[float], gens: Sequence[torch.Generator],
                   update: Callable[[Tensor | slice, int, Tensor], None]) -> None:
    """The DP-SGD gradients of :func:`tuned_local_models`' DP oracle, every client's M models
    ``theta`` ``(C, M, d)`` at once: client c takes dp.epochs·dp.total_rounds·⌈S_c/B⌉ steps, each
    on a Poisson batch drawn from ``gens[c]`` (then her noise, one draw shared by her M models),
    and passes ``(clipped sum + noise)/⌊S_c q⌋`` to ``update(sel, k, g)`` (as
    :func:`flprivacy.batched.minibatch_steps` does)."""
    C, M, d = theta.shape
    K = [dp.steps_per_epoch(c) for c in clients]
    q = [1.0 / k for k in K]
    steps = torch.tensor([k * dp.epochs * dp.total_rounds for k in K])
    expected = torch.tensor([float(int(c.n * qc)) for c, qc in zip(clients, q)], dtype=stack.dtype)
    Cn = float(dp.max_grad_norm)
    sizes = [c.n for c in clients]
    Xs = torch.zeros(C, max(sizes), *clients[0].X.shape[1:], dtype=stack.dtype)
    ys = torch.zeros(C, max(sizes), *clients[0].y.shape[1:], dtype=clients[0].y.dtype)
    for c, data in enumerate(clients):
        Xs[c, : data.n] = data.X
        ys[c, : data.n] = data.y
    for k in range(int(steps.max())):
        live = (steps > k).nonzero().squeeze(1)
        rows, noise = [], torch.empty(len(live), d, dtype=stack.dtype)
        for i, c in enumerate(live.tolist()):
            rows.append((torch.rand(sizes[c], generator=gens[c]) < q[c]).nonzero().squeeze(1))
            noise[i] = torch.randn(d, generator=gens[c], dtype=stack.dtype) * (sigmas[c] * Cn)
        L, B = len(live), max(1, max(r.numel() for r in rows))
        index = torch.zeros(L, B, dtype=torch.long)
        mask = torch.zeros(L, B, dtype=stack.dtype)
        for i, r in enumerate(rows):
            index[i, : r.numel()] = r
            mask[i, : r.numel()] = 1
        Xb, yb = Xs[live.unsqueeze(1), index], ys[live.unsqueeze(1), index]
        Xb, yb, mb = (t.unsqueeze(1).expand(L, M, *t.shape[1:]).reshape(L * M, *t.shape[1:]) for t in (Xb, yb, mask))
        g = _clipped_sum(stack, theta[live].reshape(L * M, d), Xb, yb, Cn, mb).view(L, M, d)
        g = (g + noise.unsqueeze(1)) / expected[live].view(L, 1, 1)
        update(slice(None) if L == C else live, k, g)
