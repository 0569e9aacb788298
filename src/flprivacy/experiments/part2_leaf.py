"""Xu & Neglia 2021, Table 1: the learned-mapping attack (Algo. 3) on LEAF synthetic data.

    FLPRIVACY_SCALE=paper python -m flprivacy.experiments.part2_leaf

Five clients (280/184/1536/256/208 samples, 10 features, 2 classes, 5 clusters), multinomial
logistic regression (d = 22), FedAvg with batch size 256, learning rate 0.01 and 1, 5 or 10 local
steps. The eavesdropper attacks every client from all its messages; we report each client's
train accuracy of the last model she returned and of the decoded model θ̂_c^*. Settings:
``SETTINGS["leaf_table1"]``; the paper's numbers: :data:`flprivacy.ledger.xu_neglia.PAPER_TABLE1`. Writes
``book/results/part2_leaf_table1.json``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from tqdm import tqdm

from .. import LocalSGD, eavesdrop, logistic_regression, run_fedavg
from ..attacks.reconstruction import learned_mapping_reconstruction_batch
from ..data import leaf_synthetic
from . import save_result, seeds_command
from ..ledger.xu_neglia import PAPER_TABLE1
from .part2_common import SETTINGS



def run_seed(seed: int, labels: str = "argmax") -> list[dict]:
    """One LEAF draw; FedAvg for each number of local steps; every client attacked (one batch).
    ``labels``: ``"argmax"`` or ``"leaf-reference"`` (see :func:`flprivacy.data.leaf_synthetic`)."""
    s = SETTINGS["leaf_table1"]
    fed = leaf_synthetic(s["sizes"], s["n_features"], s["n_classes"], s["n_clusters"], seed=seed, labels=labels)
    model = logistic_regression(s["n_features"], s["n_classes"])
    messages, keys = [], []
    for steps in s["local_steps"]:
        run = run_fedavg(model, fed.clients, rounds=s["rounds"], weighting=s["weighting"], seed=seed,
                         local=LocalSGD(lr=s["lr"], batch_size=s["batch_size"], steps=steps))
        for c in range(len(fed.clients)):
            messages.append(eavesdrop(run.log, c))
            keys.append((steps, c))
    results = learned_mapping_reconstruction_batch(messages, seed=seed, **s["mapping"])
    rows = []
    for (steps, c), M, r in zip(keys, messages, results):
        data = fed.clients[c]
        rows.append({"seed": seed, "local_steps": steps, "client": c,
                     "acc_last_returned": model.accuracy(M.returned[-1], data.X, data.y),
                     "acc_decoded": model.accuracy(r.theta, data.X, data.y),
                     "relative_mapping_loss": r.relative_mapping_loss})
    return rows


def run_table1(seeds: Sequence[int], progress: bool = False, labels: str = "argmax") -> list[dict]:
    """Table 1 records for every seed (see :func:`run_seed`)."""
    rows: list[dict] = []
    for seed in tqdm(list(seeds), desc="LEAF seeds", disable=not progress):
        rows += run_seed(seed, labels)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Xu & Neglia Table 1 on LEAF synthetic")
    p.add_argument("--labels", choices=("argmax", "leaf-reference"), default="argmax",
                   help="label rule of the LEAF generator (leaf-reference: the reference script's softmax over samples)")
    args, n = seeds_command("", argv, quick=1, paper=SETTINGS["leaf_table1"]["seeds"], parser=p)
    rows = run_table1(range(n), progress=True, labels=args.labels)
    name = "part2_leaf_table1" + ("_reference" if args.labels == "leaf-reference" else "")
    path = save_result(name, {"settings": SETTINGS["leaf_table1"], "paper": PAPER_TABLE1, "labels": args.labels,
                              "seeds": n, "records": rows},
                       seeds=range(n))
    print("wrote", path)


if __name__ == "__main__":
    main()
