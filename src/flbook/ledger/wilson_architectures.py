"""Wilson et al. 2025, Fig. 5 with its three models and App. H Figs. 22-23, in the ledger.

Fig. 5 plots "LPIPS of reconstructed images vs. number of clients with three different models:
LeNet5, ResNet9, and ResNet18"; the text claims "a gradual decline in image reconstruction
quality, measured by LPIPS and SSIM" as clients are added, and "this trend is consistent across a
range of global models". App. H Figs. 22-23 show reconstructions for ResNet9 and ResNet18 (16
images per client, three local iterations), without numbers.

:func:`rows` reads ``part4_architectures.json`` (paper scale, ``flbook.experiments.part4_architectures``)
for each model it holds at two or more numbers of clients, else the quick-scale file
``part4_architectures_quick.json``, else gives a "not run" row with the measured cost. The paper's
ResNets are the authors' code's, without BatchNorm (``resnet9-nobn``, ``resnet18-nobn``): the
verdicts are computed on those; the book's BatchNorm variants (batch statistics) are reported in
the same rows. The numbers are means over all N reconstructed images, Hungarian-matched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import Row, Verdict, at_least, at_most, combine, not_run, record_or_none, row, trend
from ..papers.wilson import PAPER, QUOTES
from .wilson_shared import mean_digit_ssim

CHAPTER = "part4/deeper_models"
NAME = "part4_architectures"
MODELS: dict[str, tuple[str, str]] = {"ResNet-9": ("resnet9-nobn", "resnet9"), "ResNet-18": ("resnet18-nobn", "resnet18")}
"""Model name -> (the authors' variant without BatchNorm, the book's with BatchNorm) in the result files."""
LENET = "lenet5"
FIG5_IDS = {"ResNet-9": "Wilson Fig. 5 ResNet-9 quality vs clients", "ResNet-18": "Wilson Fig. 5 ResNet-18 quality vs clients"}
LENET_ID = "Wilson Fig. 5 LeNet-5 quality vs clients in LPIPS"
CONSISTENT_ID = "Wilson Fig. 5 trend consistent across LeNet-5, ResNet-9, ResNet-18 (LPIPS)"
APP_H_ID = "Wilson App. H Figs. 22-23 ResNet-9 and ResNet-18 reconstructions"
EXACT_ID = "Wilson eq. 3 super-client exact at one local iteration, ResNet-9 and ResNet-18"
PAPER_COST = ("FLPRIVACY_SCALE=paper python -m flbook.experiments.part4_architectures --resume: one attack "
              "iteration (τ = 3, one CPU thread, a loaded machine) costs 5.7 / 16 / 51 s for ResNet-9 and "
              "22 / 29 / 73 s for ResNet-18 at K = 2 / 4 / 8 (N = 32 / 64 / 128), so 100 iterations take about 2.0 h "
              "and 3.5 h per model, about 11 CPU-hours with both BatchNorm variants")
"""What the paper-scale ResNet points cost (measured, see the chapter)."""


def curves(record: Mapping[str, Any]) -> dict[str, dict[int, dict[str, float]]]:
    """``{arch: {K: point}}`` of a collected ``part4_architectures`` record (each point's means
    ``ssim``, ``psnr``, ``lpips``, ``peer_ssim``, ``replay_error_super``, ``rounding_bound``, ...)."""
    out: dict[str, dict[int, dict[str, float]]] = {}
    for p in record["data"]["points"]:
        out.setdefault(p["arch"], {})[int(p["K"])] = p
    return {a: dict(sorted(c.items())) for a, c in out.items()}


def fig5_verdict(curve: Mapping[int, Mapping[str, float]]) -> Verdict:
    """Fig. 5 as the paper states it: quality declines as clients are added, in LPIPS (rises) and
    in SSIM (falls), over the numbers of clients run, each beyond ``wilson_arch_curve_margin``
    (the spread over the points' images; the files run one seed)."""
    Ks = sorted(curve)
    return combine(trend(Ks, [curve[K]["lpips"] for K in Ks], margin=wilson_arch_curve_margin(curve, "lpips"),
                         expected=1, what="LPIPS vs K"),
                   trend(Ks, [curve[K]["ssim"] for K in Ks], margin=wilson_arch_curve_margin(curve, "ssim"),
                         expected=-1, what="SSIM vs K"))


def app_h_verdict(curve: Mapping[int, Mapping[str, float]], baseline: float) -> Verdict:
    """App. H's image grids read as "the peers' images are reconstructed": at every K, the peers'
    mean SSIM beats the best image-independent guess, the mean MNIST digit (``baseline``)."""
    return combine(*(at_least(curve[K]["peer_ssim"], baseline, what=f"K = {K} vs the mean digit") for K in sorted(curve)))


def exact_verdict(curve: Mapping[int, Mapping[str, float]]) -> Verdict:
    """Eq. 3 at τ = 1 (Wilson App. A: δ(1) = 0): the super-client's replay at the true images equals
    the observed update up to the float rounding bound, at every K."""
    return combine(*(at_most(curve[K]["replay_error_super"], curve[K]["rounding_bound"], what=f"K = {K}")
                     for K in sorted(curve)))


def _setting(record: Mapping[str, Any], arch: str) -> str:
    p = next(p["point"] for p in record["data"]["points"] if p["arch"] == arch)
    return (f"{record['scale']} scale: {p['images_per_client']} images per client, τ = {p['tau']}, "
            f"{p['iterations']} attack iterations")


def _arrow(curve: Mapping[int, Mapping[str, float]], key: str) -> str:
    return ", ".join(f"K = {K}: {v[key]:.3f}" for K, v in curve.items())


def _pick(arch: str) -> tuple[Mapping[str, Any] | None, dict[int, dict[str, float]]]:
    """The paper-scale record if it holds ``arch`` at two or more K, else the quick one, else none."""
    for rec in (record_or_none(NAME), record_or_none(NAME, "quick")):
        if rec is not None:
            c = curves(rec).get(arch, {})
            if len(c) >= 2:
                return rec, c
    return None, {}


def rows() -> list[Row]:
    """Fig. 5 for ResNet-9 and ResNet-18 (and LeNet-5 in LPIPS), Fig. 5's consistency across the three
    models, App. H's ResNet reconstructions and eq. 3's exact case for the ResNets."""
    common = dict(paper=PAPER, chapter=CHAPTER, data="real")
    out: list[Row] = []
    authors = {name: _pick(arch) for name, (arch, _) in MODELS.items()}
    for name, (arch, bn) in MODELS.items():
        rec, c = authors[name]
        claim = QUOTES["Fig. 5"] + f" ({name.replace('-', '')})"
        if rec is None:
            out.append(row(**common, result_id=FIG5_IDS[name], claim=claim, paper_value="LPIPS worse as K grows 2 → 8",
                           ours="", verdict=not_run(f"no {NAME} file holds {name}; {PAPER_COST}")))
            continue
        with_bn = curves(rec).get(bn, {})
        ours = (f"{_setting(rec, arch)}; without BatchNorm (the authors' model): LPIPS {_arrow(c, 'lpips')}; "
                f"SSIM {_arrow(c, 'ssim')}"
                + (f"; with BatchNorm (batch statistics): LPIPS {_arrow(with_bn, 'lpips')}, SSIM {_arrow(with_bn, 'ssim')}"
                   if with_bn else ""))
        out.append(row(**common, result_id=FIG5_IDS[name], claim=claim, paper_value="LPIPS worse as K grows 2 → 8",
                       ours=ours, verdict=fig5_verdict(c), record=rec))
    lenet_rec, lenet = _pick(LENET)
    if lenet_rec is None:
        out.append(row(**common, result_id=LENET_ID, claim=QUOTES["Fig. 5"] + " (LeNet5)", paper_value="LPIPS worse as K grows 2 → 8",
                       ours="", verdict=not_run(f"no {NAME} file holds LeNet-5; "
                                                f"FLPRIVACY_SCALE=paper python -m flbook.experiments.part4_architectures "
                                                f"--archs lenet5 (about 2 CPU-minutes)")))
    else:
        out.append(row(**common, result_id=LENET_ID, claim=QUOTES["Fig. 5"] + " (LeNet5)", paper_value="LPIPS worse as K grows 2 → 8",
                       ours=f"{_setting(lenet_rec, LENET)}: LPIPS {_arrow(lenet, 'lpips')}; SSIM {_arrow(lenet, 'ssim')}",
                       verdict=fig5_verdict(lenet), record=lenet_rec))
    three = (LENET, *(a for a, _ in MODELS.values()))
    both = [r for r in (record_or_none(NAME), record_or_none(NAME, "quick"))
            if r is not None and all(len(curves(r).get(a, {})) >= 2 for a in three)]
    if not both:
        out.append(row(**common, result_id=CONSISTENT_ID, claim=QUOTES["Fig. 5"], paper_value="the same decline for all three",
                       ours="", verdict=not_run(f"no {NAME} file holds the three models; {PAPER_COST}")))
    else:
        rec = both[0]
        parts = {n: curves(rec)[a] for n, a in zip(("LeNet-5", *MODELS), three)}
        out.append(row(**common, result_id=CONSISTENT_ID, claim=QUOTES["Fig. 5"], paper_value="the same decline for all three",
                       ours=f"{_setting(rec, LENET)}, LPIPS: " + "; ".join(f"{n}: {_arrow(c, 'lpips')}" for n, c in parts.items()),
                       verdict=combine(*(trend(sorted(c), [c[K]["lpips"] for K in sorted(c)],
                                               margin=wilson_arch_curve_margin(c, "lpips"), expected=1, what=f"{n}, LPIPS vs K")
                                         for n, c in parts.items())),
                       record=rec))
    if all(authors[n][0] is not None for n in MODELS):
        baseline = mean_digit_ssim()
        rec = authors["ResNet-18"][0]
        out.append(row(**common, result_id=APP_H_ID, claim=QUOTES["App. H"], paper_value="image grids (peers' images reconstructed)",
                       ours="peers' SSIM " + "; ".join(f"{n}: {_arrow(authors[n][1], 'peer_ssim')}" for n in MODELS)
                            + f"; the mean digit as a guess: {baseline:.3f} ({_setting(rec, MODELS['ResNet-18'][0])})",
                       verdict=combine(*(app_h_verdict(authors[n][1], baseline) for n in MODELS)), record=rec))
    else:
        out.append(row(**common, result_id=APP_H_ID, claim=QUOTES["App. H"], paper_value="image grids", ours="",
                       verdict=not_run(f"no {NAME} file holds both ResNets; {PAPER_COST}")))
    quick = record_or_none(NAME, "quick")
    taus = {p["point"]["tau"] for p in quick["data"]["points"]} if quick is not None else set()
    if quick is None or taus != {1} or not all(MODELS[n][0] in curves(quick) for n in MODELS):
        out.append(row(**common, result_id=EXACT_ID, claim=QUOTES["eq. 3"], paper_value="δ(1) = 0", ours="",
                       verdict=not_run(f"{NAME}_quick.json (τ = 1) is not committed; "
                                       f"python -m flbook.experiments.part4_architectures --iterations 100")))
    else:
        cq = curves(quick)
        ours = "; ".join(
            f"{n}: relative replay error {max(v['replay_error_super'] for v in cq[a].values()):.1e} "
            f"(rounding bound {min(v['rounding_bound'] for v in cq[a].values()):.1e})"
            + (f", with BatchNorm {min(v['replay_error_super'] for v in cq[b].values()):.2f} or more" if b in cq else "")
            for n, (a, b) in MODELS.items())
        out.append(row(**common, result_id=EXACT_ID, claim=QUOTES["eq. 3"], paper_value="δ(1) = 0 (the authors' ResNets)",
                       ours=ours, verdict=combine(*(exact_verdict(cq[a]) for a, _ in MODELS.values())), record=quick))
    return out


__all__ = ["APP_H_ID", "CHAPTER", "CONSISTENT_ID", "EXACT_ID", "FIG5_IDS", "LENET_ID", "MODELS", "PAPER_COST", "app_h_verdict",
           "curves", "exact_verdict", "fig5_verdict", "rows"]


def wilson_arch_curve_margin(curve: Mapping[int, Mapping[str, Any]], key: str) -> float:
    """The margin of a trend of ``key`` over a curve's points: 2 standard errors of the difference of
    two points (:func:`~flbook.ledger.referee.noise_margin`), each point's standard error that of
    its mean over its images (``key + "_per_image"``), the largest of the curve's. The files run one
    seed, so the spread over images is the only one they hold; 0 when the points carry no
    per-image values (constructed points), and a one-seed row is not reproduced anyway."""
    from .referee import noise_margin, std_error

    per = [p.get(f"{key}_per_image") for p in curve.values()]
    if not per or any(not isinstance(v, (list, tuple)) or len(v) < 2 for v in per):
        return 0.0
    se = max(std_error(v) for v in per)
    return noise_margin(se, se)


def made_here(r: Row) -> bool:
    """Whether row ``r`` is one of :func:`rows`' (for :func:`flbook.ledger.wilson.referee`)."""
    return r.result_id in (*FIG5_IDS.values(), LENET_ID, CONSISTENT_ID, APP_H_ID, EXACT_ID)


def count_row(r: Row) -> Any:
    """How a row of :func:`rows` counts. Eq. 3's exact case is a deterministic computation (the
    replay at the true images matches the update up to the float rounding bound at every K): one
    run decides it. The other rows read from the quick file (2 images per client, τ = 1, 100
    attack iterations, one seed) stand a small setting in for the paper's (16 images per client,
    τ = 3): apart as "quick stand-in". A row from the paper-scale file (one seed) counts, and
    :func:`~flbook.ledger.referee.judge` caps it at partly."""
    from .referee import COUNTS, Count

    if r.result_id == EXACT_ID:
        return Count(one_run_enough="a deterministic computation: the replay at the true images equals the observed "
                                    "update up to the float rounding bound, checked at every K")
    if r.scale == "quick":
        return Count(excluded="quick stand-in", excluded_why=(
            "read from part4_architectures_quick.json: 2 images per client, τ = 1, 100 attack iterations and one seed "
            "stand in for the paper's 16 images per client and τ = 3 (the paper-scale ResNet points cost about 11 "
            "CPU-hours); it shows the mechanism, not the paper's curve"))
    return COUNTS
