"""Inject plausible bugs into the library one at a time and count how many the tests catch.

Each mutant is a one-place edit of an equation's constant, sign, normalisation or step
(``tests/mutants/*.py`` list them, with the paper equation each one breaks). For every mutant
the file is edited, the given test command runs, and the file is restored; a mutant is
*caught* when the command fails. Usage::

    python tools/mutation.py tests/mutants/part2.py -- python -m pytest -x -q -p no:cacheprovider tests/test_reconstruction.py
    python tools/mutation.py tests/mutants/*.py --json mutation.json   # each file's own TESTS command

A mutants file defines ``MUTANTS = [Mutant(...), ...]`` and optionally ``TESTS`` (the default
command, a list of arguments run from the repository root; usually ``pytest_command(test files)``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # mutant files import `tools.mutation` when this runs as `python tools/mutation.py`
    sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class Mutant:
    """One injected bug: replace ``old`` by ``new`` (``old`` must occur exactly once) in ``file``."""

    name: str
    file: str  # relative to the repository root
    old: str
    new: str
    why: str = ""  # the equation or step it breaks


def pytest_command(*args: str) -> list[str]:
    """The command a mutants file's ``TESTS`` usually is: this Python's pytest on ``args`` (test
    files, ``-k`` expressions), stopping at the first failure, without the suite's ``addopts`` (no
    test workers, no notebooks) and without pytest's cache."""
    return [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *args]


def load(path: Path) -> tuple[list[Mutant], list[str] | None]:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return list(mod.MUTANTS), getattr(mod, "TESTS", None)


def with_this_python(cmd: list[str]) -> list[str]:
    """The command with its interpreter replaced by the one running this tool (``sys.executable``):
    a first element naming a Python (``.../python``, ``python3``, ``python3.11``) is swapped, so that
    mutant files never depend on one checkout's virtual environment."""
    first = Path(cmd[0]).name
    if first == "python" or (first.startswith("python") and first[6:].replace(".", "").isdigit()):
        return [sys.executable, *cmd[1:]]
    return list(cmd)


def run_one(m: Mutant, cmd: list[str], timeout: float) -> dict:
    f = ROOT / m.file
    src = f.read_text()
    if src.count(m.old) != 1:
        raise SystemExit(f"mutant {m.name!r}: the text to replace occurs {src.count(m.old)} times in {m.file}, expected once")
    t0 = time.perf_counter()
    try:
        f.write_text(src.replace(m.old, m.new))
        try:
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
            caught, tail = r.returncode != 0, (r.stdout + r.stderr)[-400:]
        except subprocess.TimeoutExpired:
            caught, tail = True, "timed out (counted as caught)"
    finally:
        f.write_text(src)
    return {**asdict(m), "caught": caught, "seconds": round(time.perf_counter() - t0, 1), "tail": tail}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cmd_override = None
    if "--" in argv:
        i = argv.index("--")
        argv, cmd_override = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mutants", nargs="+", type=Path, help="files defining MUTANTS (and TESTS)")
    p.add_argument("--only", nargs="*", help="names of the mutants to run (default all)")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--json", type=Path, help="write the per-mutant report here")
    args = p.parse_args(argv)
    rows = []
    for path in args.mutants:
        mutants, tests = load(path)
        cmd = cmd_override or tests
        if not cmd:
            raise SystemExit(f"{path}: no TESTS command in the file and none after `--`")
        cmd = with_this_python(cmd)
        for m in mutants:
            if args.only and m.name not in args.only:
                continue
            row = run_one(m, cmd, args.timeout)
            rows.append(row)
            print(f"{'caught  ' if row['caught'] else 'SURVIVED'} {m.name:40s} {row['seconds']:7.1f} s  {m.why}", flush=True)
    caught = sum(r["caught"] for r in rows)
    print(f"\n{caught}/{len(rows)} mutants caught ({100 * caught / max(len(rows), 1):.0f}%)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
