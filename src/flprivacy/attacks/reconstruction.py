"""Local model reconstruction: recover the model a client would train alone, θ_c^*, from the
messages (θ^t sent, θ_c^t returned) an eavesdropper observes.

Two attacks:

- **Passive least squares** (Xu & Neglia 2021, Obs. 1; Diana et al. 2025, Alg. 3 and
  Prop. 2). For least-squares regression, K local gradient steps are the affine map
  θ ↦ θ - W(θ - θ_c^*) with W = I - (I - 2η/S_c H)^K, H = X_cᵀX_c, so every observed round gives
  θ^t = W^{-1}(θ^t - θ_c^t) + θ_c^* (Diana eq. 10/19, noise-free with full batch). Stacking rounds,
  Θ_in = Θ_out (W^{-1}, θ_c^*)ᵀ, and θ_c^* is the last row of the least-squares solution
  (eq. 16). The attacker needs neither η, nor E, nor B. :func:`reconstruct_least_squares`.
- **Learned mapping** (Xu & Neglia 2021, Algo. 3): for any model, fit a network G from θ to the
  update θ - θ_c on the observed messages (eq. 6), then return argmin_θ ||G(θ)||² (eq. 7).
  :func:`learned_mapping_reconstruction`.

Numerical conditioning matters for the first: Diana et al. (App. B.2, C.1) pick, among the
observed rounds, the d+1 that minimise cond(Θ_out), by sampling 10^7 random subsets
(:func:`random_subset_search`). :func:`select_messages` reaches a condition number at least as
low in seconds, by a greedy start (column-pivoted QR) and a batched swap search.
"""

from __future__ import annotations

import inspect
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Literal, Union, get_type_hints

import numpy as np
import scipy.linalg
import torch
from torch import Tensor, nn
from tqdm import tqdm

from .._keywords import check_keywords, spell_keywords
from ..config import generator as make_generator
from ..log import ClientMessages
from ..validation import as_tensor, check_finite, check_int, check_positive, check_seed

Messages = Union[ClientMessages, tuple[Tensor, Tensor]]
"""What the reconstruction attacks observe, either a :class:`~flprivacy.log.ClientMessages` (e.g. from
:func:`flprivacy.threats.eavesdrop`) or a pair ``(sent, returned)`` of ``(n, d)`` tensors."""


# ---- the design matrices of Alg. 3 ------------------------------------------------------------
def _pairs(messages: Messages) -> tuple[Tensor, Tensor]:
    if isinstance(messages, ClientMessages):
        sent, returned = messages.sent, messages.returned
    else:
        try:
            sent, returned = messages
        except (TypeError, ValueError):
            raise TypeError(
                "messages must be a ClientMessages (from flprivacy.threats.eavesdrop) or a pair (sent, returned) "
                f"of (n, d) tensors; got {type(messages).__name__}."
            ) from None
    sent, returned = torch.as_tensor(sent), torch.as_tensor(returned)
    if sent.ndim != 2 or sent.shape != returned.shape:
        raise ValueError(
            f"sent and returned must be (n, d) tensors of the same shape (one row per observed round); got "
            f"{tuple(sent.shape)} and {tuple(returned.shape)}."
        )
    return sent, returned


def design_matrices(messages: Messages, dtype: torch.dtype = torch.float64) -> tuple[Tensor, Tensor]:
    """Θ_in and Θ_out of Diana et al. Alg. 3, lines 1-2.

    Θ_in ∈ R^{n×d} stacks the sent models θ^t; Θ_out ∈ R^{n×(d+1)} stacks the pseudo-gradients
    θ^t - θ_c^t with a trailing column of ones. Computed in ``dtype`` (float64 by default:
    the exact-recovery claims need it).
    """
    sent, returned = _pairs(messages)
    sent, returned = sent.to(dtype), returned.to(dtype)
    theta_out = torch.cat([sent - returned, torch.ones(sent.shape[0], 1, dtype=dtype)], dim=1)
    return sent, theta_out


