"""Table 1 of Diana et al. 2025: passive and active attribute inference on federated regression.

The paper's settings per task (App. B.4-B.5) run through the Part III pipeline
(:func:`flbook.experiments.part3_pipeline.run_pipeline`: FedAvg for T = 100 rounds, then
Grad, Grad-w-O, Ours passive and active, Model-w-O); the paper's numbers are
:data:`flbook.ledger.diana_aia.PAPER_TABLE1`.

Commands (``FLPRIVACY_SCALE=paper`` for the paper's settings, the default is the quick scale)::

    python -m flbook.experiments.part3_table1 --task Medical --seeds 0 1 2
    python -m flbook.experiments.part3_table1 --task Income-L --source synthetic --seeds 0 1 2
    python -m flbook.experiments.part3_table1 --task Income-A --source synthetic --seeds 0 1 2
    python -m flbook.experiments.part3_table1 --task Income-L Income-A --source acs   # needs ACS files

Each writes ``book/results/part3_table1_<task>_<source>[_quick].json``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from flprivacy.config import at_scale
from ..papers.diana import PAPER_TABLE1
from .part3_pipeline import AIASettings, make_task, over_seeds, run_pipeline, save_table, table_main
from .part3_pipeline import result_name as _result_name


PAPER_SETTINGS: dict[str, AIASettings] = {
    "Medical": AIASettings("Medical", lr=2e-6),
    "Income-L": AIASettings("Income-L", lr=5e-7),
    "Income-A": AIASettings("Income-A", lr=1e-6, n_synthetic=200_000),
}
"""Table 1 as in the paper: MLP(128), E = 1, B = 32, T = 100, active +10/+50, 3 seeds."""

QUICK_SETTINGS: dict[str, AIASettings] = {
    "Medical": replace(PAPER_SETTINGS["Medical"], rounds=30, active_rounds=(5, 15), adam_trials=10,
                       grad_learning_rates=(1e3, 1e5), grad_iterations=20, grad_patience=5, model_wo_steps=500,
                       seeds=(0,)),
    # 4,000 people instead of 15,982: clients of ~300 rows take ~10 local steps instead of ~38, so the
    # learning rate is raised to 2e-6 for one local epoch to move the model about as far
    "Income-L": replace(PAPER_SETTINGS["Income-L"], lr=2e-6, rounds=30, active_rounds=(5, 15), adam_trials=10,
                        grad_learning_rates=(1e3, 1e5), grad_iterations=20, grad_patience=5, model_wo_steps=500,
                        n_synthetic=4000, seeds=(0,)),
    "Income-A": replace(PAPER_SETTINGS["Income-A"], rounds=30, active_rounds=(5, 15), adam_trials=10,
                        grad_learning_rates=(1e3, 1e5), grad_iterations=20, grad_patience=5, model_wo_steps=300,
                        n_synthetic=8_000, seeds=(0,)),
}
"""The same experiment in well under a minute per task (fewer rounds, trials, iterations, rows, seeds)."""


def settings(task: str) -> AIASettings:
    """The settings of ``task`` at the current scale (``FLPRIVACY_SCALE``)."""
    if task not in PAPER_SETTINGS:
        raise ValueError(f"unknown task {task!r}; Table 1 has {list(PAPER_SETTINGS)}.")
    return at_scale(quick=QUICK_SETTINGS[task], paper=PAPER_SETTINGS[task])


def result_name(task: str, source: str) -> str:
    """Result-file name of one task and source (see :func:`.part3_pipeline.result_name`)."""
    return _result_name(task, source, "part3_table1")


def run(task: str, source: str, seeds: Sequence[int] | None = None, progress: bool = True, save: bool = True) -> dict:
    """Table 1 for one task over seeds; writes the result file when ``save``."""
    start = time.perf_counter()
    s = settings(task)
    seeds = tuple(s.seeds if seeds is None else seeds)
    print(f"{task} ({source}):")
    per_seed = over_seeds(seeds, lambda seed: make_task(task, source, seed, s),
                          lambda ft, seed: run_pipeline(ft, s, seed, progress=progress, log=print))
    return save_table(result_name(task, source), task, s, seeds, per_seed, PAPER_TABLE1[task], start, save=save)


def main(argv: list[str] | None = None) -> None:
    table_main(argv, __doc__, list(PAPER_SETTINGS), run)


if __name__ == "__main__":
    main()
