"""Every paper-scale result of Diana et al. 2025 and Xu & Neglia 2021, by one resumable command.

    python -m flbook.experiments.reproduce                 # run what is missing or stale
    python -m flbook.experiments.reproduce --dry-run       # the plan: what would run, and why
    python -m flbook.experiments.reproduce --jobs 2        # two commands at a time
    python -m flbook.experiments.reproduce --only part3_fig3_heterogeneity_synthetic --inner-jobs 2
                                                              # one sweep's runs on two cores (same numbers)
    python -m flbook.experiments.reproduce --only part3_table1_medical part2_toy_fig2

(``make reproduce`` runs the first.) The plan (:data:`PLAN`) lists one committed experiment
command per result file, with the paper's settings (``FLPRIVACY_SCALE=paper``) and 3 seeds where
the paper averages runs: every file that the ledger's Diana et al. and Xu & Neglia rows or their
chapters read, the controlled experiments among them. A few are not paper-scale files: the
App. C.1 subset benchmark (scale-independent, ``fixed``) and the quick-scale LEAF files that
Part II's chapter reads (``_quick``; the same computation at either scale, three seeds). A command is **skipped** when its result file is current: the file
records exactly the planned command, and the library's sources (``src/``) at the commit it
records are those of the working tree now (so a change to a chapter or a README does not
invalidate anything, a change to the library does); a file that records the hashes of the
library files its run imported (``sources``, every file written since they were recorded) is
current while those files are unchanged, so a change to the image attacks does not invalidate
Part II. A file that also records each of those files' top-level units (``source_units``: one
hash per function, class, import and assignment, without docstrings, comments and layout, and
one for the remaining top-level statements) is judged unit by unit: it stays current while every
recorded unit keeps its hash and its order, and every unit added since only binds a new name
that the recorded code never refers to (a docstring edit or a new function leaves it current; a
changed function body, default argument, constant or import, or a removed function, makes it
stale; the rule and its limits are in ``flbook.experiments.fingerprint``). The command's own
module runs as ``__main__``, so it is not among the imports a record lists: it is read at the
record's commit (:func:`.moves.module_at_commit`) and judged the same way, and a record whose commit is
unknown or "+dirty" is stale (an edit to an experiment's own settings or ``main`` reruns it). Every other
command runs, each in its own process on one torch thread, ``--jobs`` at a time, with glibc's
allocator keeping freed memory (:data:`~flbook.experiments.KEEP_FREED_MEMORY_ENV`: the
gradient-based AIA's large products are then not mapped and zero-filled afresh at every iteration;
the numbers do not change, and ``python -m flbook.experiments.bench_part3_allocator`` measures
the time saved side by side); a command that fails is reported and the
others go on; each command's output goes to ``_build/reproduce-logs/<result>.log`` (follow a
long one with ``tail -f``). Interrupt it at any time (Ctrl-C, or ``kill`` of this process): the
running commands are stopped, finished files stay, and the next call resumes.

The run's own record, ``book/results/reproduce.json`` (written after every finished command, and
by a call with nothing left to run), holds this call's commands (skipped, ran, failed, stopped)
with their wall times, and where the whole plan stands (:func:`plan_record`): which files are
current, and the sum of the one-core times their records give, i.e. the cost of an end-to-end
run made across sessions.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from flprivacy.config import SCALE_ENV, project_root
from . import KEEP_FREED_MEMORY_ENV, git_commit, positive_int, result_path, save_result
from .moves import command_own_file, known_commit as _known_commit, own_file_at_commit


@dataclass(frozen=True)
class Job:
    """One committed command and the paper-scale result file it writes."""

    result: str  # file stem in book/results
    module: str  # flbook.experiments.<module>
    args: tuple[str, ...] = ()
    paper: str = ""  # which paper result it holds
    estimate_min: float = 0.0  # one core's minutes, measured or extrapolated (0: unknown)
    splits: bool = False  # the command takes --jobs N itself (independent runs in N processes, same numbers)
    scale: str = "paper"  # the file's scale: "paper", "quick" (a ``_quick`` file) or "fixed" (scale-independent)

    def __post_init__(self):
        if self.scale not in ("paper", "quick", "fixed"):
            raise ValueError(f"Job {self.result}: scale must be 'paper', 'quick' or 'fixed'; got {self.scale!r}.")

    @property
    def file(self) -> str:
        """The result file's stem in book/results (``<result>_quick`` at quick scale)."""
        return result_path(self.result, self.scale).stem

    @property
    def command(self) -> str:
        """The command as :func:`flbook.experiments.run_command` records it (a ``fixed`` job
        runs without the scale variable, as its file records)."""
        env = [] if self.scale == "fixed" else [f"{SCALE_ENV}={self.scale}"]
        return " ".join([*env, "python", "-m", f"flbook.experiments.{self.module}", *map(shlex.quote, self.args)])