def condition_number(matrix: Tensor) -> float:
    """2-norm condition number σ_max/σ_min (``inf`` when σ_min = 0), as ``numpy.linalg.cond``."""
    matrix = check_finite("matrix", as_tensor("matrix", matrix, where="condition_number", ndim=2, min_rows=1), "condition_number")
    if matrix.shape[1] == 0:
        raise ValueError("condition_number: matrix has no columns.")
    s = torch.linalg.svdvals(matrix.to(torch.float64))
    return float("inf") if s[-1] == 0 else float(s[0] / s[-1])


def _check_usable(theta_out: Tensor, size: int | None = None) -> Tensor:
    """Indices of usable rows (all finite); raises if fewer than ``size`` (default d+1)."""
    p = theta_out.shape[1]
    need = p if size is None else size
    usable = torch.isfinite(theta_out).all(dim=1).nonzero().squeeze(1)
    if usable.numel() < need:
        bad = theta_out.shape[0] - usable.numel()
        raise ValueError(
            f"messages: the attack needs at least d+1 = {p} observed rounds with finite models to recover a model of "
            f"d = {p - 1} parameters, but only {usable.numel()} are usable"
            f"{f' ({bad} contain NaN/inf)' if bad else ''}; eavesdrop more rounds of this client "
            f"(Prop. 3: fewer than d messages can never suffice)."
        )
    return usable


def _check_rank(theta_out: Tensor, what: str = "Θ_out") -> float:
    s = torch.linalg.svdvals(theta_out)
    tol = s[0] * max(theta_out.shape) * torch.finfo(theta_out.dtype).eps
    rank = int((s > tol).sum())
    if rank < theta_out.shape[1]:
        raise ValueError(
            f"{what} is singular: numerical rank {rank} < d+1 = {theta_out.shape[1]}, so the messages do not "
            "determine θ_c^*. Typical causes: the same sent model observed twice or the client's updates have "
            "converged (rows repeat), the client's design matrix has rank < d (Assumption 1 of Theorem 1), or "
            "a model that is not least-squares regression. Observe rounds where the global model moves (e.g. "
            "earlier rounds), or pick rounds with select_messages()."
        )
    return float(s[0] / s[-1])


# ---- Alg. 3: passive least squares ------------------------------------------------------------
@dataclass
class LeastSquaresReconstruction:
    """Result of :func:`reconstruct_least_squares`.

    Attributes:
        theta: θ̂_c^*, the estimate of the client's local optimum.
        V: the estimate of W^{-1} = [I - (I - 2η/S_c H_c)^K]^{-1} (``(d, d)``); it encodes the
            client's Hessian and η, K, which the attacker never needed to know.
        rounds_used: positions (in the input messages) of the rows used.
        cond: condition number of Θ_out restricted to those rows.
        residual: ||Θ_in - Θ_out (V, θ̂)ᵀ||_F / ||Θ_in||_F, ~1e-16 when the updates are
            deterministic and affine (full batch least squares), larger with stochastic updates.
            For a square system (d+1 rows, e.g. ``subset="best"``) it is ~0 by construction and
            says nothing about the error: read ``error_estimate``.
        error_estimate: the relative error of θ̂ that rounding alone can cause, from the
            perturbation bound of least squares: cond(Θ_out)·ε_msg (the messages' own rounding,
            ε of their dtype) + cond·ε_64 for ``"lstsq"`` or cond²·ε_64 for ``"normal"``
            (Higham 2002, §20.1; the residual term of tall noisy systems is not included).
            Above 1e-2 a :class:`RuntimeWarning` says the answer may be meaningless.
    """

    theta: Tensor
    V: Tensor
    rounds_used: Tensor
    cond: float
    residual: float
    error_estimate: float = math.nan


