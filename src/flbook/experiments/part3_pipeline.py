"""The Part III pipeline of Diana et al. 2025: one federation, then every attack on it.

For one task and one seed: every client trains an MLP (128 ReLU units) with FedAvg (E = 1,
B = 32) for T rounds; the passive adversary sees the messages of rounds < T; the active one
then attacks every client for 10 or 50 more rounds. Rows (AIA accuracy over all clients'
training samples, %, weighted by the clients' sizes):

- Grad / Grad-w-O: the gradient-based AIA (eq. 2), round set and learning rate chosen by
  cosine similarity / by accuracy (oracle), App. B.5; active: the adversary sends each client
  her own model back and the round sets also range over the attack rounds. The paper (eq. 2,
  App. B.5) names the Gumbel-softmax trick but not how the virtual gradient depends on the
  relaxed sample; we follow the authors' fedkit-learn code (``AttributeInferenceAttack``): the
  sample is written into the input, drawn with one logit and a sigmoid for a binary attribute
  (``AIASettings.grad_relaxation``, ``grad_sampler``);
- Ours: the model-based AIA (eq. 3) on the last returned model (passive) or on Alg. 4's
  estimate (active, Adam tuned with Optuna on the clients' training loss);
- Model-w-O: the model-based AIA on the client's optimal local model (Adam to convergence).

Table 1 (:mod:`.part3_table1`), Table 2 (least squares, :mod:`.part3_table2`), Table 3 (DP-SGD,
:mod:`.part3_table3`) and Fig. 3 (:mod:`.part3_fig3`) run :func:`run_pipeline`; Fig. 1
(:mod:`.part3_fig1`) runs its first steps (:func:`federate`, :func:`gradient_aia_all`,
:func:`grad_rows`, :func:`model_based_accuracy`). Every attack reads the log through the
threat views (:func:`flprivacy.threats.eavesdrop`, :func:`flprivacy.threats.last_returned`).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import torch
from tqdm import tqdm

from flprivacy import LocalSGD, mlp, run_fedavg
from flprivacy.attacks.active import AdamActive, SendBackAll, tune_adam_active, tune_adam_active_per_client
from flprivacy.attacks.gradient_aia import GRAD_LEARNING_RATES, GradientAIAResult, first_rounds_sets, gradient_aia
from flprivacy.attacks.model_based_aia import candidate_losses
from flprivacy.config import child_seed
from flprivacy.data.attributes import SensitiveAttribute
from flprivacy.data.census import FederatedTask, acs_available, income_a_task, income_l_task, medical_task
from flprivacy.federation import ClientData, FLRun, LocalTrainer
from flprivacy.log import MessageLog
from flprivacy.models import FLModel
from flprivacy.optimum import optimal_local_models
from flprivacy.threats import eavesdrop, last_returned
from . import add_threads_option, save_result, seed_int, use_threads


# ---- settings ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AIASettings:
    """Settings of one run of the pipeline (defaults: the paper's, §5.2 and App. B.4-B.5; where the
    paper is silent, the authors' code: Grad's relaxation and sampler)."""

    task: str
    lr: float  # client learning rate (App. B.4: per data set, for B = 32)
    rounds: int = 100  # T = ⌈100/E⌉
    epochs: int = 1
    batch_size: int = 32
    hidden: int = 128
    active_rounds: tuple[int, ...] = (10, 50)
    adam_trials: int = 50
    adam_batch: int = 10
    adam_replay: str = "sgd"  # the client update Alg. 4's tuning replays: "sgd" (noise-free) or "local" (the clients' own)
    adam_per_client: bool = True  # one Optuna study per client (App. B.5: "each client's training loss"); False: one for all
    grad_learning_rates: tuple[float, ...] = GRAD_LEARNING_RATES
    grad_iterations: int = 100
    grad_patience: int | None = 10  # early stopping (ours; None runs all iterations as the paper)
    grad_tolerance: float = 0.01
    grad_relaxation: str = "input"  # eq. 2's relaxation as the authors' fedkit-learn code (the paper is silent): RELAXATIONS
    grad_sampler: str = "sigmoid"  # the authors' Gumbel sampler of a binary attribute (one logit, sigmoid): SAMPLERS
    model_wo_steps: int = 5000
    heterogeneity: float = 0.4  # Income-L (Alg. 5)
    n_synthetic: int | None = None  # people drawn by the synthetic census (None: the task's default)
    seeds: tuple[int, ...] = (0, 1, 2)


TASKS = ("Medical", "Income-L", "Income-A")


def make_task(task: str, source: str, seed: int, s: AIASettings) -> FederatedTask:
    """The clients of ``task`` from ``source`` (``"medical"``, ``"acs"`` or ``"synthetic"``)."""
    if task == "Medical":
        return medical_task(seed=seed)
    extra = {} if s.n_synthetic is None else {"n_synthetic": s.n_synthetic}
    if task == "Income-L":
        return income_l_task(s.heterogeneity, source=source, seed=seed, **extra)
    if task == "Income-A":
        return income_a_task(source=source, seed=seed, **extra)
    raise ValueError(f"make_task: unknown task {task!r}; choose from {list(TASKS)}.")


# ---- the steps ----------------------------------------------------------------------------------------
def weighted(values: Sequence[float | torch.Tensor], sizes: Sequence[int]):
    """Σ_c S_c v_c / Σ_c S_c: a mean over all clients' samples."""
    w = torch.tensor(sizes, dtype=torch.float64)
    return sum(v * float(wi) for v, wi in zip(values, w)) / float(w.sum())


