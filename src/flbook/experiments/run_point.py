"""Compute one point of a resumable command by hand, e.g. on a second machine or beside the
command while it runs its other points (:mod:`flbook.experiments.points`).

    FLPRIVACY_SCALE=paper python -m flbook.experiments.run_point part3_table3_income_a_synthetic seed=2 \\
        flbook.experiments.part3_points:table3_seed '["Income-A", "synthetic", 2, 7000000.0]'

The point is written where the command looks for it (``book/results/points/<result>/<key>.json``),
with this command line in its provenance, and the command reuses it when its own point of that
key has the same function, arguments, scale and library code (:func:`~flbook.experiments.points.load_point`).
A command decides which points to run when it starts, so restart it (it then finds the point)
rather than let it compute the same point twice.
"""

from __future__ import annotations

import argparse
import json

from . import add_threads_option, use_threads
from .points import Point, run_points


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("result", help="the result file's stem, e.g. part3_table3_income_a_synthetic")
    p.add_argument("key", help="the point's key, e.g. seed=2")
    p.add_argument("fn", help="'package.module:function' that computes it")
    p.add_argument("args", help="its positional arguments as a JSON list")
    add_threads_option(p)
    a = p.parse_args(argv)
    use_threads(a)
    try:
        args = json.loads(a.args)
    except json.JSONDecodeError as err:
        raise SystemExit(f"run_point: args must be a JSON list, e.g. '[\"Income-A\", 2]'; got {a.args!r} ({err}).")
    if not isinstance(args, list):
        raise SystemExit(f"run_point: args must be a JSON list, got {type(args).__name__}: {a.args!r}.")
    return run_points(a.result, [Point(a.key, a.fn, tuple(args))], jobs=1)[a.key]


if __name__ == "__main__":
    main()
