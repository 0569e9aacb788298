"""Table 1 of Diana et al. 2025: passive and active attribute inference on federated regression.

Every client of a task trains an MLP (128 ReLU units) with FedAvg (E = 1, B = 32) for T = 100
rounds; the passive adversary sees all messages, the active one then attacks every client for
10 or 50 more rounds. Rows (AIA accuracy over all clients' training samples, %):

- Grad / Grad-w-O: the gradient-based AIA (eq. 2), round set and learning rate chosen by
  cosine similarity / by accuracy (oracle), App. B.5; active: the adversary sends each client
  her own model back and the round sets also range over the attack rounds;
- Ours: the model-based AIA (eq. 3) on the last returned model (passive) or on Alg. 4's
  estimate (active, Adam tuned with Optuna on the clients' training loss);
- Model-w-O: the model-based AIA on the client's optimal local model (Adam to convergence).

Commands (``FLPRIVACY_SCALE=paper`` for the paper's settings, the default is the quick scale)::

    python -m flprivacy.experiments.part3_table1 --task Medical --seeds 0 1 2
    python -m flprivacy.experiments.part3_table1 --task Income-L --source synthetic
    python -m flprivacy.experiments.part3_table1 --task Income-L Income-A --source acs   # needs ACS files

Each writes ``book/results/part3_table1_<task>_<source>[_quick].json``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import torch
from tqdm import tqdm

from .. import LocalSGD, mlp, run_fedavg
from ..federation import FLRun, LocalTrainer, MessageLog
from ..models import FLModel
from ..attacks.active import AdamActive, SendBackAll, tune_adam_active
from ..attacks.gradient_aia import GRAD_LEARNING_RATES, GradientAIAResult, first_rounds_sets, gradient_aia
from ..attacks.model_based_aia import candidate_losses
from ..optimum import optimal_local_models
from ..config import at_scale, child_seed
from ..data.census import FederatedTask, acs_available, income_a_task, income_l_task, medical_task
from . import add_threads_option, save_result, seed_int, use_threads


# ---- the paper's settings -------------------------------------------------------------------------
@dataclass(frozen=True)
class Table1Settings:
    """Settings of one task of Table 1 (defaults: the paper's, §5.2 and App. B.4-B.5)."""

    task: str
    lr: float  # client learning rate (App. B.4: per data set, for B = 32)
    rounds: int = 100  # T = ⌈100/E⌉
    epochs: int = 1
    batch_size: int = 32
    hidden: int = 128
    active_rounds: tuple[int, ...] = (10, 50)
    adam_trials: int = 50
    adam_batch: int = 10
    grad_learning_rates: tuple[float, ...] = GRAD_LEARNING_RATES
    grad_iterations: int = 100
    grad_patience: int | None = 10  # early stopping (ours; None runs all iterations as the paper)
    grad_tolerance: float = 0.01
    model_wo_steps: int = 5000
    heterogeneity: float = 0.4  # Income-L (Alg. 5)
    n_synthetic: int | None = None  # people drawn by the synthetic census (None: the task's default)
    seeds: tuple[int, ...] = (0, 1, 2)


PAPER_SETTINGS: dict[str, Table1Settings] = {
    "Medical": Table1Settings("Medical", lr=2e-6),
    "Income-L": Table1Settings("Income-L", lr=5e-7),
    "Income-A": Table1Settings("Income-A", lr=1e-6, n_synthetic=200_000),
}
"""Table 1 as in the paper: MLP(128), E = 1, B = 32, T = 100, active +10/+50, 3 seeds."""

QUICK_SETTINGS: dict[str, Table1Settings] = {
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


def settings(task: str) -> Table1Settings:
    """The settings of ``task`` at the current scale (``FLPRIVACY_SCALE``)."""
    if task not in PAPER_SETTINGS:
        raise ValueError(f"unknown task {task!r}; Table 1 has {list(PAPER_SETTINGS)}.")
    return at_scale(quick=QUICK_SETTINGS[task], paper=PAPER_SETTINGS[task])


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


def make_task(task: str, source: str, seed: int, s: Table1Settings | None = None) -> FederatedTask:
    """The clients of ``task`` from ``source`` (``"medical"``, ``"acs"`` or ``"synthetic"``)."""
    s = s or settings(task)
    if task == "Medical":
        return medical_task(seed=seed)
    extra = {} if s.n_synthetic is None else {"n_synthetic": s.n_synthetic}
    if task == "Income-L":
        return income_l_task(s.heterogeneity, source=source, seed=seed, **extra)
    if task == "Income-A":
        return income_a_task(source=source, seed=seed, **extra)
    raise ValueError(f"unknown task {task!r}.")


# ---- one seed ---------------------------------------------------------------------------------------
def _weighted(values: Sequence[float | torch.Tensor], sizes: Sequence[int]):
    w = torch.tensor(sizes, dtype=torch.float64)
    return sum(v * float(wi) for v, wi in zip(values, w)) / float(w.sum())


def _grad_rows(results: list[GradientAIAResult], truths: list[torch.Tensor], sizes: list[int],
               allowed: list[int]) -> tuple[float, float, dict]:
    """Grad and Grad-w-O over all clients: one configuration (round set, learning rate) for
    all clients, chosen by the clients' mean cosine similarity or mean accuracy (as the
    authors' code does), restricted to the round sets ``allowed``."""
    acc = _weighted([r.accuracy(t)[allowed] for r, t in zip(results, truths)], sizes)
    cos = _weighted([r.cosine[allowed] for r in results], sizes)
    L = acc.shape[1]
    k_cos = int(torch.nan_to_num(cos, nan=-2).argmax())
    k_acc = int(acc.argmax())
    sets = results[0].round_sets
    pick = lambda k: {"round_set_size": len(sets[allowed[k // L]]), "lr": results[0].learning_rates[k % L]}  # noqa: E731
    return 100 * float(acc.flatten()[k_cos]), 100 * float(acc.flatten()[k_acc]), {
        "Grad": pick(k_cos) | {"cosine": float(cos.flatten()[k_cos])}, "Grad-w-O": pick(k_acc)}


def run_table1(task: FederatedTask, s: Table1Settings, seed: int, *, progress: bool = False,
               log: Callable[[str], None] | None = None, model: FLModel | None = None,
               local: LocalTrainer | None = None,
               passive_estimator: Callable[[MessageLog, int, int], torch.Tensor] | None = None,
               after_training: Callable[[FLRun], dict] | None = None) -> dict:
    """All rows of Table 1 for one task and one seed.

    The same pipeline serves Tables 2 and 3 (App. C.1, C.4): ``model`` replaces the MLP (e.g.
    :func:`flprivacy.linear_regression` for least squares); ``local`` replaces the clients'
    :class:`LocalSGD` (e.g. :class:`flprivacy.defences.DPLocalSGD`; the adversary still tunes
    Alg. 4 by simulating plain SGD with the same η, E, B); ``passive_estimator(log, c, T)``
    replaces the passive estimate of client c's local model (default: her last returned model;
    Alg. 3 for least squares); ``after_training(run)`` is called on the FedAvg run before any
    attack and its dict is stored as ``details["after_training"]`` (e.g. Opacus's ε).

    Returns ``{"rows": {row: accuracy %}, "timings": {step: seconds}, "details": {...}}``
    with rows ``passive/Grad``, ``passive/Grad-w-O``, ``passive/Ours``, ``active-<r>/...`` for
    every number r of active rounds, and ``Model-w-O``.
    """
    timings: dict[str, float] = {}
    t0 = time.perf_counter()

    def tick(step: str) -> None:
        nonlocal t0
        now = time.perf_counter()
        timings[step] = timings.get(step, 0.0) + now - t0
        t0 = now
        if log:
            log(f"  {step}: {timings[step]:.1f} s")

    torch.manual_seed(seed)
    clients, att = task.clients, task.attribute
    C = len(clients)
    sizes = task.sizes
    truths = [att.true_index(c.X) for c in clients]
    model = mlp(task.n_features, s.hidden) if model is None else model
    sgd = LocalSGD(lr=s.lr, epochs=s.epochs, batch_size=s.batch_size)
    local = sgd if local is None else local
    T, A = s.rounds, max(s.active_rounds)

    def mb_acc(thetas: Sequence[torch.Tensor]) -> float:
        accs = [float((candidate_losses(model, th, c.X, c.y, att).argmin(0) == t).double().mean())
                for th, c, t in zip(thetas, clients, truths)]
        return 100 * _weighted(accs, sizes)

    # 1. FedAvg for T rounds, then A rounds where the adversary sends every client her own model
    #    back (the active gradient-based baseline); the passive adversary uses rounds < T.
    run = run_fedavg(model, clients, rounds=T + A, local=local, seed=seed,
                     adversary=SendBackAll(range(C), range(T, T + A)), progress=progress)
    tick("training")
    rows: dict[str, float] = {}
    details: dict = {} if after_training is None else {"after_training": after_training(run)}
    last = [run.log.last_returned(c, before=T) for c in range(C)]
    passive_models = last if passive_estimator is None else [passive_estimator(run.log, c, T) for c in range(C)]
    rows["passive/Ours"] = mb_acc(passive_models)
    theta_T = run.log.global_models[T]
    details |= {"global_model_acc": mb_acc([theta_T] * C),
                     "train_loss_last_returned": _weighted([float(model.loss(th, c.X, c.y)) for th, c in zip(last, clients)], sizes)}
    tick("model-based passive")

    # 2. gradient-based AIA: all round sets x learning rates at once, per client
    gkw = dict(learning_rates=s.grad_learning_rates, iterations=s.grad_iterations, patience=s.grad_patience,
               tolerance=s.grad_tolerance)
    passive, active = [], []
    for c in tqdm(range(C), desc="gradient-based AIA (passive)", disable=not progress, leave=False):
        msgs = run.log.client_messages(c, rounds=range(T))
        passive.append(gradient_aia(model, msgs, clients[c].X, clients[c].y, att, seed=child_seed(seed, 11, c), **gkw))
    tick("gradient-based passive")
    act_rounds = list(range(T, T + A))
    per_r = {r: first_rounds_sets(act_rounds[:r]) for r in s.active_rounds}  # App. B.5, for each |T_c^a|
    act_sets = sorted({rs for sets in per_r.values() for rs in sets}, key=len)
    for c in tqdm(range(C), desc="gradient-based AIA (active)", disable=not progress, leave=False):
        msgs = run.log.client_messages(c, rounds=act_rounds)
        active.append(gradient_aia(model, msgs, clients[c].X, clients[c].y, att, round_sets=act_sets,
                                   seed=child_seed(seed, 12, c), **gkw))
    tick("gradient-based active")
    n_passive = len(passive[0].round_sets)
    merged = [GradientAIAResult.merge(p, a) for p, a in zip(passive, active)]
    rows["passive/Grad"], rows["passive/Grad-w-O"], details["passive/grad_choice"] = _grad_rows(
        merged, truths, sizes, list(range(n_passive)))

    # 3. active: Alg. 4 (Adam tuned with Optuna), and the baseline with the attack rounds' sets
    estimates = {}
    for r in s.active_rounds:
        allowed = list(range(n_passive)) + [n_passive + act_sets.index(rs) for rs in per_r[r]]
        g, go, details[f"active-{r}/grad_choice"] = _grad_rows(merged, truths, sizes, allowed)
        rows[f"active-{r}/Grad"], rows[f"active-{r}/Grad-w-O"] = g, go
        tune = tune_adam_active(model, clients, last, sgd, r, n_trials=s.adam_trials, batch=s.adam_batch,
                                seed=child_seed(seed, 13, r))
        tick("Adam tuning (Optuna)")
        adv = AdamActive(range(C), 0, r, tune.lr, tune.betas, init_models=dict(enumerate(last)))
        arun = run_fedavg(model, clients, rounds=r, local=local, seed=child_seed(seed, 14, r), theta0=theta_T,
                          adversary=adv)
        est = adv.estimates(arun.log)
        estimates[r] = [est[c] for c in range(C)]
        rows[f"active-{r}/Ours"] = mb_acc(estimates[r])
        details[f"active-{r}/adam"] = {"lr": tune.lr, "betas": list(tune.betas), "tuning_loss": tune.loss}
        tick("active attack (Alg. 4)")

    # 4. Model-w-O: Adam to convergence from the last returned model and from Alg. 4's estimate
    opt = [o.theta for o in optimal_local_models(model, [(c.X, c.y) for c in clients],
                                                 [torch.stack([last[c], estimates[A][c]]) for c in range(C)],
                                                 max_steps=s.model_wo_steps)]
    rows["Model-w-O"] = mb_acc(opt)
    details["train_loss_model_wo"] = _weighted([float(model.loss(th, c.X, c.y)) for th, c in zip(opt, clients)], sizes)
    tick("Model-w-O (Adam to convergence)")
    return {"rows": rows, "timings": timings, "details": details}


def summarise(per_seed: list[dict]) -> dict[str, tuple[float, float]]:
    """Mean and standard deviation over seeds of every row."""
    out = {}
    for row in per_seed[0]["rows"]:
        v = torch.tensor([r["rows"][row] for r in per_seed], dtype=torch.float64)
        out[row] = (float(v.mean()), float(v.std()) if v.numel() > 1 else 0.0)
    return out


def result_name(task: str, source: str, table: str = "part3_table1") -> str:
    """Result-file name of one task and source for ``table`` (Tables 2 and 3 pass theirs;
    :func:`..result_path` adds ``_quick`` at quick scale)."""
    src = {"medical": "", "acs": "_acs", "synthetic": "_synthetic"}[source]
    return f"{table}_{task.lower().replace('-', '_')}{src}"


def over_seeds(seeds: Sequence[int], make: Callable[[int], FederatedTask],
               run_one: Callable[[FederatedTask, int], dict], *, data: Callable[[FederatedTask], dict] | None = None,
               log: Callable[[str], None] = print) -> list[dict]:
    """The per-seed loop of Tables 1-3: for each seed, ``run_one(make(seed), seed)`` with its
    runtime (``"seconds"``) and the data it ran on (``"data"``: the task, source, clients and
    sizes, plus ``data(task)``) added to the result."""
    per_seed = []
    for seed in seeds:
        t = time.perf_counter()
        ft = make(seed)
        res = run_one(ft, seed)
        res["seconds"] = time.perf_counter() - t
        res["data"] = {"task": repr(ft), "source": ft.source, "clients": len(ft.clients), "sizes": ft.sizes,
                       **(data(ft) if data else {})}
        per_seed.append(res)
        log(f"  seed {seed}: {res['seconds']:.1f} s")
    return per_seed


def table_record(task: str, s, seeds: Sequence[int], per_seed: list[dict], paper: dict, start: float,
                 **extra) -> dict:
    """The result record of Tables 1-3: task, source, settings, seeds, mean ± std of every row,
    the per-seed results, the paper's values and the runtime since ``start`` (plus ``extra``)."""
    return {"task": task, "source": per_seed[0]["data"]["source"], "settings": asdict(s), "seeds": list(seeds),
            **extra, "summary": summarise(per_seed), "per_seed": per_seed, "paper": paper,
            "seconds": time.perf_counter() - start}


def run(task: str, source: str, seeds: Sequence[int] | None = None, progress: bool = True, save: bool = True) -> dict:
    """Table 1 for one task over seeds; writes the result file when ``save``."""
    start = time.perf_counter()
    s = settings(task)
    seeds = tuple(s.seeds if seeds is None else seeds)
    print(f"{task} ({source}):")
    per_seed = over_seeds(seeds, lambda seed: make_task(task, source, seed, s),
                          lambda ft, seed: run_table1(ft, s, seed, progress=progress, log=print))
    out = table_record(task, s, seeds, per_seed, PAPER_TABLE1[task], start)
    if save:
        print("wrote", save_result(result_name(task, source), out, seeds=seeds))
    return out


def table_main(argv: list[str] | None, description: str, tasks: list[str],
               run_task: Callable[[str, str, Sequence[int] | None], dict]) -> None:
    """The command line shared by Tables 1-3: ``--task``, ``--source synthetic|acs`` (the ACS files
    must be present: a missing file is an error, never a silent switch to the synthetic census),
    ``--seeds``, ``--threads``; runs ``run_task(task, source, seeds)`` per task and prints its
    summary beside the paper's numbers."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", nargs="+", default=["Medical"], choices=tasks)
    p.add_argument("--source", default="synthetic", choices=["synthetic", "acs"],
                   help="for the Income tasks: the ACS files (must be present) or the synthetic census")
    p.add_argument("--seeds", nargs="+", type=seed_int, default=None)
    add_threads_option(p)
    args = p.parse_args(argv)
    use_threads(args)
    for task in args.task:
        source = "medical" if task == "Medical" else args.source
        if source == "acs" and not acs_available(["LA"] if task == "Income-L" else list_states()):
            p.error(f"--source acs: the ACS files for {task} are missing (see above); fetch them, or use "
                    "--source synthetic.")
        out = run_task(task, source, args.seeds)
        for row, (m, sd) in out["summary"].items():
            pm = out["paper"].get(row)
            paper = f"paper {pm[0]:6.2f} ± {pm[1]:4.2f}" if pm else "(no paper value at this scale)"
            print(f"  {row:22s} ours {m:6.2f} ± {sd:4.2f}   {paper}")


def main(argv: list[str] | None = None) -> None:
    table_main(argv, __doc__, list(PAPER_SETTINGS), run)


def list_states() -> list[str]:
    from ..data.tabular import STATE_CODES

    return list(STATE_CODES)


if __name__ == "__main__":
    main()
