"""Tables and figures of the Wilson et al. (2025) chapters (a curious client reconstructs its
peers' images) and of their reproduction-record pages.

Each function takes what a chapter computed (lists of measurements, a list of row dicts, a
committed result file) and returns a figure or a table in the book's style
(:func:`flprivacy.tables.style`), so that the chapter's code cell says what it measures, not how
the table is laid out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from pandas.io.formats.style import Styler

from flprivacy.plotting import image_grid
from flprivacy.tables import style

__all__ = [
    "FACTOR_DEFAULTS",
    "app_f_controls_table",
    "attack_table",
    "default_cases",
    "exact_expectation_table",
    "fig7_investigation_table",
    "lemma1_figure",
    "monte_carlo_table",
    "peer_grid",
    "provenance_line",
    "select_cases",
]

FACTOR_DEFAULTS: dict[str, Any] = dict(tau=3, fl_lr=0.03, variant="super", attack_lr=None, distance=None, tv=None,
                                       scale_factor=None, n_guess=None, server_lr_guess=1.0, uneven=False)
"""The settings of a default factor-analysis case (``flbook.experiments.part4_factors.Case``:
τ = 3, η = 0.03, the super-client, the book's attack, the true η_g and N, an even split)."""


def select_cases(df: pd.DataFrame, **conditions: Any) -> pd.DataFrame:
    """The rows of a factor-analysis frame (``part4_factors.frame``) matching every condition;
    ``None`` matches a setting left at its default (a missing value)."""
    unknown = sorted(set(conditions) - set(df.columns))
    if unknown:
        raise ValueError(f"select_cases: {unknown} are not columns of the frame; columns: {list(df.columns)}.")
    keep = pd.Series(True, index=df.index)
    for col, val in conditions.items():
        keep &= df[col].isna() if val is None else df[col] == val
    return df[keep]


def default_cases(df: pd.DataFrame, **override: Any) -> pd.DataFrame:
    """The cases with the default settings (:data:`FACTOR_DEFAULTS`) except ``override``."""
    return select_cases(df, **{**FACTOR_DEFAULTS, **override})


def lemma1_figure(taus: Sequence[int], d_tau: Sequence[float], etas: Sequence[float],
                  d_eta: Sequence[float], *, lr: float, steps: int, n_clients: int,
                  n_images: int):
    """Lemma 1's two dependences on one draw (Wilson et al., App. A, eq. 31): the divergence
    ``‖δ(τ)‖`` against the local iterations τ beside ``‖δ(2)‖ · τ(τ-1)/2`` (left), and
    ``‖δ(steps)‖`` against the learning rate η beside a line ∝ η² (right, log-log).

    Args:
        taus, d_tau: the local iterations and the measured ``‖δ(τ)‖`` at learning rate ``lr``
            (``taus[1]`` must be 2).
        etas, d_eta: the learning rates and the measured ``‖δ(steps)‖``.
        lr, steps, n_clients, n_images: the setting, for the panels' titles.
    Returns:
        The matplotlib figure (7 in wide, the book's column).
    """
    fig, axes = plt.subplots(1, 2, figsize=(7, 3))
    axes[0].plot(taus, d_tau, "o-", label=r"measured $\|\delta(\tau)\|$")
    axes[0].plot(taus, [d_tau[1] * t * (t - 1) / 2 for t in taus], "k--",
                 label=r"$\|\delta(2)\|\cdot\tau(\tau-1)/2$")
    axes[0].set(xlabel=r"local iterations $\tau$", ylabel=r"$\|\delta\|_2$",
                title=rf"$K={n_clients}$, $N={n_images}$, $\eta={lr:g}$")
    axes[1].loglog(etas, d_eta, "o-", label="measured")
    axes[1].loglog(etas, [d_eta[0] * (e / etas[0]) ** 2 for e in etas], "k--",
                   label=r"$\propto \eta^2$")
    axes[1].set(xlabel=r"learning rate $\eta$", ylabel=rf"$\|\delta({steps})\|_2$",
                title=rf"$\tau = {steps}$")
    for ax in axes:
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def exact_expectation_table(rows: Sequence[Mapping[str, Any]], *, lr: float,
                            steps: int, population: int) -> Styler:
    """The exact ``E[δ]`` over every draw of a tiny population beside Lemma 1's prediction, one
    row per split of the images among the clients.

    Args:
        rows: per split, ``split`` (a tuple of the clients' sizes), ``K``, ``N``, ``(K-1)/N``,
            ``norm`` (‖E[δ]‖), ``prediction`` (its norm), ``ratio`` (E[δ] projected on the
            prediction, over the prediction) and ``cos`` (their cosine).
        lr, steps, population: the setting, for the caption.
    """
    df = pd.DataFrame([{
        "split N_k": ", ".join(map(str, r["split"])),
        "K": r["K"], "N": r["N"], "(K-1)/N": r["(K-1)/N"],
        "‖E[δ]‖": r["norm"], "‖Lemma 1‖": r["prediction"],
        "ratio along Cov": r["ratio"], "cosine": r["cos"],
    } for r in rows])
    return style(df, decimals={"(K-1)/N": 3, "‖E[δ]‖": 2, "‖Lemma 1‖": 2,
                               "ratio along Cov": 4, "cosine": 4},
                 caption=(f"Lemma 1 against the exact expectation over all draws of N images "
                          f"from {population} MNIST images (η = {lr:g}, τ = {steps}, float64). "
                          "Norms are of parameter vectors (no unit); the ratio is E[δ] "
                          "projected on the prediction, divided by the prediction."))


def monte_carlo_table(rows: Sequence[Mapping[str, Any]], *, steps: int,
                      population: int) -> Styler:
    """The Monte Carlo estimate of ``E[δ]`` along ``Cov(J, g)``, over the leading term.

    Args:
        rows: per setting, ``η``, ``K``, ``N``, ``draws``, ``ratio`` (mean over draws of the
            projection over the prediction) and ``se`` (its standard error).
        steps, population: the setting, for the caption.
    """
    df = pd.DataFrame([{"η": r["η"], "K": r["K"], "N": r["N"], "draws": r["draws"],
                        "E[δ] / Lemma 1": r["ratio"], "standard error": r["se"]}
                       for r in rows])
    return style(df, decimals={"η": 3, "E[δ] / Lemma 1": 3, "standard error": 3},
                 caption=(f"E[δ] along Cov(J, g) over Lemma 1's leading term, by Monte Carlo "
                          f"over random draws from {population} MNIST images (8 images per "
                          f"client, τ = {steps}); 1 is the lemma's constant."))


def attack_table(rows: Sequence[Mapping[str, Any]], *, iterations: int) -> Styler:
    """The curious client's attack at each number of clients K (Wilson et al. §4, Fig. 5).

    Args:
        rows: per K, ``K``, ``N``, ``ssim_all`` (mean SSIM over all N reconstructed images),
            ``ssim_peers`` (over the 16(K-1) images of the other clients), ``psnr`` (dB),
            ``labels`` (fraction of label counts the estimator restores) and ``seconds``.
        iterations: the attack's iterations, for the caption.
    """
    df = pd.DataFrame([{"K": r["K"], "N": r["N"], "SSIM, all N images": r["ssim_all"],
                        "SSIM, peers' images": r["ssim_peers"], "PSNR": r["psnr"],
                        "label counts restored": r["labels"], "time": r["seconds"]}
                       for r in rows])
    return style(df, units={"PSNR": "dB", "time": "s"}, percent=["label counts restored"],
                 decimals={"SSIM, all N images": 3, "SSIM, peers' images": 3, "PSNR": 1,
                           "label counts restored": 0, "time": 0},
                 caption=(f"The curious client's attack, 16 MNIST images per client, τ = 3, "
                          f"η = 0.03, LeNet-5, {iterations} attack iterations, one seed. SSIM "
                          "is the mean over images (1 = identical); the peers' images are the "
                          "16(K-1) images of the other clients."))


def peer_grid(shown: Mapping[int, tuple[Any, Any]]):
    """Eight images of one peer (client 1) above their reconstructions at each K.

    Args:
        shown: ``{K: (truth, reconstruction)}``, each a tensor ``(8, 1, H, W)``; the truth is
            the same at every K (nested federations).
    """
    rows, labels = [], []
    for K, (truth, recon) in shown.items():
        if not rows:
            rows.append(truth)
            labels.append("client 1")
        rows.append(recon)
        labels.append(f"K = {K}")
    fig = image_grid(rows, row_labels=labels, scale=0.8)
    fig.suptitle("A peer's images reconstructed by client 0 from two global models",
                 y=1.02, fontsize=10)
    return fig


def provenance_line(record: Mapping[str, Any]) -> str:
    """One line saying how a committed result file was computed: command, date, commit,
    scale, seeds and wall time (from its ``provenance`` fields)."""
    parts = [f"command `{record.get('command', 'not recorded')}`",
             f"dated {record.get('date', 'not recorded')}",
             f"commit {record.get('commit') or 'not recorded'}"]
    if record.get("scale"):
        parts.append(f"scale {record['scale']}")
    if record.get("seeds") is not None:
        parts.append(f"{len(record['seeds'])} seed(s)")
    wall = (record.get("runtime") or {}).get("wall_seconds")
    if wall is not None:
        parts.append(f"{wall / 60:.0f} min of computation")
    return "; ".join(parts)


def app_f_controls_table(record: Mapping[str, Any]) -> Styler:
    """App. F's controlled experiment (``local_iterations_controls``): per design and K, the
    super-client's replay error, the SSIM of the super-client and of the upper bound, and the
    gap between them, means over the file's seeds (``flbook.ledger.wilson.app_f_controls``)."""
    from flbook.ledger import wilson as wilson_ledger

    df = pd.DataFrame([{"design": wilson_ledger.APP_F_DESIGNS[design], "K": K, **v}
                       for design, per_k in wilson_ledger.app_f_controls(record).items()
                       for K, v in per_k.items()])
    df = df.rename(columns={"replay error, super-client": "replay error",
                            "SSIM, super-client": "SSIM, super",
                            "SSIM, upper bound": "SSIM, upper"})
    n_seeds = len(record["seeds"])
    return style(df, decimals={"N": 0, "K": 0, "(K-1)/N": 3, "replay error": 3,
                               "SSIM, super": 3, "SSIM, upper": 3, "gap": 3},
                 caption=(f"App. F's controlled experiment at τ = 8, η = "
                          f"{record['data']['fl_lr']}: means over {n_seeds} seeds. The replay "
                          "error is ‖δ(τ)‖ / ‖update‖ at the true images; the gap is the upper "
                          "bound's SSIM minus the super-client's."))


def fig7_investigation_table(ablation: Mapping[str, Any], diagnostics: Mapping[str, Any]) -> Styler:
    """The controlled experiments on why DDRM does not raise SSIM: one row per experiment, with
    its SSIM and LPIPS before → after DDRM and two verdicts by the ledger's rules, Fig. 7's claim
    in LPIPS and SSIM rising (:func:`flbook.ledger.wilson.fig7_investigation`), in four columns
    that fit the book's text column."""
    from flbook.ledger import wilson as wilson_ledger

    rows = wilson_ledger.fig7_investigation(ablation, diagnostics)
    df = pd.DataFrame([{
        "experiment": f"{r['what we changed']}: {r['before']} → {r['after']}",
        "SSIM": f"{r['SSIM before']:.3f} → {r['SSIM after']:.3f}",
        "LPIPS": f"{r['LPIPS before']:.3f} → {r['LPIPS after']:.3f}",
        "Fig. 7 in LPIPS": r["Fig. 7 in LPIPS"].status,
        "SSIM rises": r["SSIM"].status,
    } for r in rows])
    ks = ", ".join(str(k) for k in sorted({a["K"] for a in diagnostics["data"]["attack"]}))
    return style(df, caption=("What each experiment changed and what DDRM did: SSIM (higher is "
                              "better) and LPIPS (lower is better) before → after, means over "
                              f"seeds; the attack rows over K = {ks}."))
