"""Xu & Neglia 2021 as the paper reports it: Table 1 (LEAF synthetic) and the Adult experiment
of Fig. 1. Data only: the ledger (:mod:`flbook.ledger.xu_neglia`) and the experiments read it."""

from __future__ import annotations

from typing import Any

PAPER_TABLE1: dict[int, dict[str, tuple[float, ...]]] = {
    1: {"last returned": (53.9, 49.7, 85.1, 28.3, 75.8, 58.6), "decoded": (67.0, 74.3, 80.6, 77.9, 91.0, 78.1)},
    5: {"last returned": (60.1, 54.6, 87.6, 33.6, 79.2, 63.0), "decoded": (65.6, 72.9, 76.9, 72.5, 86.2, 74.8)},
    10: {"last returned": (69.4, 60.4, 90.6, 42.3, 83.9, 69.3), "decoded": (67.5, 79.5, 78.1, 75.8, 88.9, 78.0)},
}
"""Table 1, train accuracy (%) on each client's data of the last model she returned and of the
decoded model θ̂_c^*, clients 0-4 then their mean, averaged over 10 runs, for 1, 5 and 10 local
steps (LEAF synthetic, 5 clients, batch size 256, learning rate 0.01)."""

PAPER_ADULT: dict[str, Any] = {"phd_train_sizes": (126, 258, 134), "n_rows": 12300, "n_rows_all": 48842}
"""§4 and footnote 4 — "the numbers of training samples for the first three clients are 126, 258
and 134"; "the number of the data points are reduced from 48842 to 12300"."""