def per_client_accuracy(model: FLModel, thetas: Sequence[torch.Tensor], clients: Sequence[ClientData],
                        att: SensitiveAttribute) -> list[float]:
    """The model-based AIA (eq. 3) of client c on ``thetas[c]``: each client's accuracy (fraction
    of her samples)."""
    return [float((candidate_losses(model, th, c.X, c.y, att).argmin(0) == att.true_index(c.X)).double().mean())
            for th, c in zip(thetas, clients)]


def model_based_accuracy(model: FLModel, thetas: Sequence[torch.Tensor], clients: Sequence[ClientData],
                         att: SensitiveAttribute) -> float:
    """The model-based AIA (eq. 3) of client c on ``thetas[c]``, accuracy (%) over all clients'
    samples."""
    return 100 * weighted(per_client_accuracy(model, thetas, clients, att), [c.n for c in clients])


def training_loss(model: FLModel, thetas: Sequence[torch.Tensor], clients: Sequence[ClientData]) -> float:
    """The clients' training loss at ``thetas[c]``, weighted by their sizes (what App. B.5's tuning
    of Alg. 4 minimises)."""
    return float(weighted([float(model.loss(th, c.X, c.y)) for th, c in zip(thetas, clients)], [c.n for c in clients]))


def tune_alg4(model: FLModel, clients: Sequence[ClientData], last: Sequence[torch.Tensor], replay: LocalTrainer,
              rounds: int, s: AIASettings, seed: int, per_client: bool) -> tuple[AdamActive, dict]:
    """Alg. 4's adversary for ``rounds`` attack rounds on every client, starting from her last
    returned model, its Adam tuned by Optuna on the adversary's ``replay`` of the clients' update
    (App. B.5): one study per client when ``per_client``, else one for all clients. Returns the
    adversary and the record of the chosen learning rates, betas and tuning losses."""
    C = len(clients)
    tk = dict(n_trials=s.adam_trials, batch=s.adam_batch, seed=child_seed(seed, 13, rounds))
    init = dict(enumerate(last))
    if per_client:
        tunes = tune_adam_active_per_client(model, clients, last, replay, rounds, **tk)
        hp = {c: (t.lr, t.betas) for c, t in tunes.items()}
        return (AdamActive(range(C), 0, rounds, 1.0, init_models=init, per_client=hp),
                {"lr": [t.lr for t in tunes.values()], "betas": [list(t.betas) for t in tunes.values()],
                 "tuning_loss": [t.loss for t in tunes.values()]})
    tune = tune_adam_active(model, clients, last, replay, rounds, **tk)
    return (AdamActive(range(C), 0, rounds, tune.lr, tune.betas, init_models=init),
            {"lr": tune.lr, "betas": list(tune.betas), "tuning_loss": tune.loss})


def run_alg4(model: FLModel, clients: Sequence[ClientData], local: LocalTrainer, adversary: AdamActive, rounds: int,
             theta_T: torch.Tensor, seed: int) -> tuple[FLRun, list[torch.Tensor]]:
    """The ``rounds`` attack rounds of ``adversary`` (Alg. 4) after training, from the global model
    ``theta_T``: the run and every client's estimate θ_c^a."""
    arun = run_fedavg(model, clients, rounds=rounds, local=local, seed=child_seed(seed, 14, rounds), theta0=theta_T,
                      adversary=adversary)
    est = adversary.estimates(arun.log)
    return arun, [est[c] for c in range(len(clients))]