SEEDS = ("--seeds", "0", "1", "2")

PLAN: tuple[Job, ...] = (
    Job("part2_toy_fig2", "part2_toy", (), "Diana Fig. 2 (toy least squares, 5 seeds)"),
    Job("part2_theorem1", "part2_theorem1", (), "Diana Thm. 1 (error vs n_c, B, η)"),
    Job("part2_leaf_table1", "part2_leaf", (), "Xu & Neglia Table 1 (LEAF, 10 runs), the control reading"),
    Job("part2_leaf_table1_paper_reading", "part2_leaf", ("--reading", "paper"),
        "Xu & Neglia Table 1 as the paper reads it (one logit, reference labels, the screened draw; the "
        "paper's 10 runs; resumable, one point per seed)", 2),
    Job("part2_adult_fig1", "part2_adult", (), "Xu & Neglia Fig. 1 (Adult)"),
    Job("part2_leaf_table1", "part2_leaf", ("--seeds", "3"), "Xu & Neglia Table 1, argmax labels (chapter's rule "
        "comparison)", 0.4, scale="quick"),
    Job("part2_leaf_table1_reference", "part2_leaf", ("--labels", "leaf-reference", "--seeds", "3"),
        "Xu & Neglia Table 1, LEAF reference labels (chapter's rule comparison)", 0.4, scale="quick"),
    Job("part2_leaf_diagnostics", "part2_leaf_diagnostics", ("--seeds", "10"),
        "Xu & Neglia Table 1 controlled experiments (one change at a time; 10 training seeds)", 30, scale="quick"),
    Job("part2_leaf_diagnostics_draws", "part2_leaf_diagnostics", ("--study", "draws", "--seeds", "10"),
        "Xu & Neglia Table 1 data-draw study (fresh, fixed and ten screened draws; 10 training seeds)", 40,
        scale="quick"),
    Job("part2_leaf_diagnostics_draws_reference", "part2_leaf_diagnostics",
        ("--study", "draws", "--labels", "leaf-reference", "--seeds", "10"),
        "Xu & Neglia Table 1 data-draw study with LEAF's reference labels", 40, scale="quick"),
    Job("part2_subset_benchmark", "part2_subset_benchmark", ("--subsets", "10000000"),
        "Diana App. C.1 (messages chosen to minimise cond(Θ_out), 10^7 random subsets)", 25, scale="fixed"),
    Job("part3_table1_medical", "part3_table1", ("--task", "Medical", *SEEDS), "Diana Table 1 Medical", 15),
    Job("part3_table1_income_l_synthetic", "part3_table1", ("--task", "Income-L", "--source", "synthetic", *SEEDS),
        "Diana Table 1 Income-L (synthetic census)", 45),
    Job("part3_table1_income_a_synthetic", "part3_table1", ("--task", "Income-A", "--source", "synthetic", *SEEDS),
        "Diana Table 1 Income-A (synthetic census)"),
    Job("part3_table2_medical", "part3_table2", ("--task", "Medical", *SEEDS), "Diana Table 2 Medical"),
    Job("part3_table2_income_l_synthetic", "part3_table2", ("--task", "Income-L", "--source", "synthetic", *SEEDS),
        "Diana Table 2 Income-L (synthetic census)", 39),
    Job("part3_table2_income_a_synthetic", "part3_table2", ("--task", "Income-A", "--source", "synthetic", *SEEDS),
        "Diana Table 2 Income-A (synthetic census)"),
    Job("part3_table3_medical", "part3_table3", ("--task", "Medical", *SEEDS), "Diana Table 3 Medical"),
    Job("part3_table3_income_l_synthetic", "part3_table3", ("--task", "Income-L", "--source", "synthetic", *SEEDS),
        "Diana Table 3 Income-L (synthetic census)"),
    # resumable point by point (part3_points: a clipping-norm search, then one point per seed; about
    # 35 min + 3 x 40 min of one core, measured 2026-11-27 on two busy cores)
    Job("part3_table3_income_a_synthetic", "part3_points",
        ("table3", "--task", "Income-A", "--source", "synthetic", *SEEDS),
        "Diana Table 3 Income-A (synthetic census)", 155, splits=True),
    Job("part3_table3_controls", "part3_table3_controls", SEEDS, "Diana Table 3 controlled experiments (App. C.4, "
        "Medical under DP-SGD)", 7),
    Job("part3_table3_controls_grad", "part3_table3_controls", (*SEEDS, "--grad-stopping"),
        "Diana Table 3 controls: Grad with and without early stopping", 20),
    Job("part3_table3_controls_grad_authors", "part3_table3_controls", (*SEEDS, "--grad-authors"),
        "Diana Table 3 controls: Grad and Grad-w-O the authors' way (all iterations, their statistic)", 8),
    Job("part3_table3_controls_relaxation", "part3_table3_controls", (*SEEDS, "--grad-relaxation"),
        "Diana Table 3 controls: Grad under our relaxation and sampler and the authors'", 20),
    Job("part3_table3_controls_oracle", "part3_table3_controls", (*SEEDS, "--dp-oracle"),
        "Diana Table 3 controls: Model-w-O ours, the authors' oracle, the authors' oracle under the federation's DP", 3),
    Job("part3_table3_controls_oracle_income_l_synthetic", "part3_table3_controls",
        (*SEEDS, "--dp-oracle", "--task", "Income-L"),
        "Diana Table 3 controls: Model-w-O three ways on Income-L (synthetic census)", 20),
    Job("part3_table1_controls", "part3_table1_controls", SEEDS, "Diana Table 1 controlled experiments (Alg. 4 on "
        "Income-L: Adam tuned per client or for all, 10-200 attack rounds; the authors' oracle)", 45),
    Job("part3_table1_controls_medical", "part3_table1_controls", ("--task", "Medical", *SEEDS),
        "Diana Table 1 controlled experiments on Medical (the two oracles against the paper's Model-w-O)", 10),
    Job("part3_fig1", "part3_fig1", SEEDS, "Diana Fig. 1"),
    *(Job(f"part3_fig3_{f}_synthetic", "part3_fig3", ("--factor", f, *SEEDS), f"Diana {label}", est, splits=True)
      # heterogeneity: 18 runs of about 10.5 min each (measured 2026-11-26 under the authors' relaxation)
      for f, label, est in (("heterogeneity", "Fig. 3 left", 190), ("epochs", "Fig. 3 right", 59),
                            ("start_round", "App. C.2", 81), ("active_rounds", "App. C.3", 25))),
    # the same sweep resumable point by point (part3_points), since it outlasts a session: 18 runs
    # (the other panels keep part3_fig3's command, which made their current files)
    Job("part3_fig3_batch_size_synthetic", "part3_points", ("fig3", "--factor", "batch_size", *SEEDS),
        "Diana Fig. 3 centre", 190, splits=True),
    Job("part3_fig4_synthetic", "part3_fig4", SEEDS, "Diana Fig. 4 (smaller clients leak more; Income-A synthetic)",
        48),
    # the gradient-based rows of Fig. 4, resumable seed by seed (49 min of one core per seed, measured 2026-11-28)
    Job("part3_fig4_grad_synthetic", "part3_fig4_grad", SEEDS,
        "Diana Fig. 4 with Grad and Grad-w-O (Income-A synthetic)", 120, splits=True),
    # Fig. 4's clients of more than 20,000 rows: the census at the paper's size (1,664,500 people),
    # Grad on the large clients only, resumable point by point (seed, client, phase). Measured
    # 2026-11-28: training 600 s per point; California's passive phase 100 s per attack
    # iteration, her active phase 55 s (Texas: x0.72, her rows). At most (every configuration to
    # its 100 iterations) 8.1 h of one core per seed; early stopping may end sooner.
    Job("part3_fig4_large_synthetic", "part3_fig4_large", ("--seeds", "0", "1"),
        "Diana Fig. 4, Grad on clients over 20,000 rows (Income-A synthetic at ACS size)", 970, splits=True),
)
"""The paper-scale commands, in the order they run (cheap and central results first)."""


