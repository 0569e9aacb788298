"""Gradient-based attribute inference (Diana et al. 2025, eq. 2, App. B.5; Lyu & Chen 2021,
Chen et al. 2022).

The adversary picks the sensitive attributes whose *virtual* gradients at the global models θ^t
best align, in cosine similarity, with the client's pseudo-gradients θ^t - θ_c^t over a set of
rounds. :func:`gradient_aia` solves it with the Gumbel-softmax trick for a grid of round sets and
learning rates at once (App. B.5), and :class:`GradientAIAResult` selects "Grad" (best cosine)
or "Grad-w-O" (best accuracy, an oracle). Two relaxations of the discrete attributes are offered
(:data:`RELAXATIONS`): ours weights per-sample gradients by the Gumbel-softmax sample
(:class:`GradientObjective`), the authors' code writes the sample into the input
(:class:`InputRelaxationObjective`). The model-based AIA is :mod:`flprivacy.attacks.model_based_aia`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor
from tqdm import tqdm

from ..config import generator as make_generator
from ..data.attributes import SensitiveAttribute
from ..log import ClientMessages
from ..models import FLModel
from ..stack import LinearStack, _Linear
from ..validation import as_tensor, check_finite, check_seed


ROUND_FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.2, 0.5, 1.0)
"""The fractions F of App. B.5; the candidate round sets are the first max(1, floor(f · ``|T_c|``)) rounds, f in F."""

GRAD_LEARNING_RATES: tuple[float, ...] = (1e2, 1e3, 1e4, 1e5, 1e6)
"""The SGD learning rates of the Gumbel-softmax optimisation, {10^n, n = 2..6} (App. B.5)."""

RELAXATIONS: tuple[str, ...] = ("mixture", "input")
"""How the virtual gradient depends on the relaxed attribute sample Z ``(n, C)`` (one-hot when hard):
``"mixture"`` (ours, this function's default) ∇L = (1/n) Σ_i Σ_c Z_ic ∇ℓ(θ, x_i(c), y_i), a mixture
of the per-sample gradients at each candidate value; ``"input"`` (the authors' fedkit-learn code, and
the book's reproduction of Diana et al.: ``flbook.experiments.part3_pipeline.AIASettings``)
writes x̃_i = Σ_c Z_ic x_i(c) into the input and takes ∇L = (1/n) Σ_i ∇ℓ(θ, x̃_i, y_i). Both equal
the gradient at the sampled attribute when Z is one-hot; their derivatives in Z differ."""

SAMPLERS: tuple[str, ...] = ("softmax", "sigmoid")
"""The ways to draw the Gumbel-softmax sample. ``"softmax"`` (this function's default, Jang et al. 2017) C
logits per sample, one Gumbel draw each, softmax; ``"sigmoid"`` (the authors' fedkit-learn code for a
binary attribute, C = 2, and the book's reproduction of Diana et al.) one logit ℓ per sample, one
Gumbel draw G, sample sigmoid((ℓ + G)/τ),
hard value 1 when it exceeds 1/2, inferred value 1 when ℓ > 0. It is the softmax of the logits
(0, ℓ) with one draw, so it is run as such with the first logit held at 0."""


def first_rounds_sets(rounds: Sequence[int] | Tensor, fractions: Sequence[float] = ROUND_FRACTIONS,
                      ) -> list[tuple[int, ...]]:
    """The round sets {first max(1, floor(f · ``|T|``)) rounds of T, f ∈ fractions} (App. B.5), without
    duplicates, smallest first. ``rounds`` is T in the order the rounds happened."""
    rounds = [int(r) for r in (rounds.tolist() if isinstance(rounds, Tensor) else rounds)]
    if not rounds:
        raise ValueError("first_rounds_sets needs at least one observed round.")
    if any(not 0 < f <= 1 for f in fractions):
        raise ValueError(f"fractions must lie in (0, 1], got {list(fractions)}.")
    sizes = sorted({max(1, math.floor(f * len(rounds))) for f in fractions})
    return [tuple(rounds[:k]) for k in sizes]


@dataclass
class GradientAIAResult:
    """The gradient-based AIA run for every (round set, learning rate) pair.

    Attributes:
        round_sets: the candidate sets T of rounds, indexed by ``s``.
        learning_rates: the SGD learning rates, indexed by ``l``.
        predictions: ``(S, L, n)`` inferred candidate index of every sample.
        cosine: ``(S, L)`` mean cosine similarity between virtual gradients (at the inferred
            attributes) and pseudo-gradients over the rounds of the set: what "Grad" maximises.
        iterations: ``(S, L)`` SGD iterations run (fewer than the cap when stopped early).
        sample_cosine: ``(S, L)`` mean cosine similarity at the Gumbel sample of each
            configuration's last SGD iteration (not at the argmax): the authors' selection
            statistic (fedkit-learn ``scripts/run_gb_aia.py`` keeps the last iteration's loss
            Σ_t (1 - cos) divided by ``|T|``, i.e. 1 - this). None when not recorded.
        relaxation: the relaxation the SGD iterations differentiated (:data:`RELAXATIONS`).
        sampler: how the Gumbel-softmax samples were drawn (:data:`SAMPLERS`).
    """

    round_sets: list[tuple[int, ...]]
    learning_rates: tuple[float, ...]
    predictions: Tensor
    cosine: Tensor
    iterations: Tensor
    sample_cosine: Tensor | None = None
    relaxation: str = "mixture"
    sampler: str = "softmax"

    def accuracy(self, true_index: Tensor) -> Tensor:
        """``(S, L)`` attack accuracy of every configuration."""
        return (self.predictions == true_index).double().mean(-1)

    def select_by_cosine(self) -> tuple[int, int]:
        """(s, l) of "Grad": the highest cosine similarity (what a real adversary can compute)."""
        k = int(torch.nan_to_num(self.cosine, nan=-2.0).argmax())
        return divmod(k, len(self.learning_rates))

    def select_by_sample_cosine(self) -> tuple[int, int]:
        """(s, l) of "Grad" under the authors' statistic: the highest mean cosine at the last
        iteration's Gumbel sample (lowest last loss / ``|T|``)."""
        if self.sample_cosine is None:
            raise ValueError("select_by_sample_cosine: this result has no sample_cosine (made by an older version "
                             "or by hand); rerun gradient_aia.")
        k = int(torch.nan_to_num(self.sample_cosine, nan=-2.0).argmax())
        return divmod(k, len(self.learning_rates))

    def subset(self, sets: Sequence[int]) -> GradientAIAResult:
        """The result restricted to the round sets of index ``sets`` (in that order)."""
        idx = torch.as_tensor(list(sets), dtype=torch.long)
        return GradientAIAResult(
            round_sets=[self.round_sets[i] for i in idx.tolist()], learning_rates=self.learning_rates,
            predictions=self.predictions[idx], cosine=self.cosine[idx], iterations=self.iterations[idx],
            sample_cosine=None if self.sample_cosine is None else self.sample_cosine[idx], relaxation=self.relaxation,
            sampler=self.sampler)

    def select_by_accuracy(self, true_index: Tensor) -> tuple[int, int]:
        """(s, l) of "Grad-w-O": the highest attack accuracy (needs the truth: an oracle)."""
        k = int(self.accuracy(true_index).argmax())
        return divmod(k, len(self.learning_rates))

    def grad(self) -> Tensor:
        """Predictions of "Grad"."""
        return self.predictions[self.select_by_cosine()]

    def grad_with_oracle(self, true_index: Tensor) -> Tensor:
        """Predictions of "Grad-w-O"."""
        return self.predictions[self.select_by_accuracy(true_index)]

    @staticmethod
    def merge(*results: GradientAIAResult) -> GradientAIAResult:
        """One result holding the round sets of several (same learning rates and samples), e.g.
        the passive sets and the active ones, so that selection ranges over all of them."""
        lrs = results[0].learning_rates
        if any(r.learning_rates != lrs for r in results):
            raise ValueError("merge: results must share their learning rates.")
        if len({(r.relaxation, r.sampler) for r in results}) > 1:
            raise ValueError("merge: results must share their relaxation and sampler; got "
                             f"{[(r.relaxation, r.sampler) for r in results]}.")
        samples = None if any(r.sample_cosine is None for r in results) else torch.cat(
            [r.sample_cosine for r in results])
        return GradientAIAResult(
            round_sets=[s for r in results for s in r.round_sets], learning_rates=lrs,
            predictions=torch.cat([r.predictions for r in results]), cosine=torch.cat([r.cosine for r in results]),
            iterations=torch.cat([r.iterations for r in results]), sample_cosine=samples,
            relaxation=results[0].relaxation,
            sampler=results[0].sampler,
        )


@dataclass
class _Group:
    positions: Tensor  # message positions (rounds) in this group
    sets: list[int]  # round sets using all of them
    stats: dict = field(default_factory=dict)


class GradientObjective:
    """Σ_{t∈T_k} (1 - CosSim(∇_θ L(θ^t; s_k), θ^t - θ_c^t)) and its gradient for many
    configurations k at once, with s_k a one-hot assignment ``Z_k`` ``(n, C)``.

    The virtual gradient of a hard assignment is the mean of per-sample gradients,
    ∇L(θ; s) = (1/n) Σ_i Σ_c Z_ic g_ic with g_ic = ∇ℓ(θ, x_i(c), y_i); the relaxation treats Z
    as the Gumbel-softmax sample, so ∂/∂Z_ic = g_ic / n (the exact effect of the choice). For a
    linear layer g_ic is an outer product (output signal ⊗ input), so every sum over samples,
    rounds and configurations is one matrix product over the n·C candidate rows: no
    per-sample gradient is ever stored.

    Two identities avoid materialising the gradients where it pays (``first_layer="gram"``):
    the numerator ⟨Σ_j W_j g_j, p⟩ = Σ_j W_j φ_j with φ_j = g_j·p computed once per round, and,
    for the first layer (g_j = δ_j x_jᵀ), ‖Σ_j W_j δ_j x_jᵀ‖² = Σ_{j,j'} W_j W_j' (δ_j·δ_j')(x_j·x_j'),
    a quadratic form in the round's Gram matrix Q = (Δ Δᵀ) ⊙ (X Xᵀ) ``(N, N)``, built once and
    shared by every configuration and learning rate; ∂/∂W_j of the norm is then (Q W)_j. Per
    iteration this reads N² numbers instead of 2·out·F multiply-adds per (round, configuration),
    but it is memory-bound and its build costs N²·out per round: at N = 2·1201, out = 128,
    F = 38 (paper scale) one evaluation took 0.58 s against 0.61 s and the build 7 s, so "auto"
    uses it only when 4·N <= out·F and the Gram matrices fit in ``max_cache_mb``; "outer" is
    the direct product.
    """

    def __init__(self, model: FLModel, sent: Tensor, pseudo: Tensor, X: Tensor, y: Tensor,
                 attribute: SensitiveAttribute, set_positions: list[Tensor], max_cache_mb: float,
                 chunk_elems: int = 2**22, first_layer: str = "auto"):
        if first_layer not in ("auto", "gram", "outer"):
            raise ValueError(f"first_layer must be 'auto', 'gram' or 'outer', got {first_layer!r}.")
        self.stack = LinearStack(model)
        if not isinstance(self.stack.layers[0], _Linear):
            raise NotImplementedError("gradient_aia needs a model whose first module is an nn.Linear layer.")
        self.dtype = model.dtype
        self.n = X.shape[0]
        self.C = attribute.n_values
        self.Xc = attribute.expand(X.to(self.dtype))
        N = self.Xc.shape[0]
        first = self.stack.linears[0]
        self.X1 = torch.cat([self.Xc, torch.ones(N, 1, dtype=self.dtype)], 1) if first.b is not None else self.Xc
        self.yc = y.repeat(self.C)
        self.sent, self.pseudo = sent.to(self.dtype), pseudo.to(self.dtype)
        self.chunk_elems = chunk_elems
        # group message positions by the set of round sets that use them
        member: dict[int, set[int]] = {}
        for s, pos in enumerate(set_positions):
            for p in pos.tolist():
                member.setdefault(p, set()).add(s)
        groups: dict[tuple[int, ...], list[int]] = {}
        for p, sets in sorted(member.items()):
            groups.setdefault(tuple(sorted(sets)), []).append(p)
        self.groups = [_Group(torch.tensor(ps, dtype=torch.long), list(sets)) for sets, ps in groups.items()]
        self.per_round = N * (1 + sum(lay.n_out * (1 if i == 0 else lay.n_in + 1) for i, lay in enumerate(self.stack.linears)))
        F0, out0 = self.X1.shape[1], first.n_out
        fits = (self.per_round + N * N) * len(member) * self.Xc.element_size() <= max_cache_mb * 2**20
        self.gram = first_layer == "gram" or (first_layer == "auto" and fits and 4 * N <= out0 * F0)
        if self.gram:
            self.per_round += N * N
            self.XX = self.X1 @ self.X1.T
        self.cache = self.per_round * len(member) * self.Xc.element_size() <= max_cache_mb * 2**20

    def _stats(self, pos: Tensor) -> dict:
        """Per-round quantities: the output signals Δ of the first layer ``(R·out, N)``, Δ ⊗ [A, 1]
        of the others ``(N, R·F)``, the pseudo-gradient blocks and φ_j = g_j·p ``(N, R)``."""
        R, N = pos.numel(), self.Xc.shape[0]
        A, D = self.stack.per_sample_signals(self.sent[pos], self.Xc, self.yc)
        p = self.pseudo[pos]
        st: dict = {"blocks": [], "phi": torch.zeros(R, N, dtype=self.dtype), "pnorm": p.norm(dim=1)}
        for i, (lay, a, d) in enumerate(zip(self.stack.linears, A, D)):
            pt = p[:, lay.w].view(R, lay.n_out, lay.n_in)
            if lay.b is not None:
                pt = torch.cat([pt, p[:, lay.b].unsqueeze(-1)], -1)
                a = torch.cat([a, torch.ones(R, N, 1, dtype=self.dtype)], -1)
            st["phi"] += (torch.bmm(a, pt.transpose(1, 2)) * d).sum(-1)
            if i == 0 and self.gram:  # Q_r = (Δ_r Δ_rᵀ) ⊙ (X Xᵀ), the first layer's Gram matrix
                st["blocks"].append((torch.bmm(d, d.transpose(1, 2)).mul_(self.XX), pt))
            elif i == 0:
                st["blocks"].append((d.transpose(1, 2).reshape(R * lay.n_out, N).contiguous(), pt))
            else:
                P = (d.unsqueeze(-1) * a.unsqueeze(-2)).reshape(R, N, -1).transpose(0, 1).reshape(N, -1)
                st["blocks"].append((P.contiguous(), pt.reshape(R, -1)))
        st["phi"] = st["phi"].T.contiguous()
        return st

    def _group_stats(self, g: _Group, chunk: slice) -> dict:
        key = (chunk.start, chunk.stop)
        if key in g.stats:
            return g.stats[key]
        st = self._stats(g.positions[chunk])
        if self.cache:
            g.stats[key] = st
        return st

    def _chunks(self, g: _Group) -> list[slice]:
        step = max(1, self.chunk_elems // self.per_round)
        R = g.positions.numel()
        return [slice(a, min(a + step, R)) for a in range(0, R, step)]

    def evaluate(self, W: Tensor, configs: Tensor, set_of_config: Tensor, want_grad: bool = True,
                 ) -> tuple[Tensor, Tensor, Tensor | None]:
        """For weights ``W`` ``(K, N)`` (= Z/n, candidate-major) of configurations ``configs``:
        returns (Σ_t (1 - cos), Σ_t cos, ∂/∂W of Σ_t (1 - cos)), the first two ``(K,)``."""
        K, N = W.shape
        obj = torch.zeros(K, dtype=self.dtype)
        cos_sum = torch.zeros(K, dtype=self.dtype)
        dW = torch.zeros(K, N, dtype=self.dtype) if want_grad else None
        sets = set_of_config[configs]
        for g in self.groups:
            rows = torch.isin(sets, torch.tensor(g.sets)).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            Wg = W[rows]
            for chunk in self._chunks(g):
                cos, grad = self._chunk(self._group_stats(g, chunk), Wg, want_grad)
                obj[rows] += (1 - cos).sum(0)
                cos_sum[rows] += cos.sum(0)
                if want_grad:
                    dW[rows] -= grad
        return obj, cos_sum, dW

    def _virtual(self, st: dict, W: Tensor) -> tuple[Tensor, Tensor, Tensor, list[Tensor]]:
        """The virtual gradients of a chunk of rounds: (cos ``(R, K)``, ‖G‖ ``(R, K)``, ‖p‖ ``(R, 1)``,
        each layer's block G)."""
        K, N = W.shape
        phi = st["phi"]
        R = phi.shape[1]
        dot = (W @ phi).T  # ⟨Σ_j W_j g_j, p⟩ = Σ_j W_j φ_j
        nrm = torch.zeros(R, K, dtype=self.dtype)
        Gs = []
        for i, (lay, (M, pt)) in enumerate(zip(self.stack.linears, st["blocks"])):
            if i == 0 and self.gram:  # ‖G_rk‖² = W_kᵀ Q_r W_k; G holds Q_r W_kᵀ (R, N, K)
                G = torch.matmul(M, W.T)
                nrm += (G * W.T.unsqueeze(0)).sum(1)
            elif i == 0:  # (R·out, N) @ (N, K·in'): every round's and configuration's gradient at once
                F = self.X1.shape[1]
                Y = (W.unsqueeze(-1) * self.X1.unsqueeze(0)).transpose(0, 1).reshape(N, K * F)
                G = (M @ Y).view(R, lay.n_out, K, F)
                nrm += (G * G).sum((1, 3))
            else:  # (K, N) @ (N, R·F)
                G = (W @ M).view(K, R, -1)
                nrm += (G * G).sum(-1).T
            Gs.append(G)
        tiny = torch.finfo(self.dtype).tiny ** 0.5
        gnorm = nrm.sqrt().clamp_min(tiny)
        pn = st["pnorm"].unsqueeze(1).clamp_min(tiny)
        return dot / (gnorm * pn), gnorm, pn, Gs

    def _chunk(self, st: dict, W: Tensor, want_grad: bool) -> tuple[Tensor, Tensor | None]:
        cos, gnorm, pn, Gs = self._virtual(st, W)
        if not want_grad:
            return cos, None
        K, N = W.shape
        phi = st["phi"]
        R = phi.shape[1]
        # ∂cos/∂W_kj = g_j·(p/(|G||p|) - cos G/|G|²) = a φ_j - b (g_j·G), summed over the rounds
        a = 1.0 / (gnorm * pn)
        b = cos / gnorm**2
        grad = phi @ a  # (N, K)
        for i, (lay, (M, _)) in enumerate(zip(self.stack.linears, st["blocks"])):
            G = Gs[i]
            if i == 0 and self.gram:  # g_j·G_rk = (Q_r W_k)_j
                grad -= (G * b.unsqueeze(1)).sum(0)
            elif i == 0:
                F = self.X1.shape[1]
                H = (G * b.view(R, 1, K, 1)).reshape(R * lay.n_out, K * F)
                grad -= ((M.T @ H).view(N, K, F) * self.X1.unsqueeze(1)).sum(-1)
            else:
                H = (G * b.T.unsqueeze(-1)).reshape(K, -1)
                grad -= M @ H.T
        return cos, grad.T


class InputRelaxationObjective:
    """The objective of :class:`GradientObjective` under the authors' relaxation (``"input"``,
    :data:`RELAXATIONS`): the relaxed attribute is written into the input,
    x̃_i = Σ_c Z_ic x_i(c), and the virtual gradient is that of the empirical risk at x̃,
    ∇_θ L(θ; x̃) = (1/n) Σ_i ∇_θ ℓ(θ, x̃_i, y_i). Its derivative in Z goes through the model (a
    mixed second derivative ∂²ℓ/∂x∂θ), computed by autograd: one batched forward pass per chunk
    of (round, configuration) pairs, with one copy of θ^t per pair so that one backward pass gives
    every pair's gradient, then a second backward pass to Z. Slower than the mixture (it builds
    the graph at every iteration) and meant for small models and clients (Medical: n ≈ 600,
    MLP(128)).

    Same interface as :class:`GradientObjective`: :meth:`evaluate` takes W = Z/n in the
    candidate-major layout ``(K, C·n)`` and returns ∂/∂W, so that :func:`gradient_aia` runs either
    objective with the same iterations.
    """

    def __init__(self, model: FLModel, sent: Tensor, pseudo: Tensor, X: Tensor, y: Tensor,
                 attribute: SensitiveAttribute, set_positions: list[Tensor], chunk_elems: int = 2**22):
        self.stack = LinearStack(model)
        self.dtype = model.dtype
        self.n, self.C = X.shape[0], attribute.n_values
        self.Xc = attribute.expand(X.to(self.dtype)).view(self.C, self.n, X.shape[1])  # x_i(c)
        self.y = y
        self.sent, self.pseudo = sent.to(self.dtype), pseudo.to(self.dtype)
        self.set_positions = set_positions
        width = X.shape[1] + 2 * sum(lay.n_out for lay in self.stack.linears)
        self.pairs_per_chunk = max(1, chunk_elems // (self.n * width))

    def evaluate(self, W: Tensor, configs: Tensor, set_of_config: Tensor, want_grad: bool = True,
                 ) -> tuple[Tensor, Tensor, Tensor | None]:
        """For weights ``W`` ``(K, C·n)`` (= Z/n, candidate-major) of configurations ``configs``:
        returns (Σ_t (1 - cos), Σ_t cos, ∂/∂W of Σ_t (1 - cos)), the first two ``(K,)``."""
        K = W.shape[0]
        sets = set_of_config[configs].tolist()
        rows = torch.cat([torch.full((self.set_positions[s].numel(),), k, dtype=torch.long) for k, s in enumerate(sets)])
        pos = torch.cat([self.set_positions[s] for s in sets])
        obj = torch.zeros(K, dtype=self.dtype)
        cos_sum = torch.zeros(K, dtype=self.dtype)
        dW = torch.zeros_like(W) if want_grad else None
        tiny = torch.finfo(self.dtype).tiny ** 0.5
        leaf = W.detach().clone().requires_grad_(want_grad)
        step = self.pairs_per_chunk
        for a in range(0, rows.numel(), step):
            r, p = rows[a:a + step], pos[a:a + step]
            with torch.enable_grad():
                Z = (self.n * leaf[r]).view(-1, self.C, self.n)  # (M, C, n): the sample of each pair's configuration
                Xt = torch.einsum("mcn,cnp->mnp", Z, self.Xc)  # x̃_i = Σ_c Z_ic x_i(c), written into the input
                theta = self.sent[p].detach().requires_grad_(True)  # one copy of θ^t per pair
                risk = self.stack.loss(theta, Xt, self.y).sum()
                (G,) = torch.autograd.grad(risk, theta, create_graph=want_grad)  # row m: ∇_θ L(θ^t; x̃) of pair m
                pt = self.pseudo[p]
                cos = (G * pt).sum(1) / (G.norm(dim=1).clamp_min(tiny) * pt.norm(dim=1).clamp_min(tiny))
                if want_grad:
                    dW += torch.autograd.grad((1 - cos).sum(), leaf)[0]
            cos = cos.detach()
            obj.index_add_(0, r, 1 - cos)
            cos_sum.index_add_(0, r, cos)
        return obj, cos_sum, dW


class AnalyticInputObjective(GradientObjective):
    """:class:`InputRelaxationObjective` at hard samples, written out by hand for a one-hidden-layer
    ReLU MLP with one output (:func:`flprivacy.models.mlp`, the model of Diana et al. §5.2) and the
    squared-error or logistic loss: the same objective and cosine, and the same straight-through
    step, at about the cost of the mixture (:class:`GradientObjective`, whose virtual gradients it
    reuses) instead of a double backward pass through autograd.

    Derivation. With a = W1 x + b1, e = w2 ⊙ 1[a > 0], o = w2·relu(a) + b2 and ℓ = ℓ(o, y), the
    per-sample gradient is g(x) = ℓ'(o) ∇_θ o. For the objective Σ_t (1 - cos(G_t, p_t)) with
    G = (1/n) Σ_i g(x̃_i), let v = ∂(1 - cos)/∂G = -(α p - β G), α = 1/(‖G‖‖p‖), β = cos/‖G‖², with
    blocks (V1 | v_b1) and v2 = (v_w2 | v_b2). Sample i's derivative is that of f(x) = ⟨v, g(x)⟩ =
    ℓ'(o) ȯ with ȯ = ⟨v, ∇_θ o⟩ = eᵀ(V1 x + v_b1) + v2·(relu(a), 1); since ReLU'' = 0,

        ∇_x f · d = ℓ''(o) ȯ (e · W1 d) + ℓ'(o) Σ_h 1[a_h > 0] (v_w2,h (W1 d)_h + w2_h (V1 d)_h).

    The relaxed input is x̃_i = Σ_c Z_ic x_i(c) and x_i(c) - x_i(0) = d_c is the same vector for
    every sample (the attribute's columns set to candidate c minus candidate 0), so ∂/∂Z_ic -
    ∂/∂Z_i0 = (1/n) Σ_t ∇_x f_i · d_c. Only these differences move the Gumbel-softmax logits (the
    softmax backward removes any constant shared by a sample's candidates), so :meth:`evaluate`
    returns them, with 0 at candidate 0: ∂/∂W equals :class:`InputRelaxationObjective`'s up to a
    constant per (configuration, sample). Every term is a sum over rounds of a per-round row signal
    times a per-(round, configuration) factor, so, like the mixture's derivative, it is a matrix
    product over the rounds, computed for every candidate row and read at the sampled ones; the
    largest, β eᵀ G1 x with G1 the first layer's block of G, has the size of the mixture's.

    Only one-hot samples (what :func:`gradient_aia`'s iterations evaluate) are accepted.
    """

    def __init__(self, model: FLModel, sent: Tensor, pseudo: Tensor, X: Tensor, y: Tensor,
                 attribute: SensitiveAttribute, set_positions: list[Tensor], max_cache_mb: float,
                 chunk_elems: int = 2**22):
        if not self.applies(model, X, attribute):
            raise NotImplementedError("AnalyticInputObjective needs mlp(...) with one hidden ReLU layer, one output, "
                                      "the 'mse' or 'bce' loss and an attribute set by fixed columns; use "
                                      "InputRelaxationObjective.")
        super().__init__(model, sent, pseudo, X, y, attribute, set_positions, max_cache_mb, chunk_elems, "outer")
        self.loss_name = model.loss_name
        self.F = X.shape[1]
        self.d = (self.Xc.view(self.C, self.n, self.F)[1:, 0] - self.Xc[0]).contiguous()  # (C-1, F): x_i(c) - x_i(0)
        H, N = self.stack.linears[0].n_out, self.Xc.shape[0]
        self.per_round += (self.C - 1) * N * (2 * H + 2) + N * H  # kE, kh1, klin per candidate; S
        rounds = sum(g.positions.numel() for g in self.groups)
        self.cache = self.per_round * rounds * self.Xc.element_size() <= max_cache_mb * 2**20

    @staticmethod
    def applies(model: FLModel, X: Tensor, attribute: SensitiveAttribute) -> bool:
        """Whether the hand-written derivative covers this model and attribute."""
        try:
            lay = LinearStack(model).layers
        except NotImplementedError:
            return False
        if not (len(lay) == 3 and isinstance(lay[0], _Linear) and isinstance(lay[1], torch.nn.ReLU)
                and isinstance(lay[2], _Linear) and lay[2].n_out == 1 and lay[0].b is not None
                and lay[2].b is not None and model.loss_name in ("mse", "bce")):
            return False
        Xc = attribute.expand(X.to(model.dtype)).view(attribute.n_values, X.shape[0], X.shape[1])
        diff = Xc - Xc[:1]
        return bool((diff == diff[:, :1]).all())  # candidates differ by the same vector in every row

    def _stats(self, pos: Tensor) -> dict:
        """The mixture's per-round statistics plus the row signals of the input derivative, for
        each candidate direction d_c (c ≥ 1): κ = ℓ'' (e · W1 d_c) times e ``(R·H, N)``, times
        (relu(a), 1) ``(N, R·(H+1))`` and times eᵀ P1 x + p2·(relu(a), 1) ``(N, R)``; and
        S = ℓ' 1[a > 0] ``(R·H, N)``."""
        st = super()._stats(pos)
        R, N = pos.numel(), self.Xc.shape[0]
        l1, l2 = self.stack.linears
        H, F = l1.n_out, self.F
        th, p = self.sent[pos], self.pseudo[pos]
        W1 = th[:, l1.w].view(R, H, F)
        w2, b2 = th[:, l2.w], th[:, l2.b]
        a = torch.baddbmm(th[:, l1.b].unsqueeze(1), self.Xc.expand(R, -1, -1), W1.transpose(1, 2))  # (R, N, H)
        on = (a > 0).to(self.dtype)
        h1 = torch.cat([a.clamp_min(0), torch.ones(R, N, 1, dtype=self.dtype)], -1)
        o = (h1[..., :H] @ w2.unsqueeze(-1)).squeeze(-1) + b2
        yc = self.yc.to(self.dtype)
        if self.loss_name == "mse":  # ℓ = (o - y)²
            lp, lpp = 2 * (o - yc), torch.full_like(o, 2.0)
        else:  # logistic loss on the logit o
            sg = torch.sigmoid(o)
            lp, lpp = sg - yc, sg * (1 - sg)
        e = on * w2.unsqueeze(1)  # ∂o/∂a, (R, N, H)
        P1 = p[:, l1.w].view(R, H, F)
        p2 = torch.cat([p[:, l2.w], p[:, l2.b]], 1)  # (R, H+1)
        lin = ((torch.baddbmm(p[:, l1.b].unsqueeze(1), self.Xc.expand(R, -1, -1), P1.transpose(1, 2)) * e).sum(-1)
               + (h1 * p2.unsqueeze(1)).sum(-1))  # eᵀ P1 x1 + p2·h1, (R, N)
        W1d = torch.einsum("rhf,cf->rch", W1, self.d)  # W1 d_c, (R, C-1, H)
        kappa = lpp.unsqueeze(1) * torch.einsum("rnh,rch->rcn", e, W1d)  # (R, C-1, N)
        st["input"] = {
            "kE": [(kappa[:, c].unsqueeze(-1) * e).transpose(1, 2).reshape(R * H, N) for c in range(self.C - 1)],
            "kh1": [(kappa[:, c].unsqueeze(-1) * h1).transpose(0, 1).reshape(N, -1) for c in range(self.C - 1)],
            "klin": [(kappa[:, c] * lin).T.contiguous() for c in range(self.C - 1)],
            "S": (lp.unsqueeze(-1) * on).transpose(1, 2).reshape(R * H, N),
            "W1d": W1d, "P1d": torch.einsum("rhf,cf->rch", P1, self.d), "w2": w2, "p2": p2,
        }
        return st

    def evaluate(self, W: Tensor, configs: Tensor, set_of_config: Tensor, want_grad: bool = True,
                 ) -> tuple[Tensor, Tensor, Tensor | None]:
        """For one-hot weights ``W`` ``(K, C·n)`` (= Z/n, candidate-major) of configurations
        ``configs``: returns (Σ_t (1 - cos), Σ_t cos, ∂/∂W of Σ_t (1 - cos) up to a constant per
        configuration and sample, 0 at candidate 0), the first two ``(K,)``."""
        Z = W.view(W.shape[0], self.C, self.n)
        if not (bool(((Z != 0).sum(1) == 1).all()) and bool(torch.isclose(Z.sum(1), torch.tensor(1.0 / self.n,
                                                                                                  dtype=W.dtype)).all())):
            raise ValueError("AnalyticInputObjective.evaluate needs one-hot samples (W = one-hot / n); use "
                             "InputRelaxationObjective for soft ones.")
        return super().evaluate(W, configs, set_of_config, want_grad)

    def _chunk(self, st: dict, W: Tensor, want_grad: bool) -> tuple[Tensor, Tensor | None]:
        cos, gnorm, pn, (G0, G1) = self._virtual(st, W)
        if not want_grad:
            return cos, None
        K, N = W.shape
        n, C, F1 = self.n, self.C, self.X1.shape[1]
        ins = st["input"]
        R, H = G0.shape[0], G0.shape[1]
        alpha, beta = 1.0 / (gnorm * pn), cos / gnorm**2  # (R, K): v = -(α p - β G)
        BG0 = (G0 * beta.view(R, 1, K, 1)).reshape(R * H, K * F1)
        BG1 = (G1 * beta.T.unsqueeze(-1)).permute(1, 2, 0).reshape(-1, K)  # (R·(H+1), K)
        v2 = -(alpha.unsqueeze(-1) * ins["p2"][:, None, :H] - beta.unsqueeze(-1) * G1.transpose(0, 1)[..., :H])
        one_hot = W.view(K, C, n)
        Jrow = one_hot.argmax(1) * n + torch.arange(n)  # (K, n): each sample's sampled row
        out = torch.zeros(K, C, n, dtype=self.dtype)
        for c in range(C - 1):
            # κ ȯ = κ (-α (eᵀP1x + p2·h1) + β eᵀ G1 x + β G2·h1), summed over the rounds
            U = ins["klin"][c] @ -alpha
            U += ((ins["kE"][c].T @ BG0).view(N, K, F1) * self.X1.unsqueeze(1)).sum(-1)
            U += ins["kh1"][c] @ BG1
            # ℓ' Σ_h 1[a_h > 0] (v_w2,h (W1 d)_h + w2_h (V1 d)_h), V1 d = -(α P1 d - β G1 d)
            V1d = -(alpha.unsqueeze(1) * ins["P1d"][:, c].unsqueeze(-1)
                    - beta.unsqueeze(1) * (G0[..., :-1] @ self.d[c]))  # (R, H, K)
            Q = v2.transpose(1, 2) * ins["W1d"][:, c].unsqueeze(-1) + ins["w2"].unsqueeze(-1) * V1d
            U += ins["S"].T @ Q.reshape(R * H, K)
            out[:, c + 1] = U.T.gather(1, Jrow)
        return cos, -out.view(K, C * n)  # the caller subtracts ∂cos/∂W


def gradient_aia(
    model: FLModel,
    messages: ClientMessages,
    X: Tensor,
    y: Tensor,
    attribute: SensitiveAttribute,
    *,
    round_sets: Sequence[Sequence[int]] | None = None,
    learning_rates: Sequence[float] = GRAD_LEARNING_RATES,
    iterations: int = 100,
    temperature: float = 1.0,
    patience: int | None = None,
    tolerance: float = 0.0,
    seed: int = 0,
    max_cache_mb: float = 1024,
    relaxation: str = "mixture",
    sampler: str = "softmax",
    progress: bool = False,
) -> GradientAIAResult:
    """The gradient-based AIA of Chen et al. 2022 (Diana et al. eq. 2) for a grid of round
    sets and learning rates, all optimised at once.

    For every round set T and learning rate η, it maximises Σ_{t∈T} CosSim(∇_θ L(θ^t; s),
    θ^t - θ_c^t) over the attributes s of the client's samples, where L(θ; s) is the client's
    empirical risk with her public data and the attributes s, θ^t the model she received and
    θ_c^t the model she returned. The discrete s is relaxed with the Gumbel-softmax trick
    (Jang et al. 2017): logits ``(n, C)`` start at N(0, 1); each SGD iteration draws a hard
    one-hot sample (straight-through, temperature ``temperature``) and steps the logits with
    learning rate η. The virtual gradient of the sample is the mean of the per-sample gradients
    at the sampled values. How it depends on the relaxed sample (what the straight-through
    step differentiates) is ``relaxation``: ours weights those per-sample gradients by the sample
    (``"mixture"``, :class:`GradientObjective`); the authors' code (fedkit-learn
    ``fedklearn/attacks/aia.py``, ``AttributeInferenceAttack``, run by ``scripts/run_gb_aia.py``)
    writes the straight-through sample into the sensitive feature of the input and
    differentiates the model's loss gradient through it (``"input"``:
    :class:`AnalyticInputObjective` for the one-hidden-layer ReLU MLP, by hand;
    :class:`InputRelaxationObjective`, by autograd, for other models). The paper (eq. 2, App. B.5) names the Gumbel-softmax trick
    but not this choice, so ``"input"`` follows the authors' code; at a one-hot sample both give
    the same virtual gradient and cosine. How the sample is drawn is ``sampler``: C logits with C
    Gumbel draws and a softmax (``"softmax"``), or, for a binary attribute as in the authors' code,
    one logit with one Gumbel draw and a sigmoid (``"sigmoid"``, :data:`SAMPLERS`). The inferred
    attribute is the argmax of the logits.

    Args:
        model: the trained architecture (linear layers and element-wise activations).
        messages: the observed exchanges M_c (passive: :func:`flprivacy.threats.eavesdrop`;
            active: the exchanges of the attack rounds). θ^t is ``sent``, θ_c^t ``returned``.
        X, y: the client's samples; the sensitive columns of X are ignored.
        attribute: where the attribute lives and its candidate values.
        round_sets: candidate sets of rounds (round numbers as in ``messages.rounds``);
            default :func:`first_rounds_sets` of all observed rounds (App. B.5).
        learning_rates: SGD learning rates tried for every set (App. B.5: 10^2..10^6).
        iterations: SGD iterations (the paper's code runs 100).
        temperature: Gumbel-softmax temperature (App. B.5: 1).
        patience, tolerance: early stopping. A configuration stops once, for ``patience``
            iterations, its argmax assignment has stayed within ``tolerance`` (fraction of the
            samples) of the assignment it had at the start of that window (None: always run
            ``iterations``, as the paper does).
        seed: seeds the initial logits and the Gumbel noise.
        max_cache_mb: per-round statistics are computed once and kept if they fit in this
            much memory, else recomputed at every iteration.
        relaxation: ``"mixture"`` (default) or ``"input"`` (:data:`RELAXATIONS`); recorded in
            the result.
        sampler: ``"softmax"`` (default) or ``"sigmoid"`` (binary attributes only; :data:`SAMPLERS`);
            recorded in the result.

    Returns:
        :class:`GradientAIAResult` with one configuration per (set, learning rate).
    """
    X = check_finite("X", as_tensor("X", X, where="gradient_aia", ndim=2, min_rows=1), "gradient_aia")
    y = check_finite("y", as_tensor("y", y, where="gradient_aia", rows=X.shape[0]), "gradient_aia")
    check_seed("seed", seed, "gradient_aia")
    if relaxation not in RELAXATIONS:
        raise ValueError(f"gradient_aia: relaxation must be one of {RELAXATIONS}, got {relaxation!r}.")
    if sampler not in SAMPLERS:
        raise ValueError(f"gradient_aia: sampler must be one of {SAMPLERS}, got {sampler!r}.")
    if sampler == "sigmoid" and attribute.n_values != 2:
        raise ValueError(f"gradient_aia: sampler='sigmoid' draws a binary attribute, but {attribute.name or 'the attribute'}"
                         f" has {attribute.n_values} values; use sampler='softmax'.")
    if X.ndim != 2 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be (n, p) with n = len(y); got X {tuple(X.shape)}, y {tuple(y.shape)}.")
    attribute.check(X)
    if iterations < 1 or temperature <= 0:
        raise ValueError(f"need iterations >= 1 and temperature > 0; got {iterations}, {temperature}.")
    if len(messages) == 0:
        raise ValueError("gradient_aia needs at least one observed exchange (θ^t, θ_c^t) in messages.")
    check_finite("messages.sent", messages.sent, "gradient_aia", "the observed models are broken (training diverged?)")
    check_finite("messages.returned", messages.returned, "gradient_aia", "the observed models are broken")
    if round_sets is None:
        round_sets = first_rounds_sets(messages.rounds)
    round_sets = [tuple(int(r) for r in s) for s in round_sets]
    where = {int(r): i for i, r in enumerate(messages.rounds.tolist())}
    set_positions = []
    for s in round_sets:
        missing = [r for r in s if r not in where]
        if not s or missing:
            raise ValueError(
                f"round set {s[:5]}{'...' if len(s) > 5 else ''} is empty or holds rounds not in the messages "
                f"({missing[:5]}); observed rounds: {messages.rounds.tolist()[:10]}..."
            )
        set_positions.append(torch.tensor([where[r] for r in s], dtype=torch.long))
    lrs = tuple(float(v) for v in learning_rates)
    S, L, n, C = len(round_sets), len(lrs), X.shape[0], attribute.n_values
    if relaxation == "input" and AnalyticInputObjective.applies(model, X, attribute):
        obj = AnalyticInputObjective(model, messages.sent, messages.pseudo_gradients, X, y, attribute, set_positions,
                                     max_cache_mb)
    elif relaxation == "input":
        obj = InputRelaxationObjective(model, messages.sent, messages.pseudo_gradients, X, y, attribute, set_positions)
    else:
        obj = GradientObjective(model, messages.sent, messages.pseudo_gradients, X, y, attribute, set_positions,
                                 max_cache_mb)
    dtype = obj.dtype
    gen = make_generator(seed)
    K = S * L
    set_of_config = torch.arange(S).repeat_interleave(L)
    lr = torch.tensor(lrs, dtype=dtype).repeat(S)
    set_size = torch.tensor([len(s) for s in round_sets], dtype=dtype)[set_of_config]
    if sampler == "sigmoid":  # logits (0, ℓ) with ℓ ~ N(0, 1), as the authors' initialisation
        logits = torch.cat([torch.zeros(K, n, 1, dtype=dtype), torch.randn(K, n, 1, generator=gen, dtype=dtype)], -1)
    else:
        logits = torch.randn(K, n, C, generator=gen, dtype=dtype)
    active = torch.ones(K, dtype=torch.bool)
    ran = torch.zeros(K, dtype=torch.long)
    assign = logits.argmax(-1)
    ref, ref_it = assign.clone(), torch.zeros(K, dtype=torch.long)
    sample_cos = torch.full((K,), float("nan"), dtype=dtype)  # Σ_t cos at each configuration's last sample
    for _ in tqdm(range(iterations), desc="gradient-based AIA", disable=not progress, leave=False):
        idx = active.nonzero().squeeze(1)
        if idx.numel() == 0:
            break
        if sampler == "sigmoid":  # one Gumbel draw on ℓ: softmax((0, ℓ + G)/τ) = (1 - s, s), s = sigmoid((ℓ + G)/τ)
            u = torch.rand(idx.numel(), n, 1, generator=gen, dtype=dtype).clamp_(1e-10, 1 - 1e-10)
            soft = torch.softmax(torch.cat([logits[idx, :, :1], logits[idx, :, 1:] - torch.log(-torch.log(u))], -1)
                                 / temperature, -1)
        else:
            u = torch.rand(idx.numel(), n, C, generator=gen, dtype=dtype).clamp_(1e-10, 1 - 1e-10)
            soft = torch.softmax((logits[idx] - torch.log(-torch.log(u))) / temperature, -1)
        hard = torch.nn.functional.one_hot(soft.argmax(-1), C).to(dtype)
        W = hard.permute(0, 2, 1).reshape(idx.numel(), C * n) / n
        _, sample_cos[idx], dW = obj.evaluate(W, idx, set_of_config)
        dZ = (dW / n).view(-1, C, n).permute(0, 2, 1)  # straight-through: ∂/∂soft = ∂/∂hard
        g = soft * (dZ - (soft * dZ).sum(-1, keepdim=True)) / temperature  # softmax backward
        if sampler == "sigmoid":  # only ℓ is a parameter: its step is s(1 - s)(∂/∂Z_1 - ∂/∂Z_0)/τ
            g[..., 0] = 0
        logits[idx] -= lr[idx].view(-1, 1, 1) * g
        ran[idx] += 1
        assign[idx] = logits[idx].argmax(-1)
        if patience is not None:
            moved = (assign[idx] != ref[idx]).double().mean(1) > tolerance
            ref[idx[moved]] = assign[idx[moved]]
            ref_it[idx[moved]] = ran[idx[moved]]
            active[idx[ran[idx] - ref_it[idx] >= patience]] = False
    if not torch.isfinite(logits).all():
        raise FloatingPointError("gradient_aia: the Gumbel-softmax logits became non-finite; lower the learning rates.")
    # the adversary's criterion: mean cosine similarity at the final (argmax) attributes
    hard = torch.nn.functional.one_hot(assign, C).to(dtype)
    W = hard.permute(0, 2, 1).reshape(K, C * n) / n
    _, cos_sum, _ = obj.evaluate(W, torch.arange(K), set_of_config, want_grad=False)
    return GradientAIAResult(
        round_sets=round_sets, learning_rates=lrs, predictions=assign.view(S, L, n),
        cosine=(cos_sum / set_size).view(S, L), iterations=ran.view(S, L),
        sample_cosine=(sample_cos / set_size).view(S, L), relaxation=relaxation, sampler=sampler,
    )
