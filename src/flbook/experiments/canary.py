"""Re-verification of a result file by a *canary*: a cheap re-computation, with today's code, of
one recorded piece of the file, compared leaf by leaf with the numbers the file recorded.

A result file is stale as soon as library code its run could reach changes
(:func:`flbook.experiments.fingerprint.check_sources`), even when the change cannot alter its
numbers (a batched FedAvg path equal to the old loop up to float rounding). A canary re-runs one
piece of the file in a fresh process, as a point's worker does (:mod:`.points`: the recorded
scale, one torch thread), and compares what it returns with what the file recorded, within a
stated :class:`Tolerance`. :func:`verify` appends the outcome to the file's ``verifications``
list (the file's ``data`` is never touched), with the canary process's own library provenance.
``python -m flbook.experiments.reproduce`` (:func:`reverified`) then counts a file stale by a
code change as current while its latest verification agrees, covered every unit that changed
between the run and the verification, and is itself current by the same unit-by-unit rule (with
the canary's function as the entry): a code change after the verification makes it stale again.

Two kinds of canary:

* a file assembled from resumable points (``data.points_record``, its points under
  ``points/<file stem>/`` beside it): the recorded point of least CPU time is re-run
  (``fn(*args)``) and its data compared; the point's own file gets the verification too, so that
  :func:`flbook.experiments.points.load_point` reuses it;
* a command without points may register one in :data:`CANARIES`, keyed by its module under
  ``flbook.experiments``: a function ``(record) -> (fresh numbers, recorded numbers)``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flprivacy.config import SCALE_ENV, SCALES, SEED_ENV


@dataclass(frozen=True)
class Tolerance:
    """How far a re-computed number may be from the recorded one: ``|fresh - recorded| <= abs +
    rel * |recorded|`` (as ``math.isclose`` with both bounds summed)."""

    abs: float
    rel: float
    reason: str
    quantized: frozenset[str] = frozenset()
    """Keys under which integer leaves are quantised floats (an image's 0-255 pixel values): they
    may move by one unit, as a rounded float may cross a rounding boundary."""


DEFAULT_TOLERANCE = Tolerance(
    abs=1e-6, rel=1e-5,
    reason="float32 rounding (unit roundoff 6e-8) of a different summation order, e.g. a batched FedAvg "
           "path, propagated through a run's rounds and attack iterations with at most ~100x growth; a "
           "count or accuracy that moves by one sample (1/n >= 1e-5 for n <= 1e5) is a real difference")
"""The tolerance of a point canary, and of a registered one that states none."""


@dataclass(frozen=True)
class Comparison:
    """The leaf-by-leaf comparison of fresh numbers with recorded ones.

    Attributes:
        agrees: every leaf agrees (numbers within tolerance; strings, bools, ints, None equal;
            NaN equals NaN; same keys and lengths).
        max_abs: the largest absolute deviation of a floating-point leaf (0 when none).
        max_rel: the largest relative deviation, ``|fresh - recorded| / |recorded|`` (inf where the
            recorded number is 0 and the fresh one is not).
        leaves: how many leaves were compared.
        differing: how many numeric leaves differ at all (within tolerance or not).
        worst: the first leaf that disagrees, else the float leaf of largest deviation, as
            ``"path: fresh vs recorded"`` ('' when there is none).
    """

    agrees: bool
    max_abs: float
    max_rel: float
    leaves: int
    worst: str
    differing: int = 0


def compare(fresh: Any, recorded: Any, tol: Tolerance = DEFAULT_TOLERANCE) -> Comparison:
    """Compare two JSON values leaf by leaf (see :class:`Comparison`). Two ints (counts, labels,
    seeds) must be equal; an int against a float is compared as numbers; a bool only equals the
    same bool; dicts must have the same keys and lists the same length."""
    state = {"abs": 0.0, "rel": 0.0, "leaves": 0, "bad": "", "worst": "", "worst_excess": -1.0, "differing": 0}

    def bad(path: str, why: str) -> None:
        if not state["bad"]:
            state["bad"] = f"{path or '.'}: {why}"

    def walk(a: Any, b: Any, path: str, quantized: bool = False) -> None:
        if isinstance(b, dict) or isinstance(a, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)):
                return bad(path, f"{_short(a)} vs {_short(b)}")
            if set(a) != set(b):
                return bad(path, f"keys differ: missing {sorted(set(b) - set(a))}, extra {sorted(set(a) - set(b))}")
            for k in b:
                walk(a[k], b[k], f"{path}.{k}", quantized or k in tol.quantized)
            return
        if isinstance(b, list) or isinstance(a, list):
            if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
                return bad(path, f"{_short(a)} vs {_short(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{path}[{i}]", quantized)
            return
        state["leaves"] += 1
        if quantized and type(a) is int and type(b) is int:
            state["differing"] += a != b
            if abs(a - b) > 1:
                bad(path, f"{a!r} vs {b!r} (a quantised value may move by one unit)")
            return
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
                or not isinstance(b, (int, float)) or (type(a) is int and type(b) is int):
            if not (type(a) is type(b) and a == b):
                bad(path, f"{a!r} vs {b!r}")
            return
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
            if not (a == b or (math.isnan(a) and math.isnan(b))):
                bad(path, f"{a!r} vs {b!r}")
            return
        dev = abs(a - b)
        state["differing"] += dev > 0
        rel = dev / abs(b) if b != 0 else (0.0 if dev == 0 else math.inf)
        state["abs"], state["rel"] = max(state["abs"], dev), max(state["rel"], rel)
        allowed = tol.abs + tol.rel * abs(b)
        excess = dev / allowed if allowed > 0 else (0.0 if dev == 0 else math.inf)
        if excess > state["worst_excess"]:
            state["worst_excess"], state["worst"] = excess, f"{path or '.'}: {a!r} vs {b!r}"
        if not dev <= allowed:
            bad(path, f"{a!r} vs {b!r} (deviation {dev:.3g} > {allowed:.3g})")

    walk(fresh, recorded, "")
    return Comparison(agrees=not state["bad"], max_abs=state["abs"], max_rel=state["rel"], leaves=state["leaves"],
                      worst=state["bad"] or state["worst"], differing=state["differing"])


def _short(x: Any) -> str:
    text = json.dumps(x) if not isinstance(x, float) else repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Canary:
    """A registered canary of a command without points.

    Attributes:
        describe: what it re-computes, for the plan and the verification record.
        run: ``(record) -> (fresh numbers, recorded numbers)``, both JSON values; it runs in the
            canary's fresh process and re-computes one piece of ``record["data"]``.
        tolerance: how far the numbers may move.
    """

    describe: str
    run: Callable[[dict[str, Any]], tuple[Any, Any]]
    tolerance: Tolerance = DEFAULT_TOLERANCE


def _part2_toy_fig2(record: dict[str, Any]) -> tuple[Any, Any]:
    """Fig. 2's first configuration (seed, B, lr, reading of the first record; at paper scale seed
    0, B = 64, lr = 0.01, one θ* per client): both clients' records, re-run by ``part2_toy.run_one``."""
    from .part2_toy import run_one

    rows = record["data"]["records"]
    first = rows[0]
    config = (first["seed"], first["B"], first["lr"], first["reading"])
    recorded = [r for r in rows if (r["seed"], r["B"], r["lr"], r["reading"]) == config]
    return json.loads(json.dumps(run_one(*config))), recorded


