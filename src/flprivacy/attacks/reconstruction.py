"""Local model reconstruction: recover the model a client would train alone, θ_c^*, from the
messages (θ^t sent, θ_c^t returned) an eavesdropper observes.

This module holds the exact attack, **passive least squares** (Xu & Neglia 2021, Obs. 1; Diana et
al. 2025, Alg. 3 and Prop. 2). For least-squares regression, K local gradient steps are the affine
map θ ↦ θ - W(θ - θ_c^*) with W = I - (I - 2η/S_c H)^K, H = X_cᵀX_c, so every observed round gives
θ^t = W^{-1}(θ^t - θ_c^t) + θ_c^* (Diana eq. 10/19, noise-free with full batch). Stacking rounds,
Θ_in = Θ_out (W^{-1}, θ_c^*)ᵀ, and θ_c^* is the last row of the least-squares solution
(eq. 16). The attacker needs neither η, nor E, nor B. :func:`reconstruct_least_squares`.

Numerical conditioning matters: Diana et al. (App. B.2, C.1) pick, among the observed rounds, the
d+1 that minimise cond(Θ_out), by sampling 10^7 random subsets (:func:`random_subset_search`).
:func:`select_messages` reaches a condition number at least as low in seconds, by a greedy start
(column-pivoted QR) and a batched swap search.

For any model, Xu & Neglia's **learned mapping** (Algo. 3: fit a network G from θ to the update
θ - θ_c, eq. 6, then return argmin_θ ||G(θ)||², eq. 7) is :mod:`.learned_mapping`
(:func:`~flprivacy.attacks.learned_mapping.learned_mapping_reconstruction`); its names are
importable from here too.
"""
from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Union

import numpy as np
import scipy.linalg
import torch
from torch import Tensor
from tqdm import tqdm

from ..config import generator as make_generator
from ..log import ClientMessages
from ..validation import as_tensor, check_finite, check_int, check_seed

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
