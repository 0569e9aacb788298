"""Fig. 1 of Diana et al. 2025: gradient-based AIA fails on regression as clients grow.

Four clients, each with ``|D_c|`` rows drawn at random from a census table, train an MLP (128 ReLU
units) with FedAvg (E = 1, B = 32) on a regression task (income) or a classification task
(income above a threshold); the adversary infers every sample's sex. For each ``|D_c|``: the
passive and active gradient-based AIA ("Grad", round set and learning rate chosen by cosine
similarity, App. B.5) and the model-based AIA on the final global model and on each client's
optimal local model (App. B.2).

Data: ACS Income when its files are present (all states), the synthetic census otherwise (and
always, labelled), and UCI Adult for the classification task (income > 50K).

    python -m flbook.experiments.part3_fig1                  # quick scale
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_fig1 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
from tqdm import tqdm

from flprivacy import ClientData, LocalSGD, mlp
from flprivacy.attacks.gradient_aia import GRAD_LEARNING_RATES, first_rounds_sets
from flprivacy.data.attributes import SensitiveAttribute
from ..ledger.diana_aia import PAPER_FIG1_TEXT  # noqa: F401  (the paper's values, for the chapter)
from flprivacy.threats import last_returned
from flprivacy.optimum import optimal_local_models
from flprivacy.config import at_scale, child_seed, generator
from flprivacy.data import encode, load_adult
from flprivacy.data.census import ACS, SYNTHETIC, acs_available, encode_census, load_acs_income, synthetic_census
from flprivacy.data.tabular import STATE_CODES, TabularData
from . import add_threads_option, save_result, seed_int, use_threads
from .part3_pipeline import federate, grad_rows, gradient_aia_all, model_based_accuracy


@dataclass(frozen=True)
class Fig1Settings:
    """Fig. 1's settings (App. B.2; the paper gives no learning rates or rounds for it: we use
    Table 1's rounds and the Income learning rate for B = 32, App. B.4)."""

    sizes: tuple[int, ...] = (64, 128, 256, 512, 1024)
    n_clients: int = 4
    rounds: int = 100
    active_rounds: int = 50
    epochs: int = 1
    batch_size: int = 32
    hidden: int = 128
    lr_regression: float = 5e-7  # income in dollars (App. B.4, B = 32)
    lr_classification: float = 0.05
    threshold: float = 39_000.0  # App. B.2: the median income of ACS Income, ~39K dollars
    grad_learning_rates: tuple[float, ...] = GRAD_LEARNING_RATES
    grad_iterations: int = 100
    grad_patience: int | None = 10
    grad_tolerance: float = 0.01
    grad_relaxation: str = "input"  # as Tables 1-3 (AIASettings): the authors' relaxation and sampler of eq. 2
    grad_sampler: str = "sigmoid"
    model_wo_steps: int = 5000
    pool: int = 60_000  # synthetic census rows to sample clients from
    seeds: tuple[int, ...] = (0, 1, 2)


PAPER = Fig1Settings()
QUICK = Fig1Settings(sizes=(32, 128, 512), rounds=20, active_rounds=5, grad_learning_rates=(1e3, 1e5),
                     grad_iterations=20, grad_patience=5, model_wo_steps=1000, pool=20_000, seeds=(0,))


def fig1_settings() -> Fig1Settings:
    return at_scale(quick=QUICK, paper=PAPER)


def adult_table() -> TabularData:
    """UCI Adult for the classification arm: income > 50K, sex as the sensitive attribute
    (``sex=Female``); numeric columns standardised; fnlwgt, education (duplicated by
    education-num) and native-country dropped."""
    df = load_adult("train").drop(columns=["fnlwgt", "education", "native-country"]).dropna().reset_index(drop=True)
    df["income"] = (df["income"] == ">50K").astype("int64")
    return encode(df, "income", categorical=["workclass", "marital-status", "occupation", "relationship", "race"],
                  binary={"sex": "Female"},
                  standardize=["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"], name="Adult")