TIMING_KEYS = frozenset({"seconds", "wall_seconds", "cpu_seconds", "wall_seconds_since_start", "seconds_per_iteration",
                         "seconds_per_iteration_min", "seconds_per_iteration_max", "threads", "workers"})
"""Keys of a result's data that record what a run cost or how it was spread over processes, not
what it computed: left out of a whole-command canary's comparison (any key ending in
``_seconds`` too)."""


def _computed(data: Any) -> Any:
    """``data`` without its :data:`TIMING_KEYS` (at any depth)."""
    if isinstance(data, dict):
        return {k: _computed(v) for k, v in data.items() if k not in TIMING_KEYS and not k.endswith("_seconds")}
    if isinstance(data, list):
        return [_computed(v) for v in data]
    return data


def _whole_command(module: str) -> Callable[[dict[str, Any]], tuple[Any, Any]]:
    """A canary that runs the record's command again, whole, in the canary's process (its
    ``__main__`` block, with the recorded arguments), catching what it saves under the record's
    name instead of writing it, and compares everything but timings (:data:`TIMING_KEYS`)."""

    def run(record: dict[str, Any]) -> tuple[Any, Any]:
        import importlib
        import runpy

        from .moves import rename_command, renames

        package = __package__ or "flbook.experiments"
        commands = importlib.import_module(package)  # where every command takes save_result from

        words = shlex.split(rename_command(str(record.get("command") or ""), renames()))
        args = words[words.index(f"{package}.{module}") + 1:]
        caught: dict[str, Any] = {}
        real = commands.save_result

        def catch(name: str, data: Any, *, seeds: Any, scale_: str | None = None) -> Path:
            caught[name] = json.loads(json.dumps(data))
            return Path(os.devnull)

        commands.save_result = catch
        argv = sys.argv
        try:
            sys.argv = [f"{package}.{module}", *args]
            sys.modules.pop(f"{package}.{module}", None)  # run as __main__ from its file, not an earlier import
            runpy.run_module(f"{package}.{module}", run_name="__main__", alter_sys=True)
        finally:
            commands.save_result, sys.argv = real, argv
        importlib.import_module(f"{package}.{module}")  # its file among the canary's recorded sources
        if record.get("name") not in caught:
            raise RuntimeError(f"canary: {package}.{module} {' '.join(args)} saved no result named {record.get('name')!r} "
                               f"(it saved {sorted(caught)})")
        return _computed(caught[record["name"]]), _computed(record["data"])

    return run


