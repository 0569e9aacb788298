"""Controlled experiments on Xu & Neglia's Table 1 (LEAF): which of our choices moves the gain of
decoding? One change at a time against the book's settings (``SETTINGS["leaf_table1"]``):

    FLPRIVACY_SCALE=quick python -m flprivacy.experiments.part2_leaf_diagnostics --seeds 3

- ``local_unit="epochs"``: a "local step" is a pass over the client's data (Algo. 2 of the paper
  loops over E epochs of batches; the group's FedEM code passes ``local_steps`` as ``n_epochs``);
- ``normalize_inputs``: G reads centred, scaled models instead of the raw vector;
- a longer fit of eq. (6) (5,000 Adam steps instead of 1,000);
- rounds T = 20 and T = 200 (the paper gives none; ours 50);
- one fixed LEAF draw (data seed 0) under every training seed, instead of a fresh draw per seed;
- on the reference runs and the epochs runs: eq. (7) read at 0, 200, 2,000 and 20,000 Adam steps (the decode curve),
  eq. (7) restricted to the span of the observed updates, and G's error against the client's true
  (expected) update at points θ_λ = θ_last + λ(θ* - θ_last) between the last returned model and the
  true local optimum θ*.

Every row also holds the true local optimum's train accuracy (the ceiling). Writes
``book/results/part2_leaf_diagnostics[_quick].json``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from statistics import mean
from typing import Any

import torch
from tqdm import tqdm

from ..attacks.reconstruction import decode_mapping, update_span
from ..config import generator as make_generator
from . import save_result, seeds_command
from .part2_common import SETTINGS
from .part2_leaf import LeafAttack, attack_seed, rows_of

STEPS = {"local_unit": "steps"}
VARIANTS: dict[str, dict[str, Any]] = {
    "K SGD steps (the book before)": {"overrides": STEPS},
    "K local epochs (Algo. 2, FedEM; the book now)": {"overrides": {"local_unit": "epochs"}},
    "normalised inputs of G": {"overrides": {**STEPS, "mapping": {"normalize_inputs": True}}},
    "eq. (6) fitted 5,000 steps": {"overrides": {**STEPS, "mapping": {"fit_steps": 5000}}},
    "T = 20 rounds": {"overrides": {**STEPS, "rounds": 20}},
    "T = 200 rounds": {"overrides": {**STEPS, "rounds": 200}},
    "one fixed data draw": {"data_seed": 0, "overrides": STEPS},
}
"""The controlled changes; the first is the reference (the book's settings before this study, K SGD
steps); every other row changes one thing. The book now follows the second (Algo. 2's epochs)."""
PROBED = tuple(VARIANTS)[:2]
"""The variants whose fitted maps are probed (:func:`probes`)."""

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
    decoding and G's error along the segment to θ* (relative to the RMS observed update), per attack."""
    acc = a.model.accuracy
    curve = decode_mapping(a.results, steps=max(checkpoints), lr=a.settings["mapping"]["decode_lr"],
                           checkpoints=checkpoints)
    basis = update_span(a.messages, SPAN_RTOL)
    span = decode_mapping(a.results, steps=a.settings["mapping"]["decode_steps"],
                          lr=a.settings["mapping"]["decode_lr"], basis=basis)[a.settings["mapping"]["decode_steps"]]
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
        for lam in LAMBDAS:
            th = last + lam * (star - last)
            err = (r.predict(th) - true_update(a, i, th, seed)).norm() / scale
            row[f"G_error_{lam}"] = float(err)
        out.append(row)
    return out


def run_variant(name: str, seeds: Sequence[int], labels: str = "argmax", progress: bool = False) -> list[dict]:
    """Records of variant ``name`` (:data:`VARIANTS`) for every training seed; the variants in
    :data:`PROBED` also get :func:`probes`."""
    if name not in VARIANTS:
        raise ValueError(f"run_variant: unknown variant {name!r}; expected one of {list(VARIANTS)}.")
    v: Mapping[str, Any] = VARIANTS[name]
    rows = []
    for seed in tqdm(list(seeds), desc=name, disable=not progress):
        a = attack_seed(seed, labels, data_seed=v.get("data_seed"), overrides=v.get("overrides"))
        recs = rows_of(a, seed)
        if name in PROBED:
            for rec, extra in zip(recs, probes(a, seed)):
                rec.update(extra)
        rows += [{"variant": name, **rec} for rec in recs]
    return rows


def summary(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (variant, local steps): mean over seeds and clients of the train accuracy (%)
    of the last returned, decoded and true-optimum models, the gain of decoding (points) and the
    number of seeds, in the order of :data:`VARIANTS`."""
    out = []
    names = [v for v in VARIANTS if any(r["variant"] == v for r in records)]
    for v in names:
        for s in sorted({r["local_steps"] for r in records if r["variant"] == v}):
            rs = [r for r in records if r["variant"] == v and r["local_steps"] == s]
            last, dec, opt = (100 * mean(r[k] for r in rs) for k in ("acc_last_returned", "acc_decoded",
                                                                        "acc_local_optimum"))
            out.append({"variant": v, "local_steps": s, "last_returned": last, "decoded": dec,
                        "gain": dec - last, "local_optimum": opt, "seeds": len({r["seed"] for r in rs})})
    return out


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Controlled experiments on Xu & Neglia Table 1 (LEAF)")
    p.add_argument("--labels", choices=("argmax", "leaf-reference"), default="argmax")
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), help="subset of VARIANTS")
    args, n = seeds_command("", argv, quick=3, paper=3, parser=p)
    rows: list[dict] = []
    for name in args.variants:
        rows += run_variant(name, range(n), args.labels, progress=True)
    name = "part2_leaf_diagnostics" + ("_reference" if args.labels == "leaf-reference" else "")
    path = save_result(name, {"settings": SETTINGS["leaf_table1"], "variants": VARIANTS, "labels": args.labels,
                              "decode_checkpoints": DECODE_CHECKPOINTS, "lambdas": LAMBDAS, "span_rtol": SPAN_RTOL,
                              "true_update_draws": TRUE_UPDATE_DRAWS, "seeds": n, "records": rows}, seeds=range(n))
    print("wrote", path)


if __name__ == "__main__":
    main()
