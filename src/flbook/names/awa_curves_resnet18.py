"""The files of ``python -m flbook.experiments.awa_curves_resnet18`` (Song et al.'s Figs. 3-4 at
ResNet-18): one curve per (model, case)."""

from __future__ import annotations

NAME = "awa_curves_resnet18"


def file_name(model: str, case: str) -> str:
    """The stem of a curve's file under ``book/results``: ``awa_curves_resnet18/<model>_case<k>``."""
    return f"{NAME}/{model}_{case.replace(' ', '')}"