ROUNDED_TOLERANCE = Tolerance(
    abs=1.05e-4, rel=1e-5,
    reason="these commands record their numbers rounded to 4 decimals: a value that moves by float rounding (a "
           "different summation order, unit roundoff 6e-8 in float32, grown through an attack's iterations) can "
           "cross a rounding boundary and so move by one unit in the last recorded place, 1e-4 (plus 5e-6 for the "
           "binary representation of the decimals); two units, or a count moving by one, is a real difference; "
           "likewise a shown image's 0-255 pixel may move by one level",
    quantized=frozenset({"shown_reconstruction"}))
"""The tolerance of a whole-command canary of a command in :data:`ROUNDED`."""

ROUNDED = frozenset({"part4_architectures", "part4_factors"})
"""Whole commands that round what they record to 4 decimals (``round(x, 4)``); the others record
full floats and are compared at :data:`DEFAULT_TOLERANCE`."""


WHOLE_COMMANDS: dict[str, str] = {
    "part2_theorem1": "its records, all seeds (seconds)",
    "wilson_rog": "the ROG cases and the ablation check (about 90 s of CPU)",
    "wilson_fedinverse": "every case, GAN trained again (about 250 s of CPU at paper scale)",
    "part4_architectures": "the named models' points at the recorded iterations (30-600 s of CPU)",
    "awa_table3": "Table III's runs at the recorded scale (about 65 s of CPU at quick scale)",
    "diffusion_ablation": "every case and weight (about 650 s of CPU at paper scale)",
    "diffusion_diagnostics": "the prior and attack diagnostics (about 770 s of CPU at paper scale)",
    "part4_factors": "every factor case (about 1,100 s of wall time on 2 workers at paper scale)",
}
"""Commands whose canary is the whole command run again (:func:`_whole_command`): each one
computes every number of its file afresh when run as recorded (none reads its own earlier
output unless told to ``--resume``, and none keeps state such as an Optuna study between runs),
so re-running it is a complete re-verification; the value says what it recomputes and its cost."""


CANARIES: dict[str, Canary] = {
    "part2_toy": Canary("part2_toy.run_one of the file's first configuration (seed 0, B=64, lr=0.01, per-client: "
                        "300 FedAvg rounds, Alg. 3 and the AIA on both clients)", _part2_toy_fig2,
                        Tolerance(1e-6, 1e-5, "float64 throughout, so 1e-5 is loose for rounding: a least-squares "
                                  "reconstruction at cond(Θ_out) ~ 1e5 can amplify a 1e-16 change 1e5-fold "
                                  "(1e-11); an AIA accuracy moving by one of 1024 samples (1e-3) fails")),
    **{module: Canary(f"the whole command re-run: {what}", _whole_command(module),
                      ROUNDED_TOLERANCE if module in ROUNDED else DEFAULT_TOLERANCE)
       for module, what in WHOLE_COMMANDS.items()},
}
"""Registered canaries, keyed by the command's module under ``flbook.experiments``."""


