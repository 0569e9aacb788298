"""Shared pieces of Part II's experiments: the papers' settings in one place (the fast local
update for least squares is :class:`flprivacy.federation.LeastSquaresSGD`, the local optimum
:func:`flprivacy.optimum.least_squares_optimum`).

``SETTINGS`` lists, per experiment, the values the papers give (and, marked ``"ours"``, the ones
they leave open, which we had to choose). The experiment modules and the chapters read them from
here; the scale (``FLPRIVACY_SCALE``) only changes seeds and repetition counts. The papers'
reported numbers live in the ledger (:mod:`flbook.ledger.xu_neglia`,
:mod:`flbook.ledger.diana_reconstruction`).
"""

from __future__ import annotations



# ---- the papers' settings, per experiment ------------------------------------------------------
# Values the paper states are plain; values it leaves open are chosen by us and listed in "ours".
SETTINGS: dict[str, dict] = {
    # Diana et al. 2025, App. B.3 and Fig. 2
    "toy_fig2": {
        "n_clients": 2, "n_samples": 1024, "n_uniform": 9, "noise_std": 0.1, "d": 11,
        "epochs": 1, "batch_sizes": (64, 256, 1024), "rounds": 300, "seeds": 5,
        "observe_every": 20, "last_observed_round": 220,  # T = {0, 20, ..., 220}: d+1 = 12 messages
        "lrs": (0.01, 0.1),
        "ours": {"lrs": "not given in the paper; we run two", "noise_std": "N(0, 0.1) read as a standard deviation",
                 "reading": "one θ* per client, or one shared θ*: both run"},
    },
    # Diana et al. 2025, Theorem 1 (App. A.1): a controlled check of its dependences (no paper experiment)
    "theorem1": {
        "S_c": 256, "n_features": 5, "noise_std": 0.5, "delta": 0.1, "spread": 1.0, "epochs": 1,
        "sweeps": {
            "n_c": {"values": (12, 24, 48, 96, 192), "B": 32, "lr": 0.03},
            "B": {"values": (8, 16, 32, 64, 128, 256), "n_c": 48, "lr": 0.01},
            "lr": {"values": (0.003, 0.01, 0.03, 0.1, 0.2), "n_c": 48, "B": (8, 128)},
        },
        "ours": "all of it: the paper has no experiment for Theorem 1",
    },
    # Xu & Neglia 2021, §4 and Table 1
    "leaf_table1": {
        "sizes": (280, 184, 1536, 256, 208), "n_features": 10, "n_classes": 2, "n_clusters": 5,
        "batch_size": 256, "lr": 0.01, "local_steps": (1, 5, 10), "local_unit": "epochs", "seeds": 10,
        "rounds": 50, "weighting": "size",
        "mapping": {"hidden": 1000, "fit_steps": 1000, "fit_lr": 1e-3, "decode_steps": 2000, "decode_lr": 1e-2},
        "ours": {"local_unit": "Table 1's 'local steps' as the epochs E of the paper's Algo. 2 (and of the group's "
                               "FedEM code, whose local_steps are epochs)",
                 "rounds": "not given in the paper", "weighting": "not given (FedAvg's p_c ∝ S_c)",
                 "mapping": "architecture and optimiser from the paper; step counts and learning rates ours",
                 "data": "LEAF's generator, a fresh draw per seed (the paper's draw is not published)"},
    },
    # Xu & Neglia 2021, §4 and Fig. 1
    "adult_fig1": {
        "n_clients": 10, "age_cuts": (38, 52), "lr": 0.001, "local_steps": 1, "seeds": 10,
        "attacked_clients": (0, 1, 2),
        "batch_sizes": (16, 32, 64, 128, 256), "rounds": 100, "test_fraction": 0.2,
        "mapping": {"hidden": 1000, "fit_steps": 1000, "fit_lr": 1e-3, "decode_steps": 2000, "decode_lr": 1e-2},
        "features": {"drop": ("fnlwgt", "education", "native-country"),
                     "categorical": ("workclass", "marital-status", "occupation", "relationship", "race"),
                     "binary": {"sex": "Male"},
                     "standardize": ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")},
        "local_optimum": {"l2": 1e-3, "lbfgs_iterations": 200},
        "ours": {"batch_sizes": "Fig. 1b's values are not listed; we use these", "rounds": "not given",
                 "test_fraction": "not given", "features": "not given; native-country dropped to keep d small",
                 "mapping": "step counts and learning rates not given",
                 "local_optimum": "a small L2 term: the small PhD clients are linearly separable"},
    },
}
