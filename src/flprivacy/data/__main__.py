"""Command line: ``python -m flprivacy.data {where,status,fetch,fetch-acs}``."""

from __future__ import annotations

import argparse

from .files import REGISTRY, DataNotFoundError, data_dir, fetch
from .tabular import acs_person_file, fetch_acs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flprivacy.data", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("where", help="print the data directory")
    sub.add_parser("status", help="list registered files and whether they are present")
    f = sub.add_parser("fetch", help="download registered files (all when none named)")
    f.add_argument("files", nargs="*", help=f"relative paths, e.g. {next(iter(REGISTRY))}")
    a = sub.add_parser("fetch-acs", help="download ACS PUMS person files through folktables")
    a.add_argument("--states", nargs="+", default=["LA"])
    a.add_argument("--year", type=int, default=2018)
    a.add_argument("--horizon", default="1-Year")
    args = parser.parse_args(argv)

    if args.cmd == "where":
        print(data_dir())
    elif args.cmd == "status":
        root = data_dir()
        print(f"data directory: {root}")
        for path in REGISTRY:
            print(f"  {'present' if (root / path).is_file() else 'missing':8s} {path}")
    elif args.cmd == "fetch":
        failed = 0
        for path in args.files or list(REGISTRY):
            try:
                print(f"ok       {fetch(path)}")
            except DataNotFoundError as e:
                failed += 1
                print(f"missing  {e}")
        return 1 if failed else 0
    elif args.cmd == "fetch-acs":
        fetch_acs(args.states, args.year, args.horizon)
        missing = [s for s in args.states if not acs_person_file(s, args.year, args.horizon).is_file()]
        if missing:
            print(f"could not download ACS files for {missing}")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