def reconstruct_least_squares(messages: Messages, *, subset: Literal["all", "best"] | Sequence[int] = "all",
                              method: Literal["lstsq", "normal"] = "lstsq",
                              on_singular: Literal["raise", "min_norm"] = "raise") -> LeastSquaresReconstruction:
    """Reconstruct client c's local optimum θ_c^* from eavesdropped messages (Diana et al. Alg. 3;
    Xu & Neglia Obs. 1).

    Solves Θ_in ≈ Θ_out (V, θ)ᵀ in the least-squares sense (Diana eq. 16) and returns θ, the
    last row of the solution. Needs n ≥ d+1 rounds; nothing about the client's training (η, E,
    B) is used. Exact (to rounding) when the client runs full-batch gradient descent (Prop. 2);
    an estimate with the error of Theorem 1 under mini-batch SGD.

    Args:
        messages: the observed pairs (θ^t sent, θ_c^t returned).
        subset: ``"all"`` rows; ``"best"``: the d+1 rows :func:`select_messages` picks to
            minimise cond(Θ_out) (Diana App. C.1); or explicit row positions.
        method: ``"lstsq"`` (QR/SVD least squares, accurate to ~cond·ε) or ``"normal"``: the
            pseudo-inverse of Θ_outᵀΘ_out as written in Alg. 3 line 3 (accurate only to
            ~cond²·ε; kept to show why it matters).
        on_singular: ``"raise"`` (default) when Θ_out is numerically singular, or
            ``"min_norm"``: return the minimum-norm least-squares solution anyway (what the
            pseudo-inverse of Alg. 3 does; ``cond`` is then reported as measured, possibly inf).

    Raises:
        ValueError: fewer than d+1 usable messages, or a singular Θ_out (the error says why).
    """
    msg_dtype = _pairs(messages)[0].dtype
    theta_in, theta_out = design_matrices(messages)
    usable = _check_usable(theta_out)
    if isinstance(subset, str):
        if subset == "all":
            rows = usable
        elif subset == "best":
            rows = usable[select_messages(theta_out[usable]).indices]
        else:
            raise ValueError(f"subset must be 'all', 'best' or a list of row positions, got {subset!r}.")
    else:
        rows = torch.as_tensor(list(subset), dtype=torch.long)
        if rows.numel() and (int(rows.min()) < 0 or int(rows.max()) >= theta_out.shape[0]):
            raise ValueError(f"subset positions must be in 0..{theta_out.shape[0] - 1}; got {rows.tolist()}.")
        _check_usable(theta_out[rows])
    A, Y = theta_out[rows], theta_in[rows]
    if on_singular == "raise":
        cond = _check_rank(A)
    elif on_singular == "min_norm":
        cond = condition_number(A)
    else:
        raise ValueError(f"on_singular must be 'raise' or 'min_norm', got {on_singular!r}.")
    if method == "lstsq":
        # gelsd (SVD based): robust for square and tall, well- or ill-conditioned systems
        sol = torch.linalg.lstsq(A, Y, driver="gelsd").solution
    elif method == "normal":
        sol = torch.linalg.pinv(A.T @ A) @ A.T @ Y
    else:
        raise ValueError(f"method must be 'lstsq' or 'normal', got {method!r}.")
    residual = float(torch.linalg.norm(Y - A @ sol) / torch.linalg.norm(Y).clamp_min(1e-300))
    eps_msg = torch.finfo(msg_dtype).eps if msg_dtype.is_floating_point else 0.0
    eps64 = torch.finfo(torch.float64).eps
    error_estimate = cond * eps_msg + (cond * cond if method == "normal" else cond) * eps64
    if not error_estimate <= 1e-2:
        warnings.warn(
            f"reconstruct_least_squares: cond(Θ_out) = {cond:.3g} with {msg_dtype} messages and method={method!r} "
            f"allows a relative error up to ~{error_estimate:.2g} in θ̂ from rounding alone (cond·ε_msg + "
            f"{'cond²' if method == 'normal' else 'cond'}·ε_64), so the estimate may be meaningless"
            f"{' although the residual of this square system is ~0' if A.shape[0] == A.shape[1] else ''}. Record the "
            "messages in float64, use method='lstsq', or select better-conditioned rounds (select_messages).",
            RuntimeWarning, stacklevel=2)
    return LeastSquaresReconstruction(theta=sol[-1].clone(), V=sol[:-1].T.clone(), rounds_used=rows, cond=cond,
                                      residual=residual, error_estimate=error_estimate)