def model_wo_models(model: FLModel, clients: Sequence[ClientData], last: Sequence[torch.Tensor],
                    estimates: Sequence[torch.Tensor], s: AIASettings) -> list[torch.Tensor]:
    """Model-w-O's optimal local models: Adam to convergence from each client's last returned
    model and from Alg. 4's estimate (:func:`flprivacy.optimum.optimal_local_models`)."""
    return [o.theta for o in optimal_local_models(model, [(c.X, c.y) for c in clients],
                                                  [torch.stack([l_, e]) for l_, e in zip(last, estimates)],
                                                  max_steps=s.model_wo_steps)]


def federate(model: FLModel, clients: Sequence[ClientData], rounds: int, active: int, local: LocalTrainer,
             seed: int, progress: bool = False) -> FLRun:
    """FedAvg for ``rounds`` = T rounds, then ``active`` = A rounds in which the adversary sends
    every client her own model back (the active gradient-based baseline, Chen et al. 2022); the
    passive adversary uses rounds < T."""
    C = len(clients)
    return run_fedavg(model, clients, rounds=rounds + active, local=local, seed=seed,
                      adversary=SendBackAll(range(C), range(rounds, rounds + active)), progress=progress)


def gradient_aia_all(model: FLModel, log: MessageLog, clients: Sequence[ClientData], att: SensitiveAttribute,
                     rounds: int, active_sets: Sequence[tuple[int, ...]], seed: int, *,
                     learning_rates: Sequence[float], iterations: int, patience: int | None, tolerance: float,
                     relaxation: str, sampler: str, streams: tuple[int, int] = (11, 12),
                     progress: bool = False) -> tuple[list[GradientAIAResult], int]:
    """The gradient-based AIA (eq. 2) of every client, for all round sets x learning rates at
    once: the passive sets (App. B.5's first-rounds sets of rounds < ``rounds``) and
    ``active_sets`` (sets of attack rounds), with eq. 2 relaxed and sampled as ``relaxation`` and
    ``sampler`` say (:func:`flprivacy.attacks.gradient_aia.gradient_aia`). Returns each client's
    merged result and the number of passive sets (they come first). ``streams`` name the seed
    streams (passive, active)."""
    gkw = dict(learning_rates=learning_rates, iterations=iterations, patience=patience, tolerance=tolerance,
               relaxation=relaxation, sampler=sampler)
    act_rounds = sorted({t for rs in active_sets for t in rs})
    merged = []
    for c in tqdm(range(len(clients)), desc="gradient-based AIA", disable=not progress, leave=False):
        X, y = clients[c].X, clients[c].y
        p = gradient_aia(model, eavesdrop(log, c, range(rounds)), X, y, att, seed=child_seed(seed, streams[0], c), **gkw)
        a = gradient_aia(model, eavesdrop(log, c, act_rounds), X, y, att, round_sets=list(active_sets),
                         seed=child_seed(seed, streams[1], c), **gkw)
        merged.append(GradientAIAResult.merge(p, a))
    return merged, len(p.round_sets)


GRAD_CRITERIA = ("argmax", "sample")
"""How "Grad" scores a configuration: the mean cosine at the final argmax attributes (ours) or at
the last iteration's Gumbel sample (the authors' ``run_gb_aia.py``)."""


