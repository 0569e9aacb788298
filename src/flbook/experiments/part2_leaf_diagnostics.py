"""Controlled experiments on Xu & Neglia's Table 1 (LEAF): which of our choices moves the gain of
decoding? One change at a time against the book's settings (``SETTINGS["leaf_table1"]``):

    FLPRIVACY_SCALE=quick python -m flbook.experiments.part2_leaf_diagnostics --seeds 3

- ``local_unit="epochs"``: a "local step" is a pass over the client's data (Algo. 2 of the paper
  loops over E epochs of batches; the group's FedEM code passes ``local_steps`` as ``n_epochs``);
- ``normalize_inputs``: G reads centred, scaled models instead of the raw vector;
- a longer fit of eq. (6) (5,000 Adam steps instead of 1,000);
- rounds T = 20 and T = 200 (the paper gives none; ours 50);
- one fixed LEAF draw (data seed 0) under every training seed, instead of a fresh draw per seed;
- against the book now (K local epochs): the one-logit model with the binary cross-entropy (d = 11)
  instead of the two-logit softmax (d = 22), and G initialised from another seed;
- on the reference runs and the epochs runs: eq. (7) read at 0, 200, 2,000 and 20,000 Adam steps (the decode curve),
  eq. (7) restricted to the span of the observed updates, the learned map followed instead,
  θ ← θ - α G(θ) for 1,000 steps at α = 0.3, 1 and 3 (:data:`FOLLOW`), and G's error against the client's true
  (expected) update at points θ_λ = θ_last + λ(θ* - θ_last) between the last returned model and the
  true local optimum θ*.

Every row also holds the true local optimum's train accuracy (the ceiling). Writes
``book/results/part2_leaf_diagnostics[_quick].json``.

The data-draw study (``--study draws``, :data:`DRAWS`) keeps the book's settings (K local epochs)
and changes only which LEAF federation the training seeds see:

    FLPRIVACY_SCALE=quick python -m flbook.experiments.part2_leaf_diagnostics --study draws --seeds 5

- a fresh draw per training seed (the book);
- one fixed draw (data seed 0) under every training seed, as the paper's stable per-client columns
  suggest;
- one fixed draw chosen to look like the paper's: among :data:`SCREEN` candidate data seeds, the
  one (then the second, ..., the :data:`SCREENED_DRAWS`-th) whose last returned models (1, 5 and 10 local epochs, one screening training seed outside the
  attack seeds) are closest, client by client, to the paper's rows "θ_c" (:func:`screen_draws`).
  The choice reads only the baseline's accuracy, never the decoded one.

Every record carries its ``data_seed``; the file also holds the screening table. Writes
``book/results/part2_leaf_diagnostics_draws[_quick].json``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from statistics import mean, stdev
from typing import Any

import torch
from tqdm import tqdm

from flprivacy import eavesdrop, logistic_regression, run_fedavg
from flprivacy.attacks.learned_mapping import decode_mapping, follow_mapping, update_span
from flprivacy.config import generator as make_generator
from flprivacy.data import leaf_synthetic
from ..papers.xu_neglia import PAPER_TABLE1
from flprivacy.validation import NonFiniteError
from . import save_result, seeds_command
from .part2_common import SETTINGS
from .part2_leaf import LeafAttack, attack_seed, local_rule, rows_of

STEPS = {"local_unit": "steps"}
VARIANTS: dict[str, dict[str, Any]] = {
    "K SGD steps (the book before)": {"overrides": STEPS},
    "K local epochs (Algo. 2, FedEM; the book now)": {"overrides": {"local_unit": "epochs"}},
    "normalised inputs of G": {"overrides": {**STEPS, "mapping": {"normalize_inputs": True}}},
    "eq. (6) fitted 5,000 steps": {"overrides": {**STEPS, "mapping": {"fit_steps": 5000}}},
    "T = 20 rounds": {"overrides": {**STEPS, "rounds": 20}},
    "T = 200 rounds": {"overrides": {**STEPS, "rounds": 200}},
    "one fixed data draw": {"data_seed": 0, "overrides": STEPS},
    "K local epochs, one logit (BCE, d = 11)": {"one_logit": True, "overrides": {"local_unit": "epochs"}},
    "K local epochs, G initialised from another seed": {"mapping_seed_offset": 1000,
                                                        "overrides": {"local_unit": "epochs"}},
}
"""The controlled changes; the first is the reference (the book's settings before this study, K SGD
steps); the next five change one thing against it. The book now follows the second (Algo. 2's
epochs); the last two change one thing against the book now: the model's parametrisation (one logit
and the binary cross-entropy instead of the two-logit softmax), and G's random initialisation (its
seed moved by ``mapping_seed_offset``)."""
SCREENED_DRAWS = 10
"""How many of the closest screened draws the data-draw study runs (ten, so that the fraction of
draws on which the paper's gain holds is measured, not one lucky draw)."""
DRAWS: dict[str, dict[str, Any]] = {
    "a fresh draw per training seed (the book)": {},
    "one fixed draw (data seed 0), K local epochs": {"data_seed": 0},
    **{f"one fixed draw screened to look like the paper's (#{r + 1} closest)": {"screened_rank": r}
       for r in range(SCREENED_DRAWS)},
}
"""The data-draw study (``--study draws``): the book's settings, only the draw changes.
``screened_rank`` r is the (r+1)-th closest data seed of :func:`screen_draws`."""
SCREEN = {"candidates": 100, "training_seed": 1000, "local_steps": (1, 5, 10)}
"""The screen of :func:`screen_draws`: data seeds 0 to ``candidates`` - 1, each trained once
(``training_seed``, not an attack seed) with each of ``local_steps`` local epochs: the three rows
of Table 1, since at one local epoch the last returned models still depend much on the training
seed, at five and ten far less."""
PROBED = tuple(VARIANTS)[:2]
"""The variants whose fitted maps are probed (:func:`probes`)."""

FOLLOW = {"steps": 1000, "alphas": (0.3, 1.0, 3.0)}
"""Eq. (7) solved by following the learned map, θ ← θ - α G(θ) (:func:`follow_mapping`): the step
count and the step sizes α probed."""
DECODE_CHECKPOINTS = (0, 200, 2000, 20000)
"""Adam steps of eq. (7) at which the decoded model is scored (the book decodes 2,000)."""
LAMBDAS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Positions θ_λ = θ_last + λ(θ* - θ_last) at which G is compared with the true update."""
TRUE_UPDATE_DRAWS = 8
"""Mini-batch draws averaged for the client's expected update at θ_λ."""
SPAN_RTOL = 1e-2
"""Singular-value cut of the updates' span (relative to the largest)."""


def true_update(a: LeafAttack, i: int, theta: torch.Tensor, seed: int) -> torch.Tensor:
    """The client's expected update θ - Local_Update(θ) for attack ``i`` (mean over
    :data:`TRUE_UPDATE_DRAWS` mini-batch draws)."""
    steps, c = a.keys[i]
    gen = make_generator(seed)
    return torch.stack([theta - a.local[steps](a.model, theta, a.fed.clients[c], gen)
                        for _ in range(TRUE_UPDATE_DRAWS)]).mean(0)


def probes(a: LeafAttack, seed: int, checkpoints: Sequence[int] = DECODE_CHECKPOINTS) -> list[dict]:
    """Decode curve (accuracy after each of ``checkpoints`` Adam steps of eq. 7), span-restricted
    decoding, the learned map followed (:data:`FOLLOW`; ``acc_follow_<α>``, None for every attack of
    the run when the iteration diverged for one of them) and G's error along the
    segment to θ* (relative to the RMS observed update), per attack."""
    acc = a.model.accuracy
    curve = decode_mapping(a.results, steps=max(checkpoints), lr=a.settings["mapping"]["decode_lr"],
                           checkpoints=checkpoints)
    basis = update_span(a.messages, SPAN_RTOL)
    span = decode_mapping(a.results, steps=a.settings["mapping"]["decode_steps"],
                          lr=a.settings["mapping"]["decode_lr"], basis=basis)[a.settings["mapping"]["decode_steps"]]
    followed: dict[float, torch.Tensor | None] = {}
    for al in FOLLOW["alphas"]:
        try:
            followed[al] = follow_mapping(a.results, steps=FOLLOW["steps"], alpha=al)[FOLLOW["steps"]]
        except NonFiniteError:  # the iteration diverged for one attack or more of this run: recorded as None
            followed[al] = None
    out = []
    for i, ((steps, c), M, r) in enumerate(zip(a.keys, a.messages, a.results)):
        data, star, last = a.fed.clients[c], a.optima[c], M.returned[-1]
        scale = (M.sent - M.returned).pow(2).sum(1).mean().sqrt()  # RMS observed update
        row: dict[str, Any] = {"seed": seed, "local_steps": steps, "client": c,
                               "span_rank": int((basis[i].abs().sum(0) > 0).sum()),
                               "acc_decoded_span": acc(span[i], data.X, data.y),
                               "dist_last_to_optimum": float((last - star).norm()),
                               "dist_decoded_to_optimum": float((r.theta - star).norm())}
        for k in checkpoints:
            row[f"acc_decode_{k}"] = acc(curve[k][i], data.X, data.y)
        for al, th_f in followed.items():
            row[f"acc_follow_{al}"] = None if th_f is None else acc(th_f[i], data.X, data.y)
        for lam in LAMBDAS:
            th = last + lam * (star - last)
            err = (r.predict(th) - true_update(a, i, th, seed)).norm() / scale
            row[f"G_error_{lam}"] = float(err)
        out.append(row)
    return out


def screen_draws(labels: str = "argmax", candidates: int = SCREEN["candidates"],
                 training_seed: int = SCREEN["training_seed"],
                 local_steps: Sequence[int] = SCREEN["local_steps"]) -> list[dict]:
    """For each data seed below ``candidates``: the train accuracy (%) of each client's last returned
    model after FedAvg with the book's settings, for each number of local epochs in ``local_steps``
    (training seed ``training_seed``; ``acc_last_returned[str(K)]`` lists the clients), and its
    root-mean-square distance (points) to the paper's Table 1 rows "K local steps, θ_c" over every
    (K, client) cell (client by client: the paper's client c has our client c's size). Sorted by
    distance, closest first."""
    bad = [k for k in local_steps if k not in PAPER_TABLE1]
    if not local_steps or bad:
        raise ValueError(f"screen_draws: local_steps must be a non-empty subset of {list(PAPER_TABLE1)} (rows of the "
                         f"paper's Table 1), got {list(local_steps)!r}.")
    s = SETTINGS["leaf_table1"]
    model = logistic_regression(s["n_features"], s["n_classes"])
    out = []
    for ds in range(candidates):
        fed = leaf_synthetic(s["sizes"], s["n_features"], s["n_classes"], s["n_clusters"], seed=ds, labels=labels)
        acc, sq = {}, []
        for k in local_steps:
            run = run_fedavg(model, fed.clients, rounds=s["rounds"], weighting=s["weighting"], seed=training_seed,
                             local=local_rule(k, s))
            acc[str(k)] = [100 * model.accuracy(eavesdrop(run.log, c).returned[-1], d.X, d.y)
                           for c, d in enumerate(fed.clients)]
            sq += [(a - p) ** 2 for a, p in zip(acc[str(k)], PAPER_TABLE1[k]["last returned"])]
        out.append({"data_seed": ds, "acc_last_returned": acc, "distance": (sum(sq) / len(sq)) ** 0.5})
    return sorted(out, key=lambda r: r["distance"])


def run_draw(name: str, seeds: Sequence[int], labels: str = "argmax", screened: Sequence[int] = (),
             progress: bool = False) -> list[dict]:
    """Records of the data-draw variant ``name`` (:data:`DRAWS`) for every training seed, each with
    its ``data_seed``; ``screened`` lists the data seeds of :func:`screen_draws`, closest first."""
    if name not in DRAWS:
        raise ValueError(f"run_draw: unknown variant {name!r}; expected one of {list(DRAWS)}.")
    ds = DRAWS[name].get("data_seed")
    if "screened_rank" in DRAWS[name]:
        rank = DRAWS[name]["screened_rank"]
        if len(screened) <= rank:
            raise ValueError(f"run_draw: screened must list at least {rank + 1} data seeds (screen_draws' order) for "
                             f"{name!r}, got {list(screened)!r}.")
        ds = screened[rank]
    rows = []
    for seed in tqdm(list(seeds), desc=name, disable=not progress):
        recs = rows_of(attack_seed(seed, labels, data_seed=ds), seed)
        rows += [{"variant": name, "data_seed": seed if ds is None else ds, **rec} for rec in recs]
    return rows


def run_variant(name: str, seeds: Sequence[int], labels: str = "argmax", progress: bool = False) -> list[dict]:
    """Records of variant ``name`` (:data:`VARIANTS`) for every training seed; the variants in
    :data:`PROBED` also get :func:`probes`."""
    if name not in VARIANTS:
        raise ValueError(f"run_variant: unknown variant {name!r}; expected one of {list(VARIANTS)}.")
    v: Mapping[str, Any] = VARIANTS[name]
    rows = []
    for seed in tqdm(list(seeds), desc=name, disable=not progress):
        a = attack_seed(seed, labels, data_seed=v.get("data_seed"), overrides=v.get("overrides"),
                        one_logit=v.get("one_logit", False),
                        mapping_seed=seed + v["mapping_seed_offset"] if "mapping_seed_offset" in v else None)
        recs = rows_of(a, seed)
        if name in PROBED:
            for rec, extra in zip(recs, probes(a, seed)):
                rec.update(extra)
        rows += [{"variant": name, **rec} for rec in recs]
    return rows


def summary(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (variant, local steps): mean over seeds and clients of the train accuracy (%)
    of the last returned, decoded and true-optimum models, the gain of decoding (points) and the
    number of seeds, in the order of :data:`VARIANTS`, then :data:`DRAWS`."""
    out = []
    names = [v for v in {**VARIANTS, **DRAWS} if any(r["variant"] == v for r in records)]
    for v in names:
        for s in sorted({r["local_steps"] for r in records if r["variant"] == v}):
            rs = [r for r in records if r["variant"] == v and r["local_steps"] == s]
            last, dec, opt = (100 * mean(r[k] for r in rs) for k in ("acc_last_returned", "acc_decoded",
                                                                        "acc_local_optimum"))
            out.append({"variant": v, "local_steps": s, "last_returned": last, "decoded": dec,
                        "gain": dec - last, "local_optimum": opt, "seeds": len({r["seed"] for r in rs})})
    return out


ACCURACIES = ("acc_last_returned", "acc_decoded", "acc_local_optimum")
"""The three models each record scores (train accuracy, a fraction)."""


def per_client(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (variant, local steps, client), in the order of :data:`VARIANTS`, then
    :data:`DRAWS`: the mean and the standard deviation over training seeds (``sd_...``, 0 for one
    seed) of each of :data:`ACCURACIES` in %, the gain of decoding (points) and the number of seeds.
    On a fixed draw the spread is the training seeds' alone; on a fresh draw per seed it is the
    draws' as well."""
    out = []
    for v in [v for v in {**VARIANTS, **DRAWS} if any(r["variant"] == v for r in records)]:
        for s in sorted({r["local_steps"] for r in records if r["variant"] == v}):
            for c in sorted({r["client"] for r in records if r["variant"] == v and r["local_steps"] == s}):
                rs = [r for r in records if r["variant"] == v and r["local_steps"] == s and r["client"] == c]
                row: dict[str, Any] = {"variant": v, "local_steps": s, "client": c}
                for k in ACCURACIES:
                    xs = [100 * r[k] for r in rs]
                    row[k], row["sd_" + k] = mean(xs), (stdev(xs) if len(xs) > 1 else 0.0)
                row["gain"] = row["acc_decoded"] - row["acc_last_returned"]
                row["seeds"] = len({r["seed"] for r in rs})
                out.append(row)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Controlled experiments on Xu & Neglia Table 1 (LEAF)")
    p.add_argument("--labels", choices=("argmax", "leaf-reference"), default="argmax")
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), help="subset of VARIANTS")
    p.add_argument("--study", choices=("settings", "draws"), default="settings",
                   help="settings: VARIANTS (one setting at a time); draws: DRAWS (which data draw the seeds see)")
    args, n = seeds_command("", argv, quick=3, paper=3, parser=p)
    if args.study == "draws":
        screen = screen_draws(args.labels)
        rows = []
        for name in DRAWS:
            rows += run_draw(name, range(n), args.labels, screened=[r["data_seed"] for r in screen], progress=True)
        name = "part2_leaf_diagnostics_draws" + ("_reference" if args.labels == "leaf-reference" else "")
        path = save_result(name, {"settings": SETTINGS["leaf_table1"], "variants": DRAWS, "labels": args.labels,
                                  "screen_settings": SCREEN,
                                  "screen": screen, "seeds": n, "records": rows}, seeds=range(n))
        print("wrote", path)
        return
    rows: list[dict] = []
    for name in args.variants:
        rows += run_variant(name, range(n), args.labels, progress=True)
    name = "part2_leaf_diagnostics" + ("_reference" if args.labels == "leaf-reference" else "")
    path = save_result(name, {"settings": SETTINGS["leaf_table1"], "variants": VARIANTS, "labels": args.labels,
                              "decode_checkpoints": DECODE_CHECKPOINTS, "follow": FOLLOW, "lambdas": LAMBDAS,
                              "span_rtol": SPAN_RTOL,
                              "true_update_draws": TRUE_UPDATE_DRAWS, "seeds": n, "records": rows}, seeds=range(n))
    print("wrote", path)


if __name__ == "__main__":
    main()