def run_registered(module: str, record_path: str) -> dict[str, Any]:
    """The canary process's work for a registered canary: ``{"fresh": ..., "recorded": ...}``."""
    record = json.loads(Path(record_path).read_text())
    fresh, recorded = CANARIES[module].run(record)
    return {"fresh": fresh, "recorded": recorded}


def _src_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _module_of(record: dict[str, Any]) -> str | None:
    from .moves import rename_command, renames

    words = shlex.split(rename_command(str(record.get("command") or ""), renames()))  # as named now
    for a, b in zip(words, words[1:]):
        if a == "-m" and b.startswith("flbook.experiments."):
            return b.removeprefix("flbook.experiments.")
    return None


def _entry_of(fn: str) -> list[str]:
    """The ``[file, function]`` entry of a ``"package.module:function"``, as ``load_point`` reads it."""
    module, _, name = fn.partition(":")
    own = module.replace(".", "/")
    return [f"{own}/__init__.py" if (_src_root() / own).is_dir() else f"{own}.py", name]


@dataclass(frozen=True)
class Target:
    """What a canary of one result file runs.

    Attributes:
        canary: its description (``"point seed=0"`` or a registered canary's ``describe``).
        fn, args: what the fresh process calls, ``"package.module:function"`` and its arguments.
        entries: the ``[file, function]`` the canary's code starts from (for ``check_sources``).
        tolerance: how far the numbers may move.
        point_path: the point file re-run (None for a registered canary).
        recorded_cpu_seconds: the point's recorded CPU seconds (None for a registered canary).
    """

    canary: str
    fn: str
    args: list
    entries: list[list[str]]
    tolerance: Tolerance
    point_path: Path | None = None
    recorded_cpu_seconds: float | None = None


