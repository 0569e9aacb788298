"""Diana et al. 2025 in the ledger: the reconstruction results of Part II
(:mod:`.diana_reconstruction`: Alg. 3, Thm. 1, Props. 2-3, Fig. 2) and the attribute-inference
results of Part III (:mod:`.diana_aia`: Prop. 1, Tables 1-3, Figs. 1, 3, 4, App. C)."""

from __future__ import annotations

import importlib

from . import Row

PAPER = "Diana et al. 2025"

_PARTS = ("diana_reconstruction", "diana_aia")


def rows() -> list[Row]:
    """Both parts' rows, Part II first."""
    out: list[Row] = []
    for part in _PARTS:
        try:
            mod = importlib.import_module(f"{__package__}.{part}")
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{part}":
                raise
            continue
        out.extend(mod.rows())
    return out
