"""Make ``tests/fixtures/leaf_reference.json``: what LEAF's own synthetic generator outputs, so
that a test can check that ``flprivacy.data.leaf_synthetic(labels="leaf-reference")`` reproduces
it draw for draw.

    git clone https://github.com/TalwalkarLab/leaf /tmp/leaf
    python tools/leaf_reference_fixture.py /tmp/leaf

LEAF's ``data/synthetic/data_generator.py`` exists in two versions: the first (commit
``15681b5``, 2019-09-17) normalises its "softmax" over the client's samples (``np.exp(z) /
sum(np.exp(z))`` with Python's ``sum``), the second (commit ``54669fd``, 2019-10-28, "fixes
softmax bug") over the classes (SciPy's ``softmax(..., axis=1)``). This script reads the first
version from the clone with ``git show`` and imports it from a temporary folder (none of LEAF's
code is copied into this repository), seeds it as LEAF's ``main.py`` does (``np.random.seed``,
then ``SyntheticDataset(seed=...)``), draws one task per client size with ``prob_clusters``
uniform over the clusters (Xu & Neglia §4: 5 clusters; LEAF's ``main.py`` ships one), and writes
each case's features, labels and client models with the LEAF commit and the generator file's
SHA-256.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

LEAF_COMMIT = "15681b5"
"""LEAF's first synthetic generator (the one that normalises over samples)."""
GENERATOR = "data/synthetic/data_generator.py"
CASES = [  # (seed, client sizes, classes, clusters): the book's setting (2 classes, 5 clusters) and one other
    (0, (12, 7, 20, 5, 9), 2, 5),
    (1, (12, 7, 20, 5, 9), 2, 5),
    (931231, (6, 15, 3), 3, 3),
]
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "leaf_reference.json"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("leaf", type=Path, help="a clone of github.com/TalwalkarLab/leaf")
    args = p.parse_args(argv)
    source = subprocess.run(["git", "-C", str(args.leaf), "show", f"{LEAF_COMMIT}:{GENERATOR}"], check=True,
                            capture_output=True, text=True).stdout
    full = subprocess.run(["git", "-C", str(args.leaf), "rev-parse", LEAF_COMMIT], check=True, capture_output=True,
                          text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "leaf_data_generator.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("leaf_data_generator", path)
        gen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gen)
        cases = []
        for seed, sizes, n_classes, n_clusters in CASES:
            np.random.seed(seed)
            data = gen.SyntheticDataset(num_classes=n_classes, seed=seed, num_dim=10,
                                        prob_clusters=[1.0 / n_clusters] * n_clusters)
            tasks = [data.get_task(n) for n in sizes]
            cases.append({"seed": seed, "sizes": list(sizes), "n_features": 10, "n_classes": n_classes,
                          "n_clusters": n_clusters,
                          "clients": [{"x": t["x"].tolist(), "y": t["y"].tolist(), "w": t["w"].tolist()} for t in tasks]})
    record = {"made_by": "python tools/leaf_reference_fixture.py <leaf clone>", "leaf_commit": full,
              "generator": GENERATOR, "generator_sha256": hashlib.sha256(source.encode()).hexdigest(),
              "numpy": np.__version__, "python": sys.version.split()[0], "cases": cases}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(record) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes, {len(cases)} cases)")


if __name__ == "__main__":
    main()