# ---- choosing well-conditioned message subsets -------------------------------------------------
@dataclass
class SubsetSelection:
    """Rows chosen from Θ_out, their condition number, and how the search went.

    ``history``: for :func:`select_messages`, the condition number reached from each start; for
    :func:`random_subset_search`, the best condition number after each batch of subsets.
    """

    indices: Tensor
    cond: float
    seconds: float
    evaluated: int
    history: list[float] = field(default_factory=list)


def condition_numbers(theta_out: Tensor, subsets: Tensor) -> Tensor:
    """cond(Θ_out[S]) for a batch of row subsets ``subsets`` (``(b, k)`` long), vectorised:
    one batched SVD (``torch.linalg.svdvals``) for the whole batch."""
    theta_out = as_tensor("theta_out", theta_out, where="condition_numbers", ndim=2, min_rows=1, dtype=torch.float64)
    check_finite("theta_out", theta_out, "condition_numbers")
    subsets = as_tensor("subsets", subsets, where="condition_numbers", ndim=2, dtype=torch.long)
    s = torch.linalg.svdvals(theta_out[subsets])
    return s[:, 0] / s[:, -1]


def _as_theta_out(x: Messages | Tensor) -> Tensor:
    if isinstance(x, Tensor):
        if x.ndim != 2:
            raise ValueError(f"Θ_out must be a (n, d+1) matrix, got shape {tuple(x.shape)}.")
        return x.to(torch.float64)
    return design_matrices(x)[1]


def _swap_square(A: Tensor, rows: Tensor, deadline: float, max_swaps: int, top: int) -> tuple[Tensor, float, int]:
    """Swap search for a square subset (k = d+1 rows of the m×k matrix ``A``).

    For the current rows S with C = A_S^{-1} and B = A C (so B[S] = I), replacing row S_i by
    row j changes A_S by a rank-one term, and Sherman-Morrison gives the Frobenius norms of the
    new matrix and of its inverse in closed form:
    ||A'^{-1}||_F² = ||C||_F² - 2 (w_j·G_i)/B_ji + G_ii ||w_j||²/B_ji², with G = CᵀC and
    w_j = B_j - e_i. So the Frobenius condition number κ_F (within a factor k of κ_2) of all
    k(m-k) swaps costs O(mk²); the ``top`` best are then checked exactly with one batched SVD.
    """
    m, k = A.shape
    rn2 = (A * A).sum(1)
    best = condition_number(A[rows])
    evaluated = 1
    for _ in range(max_swaps):
        if time.perf_counter() > deadline:
            break
        AS = A[rows]
        try:
            C = torch.linalg.inv(AS)
        except RuntimeError:  # singular start
            break
        B = A @ C
        G = C.T @ C
        g = torch.diagonal(G)
        with torch.no_grad():
            Bs = torch.where(B.abs() < 1e-300, torch.full_like(B, 1e-300), B)
            dot = B @ G - g
            wn2 = (B * B).sum(1, keepdim=True) - 2 * B + 1
            inv_f2 = G.trace() - 2 * dot / Bs + g * wn2 / Bs**2
            a_f2 = (AS * AS).sum() - rn2[rows] + rn2[:, None]
            kf = a_f2 * inv_f2
            kf[rows] = math.inf
            kf = torch.nan_to_num(kf, nan=math.inf).clamp_min(0)
        flat = kf.reshape(-1)
        n_top = min(top, int(torch.isfinite(flat).sum()))
        if n_top == 0:
            break
        cand_idx = flat.topk(n_top, largest=False).indices
        j, i = cand_idx // k, cand_idx % k
        cand = rows.repeat(n_top, 1)
        cand[torch.arange(n_top), i] = j
        conds = torch.nan_to_num(condition_numbers(A, cand), nan=math.inf)
        evaluated += n_top
        b = int(conds.argmin())
        if not float(conds[b]) < best * (1 - 1e-12):
            break
        rows, best = cand[b].clone(), float(conds[b])
    return rows, best, evaluated


