"""The files of ``python -m flbook.experiments.awa_table4_resnet18`` (Song et al.'s Table IV at
ResNet-18): one per grid cell (:class:`Run`) and one per Bayesian optimisation (:func:`bo_name`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..papers.song import CASES

NAME = "awa_table4_resnet18"


@dataclass(frozen=True)
class Run:
    """One cell of the grid: a model, a case of Song §5.2 and an attack."""

    model: str
    case: str
    method: str

    @property
    def file_name(self) -> str:
        return f"{NAME}/{self.model}_{self.case.replace(' ', '')}_{self.method}"

    @property
    def cost(self) -> int:
        """Local steps the attack replays per iteration (its relative cost, for scheduling)."""
        E, B = CASES[self.case]
        if self.method == "AGIC":
            return 1
        return B if self.case == "case 4" else E * B


def bo_name(model: str, case: str) -> str:
    """The stem of a BO's files under ``book/results``: ``awa_table4_resnet18/bo/<model>_case<k>``."""
    return f"{NAME}/bo/{model}_{case.replace(' ', '')}"