def _git(*args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=project_root(), capture_output=True, text=text, timeout=30)


def library_unchanged_since(commit: str) -> bool:
    """True when ``src/`` at ``commit`` equals ``src/`` of the working tree (a "+dirty" or unknown
    commit never does: its sources are not known)."""
    if not _known_commit(commit):
        return False
    try:
        return _git("diff", "--quiet", commit, "--", "src").returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def sources_unchanged(sources: dict[str, str], units: dict[str, dict[str, str]] | None = None,
                      entries: list[tuple[str, str]] | None = None) -> tuple[bool, str]:
    """``(unchanged, what changed)``: is the library code a run imported (its record's ``sources``
    and ``source_units``, :func:`flbook.experiments.library_sources`) still the code of the
    working tree? A file with recorded units is compared unit by unit (``check_sources`` of
    ``flbook.experiments.fingerprint``), e.g. ``"flprivacy/optimum.py:tuned_local_models
    changed since the run"``; a file without (a record written before units were recorded, or a
    file that did not parse) by its whole-file hash, e.g. ``"flprivacy/optimum.py changed since the
    run"``. With ``entries`` (the command's ``__main__`` block), a changed function the run
    cannot reach from them does not count (``fingerprint.reachable_units``)."""
    from .fingerprint import check_sources

    return check_sources(sources, units, Path(__file__).resolve().parents[2], entries)