def pools(s: Fig1Settings, seed: int) -> list[tuple[str, str, TabularData, str]]:
    """(source, task, table, sensitive column) of every curve: ACS regression/classification
    when present, synthetic census regression/classification, Adult classification."""
    out = []
    if acs_available(list(STATE_CODES)):
        df = load_acs_income(list(STATE_CODES), allow_download=False).dropna().drop_duplicates()
        out += [(ACS, "regression", encode_census(df), "SEX"),
                (ACS, "classification", encode_census(df, classification_threshold=s.threshold), "SEX")]
    df = synthetic_census(s.pool, states=None, seed=10_000 + seed)
    out += [(SYNTHETIC, "regression", encode_census(df), "SEX"),
            (SYNTHETIC, "classification", encode_census(df, classification_threshold=s.threshold), "SEX"),
            ("UCI Adult (Becker & Kohavi 1996)", "classification", adult_table(), "sex")]
    return out


def run_point(tab: TabularData, sensitive: str, task: str, size: int, s: Fig1Settings, seed: int) -> dict:
    """All curves of Fig. 1 at one ``|D_c|`` for one table and seed (accuracies in %): the first
    steps of the Part III pipeline (:mod:`.part3_pipeline`) on ``s.n_clients`` clients of ``size``
    rows each."""
    g = generator(child_seed(seed, size))
    rows = torch.randperm(tab.X.shape[0], generator=g)[: s.n_clients * size]
    if rows.numel() < s.n_clients * size:
        raise ValueError(f"the table has {tab.X.shape[0]} rows, fewer than {s.n_clients} x {size}.")
    clients = [ClientData(tab.X[r], tab.y[r].float()) for r in rows.split(size)]
    att = SensitiveAttribute.binary(tab.columns(sensitive)[0], name=sensitive)
    truths = [att.true_index(c.X) for c in clients]
    sizes = [c.n for c in clients]
    cls = task == "classification"
    model = mlp(tab.X.shape[1], s.hidden, loss="bce" if cls else "mse")
    local = LocalSGD(lr=s.lr_classification if cls else s.lr_regression, epochs=s.epochs, batch_size=s.batch_size)
    T, A, C = s.rounds, s.active_rounds, s.n_clients
    run = federate(model, clients, T, A, local, seed)
    merged, n_p = gradient_aia_all(model, run.log, clients, att, T, first_rounds_sets(range(T, T + A)), seed,
                                   learning_rates=s.grad_learning_rates, iterations=s.grad_iterations,
                                   patience=s.grad_patience, tolerance=s.grad_tolerance,
                                   relaxation=s.grad_relaxation, sampler=s.grad_sampler, streams=(21, 22))
    last = [last_returned(run.log, c, before=T) for c in range(C)]
    opt = optimal_local_models(model, [(c.X, c.y) for c in clients], last, max_steps=s.model_wo_steps)
    return {
        "Grad (passive)": grad_rows(merged, truths, sizes, list(range(n_p)))[0],
        "Grad (active)": grad_rows(merged, truths, sizes, list(range(len(merged[0].round_sets))))[0],
        "model-based, global model": model_based_accuracy(model, [run.log.global_models[T]] * C, clients, att),
        "model-based, optimal local model": model_based_accuracy(model, [o.theta for o in opt], clients, att),
    }


def run(seeds: Sequence[int] | None = None, save: bool = True, progress: bool = True) -> dict:
    s = fig1_settings()
    seeds = tuple(s.seeds if seeds is None else seeds)
    curves: dict[str, dict] = {}
    t0 = time.perf_counter()
    for seed in seeds:
        for source, task, tab, sens in pools(s, seed):
            key = f"{source} | {task}"
            for size in tqdm(s.sizes, desc=key, disable=not progress, leave=False):
                res = run_point(tab, sens, task, size, s, seed)
                for curve, v in res.items():
                    curves.setdefault(key, {}).setdefault(curve, {}).setdefault(str(size), []).append(v)
    out = {"settings": asdict(s), "seeds": list(seeds), "curves": curves, "seconds": time.perf_counter() - t0}
    if save:
        print("wrote", save_result("part3_fig1", out, seeds=seeds))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", nargs="+", type=seed_int, default=None)
    add_threads_option(p)
    args = p.parse_args(argv)
    use_threads(args)
    out = run(args.seeds)
    for key, cs in out["curves"].items():
        print(key)
        for curve, pts in cs.items():
            print(f"  {curve:34s} " + "  ".join(f"{k}: {sum(v) / len(v):5.1f}" for k, v in pts.items()))
    print(f"{out['seconds']:.0f} s")


if __name__ == "__main__":
    main()