def _swap_tall(A: Tensor, rows: Tensor, deadline: float, max_swaps: int, chunk: int) -> tuple[Tensor, float, int]:
    """Swap search for k > d+1 rows: every exchange evaluated by batched SVD (steepest descent)."""
    m = A.shape[0]
    k = rows.numel()
    best = condition_number(A[rows])
    evaluated = 1
    for _ in range(max_swaps):
        if time.perf_counter() > deadline:
            break
        inside = torch.zeros(m, dtype=torch.bool)
        inside[rows] = True
        outside = (~inside).nonzero().squeeze(1)
        if outside.numel() == 0:
            break
        cand = rows.repeat(k * outside.numel(), 1)
        pos = torch.arange(k).repeat_interleave(outside.numel())
        cand[torch.arange(cand.shape[0]), pos] = outside.repeat(k)
        conds = torch.cat([condition_numbers(A, c) for c in cand.split(chunk)])
        evaluated += cand.shape[0]
        conds = torch.nan_to_num(conds, nan=math.inf)
        b = int(conds.argmin())
        if not float(conds[b]) < best * (1 - 1e-12):
            break
        rows, best = cand[b].clone(), float(conds[b])
    return rows, best, evaluated


def _subset_problem(messages: Messages | Tensor, size: int | None) -> tuple[Tensor, Tensor, int, int]:
    """Θ_out's usable rows for a subset search of ``size`` rows (default d+1): ``(A_u, usable, d+1, size)``."""
    A = _as_theta_out(messages)
    p = A.shape[1]
    k = p if size is None else int(size)
    if k < p:
        raise ValueError(f"size must be at least d+1 = {p} (a smaller subset leaves Θ_out singular), got {size}.")
    usable = _check_usable(A, k)
    A_u = A[usable]
    _check_rank(A_u)
    return A_u, usable, p, k


