"""Analytic bounds from the papers, as functions of their parameters."""

from __future__ import annotations

import math

from .validation import check_int, check_positive


def aia_accuracy_lower_bound(mse: float, theta_s: float) -> float:
    """Prop. 1 of Diana et al. 2025: for least-squares regression with a binary sensitive
    attribute, the model-based AIA on a model θ has accuracy ≥ 1 - 4 E_c / θ[s]², where E_c is
    θ's mean squared error on the client's data and θ[s] the parameter of the sensitive
    attribute. Returned without clipping (it can be negative, i.e. vacuous)."""
    check_positive("mse", mse, "aia_accuracy_lower_bound", strict=False)
    if not math.isfinite(theta_s):
        raise ValueError(f"aia_accuracy_lower_bound: theta_s must be finite; got {theta_s!r}.")
    if theta_s == 0:
        return float("-inf")
    return 1.0 - 4.0 * mse / theta_s**2


def local_steps(E: int, S_c: int, B: int) -> int:
    """K = E ⌈S_c / B⌉, the local steps of FedAvg's Alg. 2 (B is capped at S_c)."""
    for name, v in (("E", E), ("S_c", S_c), ("B", B)):
        check_int(name, v, "local_steps", minimum=None)
    if E < 1 or S_c < 1 or B < 1:
        raise ValueError(f"need E, S_c, B >= 1; got E={E}, S_c={S_c}, B={B}.")
    return E * -(-S_c // min(B, S_c))


def lambda_min_W(eta: float, lambda_min_H: float, S_c: int, K: int) -> float:
    """λ_min(W) = 1 - (1 - 2η λ_min(H)/S_c)^K for W = I - (I - 2η/S_c H)^K, H = X_cᵀX_c
    (Diana et al. 2025, App. A.1, "About the eigenvalues of the matrix W"; valid for
    η ≤ S_c / (2 λ_max(H)))."""
    check_positive("eta", eta, "lambda_min_W")
    check_positive("lambda_min_H", lambda_min_H, "lambda_min_W", strict=False)
    check_int("S_c", S_c, "lambda_min_W", minimum=1)
    check_int("K", K, "lambda_min_W", minimum=1)
    return 1.0 - (1.0 - 2.0 * eta * lambda_min_H / S_c) ** K


def theorem1_bound(eta: float, sigma: float, d: int, E: int, S_c: int, B: int, n_c: int, lam: float,
                   delta: float, lambda_min_W: float = 1.0, lambda_max_H: float | None = None) -> float:
    """Theorem 1 of Diana et al. 2025 (App. A.1, eq. 18): with probability at least 1 - δ,

        ||θ̂_c^* - θ_c^*||_2 ≤ d η σ / λ_min(W) · sqrt( K (d + 1 + ln(2d/δ)) / (n_c λ) ),

    K = E⌈S_c/B⌉, for the estimator of Alg. 3 under FedAvg with batch size B and E local epochs.

    Args:
        eta: client learning rate η.
        sigma: sub-Gaussian scale σ of each component of the mini-batch gradient noise
            g(θ) - ∇L_c(θ) (Assumption 2).
        d: number of parameters (features plus intercept).
        E, S_c, B: local epochs, client dataset size, batch size.
        n_c: number of eavesdropped messages used (n_c > d).
        lam: λ, a lower bound on λ_min(Θ_outᵀΘ_out / n_c) (Assumption 4).
        delta: failure probability δ ∈ (0, 1).
        lambda_min_W: λ_min(W) (see :func:`lambda_min_W`). The default 1 drops it, which gives
            the O(·) expression of the informal statement (eq. 6): ησd sqrt(E⌈S_c/B⌉(d+1+ln(2d/δ))/(n_c λ)).
        lambda_max_H: λ_max(X_cᵀX_c); if given, the step-size condition η ≤ S_c/(2λ_max) is checked.

    The appendix's eq. (7) carries an extra factor d under the square root; its own proof
    (eqs. 11, 17, 18) gives the bound above, which we implement.
    """
    for name, v in (("d", d), ("E", E), ("S_c", S_c), ("B", B), ("n_c", n_c)):
        check_int(name, v, "theorem1_bound", minimum=1)
    for name, v in (("eta", eta), ("sigma", sigma), ("lam", lam), ("delta", delta), ("lambda_min_W", lambda_min_W)):
        check_positive(name, v, "theorem1_bound", strict=False)
    if lambda_max_H is not None:
        check_positive("lambda_max_H", lambda_max_H, "theorem1_bound")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}.")
    if n_c <= d:
        raise ValueError(f"Theorem 1 needs n_c > d eavesdropped messages; got n_c={n_c}, d={d}.")
    if lam <= 0 or lambda_min_W <= 0:
        raise ValueError(f"lam and lambda_min_W must be positive (Assumption 4 / Lemma 2), got {lam}, {lambda_min_W}.")
    if eta <= 0 or sigma < 0:
        raise ValueError(f"need eta > 0 and sigma >= 0, got eta={eta}, sigma={sigma}.")
    if lambda_max_H is not None and eta > S_c / (2 * lambda_max_H):
        raise ValueError(
            f"Theorem 1 assumes eta <= S_c / (2 lambda_max(H)) = {S_c / (2 * lambda_max_H):.4g}; got eta={eta}."
        )
    K = local_steps(E, S_c, B)
    return d * eta * sigma / lambda_min_W * math.sqrt(K * (d + 1 + math.log(2 * d / delta)) / (n_c * lam))
