"""Table 2 of Diana et al. 2025 (App. C.1): attribute inference on federated least squares.

Every client solves a least-squares regression (linear model, MSE) with FedAvg, E = 1, B = 32,
learning rate 5e-3, T = 300 rounds; Income runs on the reduced feature set of App. C.1
(:func:`flprivacy.data.census.encode_census_reduced`) and Income-L is i.i.d. (Alg. 5 with
h = 0). The rows are those of Table 1, from the same pipeline
(:func:`flbook.experiments.part3_pipeline.run_pipeline` with ``model=linear_regression``), except
the passive Ours: the passive adversary reconstructs the client's local optimum with Alg. 3 on
the d + 1 messages of lowest condition number
(:func:`flprivacy.attacks.reconstruction.reconstruct_least_squares` with ``subset="best"``)
and runs the model-based AIA (eq. 3) on it.

Difference from the paper: every client is attacked (the paper: one random client).

Commands (``FLPRIVACY_SCALE=paper`` for the paper's settings; quick by default)::

    python -m flbook.experiments.part3_table2 --task Medical --seeds 0 1 2
    python -m flbook.experiments.part3_table2 --task Income-L --source synthetic

Each writes ``book/results/part3_table2_<task>_<source>[_quick].json`` and prints its runtime.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import torch

from flprivacy.attacks.reconstruction import reconstruct_least_squares
from flprivacy.config import at_scale
from flprivacy.data.census import FederatedTask, income_a_task, income_l_task, medical_task
from flprivacy.federation import ClientData, MessageLog
from ..papers.diana import PAPER_TABLE2
from flprivacy.models import linear_regression
from flprivacy.threats import eavesdrop
from .part3_pipeline import AIASettings, over_seeds, run_pipeline, save_table, table_main
from .part3_pipeline import result_name as _result_name
from .part3_table1 import PAPER_SETTINGS

PAPER_TABLE2_SETTINGS: dict[str, AIASettings] = {
    t: replace(PAPER_SETTINGS[t], lr=5e-3, rounds=300, heterogeneity=0.0) for t in PAPER_SETTINGS}
"""App. C.1: least squares, lr 5e-3, E = 1, B = 32, T = 300 rounds, active +10/+50, 3 seeds."""

QUICK_TABLE2_SETTINGS: dict[str, AIASettings] = {
    t: replace(s, rounds=60, active_rounds=(5, 15), adam_trials=10, grad_iterations=20, grad_patience=5,
               model_wo_steps=500, n_synthetic={"Medical": None, "Income-L": 4000, "Income-A": 8000}[t], seeds=(0,))
    for t, s in PAPER_TABLE2_SETTINGS.items()}
"""60 rounds (still >> d + 1 messages for Alg. 3), fewer trials and rows, one seed."""



def table2_settings(task: str) -> AIASettings:
    """The settings of ``task`` at the current scale."""
    if task not in PAPER_TABLE2_SETTINGS:
        raise ValueError(f"unknown task {task!r}; Table 2 has {list(PAPER_TABLE2_SETTINGS)}.")
    return at_scale(quick=QUICK_TABLE2_SETTINGS[task], paper=PAPER_TABLE2_SETTINGS[task])


REFERENCE_LEVELS = {"Medical": "region=northeast", "Income-L": "COW=other", "Income-A": "COW=other"}
"""One level of each one-hot group is dropped (reference coding): with an intercept, a full
one-hot group makes the design matrix rank-deficient, so the least-squares optimum is not
unique and Alg. 3's Θ_out is singular (its rows never move along the null direction)."""


def drop_feature(task: FederatedTask, name: str) -> FederatedTask:
    """``task`` without the feature column ``name`` (the sensitive column is kept)."""
    if name not in task.feature_names:
        raise ValueError(f"drop_feature: {name!r} is not a feature of {task.name}; features: {task.feature_names}.")
    j = task.feature_names.index(name)
    if j in task.sensitive_columns:
        raise ValueError(f"drop_feature: {name!r} is the sensitive attribute; it cannot be dropped.")
    keep = [k for k in range(task.n_features) if k != j]
    clients = [ClientData(c.X[:, keep], c.y, None if c.X_val is None else c.X_val[:, keep], c.y_val)
               for c in task.clients]
    sens = tuple(k - (k > j) for k in task.sensitive_columns)
    return FederatedTask(task.name, task.source, clients, [task.feature_names[k] for k in keep], sens, task.candidates,
                         task.attribute_name, task.meta | {"dropped": name})


def make_ls_task(task: str, source: str, seed: int, s: AIASettings) -> FederatedTask:
    """The clients of ``task`` with App. C.1's features (Income: reduced set; Income-L i.i.d.),
    one level of the one-hot group dropped (``REFERENCE_LEVELS``)."""
    extra = {} if s.n_synthetic is None else {"n_synthetic": s.n_synthetic}
    if task == "Medical":
        ft = medical_task(seed=seed)
    elif task == "Income-L":
        ft = income_l_task(s.heterogeneity, source=source, seed=seed, features="reduced", **extra)
    elif task == "Income-A":
        ft = income_a_task(source=source, seed=seed, features="reduced", **extra)
    else:
        raise ValueError(f"unknown task {task!r}; Table 2 has {list(PAPER_TABLE2_SETTINGS)}.")
    return drop_feature(ft, REFERENCE_LEVELS[task])


def alg3_estimate(log: MessageLog, client: int, T: int) -> torch.Tensor:
    """The passive adversary's estimate of client ``client``'s local optimum: Alg. 3 on the
    d + 1 messages of rounds < T with the lowest condition number (App. C.1)."""
    return reconstruct_least_squares(eavesdrop(log, client, range(T)), subset="best").theta


def run_table2(task: FederatedTask, s: AIASettings, seed: int, *, progress: bool = False, log=print) -> dict:
    """All rows of Table 2 for one task and seed (the Table 1 pipeline on a linear model)."""
    model = linear_regression(task.n_features)
    return run_pipeline(task, s, seed, progress=progress, log=log, model=model, passive_estimator=alg3_estimate)


def result_name(task: str, source: str) -> str:
    """Result-file name of one task and source (see :func:`.part3_pipeline.result_name`)."""
    return _result_name(task, source, "part3_table2")


def run(task: str, source: str, seeds: Sequence[int] | None = None, progress: bool = False, save: bool = True) -> dict:
    """Table 2 for one task over seeds; saves the result file when ``save``."""
    start = time.perf_counter()
    s = table2_settings(task)
    seeds = tuple(s.seeds if seeds is None else seeds)
    per_seed = over_seeds(seeds, lambda seed: make_ls_task(task, source, seed, s),
                                       lambda ft, seed: run_table2(ft, s, seed, progress=progress),
                                       data=lambda ft: {"features": ft.feature_names})
    out = save_table(result_name(task, source), task, s, seeds, per_seed, PAPER_TABLE2[task], start, save=save)
    print(f"total runtime {out['seconds']:.1f} s")
    return out


def main(argv: list[str] | None = None) -> None:
    table_main(argv, __doc__, list(PAPER_TABLE2), run)


if __name__ == "__main__":
    main()