def select_messages(messages: Messages | Tensor, size: int | None = None, *, time_budget: float | None = None,
                    restarts: int = 20, max_swaps: int = 10_000, top: int = 128, seed: int = 0,
                    chunk: int = 4096) -> SubsetSelection:
    """Choose ``size`` (default d+1) observed rounds minimising cond(Θ_out) (Diana App. C.1).

    Diana et al. sample 10^7 random subsets and keep the best (:func:`random_subset_search`).
    Here, a local search that evaluates all swaps at once:

    1. greedy starts: column-pivoted QR of Θ_outᵀ (rank revealing: each step takes the row
       farthest from the span of those already chosen), on Θ_out and on its row-normalised copy;
    2. swap search: from the current rows, score every exchange of a chosen row with an
       unchosen one (for d+1 rows, by the Frobenius condition number in closed form through
       Sherman-Morrison, O(n d²) for all of them; otherwise by batched SVDs), check the best
       ``top`` exactly, move to the best while cond(Θ_out) decreases;
    3. the same from ``restarts`` random starts (seeded), or until ``time_budget`` seconds.

    Args:
        messages: observed messages, or Θ_out itself (``(n, d+1)``).
        size: subset size k ≥ d+1 (default d+1: a square system, as in the paper).
        time_budget: optional cap in seconds; the search stops (keeping the best found) once it
            is spent. Default None: no cap, so the result depends only on the inputs and ``seed``
            (with a cap, a slow machine runs fewer random starts; the greedy starts always run).
        restarts: maximum number of random starts after the greedy ones.
        max_swaps: cap on improving swaps per start.
        top: swaps checked exactly per step (square case).
        seed: for the random starts.
        chunk: candidate matrices per batched SVD (tall case).

    Returns:
        :class:`SubsetSelection` with the chosen row positions (sorted) and their cond(Θ_out).

    Raises:
        ValueError: fewer than ``size`` usable messages, or a singular Θ_out.
    """
    t0 = time.perf_counter()
    check_seed("seed", seed, "select_messages")
    for name, v in (("restarts", restarts), ("max_swaps", max_swaps)):
        check_int(name, v, "select_messages", minimum=0)
    for name, v in (("top", top), ("chunk", chunk)):
        check_int(name, v, "select_messages", minimum=1)
    deadline = math.inf if time_budget is None else t0 + time_budget
    A_u, usable, p, k = _subset_problem(messages, size)
    m = A_u.shape[0]
    gen = make_generator(seed)
    starts: list[Tensor] = []
    An = A_u.numpy()
    for M in (An, An / np.linalg.norm(An, axis=1, keepdims=True).clip(1e-300)):
        piv = scipy.linalg.qr(M.T, pivoting=True, mode="r")[1]
        first = [int(i) for i in piv[:p]]
        taken = set(first)
        rest = [i for i in range(m) if i not in taken]
        starts.append(torch.tensor(first + rest[: k - p], dtype=torch.long))
    best_rows, best_cond, evaluated, history = starts[0], math.inf, 0, []
    i = 0
    while i < len(starts) + restarts:
        if i >= len(starts) and time.perf_counter() > deadline:
            break
        start = starts[i] if i < len(starts) else torch.randperm(m, generator=gen)[:k]
        if k == p:
            rows, c, ev = _swap_square(A_u, start, deadline, max_swaps, top)
        else:
            rows, c, ev = _swap_tall(A_u, start, deadline, max_swaps, chunk)
        evaluated += ev
        history.append(c)
        if c < best_cond:
            best_rows, best_cond = rows, c
        i += 1
    chosen = usable[best_rows].sort().values
    return SubsetSelection(chosen, best_cond, time.perf_counter() - t0, evaluated, history)


def random_subset_search(messages: Messages | Tensor, n_subsets: int = 10**7, size: int | None = None, *,
                         seed: int = 0, batch_size: int = 20_000, progress: bool = False) -> SubsetSelection:
    """The reference selection of Diana et al. (App. C.1 and their code): draw ``n_subsets``
    random subsets of ``size`` (default d+1) distinct rounds and keep the one with the lowest
    cond(Θ_out). Vectorised: subsets are drawn and their condition numbers computed in batches
    of ``batch_size`` (one batched SVD each) instead of a Python loop over ``numpy.linalg.cond``;
    the measured cost is in ``book/results/part2_subset_benchmark.json``."""
    t0 = time.perf_counter()
    check_int("n_subsets", n_subsets, "random_subset_search", minimum=1)
    check_int("batch_size", batch_size, "random_subset_search", minimum=1)
    check_seed("seed", seed, "random_subset_search")
    A_u, usable, p, k = _subset_problem(messages, size)
    m = A_u.shape[0]
    gen = make_generator(seed)
    best_rows, best_cond, done, history = None, math.inf, 0, []
    with tqdm(total=n_subsets, desc="random subsets", disable=not progress, unit_scale=True) as bar:
        while done < n_subsets:
            b = min(batch_size, n_subsets - done)
            # distinct indices per subset: the first k of a random permutation (random keys + topk)
            idx = torch.rand(b, m, generator=gen).topk(k, dim=1).indices
            conds = torch.nan_to_num(condition_numbers(A_u, idx), nan=float("inf"))
            j = int(conds.argmin())
            if float(conds[j]) < best_cond:
                best_cond, best_rows = float(conds[j]), idx[j].clone()
            done += b
            history.append(best_cond)
            bar.update(b)
    return SubsetSelection(usable[best_rows].sort().values, best_cond, time.perf_counter() - t0, done, history)


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