def _split_jobs(command: str) -> tuple[list[str], int]:
    """A command's words without its ``--jobs N`` option (``--jobs N`` or ``--jobs=N``), and N (1 without
    a positive integer there): how many processes ran its points at once."""
    out, values = [], []
    words = iter(shlex.split(command))
    for w in words:
        if w == "--jobs":
            values.append(next(words, ""))
        elif w.startswith("--jobs="):
            values.append(w.removeprefix("--jobs="))
        else:
            out.append(w)
    return out, next((int(v) for v in values if v.isdigit() and int(v) > 0), 1)


def _without_jobs(command: str) -> str:
    """A command without its ``--jobs N`` option, which changes the wall time, not the numbers."""
    return " ".join(_split_jobs(command)[0])


def status(job: Job) -> tuple[bool, str]:
    """``(current, why)`` for a planned job: is its result file current (see the module docstring)?"""
    import json

    path = result_path(job.result, job.scale)
    if not path.is_file():
        return False, "no result file"
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError:
        return False, "result file is not valid JSON"
    from .moves import rename_command, renames

    if _without_jobs(rename_command(str(record.get("command")), renames())) != _without_jobs(job.command):
        return False, f"file made by another command: {record.get('command')!r}"
    return record_status(record, job.module)


def record_status(record: dict[str, Any], module: str | None = None) -> tuple[bool, str]:
    """``(current, why)`` for any result record, planned or not: is the library code its run
    imported still the code of the working tree, by :func:`status`'s rule (the command's
    ``__main__`` block as the entry)? ``module`` is the command's module under
    ``flbook.experiments`` (default: read from the record's command). Pages use it to flag a
    committed file whose code has changed since it was made (e.g. a GPU run no session can
    repeat)."""
    named = command_own_file(record)
    if named is None:
        return False, f"the record's command {record.get('command')!r} names no flbook.experiments module"
    own, module = named[0], module or named[1]
    if isinstance(record.get("sources"), dict) and record["sources"]:
        sources = dict(record["sources"])
        units = dict(record["source_units"]) if isinstance(record.get("source_units"), dict) else None
        at_commit = None
        if own not in sources:  # run as __main__, the command's own module is not among the imports it recorded
            at_commit = own_file_at_commit(record, own)
            if at_commit is None:
                return False, (f"{own} is not in the record and its commit {str(record.get('commit'))[:12]!r} does "
                               "not give it (unknown or uncommitted changes)")
            sources[own] = at_commit[0]
            if units is not None and at_commit[1] is not None:
                units[own] = at_commit[1]
        from .fingerprint import MAIN_GUARD  # the own module's ``if __name__ == "__main__":`` block, what it ran

        entries = [(own, MAIN_GUARD)] if units is not None else None
        same, changed = sources_unchanged(sources, units, entries)
        if same:
            return True, "current"
        from .canary import still_current  # moved since, or re-verified by a canary

        return still_current(record, [(own, MAIN_GUARD)], changed, None if at_commit is None else (own, at_commit[0]))
    if not library_unchanged_since(str(record.get("commit") or "")):
        return False, f"library changed since the file's commit {str(record.get('commit'))[:12]!r}"
    return True, "current"


