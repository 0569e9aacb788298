"""Diana et al. 2025 in the ledger: the reconstruction results of Part II
(:mod:`.diana_reconstruction`: Alg. 3, Thm. 1, Props. 2-3, Fig. 2) and the attribute-inference
results of Part III (:mod:`.diana_aia`: Prop. 1, Tables 1-3, Figs. 1 and 4; :mod:`.diana_sensitivity`:
Fig. 3 and App. C.2-C.3)."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

from . import Row, record_or_none

PAPER = "Diana et al. 2025"

_PARTS = ("diana_reconstruction", "diana_aia", "diana_sensitivity")


def rows() -> list[Row]:
    """The parts' rows, Part II first. Where two parts make a row of the same id, the later one's
    replaces the earlier one's (in the later part's order): :mod:`.diana_sensitivity` decides Fig. 3 and App. C.2-C.3
    with margins from the theory, replacing the rows of the same ids that ``diana_aia._fig3_rows``
    makes with a fixed 1 p.p. margin."""
    out: list[Row] = []
    for part in _PARTS:
        try:
            mod = importlib.import_module(f"{__package__}.{part}")
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{part}":
                raise
            continue
        new = mod.rows()
        extra = getattr(mod, "referee_claim_rows", None)  # claims that had no row, made apart from
        if extra is not None:  # the part's rows()
            new = new + extra()
        ids = {r.result_id for r in new}
        out = [r for r in out if r.result_id not in ids] + new
    loaded: dict[str, dict[str, Any] | None] = {}  # each Grad row's file, read once for all its rows

    def record(file: str) -> dict[str, Any] | None:
        if file not in loaded:
            loaded[file] = record_or_none(file.removesuffix(".json"))
        return loaded[file]

    return [_with_grad_relaxation(r, record) for r in out]


def grad_relaxation_reason(record: dict[str, Any]) -> str:
    """For a Grad or Grad-w-O cell of Tables 1-3: which relaxation of eq. 2 its file ran (the
    file's settings; a file without one ran ours, the mixture)."""
    st = record["data"].get("settings", {}) if isinstance(record.get("data"), dict) else {}
    relaxation, sampler = st.get("grad_relaxation", "mixture"), st.get("grad_sampler", "softmax")
    if (relaxation, sampler) == ("input", "sigmoid"):
        return "; Grad ran the authors' relaxation of eq. 2 (sample written into the input, sigmoid sampler)"
    return (f"; Grad ran the {relaxation} relaxation with the {sampler} sampler, not the authors' (input, sigmoid) "
            "which the book's default follows: make reproduce reruns this file")


def _with_grad_relaxation(r: Row, record: Callable[[str], dict[str, Any] | None]) -> Row:
    """A Table 1-3 Grad row that is not reproduced, with :func:`grad_relaxation_reason` added."""
    if not (r.result_id.startswith("Diana Table") and "/Grad" in r.result_id and r.reason and r.file):
        return r
    rec = record(r.file)
    return r if rec is None else dataclasses.replace(r, reason=r.reason + grad_relaxation_reason(rec))


def referee(r: Row) -> Any:
    """How row ``r`` counts (:class:`flbook.ledger.referee.Count`): decided by the part that
    makes it, each part's ``count_row`` (Part II rows by :mod:`.diana_reconstruction`, Fig. 3 and
    App. C.2-C.3 by :mod:`.diana_sensitivity`, the rest of Part III by :mod:`.diana_aia`)."""
    from .referee import COUNTS

    for part in reversed(_PARTS):  # the part that made the row: the later part's rows replace the earlier's
        mod = importlib.import_module(f"{__package__}.{part}")
        made = getattr(mod, "made_here", None)
        if made is not None and made(r):
            return mod.count_row(r)
    return COUNTS
