"""Xu & Neglia 2021 ("What else is leaked when eavesdropping Federated Learning?") in the ledger.

The single home of the paper's reported numbers and claims (the constants below; the
experiments :mod:`flprivacy.experiments.part2_leaf` and :mod:`~flprivacy.experiments.part2_adult`
record them next to ours), and :func:`rows`, one :class:`~flprivacy.ledger.Row` per numbered
result: Observation 1 (exact recovery from d+1 messages, O(d³)), Observation 2 (Ω(d) messages),
Algo. 3 (the learned mapping, with Obs. 1 as its affine case), every cell of Table 1 (per client
and the mean, 1/5/10 local steps, last returned vs decoded), the §4 claims on Table 1, Fig. 1's
three panels and the Adult split's sizes.

Observations 1-2 and the affine case of Algo. 3 are checked live on small float64 instances
(seeded, well under two seconds, ``file="live"``); Table 1 reads ``part2_leaf_table1.json`` and
Fig. 1 ``part2_adult_fig1.json``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from statistics import mean
from typing import Any

from . import (DEFAULT_TOL, Row, Verdict, at_least, at_most, bound, combine, not_run, number, ordering,
               record_or_none, row, sign, trend)

PAPER = "Xu & Neglia 2021"

# ---- the paper's numbers ------------------------------------------------------------------------------------
PAPER_TABLE1: dict[int, dict[str, tuple[float, ...]]] = {
    1: {"last returned": (53.9, 49.7, 85.1, 28.3, 75.8, 58.6), "decoded": (67.0, 74.3, 80.6, 77.9, 91.0, 78.1)},
    5: {"last returned": (60.1, 54.6, 87.6, 33.6, 79.2, 63.0), "decoded": (65.6, 72.9, 76.9, 72.5, 86.2, 74.8)},
    10: {"last returned": (69.4, 60.4, 90.6, 42.3, 83.9, 69.3), "decoded": (67.5, 79.5, 78.1, 75.8, 88.9, 78.0)},
}
"""Table 1: train accuracy (%) on each client's data of the last model she returned and of the
decoded model θ̂_c^*, clients 0-4 then their mean, averaged over 10 runs, for 1, 5 and 10 local
steps (LEAF synthetic, 5 clients, batch size 256, learning rate 0.01)."""

PAPER_ADULT: dict[str, Any] = {"phd_train_sizes": (126, 258, 134), "n_rows": 12300, "n_rows_all": 48842}
"""§4 and footnote 4: "the numbers of training samples for the first three clients are 126, 258
and 134"; "the number of the data points are reduced from 48842 to 12300"."""

GAIN_RANGE = (10.0, 20.0)
"""§4: "on average, our attack outperforms the baseline with 10%-20% improvement" (points of
mean train accuracy, Table 1's last column)."""


def rows() -> list[Row]:
    """Every Xu & Neglia result (filled in below)."""
    return []