def _record_of(job: Job) -> dict[str, Any]:
    """The job's result file as loaded, or {} when it is missing or unreadable."""
    import json

    try:
        rec = json.loads(result_path(job.result, job.scale).read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return rec if isinstance(rec, dict) else {}


def _runtime_of(rec: dict[str, Any]) -> float | None:
    data = rec.get("data")
    points = data.get("points_record") if isinstance(data, dict) else None
    if isinstance(points, dict) and isinstance(points.get("one_core_seconds"), (int, float)):
        return float(points["one_core_seconds"])  # a file assembled from points: their CPU seconds, all sessions
    runtime = rec.get("runtime")
    seconds = runtime.get("wall_seconds") if isinstance(runtime, dict) else None
    if not isinstance(seconds, (int, float)):
        return None
    return float(seconds) * _split_jobs(str(rec.get("command", "")))[1]


def recorded_runtime(job: Job) -> float | None:
    """The one-core seconds of the job's run as its result file records them: for a file assembled
    from resumable points (:mod:`.points`), their summed CPU seconds (``points_record``); else the wall seconds
    (``runtime.wall_seconds``) times the processes its command ran at once (``--jobs N``, 1 without),
    since a command split over N cores records N cores' work in one wall time (Fig. 3's heterogeneity
    sweep at ``--jobs 2``: 5,154 s of wall time, 10,277 s in its points). None when the file or the
    field is missing."""
    return _runtime_of(_record_of(job))


def plan_record(plan: list[Job] | None = None) -> dict[str, Any]:
    """Where the whole plan stands now, for ``reproduce.json``: each job's file, whether it is
    current (and why not), its run's date, commit and one-core time (:func:`recorded_runtime`); the count of
    current files and the sum of their recorded times, i.e. what an end-to-end run has cost so
    far, session by session ("complete" when every file is current)."""
    plan = list(PLAN) if plan is None else plan
    jobs = []
    for job in plan:
        current, why = status(job)
        rec = _record_of(job)  # read once for its date, commit and runtime
        jobs.append({"result": job.file, "paper": job.paper, "current": current, "why": why,
                     "date": rec.get("date"), "commit": (rec.get("commit") or "")[:12] or None,
                     "one_core_seconds": _runtime_of(rec)})
    done = [j for j in jobs if j["current"]]
    timed = [j["one_core_seconds"] for j in done if j["one_core_seconds"] is not None]
    return {"jobs": jobs, "current": len(done), "planned": len(jobs), "complete": len(done) == len(jobs),
            "one_core_seconds_of_current": round(sum(timed), 1), "current_without_runtime": len(done) - len(timed)}


#: The interpreter each job runs under (a test may point it at a stand-in).
def can_reverify(job: Job) -> str | None:
    """For a planned :class:`Job`: the canary that can re-verify its file, when the file
    exists, records the planned command, is stale because code changed, and has a canary; else None."""
    import json

    from .canary import target

    path = result_path(job.result, job.scale)
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(record, dict) or _without_jobs(str(record.get("command"))) != _without_jobs(job.command):
        return None
    if record_status(record, job.module)[0]:
        return None
    t = target(path, record)
    return None if t is None else t.canary


def verify_plan(plan: list[Job]) -> list[dict[str, Any]]:
    """``reproduce --verify``: run the canary of every planned file that :func:`can_reverify`, and
    print per file its canary, seconds, deviations and verdict."""
    from .canary import verify

    out = []
    for job in plan:
        which = can_reverify(job)
        if which is None:
            continue
        v = verify(result_path(job.result, job.scale), job.module)
        verdict = ("agrees" if v.agrees else f"disagrees at {v.comparison.worst}") + \
            (f"; does not reach {v.uncovered[0]}" if v.uncovered else "")
        print(f"{job.file}: {which}, {v.seconds:.1f} s, max abs. dev. {v.comparison.max_abs:.2g}, "
              f"max rel. dev. {v.comparison.max_rel:.2g}: {verdict}")
        out.append({"result": job.file, "canary": which, "seconds": v.seconds, "agrees": v.agrees,
                    "max_abs_deviation": v.comparison.max_abs, "max_rel_deviation": v.comparison.max_rel,
                    "uncovered": v.uncovered})
    if not out:
        print("no stale planned file with a canary")
    return out


PYTHON = sys.executable
#: Where each job's output goes while it runs (``<result>.log``, overwritten by the next run of that job).
LOG_DIR = Path("_build") / "reproduce-logs"
_running: set[subprocess.Popen] = set()
_running_lock = threading.Lock()
_stopping = threading.Event()


def log_path(job: Job) -> Path:
    """The file that receives ``job``'s standard output and error (watch it with ``tail -f``)."""
    return project_root() / LOG_DIR / f"{job.result}.log"


JOB_ENV: dict[str, str] = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **KEEP_FREED_MEMORY_ENV}
"""What every command's process gets on top of the caller's environment (and its scale): one math
thread, and glibc's allocator keeping freed memory; ``reproduce.json`` records it."""


