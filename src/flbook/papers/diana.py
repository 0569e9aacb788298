"""Diana et al. 2025 as the paper reports it: Tables 1-3 and the values stated for Fig. 1. Data
only: the ledger (:mod:`flbook.ledger.diana_aia`) and the experiments read it."""

from __future__ import annotations

PAPER_TABLE1: dict[str, dict[str, tuple[float, float]]] = {
    "Income-L": {"passive/Grad": (60.36, 0.67), "passive/Grad-w-O": (71.44, 0.33), "passive/Ours": (75.27, 0.32),
                 "active-10/Grad": (60.24, 0.60), "active-10/Grad-w-O": (80.69, 0.55), "active-10/Ours": (82.02, 0.85),
                 "active-50/Grad": (60.24, 0.60), "active-50/Grad-w-O": (80.69, 0.55), "active-50/Ours": (94.31, 0.11),
                 "Model-w-O": (94.31, 0.11)},
    "Income-A": {"passive/Grad": (54.98, 0.29), "passive/Grad-w-O": (56.10, 1.12), "passive/Ours": (55.75, 0.17),
                 "active-10/Grad": (54.98, 0.29), "active-10/Grad-w-O": (56.10, 1.12), "active-10/Ours": (63.53, 0.73),
                 "active-50/Grad": (53.36, 0.40), "active-50/Grad-w-O": (56.12, 0.12), "active-50/Ours": (78.09, 0.25),
                 "Model-w-O": (78.31, 0.07)},
    "Medical": {"passive/Grad": (87.26, 0.92), "passive/Grad-w-O": (91.06, 0.55), "passive/Ours": (95.90, 0.04),
                "active-10/Grad": (87.26, 0.92), "active-10/Grad-w-O": (91.06, 0.55), "active-10/Ours": (95.93, 0.07),
                "active-50/Grad": (87.26, 0.92), "active-50/Grad-w-O": (91.06, 0.55), "active-50/Ours": (96.79, 0.79),
                "Model-w-O": (96.79, 0.79)},
}
"""Diana et al. 2025, Table 1 (mean ± std over 3 seeds, %), ACS Income and Medical."""

PAPER_TABLE2: dict[str, dict[str, tuple[float, float]]] = {
    "Income-L": {"passive/Grad": (53.10, 1.40), "passive/Grad-w-O": (58.19, 0.41), "passive/Ours": (59.05, 0.40),
                 "active-10/Grad": (53.10, 1.40), "active-10/Grad-w-O": (59.06, 0.07), "active-10/Ours": (57.99, 1.71),
                 "active-50/Grad": (53.10, 1.40), "active-50/Grad-w-O": (60.69, 0.30), "active-50/Ours": (59.10, 0.16),
                 "Model-w-O": (59.10, 0.16)},
    "Income-A": {"passive/Grad": (49.74, 3.17), "passive/Grad-w-O": (55.97, 0.38), "passive/Ours": (56.56, 0.41),
                 "active-10/Grad": (49.74, 3.17), "active-10/Grad-w-O": (57.18, 0.39), "active-10/Ours": (56.44, 0.12),
                 "active-50/Grad": (49.74, 3.17), "active-50/Grad-w-O": (57.18, 0.39), "active-50/Ours": (56.22, 0.06),
                 "Model-w-O": (56.56, 0.41)},
    "Medical": {"passive/Grad": (87.76, 3.80), "passive/Grad-w-O": (94.68, 0.23), "passive/Ours": (94.13, 0.16),
                "active-10/Grad": (87.76, 3.80), "active-10/Grad-w-O": (94.68, 0.23), "active-10/Ours": (90.47, 5.12),
                "active-50/Grad": (87.76, 3.80), "active-50/Grad-w-O": (94.68, 0.23), "active-50/Ours": (93.91, 0.08),
                "Model-w-O": (94.13, 0.16)},
}
"""Diana et al. 2025, Table 2 (mean ± std over 3 runs, %; one random target client)."""

PAPER_TABLE3: dict[str, dict[str, tuple[float, float]]] = {
    "Income-L": {"passive/Grad": (59.34, 3.58), "passive/Grad-w-O": (77.67, 1.01), "passive/Ours": (48.69, 4.03),
                 "active-10/Grad": (59.34, 3.58), "active-10/Grad-w-O": (77.67, 1.01), "active-10/Ours": (62.04, 3.16),
                 "active-50/Grad": (59.34, 3.58), "active-50/Grad-w-O": (77.67, 1.01), "active-50/Ours": (71.37, 1.86),
                 "Model-w-O": (79.33, 1.11)},
    "Income-A": {"passive/Grad": (50.52, 2.49), "passive/Grad-w-O": (53.83, 0.19), "passive/Ours": (58.08, 0.11),
                 "active-10/Grad": (50.52, 2.49), "active-10/Grad-w-O": (54.42, 2.77), "active-10/Ours": (57.60, 0.85),
                 "active-50/Grad": (50.52, 2.49), "active-50/Grad-w-O": (54.42, 2.77), "active-50/Ours": (57.25, 0.86),
                 "Model-w-O": (58.53, 0.61)},
    "Medical": {"passive/Grad": (63.51, 6.63), "passive/Grad-w-O": (91.09, 0.08), "passive/Ours": (94.19, 0.23),
                "active-10/Grad": (63.51, 6.63), "active-10/Grad-w-O": (91.09, 0.08), "active-10/Ours": (93.96, 0.41),
                "active-50/Grad": (63.51, 6.63), "active-50/Grad-w-O": (91.09, 0.08), "active-50/Ours": (94.30, 0.08),
                "Model-w-O": (94.30, 0.08)},
}
"""Diana et al. 2025, Table 3 (mean ± std over 3 runs, %; one random target client)."""

PAPER_FIG1_TEXT: dict[str, float] = {
    "Grad (passive), regression, |D_c| = 64": 60.0,
    "Grad (passive), regression, |D_c| > 256": 50.0,
    "Grad (passive), classification, |D_c| > 256": 71.0,
}
"""The values of Fig. 1 that Diana et al. 2025 state in their text (§1, §2.3; ACS Income); the
figure itself gives no table."""

PAPER_INCOME_L_RECORDS = 15_982
"""The paper's Income-L size, §5.1 ("In Income-L, there are 10 clients holding only records from the state of Louisiana
(15,982 records in total)")."""
