"""Wilson et al. 2025, Fig. 9 (the curious-client attack against FedInverse, Wu et al. 2024), in the ledger.

Fig. 9 shows, on MNIST, five reconstructions of the attack with MDE post-processing next to five
of FedInverse's model inversion, "MI" and "MI-HSIC" (panel (b) reproduced from Wu et al.); the
caption: "Our reconstructed images are qualitatively more similar to the ground truth"; §5: "our
method reconstructs higher-quality data from a small number of clients, whereas FedInverse
produced lower-quality reconstructions from a larger number of clients". The paper gives no
number; the rule (:func:`fig9_verdict`) reads "more similar" in the paper's metric, LPIPS, and in
SSIM: reproduced when our mean is better than both MI's and MI-HSIC's in both metrics, scored on the
same ground truth with the same pairing (each image with the peer image of its class it is most
similar to; ``python -m flbook.experiments.wilson_fedinverse``).

:func:`rows` reads ``wilson_fedinverse.json`` (paper scale), else ``wilson_fedinverse_quick.json``,
else gives a "not run" row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import Row, Verdict, at_least, at_most, combine, not_run, record_or_none, row
from ..papers.wilson import PAPER, QUOTES

CHAPTER = "part4/fedinverse"
NAME = "wilson_fedinverse"
RESULT_ID = "Wilson Fig. 9 vs FedInverse on MNIST"
"""The row's id (the same as the "not covered" row it replaces in :mod:`flbook.ledger.wilson`)."""
METHODS = ("mi", "mi_hsic")
LABELS = {"ours": "ours (MDE)", "ours_raw": "ours (raw)", "mi": "MI", "mi_hsic": "MI-HSIC",
          "mi_control": "MI, all-digit prior"}


def fig9_verdict(mean: Mapping[str, Mapping[str, float]]) -> Verdict:
    """``mean[method][metric]`` for methods ``ours``, ``mi``, ``mi_hsic`` and metrics ``ssim``,
    ``lpips``: reproduced when ours has SSIM at least and LPIPS at most those of both MI and
    MI-HSIC (all four parts); partly when some hold."""
    parts = []
    for m in METHODS:
        parts.append(at_least(mean["ours"]["ssim"], mean[m]["ssim"], what=f"SSIM vs {LABELS[m]}"))
        parts.append(at_most(mean["ours"]["lpips"], mean[m]["lpips"], what=f"LPIPS vs {LABELS[m]}"))
    return combine(*parts)


def _ours(record: Mapping[str, Any]) -> str:
    d = record["data"]
    s, mean = d["setup"], d["verdict"]["mean"]
    acc = [c["fedinverse"]["global_accuracy"] for c in d["cases"]]
    hits = [c["fedinverse"][m]["attack_accuracy"] for c in d["cases"] for m in METHODS]
    return (f"{record['scale']} scale, {len(d['cases'])} seed(s): ours from {s['few_clients']} clients (1 round), "
            f"FedInverse from {s['many_clients']} clients ({s['rounds']} rounds, global accuracy "
            f"{min(acc):.2f}-{max(acc):.2f}, MI images classified as their target {min(hits):.0%}-{max(hits):.0%}); "
            + "; ".join(f"{LABELS[m]}: SSIM {mean[m]['ssim']:.3f}, PSNR {mean[m]['psnr']:.1f} dB, LPIPS {mean[m]['lpips']:.3f}"
                        for m in LABELS if m in mean)
            + " (each image vs the most similar peer image of its class); nearest real digit of the target class: "
            + ", ".join(f"{LABELS[m]} {_nn(d['cases'], m):.0%}" for m in LABELS if m in mean))


def _nn(cases, method: str) -> float:
    """Mean over seeds of a method's nearest-neighbour accuracy (the independent judge of the class)."""
    get = {"ours": lambda c: c["ours"]["nn_accuracy"], "ours_raw": lambda c: c["ours"]["raw"]["nn_accuracy"]}.get(
        method, lambda c: c["fedinverse"][method]["nn_accuracy"])
    return sum(get(c) for c in cases) / len(cases)


def rows() -> list[Row]:
    """The Fig. 9 row."""
    common = dict(paper=PAPER, result_id=RESULT_ID, claim=QUOTES["Fig. 9"], chapter=CHAPTER,
                  paper_value="5 images per method, qualitative (ours closer to the ground truth)")
    for rec in (record_or_none(NAME), record_or_none(NAME, "quick")):
        if rec is not None:
            return [row(**common, data="real", ours=_ours(rec), verdict=fig9_verdict(rec["data"]["verdict"]["mean"]),
                        record=rec)]
    return [row(**common, data="none", ours="",
                verdict=not_run("no wilson_fedinverse result file; python -m flbook.experiments.wilson_fedinverse "
                                "(about 2 CPU-minutes at quick scale)"))]


__all__ = ["CHAPTER", "METHODS", "NAME", "RESULT_ID", "fig9_verdict", "rows"]


def made_here(r: Row) -> bool:
    """Whether row ``r`` is this module's (for :func:`flbook.ledger.wilson.referee`)."""
    return r.result_id == RESULT_ID


def count_row(r: Row) -> Any:
    """Fig. 9 is on MNIST in the paper too: it counts as it is (two seeds at paper scale; a quick
    file's one seed is capped by :func:`flbook.ledger.referee.judge`)."""
    from .referee import COUNTS

    return COUNTS