def run_job(job: Job, inner: int = 1) -> dict[str, Any]:
    """Run one job in its own process (at its scale, one torch thread, glibc's allocator keeping
    freed memory: :data:`~flbook.experiments.KEEP_FREED_MEMORY_ENV`); return its record.

    Its output goes to :func:`log_path`, not to a pipe, so a job that outlives its parent (killed
    rather than interrupted) still finishes and writes its file; :func:`stop_running` ends the
    jobs that are running and keeps queued ones from starting. A job that ``splits`` gets
    ``--jobs inner`` when ``inner`` > 1 (its file's numbers do not depend on it, and :func:`status`
    ignores the option).
    """
    env = {**os.environ, SCALE_ENV: job.scale, **JOB_ENV}
    if job.scale == "fixed":  # scale-independent: its file records the command without the variable
        env.pop(SCALE_ENV)
    out = {"result": job.file, "command": job.command, "seconds": 0.0}
    log = log_path(job)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(log, "w") as sink:
        with _running_lock:  # registered before a stop can run, so a stop never misses it
            if _stopping.is_set():
                return {**out, "status": "stopped"}
            extra = ("--jobs", str(inner)) if job.splits and inner > 1 else ()
            proc = subprocess.Popen([PYTHON, "-m", f"flbook.experiments.{job.module}", *job.args, *extra], env=env,
                                    stdout=sink, stderr=subprocess.STDOUT, text=True)
            _running.add(proc)
        try:
            returncode = proc.wait()
        finally:
            with _running_lock:
                _running.discard(proc)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    if returncode == 0:
        out["status"] = "ran"
    else:
        out["status"] = "stopped" if _stopping.is_set() else "failed"
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        out["error"] = lines[-1:] or ["(no output)"]
        out["log"] = str(log.relative_to(project_root()))
    return out