def grad_rows(results: list[GradientAIAResult], truths: list[torch.Tensor], sizes: list[int],
              allowed: list[int], criterion: str = "argmax") -> tuple[float, float, dict]:
    """Grad and Grad-w-O over all clients: one configuration (round set, learning rate) for
    all clients, chosen by the clients' mean cosine similarity (weighted by their sizes, as the
    authors' code averages it) or mean accuracy, restricted to the round sets ``allowed``.
    ``criterion`` (:data:`GRAD_CRITERIA`) says where the cosine is measured."""
    if criterion not in GRAD_CRITERIA:
        raise ValueError(f"criterion must be one of {GRAD_CRITERIA}, got {criterion!r}.")
    acc = weighted([r.accuracy(t)[allowed] for r, t in zip(results, truths)], sizes)
    if criterion == "sample" and any(r.sample_cosine is None for r in results):
        raise ValueError("criterion='sample' needs results with sample_cosine (from gradient_aia).")
    cos = weighted([(r.cosine if criterion == "argmax" else r.sample_cosine)[allowed] for r in results], sizes)
    L = acc.shape[1]
    k_cos = int(torch.nan_to_num(cos, nan=-2).argmax())
    k_acc = int(acc.argmax())
    sets = results[0].round_sets
    pick = lambda k: {"round_set_size": len(sets[allowed[k // L]]), "lr": results[0].learning_rates[k % L],  # noqa: E731
                      "per_client": [100 * float(r.accuracy(t)[allowed].flatten()[k]) for r, t in zip(results, truths)]}
    return 100 * float(acc.flatten()[k_cos]), 100 * float(acc.flatten()[k_acc]), {
        "Grad": pick(k_cos) | {"cosine": float(cos.flatten()[k_cos])}, "Grad-w-O": pick(k_acc)}


def gradient_table(model: FLModel, log: MessageLog, clients: Sequence[ClientData], att: SensitiveAttribute,
                   s: AIASettings, seed: int, progress: bool = False) -> tuple[dict[str, float], dict]:
    """The Grad and Grad-w-O rows of Tables 1-3 from a run of ``s.rounds`` + max(``s.active_rounds``)
    rounds (:func:`federate`): passive (App. B.5's sets of rounds < T) and, for each number r of
    active rounds, the passive sets plus the sets of the first r attack rounds. Returns the rows
    and, per row group, the chosen configuration (``"<group>/grad_choice"``)."""
    T, A = s.rounds, max(s.active_rounds)
    sizes = [c.n for c in clients]
    truths = [att.true_index(c.X) for c in clients]
    act_rounds = list(range(T, T + A))
    per_r = {r: first_rounds_sets(act_rounds[:r]) for r in s.active_rounds}
    act_sets = sorted({rs for sets in per_r.values() for rs in sets}, key=len)
    merged, n_passive = gradient_aia_all(model, log, clients, att, T, act_sets, seed,
                                         learning_rates=s.grad_learning_rates, iterations=s.grad_iterations,
                                         patience=s.grad_patience, tolerance=s.grad_tolerance,
                                         relaxation=s.grad_relaxation, sampler=s.grad_sampler, progress=progress)
    rows: dict[str, float] = {}
    details: dict = {}
    rows["passive/Grad"], rows["passive/Grad-w-O"], details["passive/grad_choice"] = grad_rows(
        merged, truths, sizes, list(range(n_passive)))
    for r in s.active_rounds:
        allowed = list(range(n_passive)) + [n_passive + act_sets.index(rs) for rs in per_r[r]]
        rows[f"active-{r}/Grad"], rows[f"active-{r}/Grad-w-O"], details[f"active-{r}/grad_choice"] = grad_rows(
            merged, truths, sizes, allowed)
    return rows, details


# ---- one task, one seed -------------------------------------------------------------------------------
def run_pipeline(task: FederatedTask, s: AIASettings, seed: int, *, progress: bool = False,
                 log: Callable[[str], None] | None = None, model: FLModel | None = None,
                 local: LocalTrainer | None = None,
                 passive_estimator: Callable[[MessageLog, int, int], torch.Tensor] | None = None,
                 after_training: Callable[[FLRun], dict] | None = None, grad: bool = True) -> dict:
    """All rows of Tables 1-3 for one task and one seed.

    ``model`` replaces the MLP (e.g. :func:`flprivacy.linear_regression` for least squares,
    Table 2); ``local`` replaces the clients' :class:`LocalSGD` (e.g.
    :class:`flprivacy.defences.DPLocalSGD`, Table 3); ``s.adam_replay`` names the local update the
    adversary replays to tune Alg. 4's Adam (``"sgd"``: plain SGD with the same η, E, B;
    ``"local"``: the clients' own, DP-SGD included) and ``s.adam_per_client`` whether each
    client gets her own Adam (App. B.5); ``passive_estimator(log, c, T)`` replaces the passive estimate of client c's local model
    (default: her last returned model; Alg. 3 for least squares); ``after_training(run)`` is
    called on the FedAvg run before any attack and its dict is stored as
    ``details["after_training"]`` (e.g. Opacus's ε).

    Returns ``{"rows": {row: accuracy %}, "timings": {step: seconds}, "details": {...}}``
    with rows ``passive/Grad``, ``passive/Grad-w-O``, ``passive/Ours``, ``active-<r>/...`` for
    every number r of active rounds, and ``Model-w-O``; ``details["active-<r>/adam"]`` also holds
    the accuracy on the models the clients returned in the last attack round (``returned_acc``,
    what the authors' code scores) beside Alg. 4's estimate (the row); ``details["per_client"]``
    every client's accuracy (%) in the Ours and Model-w-O rows, with ``sizes`` (Fig. 4). With
    ``grad=False`` the gradient-based rows (most of the cost on large tasks) are skipped.
    """
    if s.adam_replay not in ("sgd", "local"):
        raise ValueError(f"run_pipeline: adam_replay must be 'sgd' or 'local'; got {s.adam_replay!r}.")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()

    def tick(step: str) -> None:
        nonlocal t0
        now = time.perf_counter()
        timings[step] = timings.get(step, 0.0) + now - t0
        t0 = now
        if log:
            log(f"  {step}: {timings[step]:.1f} s")

    clients, att = task.clients, task.attribute
    C, sizes = len(clients), task.sizes
    model = mlp(task.n_features, s.hidden) if model is None else model
    sgd = LocalSGD(lr=s.lr, epochs=s.epochs, batch_size=s.batch_size)
    local = sgd if local is None else local
    replay = sgd if s.adam_replay == "sgd" else local
    T, A = s.rounds, max(s.active_rounds)

    # 1. FedAvg for T rounds, then A rounds of sending every client her own model back
    run = federate(model, clients, T, A, local, seed, progress)
    tick("training")
    rows: dict[str, float] = {}
    details: dict = {} if after_training is None else {"after_training": after_training(run)}
    last = [last_returned(run.log, c, before=T) for c in range(C)]
    passive_models = last if passive_estimator is None else [passive_estimator(run.log, c, T) for c in range(C)]
    per_client: dict[str, list] = {"sizes": list(sizes)}

    def ours(row: str, thetas: Sequence[torch.Tensor]) -> None:
        accs = per_client_accuracy(model, thetas, clients, att)
        rows[row] = 100 * weighted(accs, sizes)
        per_client[row] = [100 * a for a in accs]

    ours("passive/Ours", passive_models)
    details |= {"global_model_acc": model_based_accuracy(model, [run.log.global_models[T]] * C, clients, att),
                "train_loss_last_returned": training_loss(model, last, clients)}
    tick("model-based passive")

    # 2. gradient-based AIA, passive and active round sets (App. B.5, for each |T_c^a|)
    if grad:
        grows, gdetails = gradient_table(model, run.log, clients, att, s, seed, progress=progress)
        rows |= grows
        details |= gdetails
        tick("gradient-based AIA")

    # 3. active: Alg. 4 (Adam tuned with Optuna)
    theta_T = run.log.global_models[T]
    estimates = {}
    for r in s.active_rounds:
        adv, adam = tune_alg4(model, clients, last, replay, r, s, seed, s.adam_per_client)
        tick("Adam tuning (Optuna)")
        arun, estimates[r] = run_alg4(model, clients, local, adv, r, theta_T, seed)
        ours(f"active-{r}/Ours", estimates[r])
        returned = [last_returned(arun.log, c) for c in range(C)]
        details[f"active-{r}/adam"] = adam | {"returned_acc": model_based_accuracy(model, returned, clients, att)}
        tick("active attack (Alg. 4)")

    # 4. Model-w-O: Adam to convergence from the last returned model and from Alg. 4's estimate
    opt = model_wo_models(model, clients, last, estimates[A], s)
    ours("Model-w-O", opt)
    details["per_client"] = per_client
    order = ["passive/Ours", "passive/Grad", "passive/Grad-w-O",
             *(f"active-{r}/{a}" for r in s.active_rounds for a in ("Grad", "Grad-w-O", "Ours")), "Model-w-O"]
    rows = {k: rows[k] for k in order if k in rows}
    details["train_loss_model_wo"] = training_loss(model, opt, clients)
    tick("Model-w-O (Adam to convergence)")
    return {"rows": rows, "timings": timings, "details": details}


# ---- over seeds, the record, the command line ----------------------------------------------------------
def summarise(per_seed: list[dict]) -> dict[str, tuple[float, float]]:
    """Mean and standard deviation over seeds of every row."""
    out = {}
    for row in per_seed[0]["rows"]:
        v = torch.tensor([r["rows"][row] for r in per_seed], dtype=torch.float64)
        out[row] = (float(v.mean()), float(v.std()) if v.numel() > 1 else 0.0)
    return out


def result_name(task: str, source: str, table: str) -> str:
    """Result-file name of one task and source for ``table`` (e.g. ``"part3_table1"``;
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


def save_table(name: str, task: str, s, seeds: Sequence[int], per_seed: list[dict], paper: dict, start: float, *,
               save: bool, **extra) -> dict:
    """The last step of Tables 1-3 for one task: :func:`table_record`, written to the result file
    ``name`` (the table's ``result_name(task, source)``) when ``save``."""
    out = table_record(task, s, seeds, per_seed, paper, start, **extra)
    if save:
        print("wrote", save_result(name, out, seeds=seeds))
    return out


def list_states() -> list[str]:
    from flprivacy.data.tabular import STATE_CODES

    return list(STATE_CODES)


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