def _points_of(record_path: Path, record: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    """The point files a result file was assembled from: under ``points/<stem>/`` beside it, of
    its name and scale, made no later than the file and (where it lists them) at one of its
    points' commits."""
    pr = record.get("data", {}).get("points_record") if isinstance(record.get("data"), dict) else None
    if not isinstance(pr, dict):
        return []
    commits = set(pr.get("point_commits") or [])
    out = []
    for p in sorted((record_path.parent / "points" / record_path.stem).glob("*.json")):
        try:
            rec = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if (isinstance(rec, dict) and "data" in rec and rec.get("name") == record.get("name")
                and rec.get("scale") == record.get("scale") and str(rec.get("date")) <= str(record.get("date"))
                and (not commits or str(rec.get("commit"))[:12] in commits)
                and isinstance(rec.get("cpu_seconds"), (int, float))):
            out.append((p, rec))
    return out


def target(record_path: str | Path, record: dict[str, Any] | None = None) -> Target | None:
    """The canary of a result file (its cheapest point, else its command's registered canary), or
    None when it has none."""
    record_path = Path(record_path)
    record = json.loads(record_path.read_text()) if record is None else record
    pts = _points_of(record_path, record)
    if pts:
        path, rec = min(pts, key=lambda x: (x[1]["cpu_seconds"], x[0].name))
        return Target(f"point {rec['point']}", rec["fn"], list(rec.get("args") or []), [_entry_of(rec["fn"])],
                      DEFAULT_TOLERANCE, path, float(rec["cpu_seconds"]))
    module = _module_of(record)
    if module in CANARIES:
        fn = "flbook.experiments.canary:run_registered"
        from .fingerprint import MAIN_GUARD

        whole = [[f"flbook/experiments/{module}.py", MAIN_GUARD]] if module in WHOLE_COMMANDS else []
        return Target(CANARIES[module].describe, fn, [module, str(record_path.resolve())], [_entry_of(fn), *whole],
                      CANARIES[module].tolerance)
    return None


def _environment(record: dict[str, Any]) -> dict[str, str]:
    """The canary process's environment: the record's scale (and seed variable, as its command set
    them), one math thread, the library first on ``PYTHONPATH``."""
    from . import KEEP_FREED_MEMORY_ENV

    env = {k: v for k, v in os.environ.items() if k not in (SCALE_ENV, SEED_ENV)}
    for word in shlex.split(str(record.get("command") or "")):
        name, eq, value = word.partition("=")
        if not eq:
            break
        if name in (SCALE_ENV, SEED_ENV):
            env[name] = value
    if record.get("scale") in SCALES:
        env[SCALE_ENV] = record["scale"]
    env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **KEEP_FREED_MEMORY_ENV})
    env["PYTHONPATH"] = os.pathsep.join([str(_src_root()), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def _run_fresh(t: Target, record: dict[str, Any]) -> dict[str, Any]:
    """Run ``t.fn(*t.args)`` in a fresh process on one torch thread (``points._call``): its data,
    seconds and library provenance."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "canary.json"
        code = ("import json, sys; from flbook.experiments.points import _call; "
                "json.dump(_call(sys.argv[1], json.loads(sys.argv[2]), 1), open(sys.argv[3], 'w'))")
        proc = subprocess.run([sys.executable, "-c", code, t.fn, json.dumps(t.args), str(out)], env=_environment(record),
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.is_file():
            raise RuntimeError(f"canary {t.canary}: the fresh process failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        return json.loads(out.read_text())


def _reach(rels: Any, starts: list) -> set[tuple[str, str]] | None:
    """The units reachable from ``starts`` through today's files ``rels`` under the library root
    (:func:`~flbook.experiments.fingerprint.reachable_units`; None: everything)."""
    from .fingerprint import _parsed, _sha, reachable_units

    root = _src_root()
    files = {}
    for rel in rels:
        path = root / rel
        info = _parsed(str(path), _sha(path)) if path.is_file() else None
        if info is not None:
            files[rel] = (info[0], info[2])
    return reachable_units(files, [tuple(e) for e in starts], root)


def _canary_reach(units: dict[str, str], entries: list[list[str]]) -> set[tuple[str, str]] | None:
    """What a canary's process can reach from its ``entries`` through the files it imported
    (``units``), without the runner (points._call), whose look-up of the function by a computed
    name would make every identifier in the canary's strings reachable: it calls the canary's
    entry, nothing else."""
    return _reach([rel for rel in units if rel != "flbook/experiments/points.py"], entries)


def uncovered(record: dict[str, Any], sources: dict[str, str], units: dict[str, str],
              entries: list[list[str]], module: str | None = None) -> list[str]:
    """The units changed between a record's run and the code under the library root now that the
    run could reach but the canary (its process's ``sources``, ``units`` and ``entries``) cannot
    (:func:`~flbook.experiments.fingerprint.reachable_units`, both from today's code): a change
    the canary did not exercise, which its agreement says nothing about. ``module``: the record's
    command module (its ``__main__`` block is the run's entry, and its file is read at the record's
    commit when the record does not list it); without it the record is a point's, whose ``fn`` is
    the entry. A file changed without recorded units, or removed, counts as uncovered."""
    from .fingerprint import (
        MAIN_GUARD,
        _parsed,
        _sha,
        _unit_digests,
        decode_units,
    )

    root = _src_root()
    moved = _uncovered_modulo_moves(record, units, entries, module)
    if moved is not None:
        return moved
    rec_sources = dict(record.get("sources") or {})
    rec_units = dict(record.get("source_units") or {}) if isinstance(record.get("source_units"), dict) else {}
    out: list[str] = []
    if module is not None:
        own = f"flbook/experiments/{module}.py"
        if own not in rec_sources:
            from .moves import module_at_commit

            at = module_at_commit(str(record.get("commit") or ""), own)
            if at is None:
                out.append(f"{own} (not in the record, and its commit does not give it)")
            else:
                rec_sources[own] = at[0]
                if at[1] is not None:
                    rec_units[own] = at[1]
    reach = _canary_reach(units, entries)
    run_entries = ([[f"flbook/experiments/{module}.py", MAIN_GUARD]] if module is not None else
                   [_entry_of(str(record.get("fn")))] if ":" in str(record.get("fn")) else [])
    run_reach = _reach(rec_sources, run_entries)
    for rel, sha in rec_sources.items():
        path = root / rel
        if not path.is_file():
            out.append(f"{rel} (removed)")
            continue
        now = _sha(path)
        if not isinstance(rec_units.get(rel), str) or _parsed(str(path), now) is None:
            if now != sha:
                out.append(f"{rel} (changed, without units to compare)")
            continue
        digests = _unit_digests(str(path), now)
        for name, digest in decode_units(rec_units[rel])[0].items():
            if (digests.get(name) != digest and name != "__all__" and (run_reach is None or (rel, name) in run_reach)
                    and reach is not None and (rel, name) not in reach):
                out.append(f"{rel}:{name}")
    return out


def _run_entries(record: dict[str, Any], module: str | None) -> tuple[list[tuple[str, str]], tuple[str, str] | None] | None:
    """The entries of a record's run *as the run named them* (its command's own file and
    ``__main__`` block, or its point's function), with the own file's ``(path, hash)`` where the
    record does not list it; None when they cannot be known."""
    from .fingerprint import MAIN_GUARD
    from .moves import command_own_file, own_file_at_commit

    if module is None:
        fn = str(record.get("fn") or "")
        if ":" not in fn:
            return None
        dotted, _, name = fn.partition(":")
        own = dotted.replace(".", "/")
        sources = record.get("sources") or {}
        return [(f"{own}/__init__.py" if f"{own}/__init__.py" in sources else f"{own}.py", name)], None
    named = command_own_file(record)
    if named is None:
        return None
    own = named[0]
    if own in (record.get("sources") or {}):
        return [(own, MAIN_GUARD)], None
    at = own_file_at_commit(record, own)
    return None if at is None else ([(own, MAIN_GUARD)], (own, at[0]))


def _uncovered_modulo_moves(record: dict[str, Any], units: dict[str, str], entries: list[list[str]],
                            module: str | None) -> list[str] | None:
    """:func:`uncovered` by the rule of :mod:`.moves`: every difference between the run's code
    (at its commit, from its entries as it named them) and today's code modulo the rename map,
    less those at a unit the canary's process reaches today. A moved file is therefore judged
    where it lives now, not counted as removed. None when git cannot give the run's code (the
    caller then compares file by file)."""
    from .moves import moved_differences

    run = _run_entries(record, module)
    if run is None:
        return None
    found = moved_differences(record, run[0], run[1])
    if found is None:
        return None
    root = _src_root()
    reach = _canary_reach(units, entries)
    out = []
    for where, why in found:
        if where is None:
            out.append(why)
            continue
        own = where[0].replace(".", "/")
        rel = f"{own}/__init__.py" if (root / own).is_dir() else f"{own}.py"
        if reach is not None and (rel, where[1]) not in reach:
            out.append(f"{rel}:{where[1]} ({why})")
    return out


@dataclass(frozen=True)
class Verification:
    """What :func:`verify` did: the result file, the canary's target, its comparison, the seconds
    of its fresh process, the units it could not speak for, and the entry written to the file."""

    path: Path
    target: Target
    comparison: Comparison
    seconds: float
    uncovered: list[str] = field(default_factory=list)
    entry: dict[str, Any] = field(default_factory=dict)

    @property
    def agrees(self) -> bool:
        return self.comparison.agrees


def _append(path: Path, entry: dict[str, Any]) -> None:
    """Append ``entry`` to the file's ``verifications`` (written whole, atomically; ``data`` untouched)."""
    rec = json.loads(path.read_text())
    rec["verifications"] = [*(rec.get("verifications") or []), entry]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    os.replace(tmp, path)


def verify(record_path: str | Path, module: str | None = None) -> Verification:
    """Run the canary of a result file (:func:`target`) and record the outcome in its
    ``verifications`` (and, for a point canary, in the point's file): the date, the commit, the
    canary, the fresh process's ``sources``, ``source_units`` and ``entries``, ``fn`` and ``args``,
    seconds, the largest absolute and relative deviations, the tolerance and its reason,
    ``agrees`` (false with the ``worst`` leaf when a number moved beyond tolerance) and the units
    it does not cover (:func:`uncovered`).

    Raises:
        ValueError: when the file has no canary.
    """
    from . import git_commit

    record_path = Path(record_path)
    record = json.loads(record_path.read_text())
    t = target(record_path, record)
    if t is None:
        raise ValueError(f"{record_path.name}: no canary (neither points nor a registered canary of its command)")
    wall = time.perf_counter()
    got = _run_fresh(t, record)
    seconds = round(time.perf_counter() - wall, 1)
    if t.point_path is not None:
        point = json.loads(t.point_path.read_text())
        fresh, recorded = got["data"], point["data"]
    else:
        point, (fresh, recorded) = None, (got["data"]["fresh"], got["data"]["recorded"])
    cmp = compare(fresh, recorded, t.tolerance)
    missed = uncovered(record, got["sources"], got["source_units"], t.entries, module or _module_of(record))
    entry = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "commit": git_commit(),
             "canary": t.canary, "fn": t.fn, "args": t.args, "entries": t.entries,
             "seconds": seconds, "cpu_seconds": got["cpu_seconds"], "leaves": cmp.leaves,
             "leaves_differing": cmp.differing,
             "max_abs_deviation": cmp.max_abs, "max_rel_deviation": cmp.max_rel,
             "tolerance": {"abs": t.tolerance.abs, "rel": t.tolerance.rel, "reason": t.tolerance.reason,
                           **({"quantized": sorted(t.tolerance.quantized)} if t.tolerance.quantized else {})},
             "agrees": cmp.agrees, "worst": cmp.worst, "uncovered": missed,
             "sources": got["sources"], "source_units": got["source_units"]}
    _append(record_path, entry)
    if point is not None:
        _append(t.point_path, {**entry, "uncovered": uncovered(point, got["sources"], got["source_units"], t.entries)})
    return Verification(record_path, t, cmp, seconds, missed, entry)


def reverified(record: dict[str, Any], why: str) -> tuple[bool, str]:
    """``(current, why)`` for a record whose own provenance says stale because code changed
    (``why``): current when its latest verification agrees, covers every changed unit, and is
    itself current (its ``sources`` and ``source_units`` unchanged by ``check_sources`` from its
    ``entries``); else stale with ``why``. Used by ``reproduce.record_status`` and
    ``points.load_point``."""
    from .fingerprint import check_sources

    ver = record.get("verifications")
    last = ver[-1] if isinstance(ver, list) and ver and isinstance(ver[-1], dict) else None
    if last is None:
        return False, why
    if last.get("agrees") is not True:
        return False, f"{why} (its canary of {str(last.get('date'))[:10]} disagrees: {last.get('worst')})"
    if last.get("uncovered"):
        return False, f"{why} (its canary does not reach {last['uncovered'][0]})"
    if not isinstance(last.get("sources"), dict) or not isinstance(last.get("entries"), list):
        return False, why
    units = last.get("source_units") if isinstance(last.get("source_units"), dict) else None
    same, changed = check_sources(last["sources"], units, _src_root(),
                                  [tuple(e) for e in last["entries"]] if units is not None else None)
    if not same:
        from .moves import moved_status

        if not moved_status(last, [tuple(e) for e in last["entries"]])[0]:  # moved since, it stays current
            return False, f"{why} (its re-verification of {str(last.get('date'))[:10]} is stale too: {changed})"
    tol = last.get("tolerance") or {}
    return True, (f"current (re-verified {str(last.get('date'))[:10]} by {last.get('canary')}: max rel. dev. "
                  f"{last.get('max_rel_deviation', 0):.1g}, max abs. dev. {last.get('max_abs_deviation', 0):.1g}, "
                  f"within rel. {tol.get('rel')} + abs. {tol.get('abs')})")


def still_current(record: dict[str, Any], entries: list[tuple[str, str]], why: str,
                  own: tuple[str, str] | None = None) -> tuple[bool, str]:
    """A record the plain unit rule found changed (``why``) is still current when its code only
    moved (:func:`~flbook.experiments.moves.moved_status`, with ``own`` the command's own file and
    hash) or a canary re-verified it since (:func:`reverified`); else stale, with the more precise
    of the two reasons. ``reproduce.record_status`` and ``points.load_point`` both ask this."""
    from .moves import moved_status

    moved, moved_why = moved_status(record, entries, own)
    if moved:
        return True, "current (its code has moved since the run; judged where it lives now)"
    return reverified(record, moved_why or why)
