"""Synthetic federated data sets, generated from a seed (nothing to download)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..federation import ClientData
from ..validation import check_int, check_seed


@dataclass
class SyntheticFederation:
    """Clients' data plus the ground truth that generated it.

    ``models[c]`` is client c's generating model (for least squares, θ* with the bias last);
    ``sensitive_column`` is the column of ``X`` holding a binary sensitive attribute, if any.
    """

    clients: list[ClientData]
    models: list[Tensor]
    sensitive_column: int | None = None


def toy_least_squares(n_clients: int = 2, n_samples: int = 1024, n_uniform: int = 9, noise_std: float = 0.1,
                      seed: int = 0, dtype: torch.dtype = torch.float64) -> SyntheticFederation:
    """The toy federated least-squares data of Diana et al. 2025, App. B.2.

    Each client has ``n_samples`` rows with ``n_uniform`` features drawn from U[0, 1) and one
    Bernoulli(1/2) feature (the last column, the sensitive attribute), and its own model
    θ* ~ N(0, I_d), d = n_uniform + 2 (features plus intercept; d = 11 in the paper):
    y = x θ*[:-1] + θ*[-1] + ε with ε ~ N(0, noise_std²). (The paper writes N(0, 0.1) without
    saying whether 0.1 is the variance or the standard deviation; we take the standard deviation.)
    """
    for name, v in (("n_clients", n_clients), ("n_samples", n_samples), ("n_uniform", n_uniform)):
        check_int(name, v, "toy_least_squares", minimum=1)
    check_seed("seed", seed, "toy_least_squares")
    rng = np.random.default_rng(seed)
    clients, models = [], []
    for _ in range(n_clients):
        X = np.concatenate([rng.random((n_samples, n_uniform)), rng.integers(0, 2, (n_samples, 1))], axis=1)
        theta = rng.standard_normal(n_uniform + 2)
        y = X @ theta[:-1] + theta[-1] + noise_std * rng.standard_normal(n_samples)
        clients.append(ClientData(torch.tensor(X, dtype=dtype), torch.tensor(y, dtype=dtype)))
        models.append(torch.tensor(theta, dtype=dtype))
    return SyntheticFederation(clients, models, sensitive_column=n_uniform)


def leaf_synthetic(sizes: Sequence[int] = (280, 184, 1536, 256, 208), n_features: int = 10, n_classes: int = 2,
                   n_clusters: int = 5, seed: int = 0, dtype: torch.dtype = torch.float32,
                   labels: str = "argmax") -> SyntheticFederation:
    """LEAF's synthetic classification data (Caldas et al. 2018, App. A), as used by Xu & Neglia
    2021 (§4: 10 features, 2 classes, 5 clusters, client sizes 280/184/1536/256/208).

    Cluster j has a mean μ_j ∈ R^s (s = ``n_clusters``; μ_j ~ N(m_j, 1), m_j ~ N(0, 1)); a shared
    tensor Q ∈ R^{(n+1)×K×s} ~ N(0, 1) maps a client's "model information" u_c ~ N(μ_j, 0.1² I)
    to its logistic model W_c = Q u_c (bias row first). Client c picks a cluster uniformly, draws
    x ~ N(v_c, Σ) with Σ = diag(i^{-1.2}), v_c ~ N(b_c, 1), b_c ~ N(0, 1), and labels
    y = argmax((1, x) W_c + ξ), ξ ~ N(0, 0.1²). ``models[c]`` is W_c.

    ``labels`` chooses between two readings of the label rule:

    - ``"argmax"`` (default): the rule as the paper states it, y = argmax_k of the logits, with
      NumPy's ``default_rng(seed)``.
    - ``"leaf-reference"``: **exactly** what LEAF's first reference generator did (commit
      ``15681b5``, 2019-09-17; LEAF replaced its softmax by SciPy's over the classes on 2019-10-28,
      commit ``54669fd``, which is the ``"argmax"`` rule)
      (``TalwalkarLab/leaf``, ``data/synthetic/data_generator.py``, class ``SyntheticDataset`` with
      ``prob_clusters`` uniform over ``n_clusters``): the same legacy ``np.random.RandomState(seed)``
      stream, drawn in the reference's order (Q; the cluster means; then per client: the cluster
      with ``choice(p=...)``, B, the centre, ``multivariate_normal`` features, the model
      information, the logit noise), and its ``_softmax``, ``exp(z) / sum(exp(z))`` with Python's
      ``sum`` over the *rows*: the softmax is normalised over the client's **samples** (a column
      sum), not over the classes. The label is then argmax_k (z_ik - log Σ_j exp z_jk): the logits
      shifted by a per-class offset that depends on the client's own data. For the same ``sizes``
      and ``seed`` the features, labels and models equal that script's output (its ``main.py``
      draws the client sizes before re-seeding, so they do not touch this stream):
      ``tests/test_leaf_reference.py`` compares them with a fixture of its output.
    """
    for name, v in (("n_features", n_features), ("n_classes", n_classes), ("n_clusters", n_clusters), *(("sizes", s) for s in sizes)):
        check_int(name, v, "leaf_synthetic", minimum=1)
    check_seed("seed", seed, "leaf_synthetic")
    if labels == "leaf-reference":
        return _leaf_reference(sizes, n_features, n_classes, n_clusters, seed, dtype)
    if labels != "argmax":
        raise ValueError(f"leaf_synthetic: labels must be 'argmax' or 'leaf-reference', got {labels!r}.")
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((n_features + 1, n_classes, n_clusters))
    sigma = np.arange(1, n_features + 1) ** -1.2
    means = [rng.normal(rng.normal(), 1.0, n_clusters) for _ in range(n_clusters)]
    clients, models = [], []
    for n in sizes:
        mu = means[rng.integers(n_clusters)]
        W = Q @ rng.normal(mu, 0.1)
        centre = rng.normal(rng.normal(), 1.0, n_features)
        X = centre + rng.standard_normal((n, n_features)) * np.sqrt(sigma)
        logits = np.concatenate([np.ones((n, 1)), X], axis=1) @ W + rng.normal(0, 0.1, (n, n_classes))
        clients.append(ClientData(torch.tensor(X, dtype=dtype), torch.tensor(logits.argmax(1), dtype=torch.int64)))
        models.append(torch.tensor(W, dtype=dtype))
    return SyntheticFederation(clients, models)


def _leaf_reference(sizes: Sequence[int], n_features: int, n_classes: int, n_clusters: int, seed: int,
                    dtype: torch.dtype) -> SyntheticFederation:
    """LEAF's reference synthetic generator, draw for draw (see :func:`leaf_synthetic`)."""
    rs = np.random.RandomState(seed % 2**32)
    Q = rs.normal(loc=0.0, scale=1.0, size=(n_features + 1, n_classes, n_clusters))
    Sigma = np.diag(np.arange(1, n_features + 1, dtype=np.float64) ** -1.2)
    means = []
    for _ in range(n_clusters):
        loc = rs.normal(loc=0, scale=1.0, size=None)
        means.append(rs.normal(loc=loc, scale=1.0, size=n_clusters))
    prob = [1.0 / n_clusters] * n_clusters
    clients, models = [], []
    for n in sizes:
        j = rs.choice(range(n_clusters), size=None, replace=True, p=prob)
        B = rs.normal(loc=0.0, scale=1.0, size=None)
        centre = rs.normal(loc=B, scale=1.0, size=n_features)
        X1 = np.ones((n, n_features + 1))
        X1[:, 1:] = rs.multivariate_normal(mean=centre, cov=Sigma, size=n)
        info = rs.normal(loc=means[j], scale=0.1, size=means[j].shape)
        W = np.matmul(Q, info)
        z = np.matmul(X1, W) + rs.normal(loc=0.0, scale=0.1, size=(n, n_classes))
        e = np.exp(z)
        prob_rows = e / sum(e)  # the reference's _softmax: builtin sum over rows = per-class sum over samples
        clients.append(ClientData(torch.tensor(X1[:, 1:], dtype=dtype), torch.tensor(np.argmax(prob_rows, axis=1),
                                                                                     dtype=torch.int64)))
        models.append(torch.tensor(W, dtype=dtype))
    return SyntheticFederation(clients, models)