def stop_running(timeout: float = 30.0) -> int:
    """End every running job (SIGTERM, then SIGKILL after ``timeout`` s); queued jobs will not start.

    Returns how many were running. Their result files are not written: the next run redoes them.
    """
    with _running_lock:
        _stopping.set()
        procs = list(_running)
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return len(procs)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _save_record(records: list[dict[str, Any]], jobs: int, seconds: float) -> None:
    """``book/results/reproduce.json``: this call's commands (ran, failed, stopped, skipped) and
    :func:`plan_record`."""
    save_result("reproduce", {"this_call": {"jobs": records, "jobs_at_a_time": jobs, "wall_seconds": round(seconds, 1),
                                            "environment": JOB_ENV},
                              "plan": plan_record()}, seeds=[0, 1, 2], scale_="paper")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=positive_int, default=1, help="commands run at a time (one core each)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    p.add_argument("--inner-jobs", type=positive_int, default=1, metavar="N",
                   help="processes for each command that splits its independent runs (Fig. 3's sweeps), so "
                        "a sweep longer than a session fits in one; the numbers do not change")
    p.add_argument("--only", nargs="+", default=None, metavar="RESULT",
                   help=f"run only these result files (of: {', '.join(j.file for j in PLAN)})")
    p.add_argument("--verify", action="store_true", help="run the canary of each stale file that has one "
                   "(flbook.experiments.canary), record it in the file, and exit")
    args = p.parse_args(argv)
    plan = list(PLAN)
    if args.only:
        unknown = sorted(set(args.only) - {j.file for j in PLAN})
        if unknown:
            p.error(f"--only: unknown results {unknown}; choose from {[j.file for j in PLAN]}")
        plan = [j for j in plan if j.file in set(args.only)]
    if args.verify:
        return {"jobs": [], "verified": verify_plan(plan)}
    if git_commit().endswith("+dirty"):
        print("note: the library has uncommitted changes; the files will record '+dirty' and be rerun next time")
    todo, records = [], []
    for job in plan:
        current, why = status(job)
        if not current and args.dry_run and (which := can_reverify(job)):
            why = f"stale; a canary can re-verify it: {which} ({why})"
        print(f"{'skip' if current else 'run ':4}  {job.file:38s} {why}")
        if current:
            records.append({"result": job.file, "command": job.command, "status": "skipped", "seconds": 0.0})
        else:
            todo.append(job)
    spent = [recorded_runtime(j) for j in plan if j not in todo]
    if spent:
        timed = [x for x in spent if x is not None]
        print(f"current: {len(spent)} of {len(plan)} files; {len(timed)} record their run's cost, together "
              f"{sum(timed) / 3600:.1f} h of one core's time (wall time x processes)"
              + (f" ({len(spent) - len(timed)} made before costs were recorded)" if len(timed) < len(spent) else ""))
    known = [j.estimate_min for j in todo if j.estimate_min > 0]
    print(f"to run: {len(todo)} of {len(plan)} commands, about {sum(known) / 60:.1f} h of one core's time for the "
          f"{len(known)} with a recorded estimate ({sum(known) / 60 / max(args.jobs, 1):.1f} h at --jobs {args.jobs})")
    if args.dry_run:
        return {"jobs": records}
    if not todo:
        _save_record(records, args.jobs, 0.0)
        return {"jobs": records}
    print(f"each command's output: {LOG_DIR}/<result>.log")
    t0 = time.perf_counter()
    _stopping.clear()
    in_main = threading.current_thread() is threading.main_thread()  # only there can a handler be set
    previous = signal.signal(signal.SIGTERM, _raise_interrupt) if in_main else None  # `kill` acts as Ctrl-C
    pool = ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = {pool.submit(run_job, job, args.inner_jobs): job for job in todo}
        for fut in tqdm(as_completed(futures), total=len(futures), desc="paper-scale results"):
            rec = fut.result()
            records.append(rec)
            tqdm.write(f"{rec['status']:6} {rec['result']} in {rec['seconds'] / 60:.1f} min"
                       + (f": {rec['error'][0]} (log: {rec['log']})" if rec["status"] == "failed" else ""))
            _save_record(records, args.jobs, time.perf_counter() - t0)
    except KeyboardInterrupt:
        stopped = stop_running()
        print(f"interrupted: {stopped} running command(s) stopped, their files not written; "
              "finished files stay, and the next call resumes")
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if in_main:
            signal.signal(signal.SIGTERM, previous)
    failed = [r["result"] for r in records if r["status"] == "failed"]
    if failed:
        print(f"{len(failed)} command(s) failed: {failed}")
    return {"jobs": records}


if __name__ == "__main__":
    res = main()
    sys.exit(1 if any(r["status"] == "failed" for r in res["jobs"]) else 0)
