"""``python -m flprivacy.ledger``: rebuild ``book/results/ledger.json`` from the result files and
print the counts by paper and status."""

from __future__ import annotations

from . import STATUSES, build, counts, save


def main() -> None:
    rows = build()
    path = save(rows)
    print(f"{len(rows)} rows -> {path}")
    for paper, c in counts(rows).items():
        print(f"  {paper:20s} " + ", ".join(f"{s} {c[s]}" for s in STATUSES))


if __name__ == "__main__":
    main()
