"""``python -m flbook.ledger``: rebuild ``book/results/ledger.json`` from the result files and
print the counts by section, paper and status (the headline, ``paper``, first)."""

from __future__ import annotations

from . import STATUSES
from .referee import SECTIONS, build, save, tally


def main() -> None:
    entries = build()
    path = save(entries)
    print(f"{len(entries)} rows -> {path}")
    for section in SECTIONS:
        print(f" {section}:")
        for paper, c in tally(entries, section=section).items():
            print(f"  {paper:20s} " + ", ".join(f"{s} {c[s]}" for s in STATUSES))


if __name__ == "__main__":
    main()