@dataclass
class HardInstance:
    """The "hard" federated least-squares instance of Diana et al. 2025, Prop. 3 (App. A.3;
    Xu & Neglia 2021, Obs. 2), after Nesterov's lower bound for first-order methods.

    Attributes:
        clients: ``clients[0]`` is the target c, whose Hessian X_cᵀX_c is tridiagonal;
            the others have X = I, y = 0 (local optimum 0).
        alternative: a second dataset for the target, whose Hessian equals X_cᵀX_c except for a
            zero last row and column, with the same X_cᵀy_c: the messages it produces are the
            same as ``clients[0]``'s until the model's coordinate d-1 becomes non-zero.
        local_optimum: θ_c^* = (1 - i/(d+1))_{i=1..d}, all coordinates non-zero.
        hessian: X_cᵀX_c; ``linear_term``: X_cᵀy_c.
    """

    clients: list[ClientData]
    alternative: ClientData
    local_optimum: Tensor
    hessian: Tensor
    linear_term: Tensor


def nesterov_hard_instance(d: int = 10, n_clients: int = 2, form: str = "difference",
                           dtype: torch.dtype = torch.float64) -> HardInstance:
    """The hard instance of Prop. 3 (Diana et al. App. A.3): ``d`` features, no intercept.

    ``form="difference"`` (default): X_c = D ∈ R^{(d+1)×d}, the difference matrix
    (D[i,i] = 1, D[i+1,i] = -1) and y_c = e_1, so X_cᵀX_c = tridiag(-1, 2, -1) and X_cᵀy_c = e_1:
    twice the paper's H_c and X_cᵀy_c, hence the same local optimum and the same zero pattern,
    but with entries ±1 that floating point represents exactly (so "coordinate stays 0" is
    exact, not up to rounding).

    ``form="cholesky"``: footnote 7's construction, X_c ∈ R^{d×d} bidiagonal with square-root
    entries, X_cᵀX_c = tridiag(-1/2, 1, -1/2), X_cᵀy_c = e_1/2 (to rounding). Footnote 7 writes
    the factor L with L Lᵀ = H_c; the design matrix is X_c = Lᵀ.

    The other ``n_clients - 1`` clients hold X = I_d, y = 0 (d samples each).
    """
    if d < 2:
        raise ValueError(f"the hard instance needs d >= 2 features, got {d}.")
    if n_clients < 1:
        raise ValueError(f"n_clients must be >= 1, got {n_clients}.")
    if form == "difference":
        X = torch.zeros(d + 1, d, dtype=dtype)
        idx = torch.arange(d)
        X[idx, idx] = 1.0
        X[idx + 1, idx] = -1.0
        y = torch.zeros(d + 1, dtype=dtype)
        y[0] = 1.0
    elif form == "cholesky":
        a = torch.zeros(d, dtype=torch.float64)
        b = torch.zeros(d - 1, dtype=torch.float64)
        a[0] = 1.0
        for i in range(d - 1):
            b[i] = -1.0 / (2 * a[i])
            a[i + 1] = math.sqrt(1.0 - 1.0 / (4 * a[i] ** 2))
        L = torch.diag(a) + torch.diag(b, -1)  # footnote 7's matrix, L Lᵀ = H_c
        X = L.T.to(dtype)
        yv = torch.zeros(d, dtype=torch.float64)
        yv[0] = 0.5
        for i in range(d - 1):
            yv[i + 1] = -b[i] * yv[i] / a[i + 1]
        y = yv.to(dtype)
    else:
        raise ValueError(f"form must be 'difference' or 'cholesky', got {form!r}.")
    X_alt = X.clone()
    X_alt[:, -1] = 0.0
    others = [ClientData(torch.eye(d, dtype=dtype), torch.zeros(d, dtype=dtype)) for _ in range(n_clients - 1)]
    star = 1.0 - torch.arange(1, d + 1, dtype=dtype) / (d + 1)
    return HardInstance(clients=[ClientData(X, y)] + others, alternative=ClientData(X_alt, y.clone()),
                        local_optimum=star, hessian=X.T @ X, linear_term=X.T @ y)
