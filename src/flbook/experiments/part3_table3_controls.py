"""Controlled experiments on Table 3 of Diana et al. 2025 (Medical under DP-SGD, App. C.4).

Our paper-scale Table 3 puts the active attack below the paper (active-50 Ours 88.5 ± 5.5 vs
94.30) and the active Grad above it (84.0 vs 63.51). For each seed, this command trains the
same DP federation as :mod:`.part3_table3` (same seed, clipping norm, δ: so its first row
reproduces that table's cells) and then changes one thing at a time:

- how Alg. 4's Adam is tuned: on a noise-free SGD replay of the clients (our pipeline until
  now), on a DP-SGD replay of all clients together (the authors' ``run_active_simulation.py``
  runs its Optuna trials against the DP clients, one study for all clients), or on a DP-SGD
  replay per client (App. B.5: "optimized to minimize each client's training loss");
- a fixed Adam learning rate in {0.3, 1, 2, 5} (β = (0.9, 0.999)), no tuning;
- which model is scored after the attack rounds: Alg. 4's Adam iterate θ_c^a (Alg. 4, line 6)
  or the model the client returned in the last attack round (the authors' ``run_mb_aia.py``
  reads the clients' checkpoints of the active rounds, not the server's);
- Grad's round-set selection: how often a one-round set of the attack rounds wins the cosine
  criterion over several attack seeds, and Grad without the one-round sets;
- the privacy parameters: the paper's text (δ = 1e-5, clipping norm chosen on the validation
  loss: 9e5) against the authors' Medical scripts (δ = 1e-6, clipping norm 5e5);
- with ``--grad-stopping`` (its own file, ``part3_table3_controls_grad``): Grad and Grad-w-O with
  our early stopping (patience 10) against all 100 iterations, as the authors' code runs them.
- with ``--grad-authors`` (its own file, ``part3_table3_controls_grad_authors``, one point per
  seed, resumable): Grad and Grad-w-O as the authors' code runs them, all 100 iterations and Grad's
  round set chosen by their statistic (the cosine at the last Gumbel sample), beside the argmax
  cosine of the same runs.
- with ``--grad-relaxation`` (its own file, ``part3_table3_controls_relaxation``): Grad and Grad-w-O
  with our relaxation of eq. 2 (the Gumbel-softmax sample weights per-sample gradients) against the
  authors' (the sample is written into the input; :data:`flprivacy.attacks.gradient_aia.RELAXATIONS`),
  each with our sampler (two logits, softmax) and the authors' (one logit, sigmoid;
  :data:`~flprivacy.attacks.gradient_aia.SAMPLERS`): :data:`GRAD_VARIANTS`. Everything else is equal
  (the same federation, attack seeds, round sets, learning rates, stopping).
- with ``--dp-oracle`` (its own file, ``part3_table3_controls_oracle``; ``--task Income-L`` for
  the synthetic Income-L, ``part3_table3_controls_oracle_income_l_synthetic``): Model-w-O three
  ways on the federation of :mod:`.part3_table3` (same seed, clipping norm :data:`TABLE3_CLIP`,
  δ): ours (:func:`flprivacy.optimum.optimal_local_models` from the last returned model and
  Alg. 4's estimate, the table's row, recomputed by the pipeline without its gradient-based
  rows), the authors' oracle without DP (:func:`flprivacy.optimum.tuned_local_models`, as in
  :mod:`.part3_table1_controls`) and the authors' oracle with DP (the same, every Adam step on
  the DP-SGD gradient with the federation's clipping norm, ε and δ: fedkit-learn's
  ``run_local_models_optimization.py`` trains the oracle with its ``DPTrainer`` whenever the
  federation has a clipping norm). The paper is silent on DP for the oracle (§5.3: "running Adam
  for a very large number of iterations").

Every attack runs against the clients' real DP-SGD (Opacus); only the tuning replays it
(:func:`flprivacy.defences.dp_sgd_many`).

    python -m flbook.experiments.part3_table3_controls                 # quick scale, seed 0
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_table3_controls --seeds 0 1 2
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_table3_controls --seeds 0 1 2 --grad-stopping
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_table3_controls --seeds 0 1 2 --grad-relaxation
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_table3_controls --seeds 0 1 2 --grad-authors
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_table3_controls --seeds 0 1 2 --dp-oracle
    FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_table3_controls --seeds 0 1 2 --dp-oracle --task Income-L

Writes ``book/results/part3_table3_controls[_grad|_grad_authors|_relaxation|_oracle[_income_l_synthetic]][_quick].json``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import asdict, replace


from flprivacy import LocalSGD, mlp, run_fedavg
from flprivacy.attacks.active import AdamActive, tune_adam_active, tune_adam_active_per_client
from flprivacy.attacks.gradient_aia import GradientAIAResult, first_rounds_sets, gradient_aia
from flprivacy.config import at_scale, child_seed
from flprivacy.optimum import tuned_local_models
from flprivacy.data.census import FederatedTask, medical_task
from flprivacy.defences import DPLocalSGD
from flprivacy.threats import eavesdrop, last_returned
from . import add_threads_option, save_result, seed_int, use_threads
from .part3_pipeline import (AIASettings, federate, grad_rows, gradient_aia_all, gradient_table, make_task,
                             model_based_accuracy, per_client_accuracy, run_pipeline, training_loss)
from .part3_table1 import settings
from .part3_table1_controls import AUTHORS_ORACLE
from .part3_table3 import TARGET_DELTA, TARGET_EPSILON, dp_trainer, table3_settings

FIXED_LRS: tuple[float, ...] = (0.3, 1.0, 2.0, 5.0)
"""Adam learning rates tried without tuning (β = (0.9, 0.999), Kingma & Ba's defaults)."""
PAPER_PRIVACY = {"delta": TARGET_DELTA["Medical"], "clip": 9e5}
"""App. C.4: δ = 1e-5 for Medical; 9e5 is the norm of the paper's grid that App. C.4's rule (lowest
validation loss of the final global model) selects in ``part3_table3_medical``."""
SCRIPTS_PRIVACY = {"delta": 1e-6, "clip": 5e5}
"""The authors' ``bash_scripts/medical_cost/privacy/*.sh``: ``delta=1e-6``, ``clip=5e5``."""
ATTACK_SEEDS = 3
"""Seeds of the gradient-based AIA on the attack rounds (the singleton count)."""
GRAD_VARIANTS: dict[str, dict[str, str]] = {
    "mixture": {"relaxation": "mixture", "sampler": "softmax"},
    "mixture, sigmoid sampler": {"relaxation": "mixture", "sampler": "sigmoid"},
    "input": {"relaxation": "input", "sampler": "softmax"},
    "input, sigmoid sampler": {"relaxation": "input", "sampler": "sigmoid"},
}
"""The gradient-based AIA's variants of ``--grad-relaxation``: ours ("mixture": per-sample gradients
weighted by a softmax Gumbel sample), the authors' fedkit-learn code ("input, sigmoid sampler": one
logit per sample, sigmoid Gumbel sample written into the input), and the two half-way points."""

TABLE3_CLIP: dict[str, float] = {"Medical": PAPER_PRIVACY["clip"], "Income-L": 1e7}
"""The clipping norm of ``--dp-oracle``'s federation per task: the norm of the paper's grid that
App. C.4's rule selected in the committed paper-scale Table 3 files (``part3_table3_medical``,
``part3_table3_income_l_synthetic``: ``clip.best``), so that the federation is the table's."""
ORACLE_TASKS: dict[str, tuple[str, str]] = {"Medical": ("medical", "part3_table3_controls_oracle"),
                                            "Income-L": ("synthetic", "part3_table3_controls_oracle_income_l_synthetic")}
"""Task -> (data source, result file) of ``--dp-oracle``."""


def _dp(s: AIASettings, delta: float, clip: float) -> DPLocalSGD:
    return DPLocalSGD(lr=s.lr, max_grad_norm=clip, target_epsilon=TARGET_EPSILON, target_delta=delta,
                      total_rounds=s.rounds + max(s.active_rounds), epochs=s.epochs, batch_size=s.batch_size)


def _attack(model, task: FederatedTask, dp: DPLocalSGD, theta_T, last, r: int, seed: int,
            lr: float, betas, per_client: dict | None = None) -> dict:
    """Alg. 4 for r rounds against the DP clients (the pipeline's seed stream); the AIA accuracy
    (%) on the Adam iterate and on the model each client returned in the last attack round."""
    C = len(task.clients)
    adv = AdamActive(range(C), 0, r, lr, betas, init_models=dict(enumerate(last)), per_client=per_client)
    arun = run_fedavg(model, task.clients, rounds=r, local=dp, seed=child_seed(seed, 14, r), theta0=theta_T,
                      adversary=adv)
    est = adv.estimates(arun.log)
    att = task.attribute
    return {"iterate": model_based_accuracy(model, [est[c] for c in range(C)], task.clients, att),
            "returned": model_based_accuracy(model, [last_returned(arun.log, c) for c in range(C)], task.clients, att)}


def run_seed(s: AIASettings, seed: int, log=print) -> dict:
    """Every controlled experiment for one seed (see the module docstring)."""
    task = medical_task(seed=seed)
    clients, att = task.clients, task.attribute
    C, T, A = len(clients), s.rounds, max(s.active_rounds)
    model = mlp(task.n_features, s.hidden)
    sgd = LocalSGD(lr=s.lr, epochs=s.epochs, batch_size=s.batch_size)
    out: dict = {"seed": seed, "adam": {}, "privacy": {}}
    t0 = time.perf_counter()
    for name, priv in (("paper", PAPER_PRIVACY), ("scripts", SCRIPTS_PRIVACY)):
        dp = _dp(s, priv["delta"], priv["clip"])
        run = federate(model, clients, T, A, dp, seed)
        last = [last_returned(run.log, c, before=T) for c in range(C)]
        theta_T = run.log.global_models[T]
        passive = model_based_accuracy(model, last, clients, att)
        if name == "scripts":  # the same attack under the scripts' privacy parameters
            tune = tune_adam_active(model, clients, last, dp, A, n_trials=s.adam_trials, batch=s.adam_batch,
                                    seed=child_seed(seed, 13, A))
            out["privacy"][name] = priv | {"noise_multiplier": dp.noise_multiplier(clients[0]), "passive/Ours": passive,
                                           f"active-{A}": _attack(model, task, dp, theta_T, last, A, seed, tune.lr, tune.betas)}
            continue
        out["privacy"][name] = priv | {"noise_multiplier": dp.noise_multiplier(clients[0]), "passive/Ours": passive}
        for r in s.active_rounds:
            rows = {}
            tk = dict(n_trials=s.adam_trials, batch=s.adam_batch, seed=child_seed(seed, 13, r))
            for label, local in (("sgd replay, all clients", sgd), ("dp replay, all clients", dp)):
                tune = tune_adam_active(model, clients, last, local, r, **tk)
                rows[label] = {"lr": tune.lr, "betas": list(tune.betas)} | _attack(
                    model, task, dp, theta_T, last, r, seed, tune.lr, tune.betas)
            per = tune_adam_active_per_client(model, clients, last, dp, r, **tk)
            hp = {c: (t.lr, t.betas) for c, t in per.items()}
            rows["dp replay, per client"] = {"lr": [t.lr for t in per.values()],
                                             "betas": [list(t.betas) for t in per.values()]} | _attack(
                model, task, dp, theta_T, last, r, seed, 1.0, (0.9, 0.999), per_client=hp)
            for lr in FIXED_LRS:
                rows[f"fixed lr {lr:g}"] = {"lr": lr, "betas": [0.9, 0.999]} | _attack(
                    model, task, dp, theta_T, last, r, seed, lr, (0.9, 0.999))
            out["adam"][f"active-{r}"] = rows
            log(f"  seed {seed}, {r} active rounds: {time.perf_counter() - t0:.0f} s")
        # Grad: the pipeline's gradient-based AIA, then more attack seeds on the attack rounds
        truths = [att.true_index(c.X) for c in clients]
        act = list(range(T, T + A))
        gkw = dict(learning_rates=s.grad_learning_rates, iterations=s.grad_iterations, patience=s.grad_patience,
                   tolerance=s.grad_tolerance, relaxation=s.grad_relaxation, sampler=s.grad_sampler)
        merged, n_p = gradient_aia_all(model, run.log, clients, att, T, first_rounds_sets(act), seed, **gkw)
        picks = []
        for k in range(ATTACK_SEEDS):
            if k:  # the same passive sets, the attack rounds' sets with another attack seed
                fresh = [gradient_aia(model, eavesdrop(run.log, c, act), clients[c].X, clients[c].y, att,
                                      round_sets=first_rounds_sets(act), seed=child_seed(seed, 120 + k, c), **gkw)
                         for c in range(C)]
                merged = [GradientAIAResult.merge(m.subset(range(n_p)), a) for m, a in zip(merged, fresh)]
            sets = merged[0].round_sets
            allowed = list(range(len(sets)))
            acc, _, choice = grad_rows(merged, truths, task.sizes, allowed)
            no_single = [i for i in allowed if not (i >= n_p and len(sets[i]) == 1)]
            acc_ns, _, choice_ns = grad_rows(merged, truths, task.sizes, no_single)
            # the authors' statistic: the cosine at the last iteration's Gumbel sample
            acc_s, _, choice_s = grad_rows(merged, truths, task.sizes, allowed, criterion="sample")
            picks.append({"attack_seed": k, "Grad": acc, "choice": choice["Grad"],
                          "singleton_won": choice["Grad"]["round_set_size"] == 1,
                          "Grad without one-round attack sets": acc_ns, "choice_without": choice_ns["Grad"],
                          "Grad (authors' statistic)": acc_s, "choice_sample": choice_s["Grad"],
                          "singleton_won_sample": choice_s["Grad"]["round_set_size"] == 1})
            log(f"  seed {seed}, Grad attack seed {k}: {time.perf_counter() - t0:.0f} s")
        out["grad"] = picks
    out["seconds"] = time.perf_counter() - t0
    return out


def grad_stopping_seed(s: AIASettings, seed: int) -> dict:
    """Grad and Grad-w-O rows of one seed's DP federation (the paper's δ and clipping norm) with
    our early stopping (``s.grad_patience``) and with all ``s.grad_iterations`` iterations."""
    task = medical_task(seed=seed)
    model = mlp(task.n_features, s.hidden)
    dp = _dp(s, PAPER_PRIVACY["delta"], PAPER_PRIVACY["clip"])
    run = federate(model, task.clients, s.rounds, max(s.active_rounds), dp, seed)
    out = {"seed": seed}
    for name, patience in (("early stopping", s.grad_patience), ("all iterations", None)):
        t = time.perf_counter()
        rows, details = gradient_table(model, run.log, task.clients, task.attribute, replace(s, grad_patience=patience), seed)
        out[name] = {"patience": patience, "rows": rows, "choices": details, "seconds": time.perf_counter() - t}
    return out


def relaxed_gradient_table(model, log, clients, att, s: AIASettings, seed: int, relaxation: str,
                           sampler: str = "softmax") -> tuple[dict, dict]:
    """:func:`.part3_pipeline.gradient_table` with the gradient-based AIA under ``relaxation`` and
    ``sampler``: the
    same round sets, learning rates, iterations, stopping and seed streams (11 passive, 12 active),
    so that the pipeline's ``s.grad_relaxation`` and ``s.grad_sampler`` give the pipeline's rows. Adds the Grad rows under the authors' statistic
    (the cosine at the last Gumbel sample, ``"<group>/Grad (authors' statistic)"``)."""
    T, A = s.rounds, max(s.active_rounds)
    sizes, truths = [c.n for c in clients], [att.true_index(c.X) for c in clients]
    act_rounds = list(range(T, T + A))
    per_r = {r: first_rounds_sets(act_rounds[:r]) for r in s.active_rounds}
    act_sets = sorted({rs for sets in per_r.values() for rs in sets}, key=len)
    gkw = dict(learning_rates=s.grad_learning_rates, iterations=s.grad_iterations, patience=s.grad_patience,
               tolerance=s.grad_tolerance, relaxation=relaxation, sampler=sampler)
    merged = []
    for c, cl in enumerate(clients):
        p = gradient_aia(model, eavesdrop(log, c, range(T)), cl.X, cl.y, att, seed=child_seed(seed, 11, c), **gkw)
        a = gradient_aia(model, eavesdrop(log, c, act_rounds), cl.X, cl.y, att, round_sets=act_sets,
                         seed=child_seed(seed, 12, c), **gkw)
        merged.append(GradientAIAResult.merge(p, a))
    n_p = len(p.round_sets)
    groups = {"passive": list(range(n_p))} | {
        f"active-{r}": list(range(n_p)) + [n_p + act_sets.index(rs) for rs in per_r[r]] for r in s.active_rounds}
    rows, details = {}, {}
    for g, allowed in groups.items():
        rows[f"{g}/Grad"], rows[f"{g}/Grad-w-O"], details[f"{g}/grad_choice"] = grad_rows(merged, truths, sizes, allowed)
        rows[f"{g}/Grad (authors' statistic)"], _, ch = grad_rows(merged, truths, sizes, allowed, criterion="sample")
        details[f"{g}/grad_choice_sample"] = ch["Grad"]
    return rows, details


GRAD_AUTHORS_NAME = "part3_table3_controls_grad_authors"
"""The result file of ``--grad-authors`` (one point per seed under ``points/``)."""


def grad_authors_seed(seed: int) -> dict:
    """Grad and Grad-w-O of one seed's DP federation of Table 3 (Medical, the paper's δ and clipping
    norm, as :func:`grad_stopping_seed`) the authors' way: all ``grad_iterations`` iterations (no
    early stopping) and Grad's round set chosen by the authors' statistic, the cosine at the last
    iteration's Gumbel sample (``"<group>/Grad (authors' statistic)"``), beside the argmax cosine
    of the same runs (``"<group>/Grad"``). The relaxation and sampler are the pipeline's (the
    authors'). A point of the resumable ``--grad-authors`` command.

    fedkit-learn's ``scripts/run_gb_aia.py`` runs each configuration with
    ``attack_simulator.execute_attack(num_iterations=args.num_rounds, output_losses=True)``
    (``--num_rounds`` defaults to 100; no early stopping) and keeps ``cos_dis = all_cos_dis[-1]``,
    ``cos_dis_list.append(cos_dis/ len(keep_round_ids))``: the last iteration's loss, averaged over
    the clients weighted by their sizes. The ledger reads these rows as Table 3's Grad and Grad-w-O
    on Medical (:data:`flbook.ledger.diana_aia.AUTHORS_GRAD_FILES`), the table's own cells beside
    them as the control."""
    s = settings("Medical")
    task = medical_task(seed=seed)
    model = mlp(task.n_features, s.hidden)
    dp = _dp(s, PAPER_PRIVACY["delta"], PAPER_PRIVACY["clip"])
    run = federate(model, task.clients, s.rounds, max(s.active_rounds), dp, seed)
    t = time.perf_counter()
    rows, details = relaxed_gradient_table(model, run.log, task.clients, task.attribute, replace(s, grad_patience=None),
                                           seed, s.grad_relaxation, s.grad_sampler)
    return {"seed": seed, "patience": None, "rows": rows, "choices": details, "seconds": time.perf_counter() - t}


def grad_relaxation_seed(s: AIASettings, seed: int) -> dict:
    """Grad and Grad-w-O rows of one seed's DP federation (the paper's δ and clipping norm) under
    each variant of :data:`GRAD_VARIANTS`."""
    task = medical_task(seed=seed)
    model = mlp(task.n_features, s.hidden)
    dp = _dp(s, PAPER_PRIVACY["delta"], PAPER_PRIVACY["clip"])
    run = federate(model, task.clients, s.rounds, max(s.active_rounds), dp, seed)
    out = {"seed": seed}
    for name, variant in GRAD_VARIANTS.items():
        t = time.perf_counter()
        rows, details = relaxed_gradient_table(model, run.log, task.clients, task.attribute, s, seed, **variant)
        out[name] = variant | {"rows": rows, "choices": details, "seconds": time.perf_counter() - t}
    return out


def dp_oracle_seed(task_name: str, s: AIASettings, seed: int, log=print) -> dict:
    """Model-w-O three ways on one seed's DP federation of Table 3 (``task_name``, clipping norm
    :data:`TABLE3_CLIP`, the task's δ, ε = 1): ours (the pipeline's row), the authors' oracle
    without DP and with the federation's DP (see the module docstring). Each records the
    accuracy (%), the clients' weighted training loss, the per-client accuracies (%) and its
    seconds; the authors' oracles also their tuned Adam settings, and the DP one each client's σ."""
    task = make_task(task_name, ORACLE_TASKS[task_name][0], seed, s)
    clients, att = task.clients, task.attribute
    model = mlp(task.n_features, s.hidden)
    dp = dp_trainer(task_name, s, TABLE3_CLIP[task_name])
    out: dict = {"seed": seed, "sizes": task.sizes}
    t = time.perf_counter()

    def keep(run) -> dict:  # the federation's σ and ε, as the table records them
        return {"noise_multiplier": dp.noise_multiplier(clients[0]), "epsilon": dp.epsilons(clients)}

    pipe = run_pipeline(task, s, seed, model=model, local=dp, grad=False, after_training=keep)
    out["federation"] = pipe["details"]["after_training"] | {"max_grad_norm": TABLE3_CLIP[task_name],
                                                              "target_delta": TARGET_DELTA[task_name],
                                                              "target_epsilon": TARGET_EPSILON}
    out["ours"] = {"accuracy": pipe["rows"]["Model-w-O"], "loss": pipe["details"]["train_loss_model_wo"],
                   "per_client": pipe["details"]["per_client"]["Model-w-O"],
                   "rows": pipe["rows"], "seconds": time.perf_counter() - t}
    log(f"  seed {seed}, ours {out['ours']['accuracy']:.2f} % ({out['ours']['seconds']:.0f} s)")
    for name, kw in (("authors", {}), ("authors, DP", {"dp": dp})):
        t = time.perf_counter()
        tuned = tuned_local_models(model, clients, batch_size=s.batch_size, seed=child_seed(seed, 15),
                                   **at_scale(**AUTHORS_ORACLE), **kw)
        thetas = [o.theta for o in tuned]
        out[name] = {"accuracy": model_based_accuracy(model, thetas, clients, att),
                     "loss": training_loss(model, thetas, clients),
                     "per_client": [100 * a for a in per_client_accuracy(model, thetas, clients, att)],
                     "params": [o.params for o in tuned], "seconds": time.perf_counter() - t}
        if "dp" in kw:
            out[name]["noise_multiplier"] = [o.noise_multiplier for o in tuned]
        log(f"  seed {seed}, {name} {out[name]['accuracy']:.2f} % ({out[name]['seconds']:.0f} s)")
    return out


def main(argv: Sequence[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", nargs="+", type=seed_int, default=None)
    p.add_argument("--grad-stopping", action="store_true",
                   help="only Grad and Grad-w-O with and without early stopping (file part3_table3_controls_grad)")
    p.add_argument("--grad-authors", action="store_true",
                   help="only Grad and Grad-w-O the authors' way: all iterations, the authors' statistic; resumable "
                        f"(file {GRAD_AUTHORS_NAME})")
    p.add_argument("--grad-relaxation", action="store_true",
                   help="only Grad and Grad-w-O under our relaxation and sampler and the authors' "
                        "(file part3_table3_controls_relaxation)")
    p.add_argument("--dp-oracle", action="store_true",
                   help="only Model-w-O: ours, the authors' oracle, the authors' oracle under the federation's DP "
                        "(file part3_table3_controls_oracle[_income_l_synthetic])")
    p.add_argument("--task", default="Medical", choices=list(ORACLE_TASKS),
                   help="the task of --dp-oracle (the other controls run on Medical only)")
    add_threads_option(p)
    args = p.parse_args(argv)
    use_threads(args)
    s = settings("Medical")
    seeds = tuple(s.seeds if args.seeds is None else args.seeds)
    if args.grad_stopping + args.grad_relaxation + args.dp_oracle + args.grad_authors > 1:
        p.error("--grad-stopping, --grad-authors, --grad-relaxation and --dp-oracle write different files; give one "
                "of them.")
    if args.task != "Medical" and not args.dp_oracle:
        p.error(f"--task {args.task}: only --dp-oracle runs on another task than Medical.")
    if args.dp_oracle:
        s = table3_settings(args.task)
        seeds = tuple(s.seeds if args.seeds is None else args.seeds)
        per = [dp_oracle_seed(args.task, s, seed) for seed in seeds]
        source, name = ORACLE_TASKS[args.task]
        out = {"task": args.task, "source": source, "settings": asdict(s), "authors_oracle": at_scale(**AUTHORS_ORACLE),
               "max_grad_norm": TABLE3_CLIP[args.task], "target_delta": TARGET_DELTA[args.task],
               "target_epsilon": TARGET_EPSILON, "per_seed": per}
        print("wrote", save_result(name, out, seeds=seeds))
        return out
    if args.grad_relaxation:
        per = []
        for seed in seeds:
            per.append(grad_relaxation_seed(s, seed))
            print(f"  seed {seed}: " + ", ".join(f"{k} {v['seconds']:.0f} s" for k, v in per[-1].items() if k != "seed"))
        out = {"task": "Medical", "settings": asdict(s), "privacy": PAPER_PRIVACY, "variants": GRAD_VARIANTS,
               "per_seed": per}
        print("wrote", save_result("part3_table3_controls_relaxation", out, seeds=seeds))
        return out
    if args.grad_authors:
        from .points import Point, provenance, run_points

        pts = [Point(f"seed={int(q)}", "flbook.experiments.part3_table3_controls:grad_authors_seed", (int(q),))
               for q in seeds]
        recs = run_points(GRAD_AUTHORS_NAME, pts)
        out = {"task": "Medical", "settings": asdict(replace(s, grad_patience=None)), "privacy": PAPER_PRIVACY,
               "per_seed": [recs[p.key]["data"] for p in pts], "points_record": provenance(recs)}
        print("wrote", save_result(GRAD_AUTHORS_NAME, out, seeds=seeds))
        return out
    if args.grad_stopping:
        per = []
        for seed in seeds:
            per.append(grad_stopping_seed(s, seed))
            print(f"  seed {seed}: " + ", ".join(f"{k} {v['seconds']:.0f} s" for k, v in per[-1].items() if k != "seed"))
        out = {"task": "Medical", "settings": asdict(s), "privacy": PAPER_PRIVACY, "per_seed": per}
        print("wrote", save_result("part3_table3_controls_grad", out, seeds=seeds))
        return out
    per_seed = [run_seed(s, seed) for seed in seeds]
    out = {"task": "Medical", "settings": asdict(s), "fixed_lrs": list(FIXED_LRS), "attack_seeds": ATTACK_SEEDS,
           "paper_privacy": PAPER_PRIVACY, "scripts_privacy": SCRIPTS_PRIVACY, "per_seed": per_seed}
    print("wrote", save_result("part3_table3_controls", out, seeds=seeds))
    return out


if __name__ == "__main__":
    main()
