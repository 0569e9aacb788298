"""The resumable paper-scale command (flbook.experiments.reproduce): its plan and its skip rule."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess
import time

import pytest

from flbook.experiments import moves as MV
from flbook.experiments import reproduce as R


def test_plan_names_real_commands_and_distinct_files():
    assert len({j.file for j in R.PLAN}) == len(R.PLAN)
    for job in R.PLAN:
        mod = importlib.import_module(f"flbook.experiments.{job.module}")
        assert callable(getattr(mod, "main", None)), job.module
        prefix = "" if job.scale == "fixed" else f"FLPRIVACY_SCALE={job.scale} "
        assert job.command.startswith(prefix + "python -m flbook.experiments."), job.command
        assert job.file == (job.result + "_quick" if job.scale == "quick" else job.result)


# ---- the plan is complete: a Diana et al. / Xu & Neglia result left out of it is caught -------------------------------
LEDGER_MODULES = ("diana_reconstruction", "diana_aia", "xu_neglia")
"""The ledger modules of the two papers :mod:`flbook.experiments.reproduce` reproduces."""

NOT_PLANNED = {
    "part3_bench": "a wall-time benchmark of the paper-scale Medical Table 1 on this machine, not a paper result "
                   "(its numbers are part3_table1_medical's)",
}
"""Part II/III experiment modules (and their files) deliberately left out of the plan, with the reason."""


def _planned() -> set[tuple[str, str]]:
    return {(j.result, j.scale) for j in R.PLAN}


def test_every_file_the_diana_and_xu_ledger_rows_read_is_planned(monkeypatch):
    """Build the two papers' ledger rows with a spy on the result files they read: each (name, scale)
    must be a planned job, else `make reproduce` would leave that row stale or "not run"."""
    from flbook import ledger

    real, seen = ledger.record_or_none, set()

    def spy(name, scale_="paper"):
        seen.add((name, scale_))
        return real(name, scale_)

    for name in LEDGER_MODULES:
        monkeypatch.setattr(importlib.import_module(f"flbook.ledger.{name}"), "record_or_none", spy)
    from flbook.ledger import diana, xu_neglia

    diana.rows()
    xu_neglia.rows()
    assert len(seen) >= 20, sorted(seen)  # the spy saw the reads (Tables 1-3, Figs. 1-4, Table 1 of Xu & Neglia, ...)
    missing = sorted(seen - _planned())
    assert not missing, (f"the ledger's Diana/Xu rows read result files that reproduce.PLAN does not make: {missing}; "
                         "add a Job (with the paper-scale arguments) to src/flbook/experiments/reproduce.py")


def _experiment_modules() -> list[str]:
    from flbook import experiments

    return sorted(m.name for m in pkgutil.iter_modules(experiments.__path__) if re.match(r"part[23]_", m.name))


def test_every_part2_and_part3_experiment_is_planned():
    """Parts II-III are the two papers' results: every such command (a module with a ``main``) is
    in the plan, or in NOT_PLANNED with a reason."""
    planned = {j.module for j in R.PLAN}
    commands = [m for m in _experiment_modules()
                if callable(getattr(importlib.import_module(f"flbook.experiments.{m}"), "main", None))]
    assert len(commands) >= 12, commands
    missing = [m for m in commands if m not in planned and m not in NOT_PLANNED]
    assert not missing, f"Part II/III experiment commands missing from reproduce.PLAN: {missing}"
    assert not set(NOT_PLANNED) & planned, "a module is both planned and NOT_PLANNED"


def test_every_committed_paper_scale_part2_and_part3_file_is_planned():
    """Every committed paper-scale (or scale-independent) file of a Part II/III command is one of
    the plan's files, so a variant run of a planned module (e.g. ``--grad-stopping``) is caught too."""
    from flbook.experiments import results_dir

    files = {j.file for j in R.PLAN if j.scale != "quick"}
    missing = []
    for path in sorted(results_dir().glob("part[23]_*.json")):
        if path.stem.endswith("_quick"):
            continue
        record = json.loads(path.read_text())
        module = re.search(r"experiments\.(\w+)", str(record.get("command")))
        if module and module.group(1) in NOT_PLANNED:
            continue
        if path.stem not in files:
            missing.append(f"{path.name} ({record.get('command')})")
    assert not missing, f"committed Part II/III result files that reproduce.PLAN does not remake: {missing}"


def test_a_job_runs_at_its_scale(tmp_path, monkeypatch):
    """The subprocess gets the job's scale (a fixed job runs without the variable, as its file records)
    and glibc's setting that keeps freed memory."""
    seen = {}

    class FakePopen:
        def __init__(self, cmd, env, **kw):
            seen[cmd[2]] = env.get("FLPRIVACY_SCALE")
            seen["allocator"] = {k: env.get(k) for k in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_")}

        def wait(self):
            return 0

    monkeypatch.setattr(R.subprocess, "Popen", FakePopen)
    monkeypatch.setattr(R, "LOG_DIR", tmp_path)
    for scale in ("paper", "quick", "fixed"):
        job = R.Job("x", "part2_toy", (), scale=scale)
        assert R.run_job(job)["status"] == "ran"
        assert seen["flbook.experiments.part2_toy"] == (None if scale == "fixed" else scale)
        assert ("FLPRIVACY_SCALE" in job.command) == (scale != "fixed")
        # glibc keeps freed memory in every command (the numbers do not change; bench_part3_allocator)
        assert seen["allocator"] == {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "2147483647"}
    with pytest.raises(ValueError, match="scale"):
        R.Job("x", "part2_toy", (), scale="huge")


def _stand_in(tmp_path, monkeypatch, body: str) -> R.Job:
    """A job whose 'interpreter' is a shell script running ``body`` (its log goes to tmp_path)."""
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    monkeypatch.setattr(R, "PYTHON", str(script))
    monkeypatch.setattr(R, "LOG_DIR", tmp_path / "logs")
    monkeypatch.setattr(R, "project_root", lambda: tmp_path)
    return R.Job("x", "part2_toy", ())


def test_a_failing_job_reports_its_last_line_and_its_log(tmp_path, monkeypatch):
    """The output goes to the job's log, not a pipe; a failure quotes the log's last line and names it."""
    job = _stand_in(tmp_path, monkeypatch, "echo working; echo 'ValueError: bad seed' >&2; exit 3")
    rec = R.run_job(job)
    assert rec["status"] == "failed" and rec["error"] == ["ValueError: bad seed"]
    assert rec["log"] == "logs/x.log" and "working" in (tmp_path / "logs" / "x.log").read_text()
    job = _stand_in(tmp_path, monkeypatch, "echo done")
    assert R.run_job(job)["status"] == "ran"


def test_a_sweep_splits_its_runs_and_stays_current(tmp_path, monkeypatch):
    """--inner-jobs N reaches a command that splits (Fig. 3's sweeps) as --jobs N, and only those;
    status ignores --jobs, so the file stays the planned one."""
    job = _stand_in(tmp_path, monkeypatch, 'echo "$@"')
    sweep = R.Job("x", "part3_fig3", ("--factor", "epochs"), splits=True)
    assert R.run_job(sweep, 2)["status"] == "ran"
    assert (tmp_path / "logs" / "x.log").read_text().split()[-2:] == ["--jobs", "2"]
    R.run_job(job, 2)
    assert "--jobs" not in (tmp_path / "logs" / "x.log").read_text()
    assert R._without_jobs(sweep.command + " --jobs 2") == R._without_jobs(sweep.command)
    assert all(j.splits == (j.module in ("part3_fig3", "part3_points", "part3_fig4_grad", "part3_fig4_large")) for j in R.PLAN)


def test_stop_running_ends_running_jobs_and_keeps_queued_ones_from_starting(tmp_path, monkeypatch):
    """An interrupt stops the children (none runs on, writing into a closed pipe)."""
    import threading
    job = _stand_in(tmp_path, monkeypatch, "echo started; exec sleep 60")
    monkeypatch.setattr(R, "_stopping", threading.Event())
    records = []
    worker = threading.Thread(target=lambda: records.append(R.run_job(job)))
    worker.start()
    log = tmp_path / "logs" / "x.log"
    deadline = time.monotonic() + 30
    while not (log.exists() and "started" in log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert R.stop_running(timeout=5) == 1
    worker.join(10)
    assert not worker.is_alive() and records[0]["status"] == "stopped" and records[0]["seconds"] < 30
    assert R.run_job(job)["status"] == "stopped"  # a queued job does not start after the stop
    assert not R._running


def test_an_interrupt_stops_the_running_jobs(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM, turned into it) in the parent stops its children, then propagates."""
    stops = []
    monkeypatch.setattr(R, "status", lambda job: (False, "stale"))
    monkeypatch.setattr(R, "recorded_runtime", lambda job: None)

    def interrupted(job, inner=1):
        raise KeyboardInterrupt

    monkeypatch.setattr(R, "run_job", interrupted)
    monkeypatch.setattr(R, "stop_running", lambda timeout=30.0: stops.append(1) or 1)
    with pytest.raises(KeyboardInterrupt):
        R.main(["--only", R.PLAN[0].file])
    assert stops == [1]


def test_the_plan_record_sums_the_current_files_recorded_times(tmp_path, monkeypatch):
    """reproduce.json says where the whole plan stands: an end-to-end run made across sessions."""
    plan = [R.Job("a", "part2_toy"), R.Job("b", "part2_toy"), R.Job("c", "part2_toy")]
    state = {"a": (True, "current"), "b": (True, "current"), "c": (False, "no result file")}
    monkeypatch.setattr(R, "status", lambda job: state[job.result])
    monkeypatch.setattr(R, "result_path", lambda name, scale_=None: tmp_path / f"{name}.json")
    (tmp_path / "a.json").write_text(json.dumps({"date": "2026-11-26", "commit": "0123456789abcdef",
                                                 "runtime": {"wall_seconds": 100.0}}))
    (tmp_path / "b.json").write_text(json.dumps({"date": "2026-11-25"}))  # made before runtimes were recorded
    (tmp_path / "c.json").write_text(json.dumps({"runtime": {"wall_seconds": 50.0}}))
    rec = R.plan_record(plan)
    assert (rec["current"], rec["planned"], rec["complete"]) == (2, 3, False)
    assert rec["one_core_seconds_of_current"] == 100.0 and rec["current_without_runtime"] == 1  # c is not current
    assert rec["jobs"][0]["commit"] == "0123456789ab" and rec["jobs"][2]["why"] == "no result file"
    saved = {}
    monkeypatch.setattr(R, "PLAN", plan)
    monkeypatch.setattr(R, "save_result", lambda name, data, **kw: saved.update({name: data}))
    monkeypatch.setattr(R, "status", lambda job: (True, "current"))
    R.main([])  # nothing left to run: the record is still written
    assert saved["reproduce"]["plan"]["complete"] and saved["reproduce"]["this_call"]["jobs"][0]["status"] == "skipped"


def _fake(tmp_path, monkeypatch, record):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(record))
    monkeypatch.setattr(R, "result_path", lambda name, scale_=None: path)


JOB = R.Job("x", "part3_table1", ("--task", "Medical", "--seeds", "0", "1", "2"))


def test_missing_or_other_command_or_dirty_commit_reruns(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "result_path", lambda name, scale_=None: tmp_path / "absent.json")
    assert R.status(JOB) == (False, "no result file")
    _fake(tmp_path, monkeypatch, {"command": JOB.command.replace("0 1 2", "0"), "commit": "abc"})
    assert not R.status(JOB)[0]
    _fake(tmp_path, monkeypatch, {"command": JOB.command, "commit": "abc+dirty"})
    assert not R.status(JOB)[0]


def test_current_file_is_skipped_and_jobs_option_ignored(tmp_path, monkeypatch):
    head = R._git("rev-parse", "HEAD").stdout.strip()
    monkeypatch.setattr(R, "library_unchanged_since", lambda commit: commit == head)
    _fake(tmp_path, monkeypatch, {"command": JOB.command + " --jobs 2", "commit": head})
    assert R.status(JOB) == (True, "current")
    _fake(tmp_path, monkeypatch, {"command": JOB.command, "commit": "0" * 40})
    assert not R.status(JOB)[0]


def test_recorded_sources_decide_currency_file_by_file(tmp_path, monkeypatch):
    """A record with ``sources`` stays current while the files its run imported keep their
    content, whatever the commit says (even "+dirty"), and goes stale when one changes or is gone."""
    import flbook.experiments as E

    import flbook.experiments.part3_table1  # noqa: F401  (so its file is among the imported ones)
    sources = E.library_sources()
    assert "flbook/experiments/part3_table1.py" in sources and "flprivacy/federation.py" in sources
    assert all(len(v) == 16 for v in sources.values())
    _fake(tmp_path, monkeypatch, {"command": JOB.command, "commit": "abc+dirty", "sources": sources})
    assert R.status(JOB) == (True, "current")
    changed = dict(sources, **{"flprivacy/federation.py": "0" * 16})
    _fake(tmp_path, monkeypatch, {"command": JOB.command, "commit": "abc", "sources": changed})
    assert R.status(JOB) == (False, "flprivacy/federation.py changed since the run")
    _fake(tmp_path, monkeypatch, {"command": JOB.command, "commit": "abc", "sources": {"flprivacy/gone.py": "0" * 16}})
    assert not R.status(JOB)[0]
    # save_result records them
    monkeypatch.setattr(E, "result_path", lambda name, scale_=None: tmp_path / "saved.json")
    saved = json.loads(E.save_result("x", {}, seeds=[0]).read_text())
    assert saved["sources"]["flbook/experiments/part3_table1.py"] == sources["flbook/experiments/part3_table1.py"]


def test_library_unchanged_since_refuses_unknown_commits():
    assert not R.library_unchanged_since("")
    assert not R.library_unchanged_since("unknown")
    assert not R.library_unchanged_since("abc+dirty")


def test_only_rejects_unknown_results(capsys):
    with pytest.raises(SystemExit):
        R.main(["--only", "no_such_result", "--dry-run"])
    assert "unknown results" in capsys.readouterr().err


# ---- the unit rule: result files do not go stale on edits that cannot change their numbers ---------------------------
from flbook.experiments import fingerprint as FP  # noqa: E402

BASE = '''"""A module."""
from __future__ import annotations

import math
from .helpers import scale, shift

RATE = 0.5
"""The rate."""


def f(x, k=2):
    """Scale x."""
    def inner(y):
        """Nested docstring."""
        return y * RATE
    return scale(inner(x)) + k * sum([1, 2])


class Model:
    """A model."""

    size: int = 3

    def run(self, x):
        """Run it."""
        return f(x) + math.pi
'''
HELPERS = "def scale(x):\n    return 2 * x\n\n\ndef shift(x):\n    return x + 1\n"


def _lib(tmp_path, text, extra=None):
    """Write flprivacy/m.py (and flprivacy/helpers.py) under tmp_path; return the record a run would write."""
    files = {"flprivacy/__init__.py": "", "flprivacy/helpers.py": HELPERS, "flprivacy/m.py": text, **(extra or {})}
    for rel, content in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    sources = {rel: FP._sha(tmp_path / rel) for rel in files}
    units = {rel: FP.source_units(content) for rel, content in files.items()}
    return sources, {rel: u for rel, u in units.items() if u is not None}


def _after(tmp_path, before, after, extra=None):
    """The verdict on a record made with m.py = ``before`` once m.py reads ``after``."""
    sources, units = _lib(tmp_path, before, extra)
    (tmp_path / "flprivacy/m.py").write_text(after)
    return FP.check_sources(sources, units, tmp_path)


CURRENT = {
    "docstrings, comments and blank lines": BASE.replace('"""Scale x."""', '"""Scale x by two."""')
    .replace('"""Nested docstring."""', '"""Another nested docstring."""').replace('"""Run it."""', "# run\n\n")
    .replace('"""The rate."""', "").replace('"""A module."""', '"""A module, reworded."""\n\n# comment'),
    "an added function": BASE + "\n\ndef g(x, y=(1, 2)):\n    return x + len(y)\n",
    "an added dataclass and constant": BASE + "\n\nLIMIT = frozenset({1, 2})\n\n\n@dataclass(frozen=True)\nclass Extra:"
                                              "\n    a: int = 1\n",
    "an added name on an existing import line": BASE.replace("import scale, shift", "import scale, shift, other"),
    "an added import of a library file the run imported, and of a module outside the library":
        BASE.replace("import math\n", "import math\nimport json\nfrom . import helpers\n"),
}
STALE = {
    "changed function body": (BASE.replace("scale(inner(x)) + k", "scale(inner(x)) - k"), "flprivacy/m.py:f changed"),
    "changed nested function": (BASE.replace("return y * RATE", "return y / RATE"), "flprivacy/m.py:f changed"),
    "changed default argument": (BASE.replace("k=2", "k=3"), "flprivacy/m.py:f changed"),
    "changed constant": (BASE.replace("RATE = 0.5", "RATE = 0.25"), "flprivacy/m.py:RATE changed"),
    "changed class attribute": (BASE.replace("size: int = 3", "size: int = 4"), "flprivacy/m.py:Model changed"),
    "changed import target": (BASE.replace("from .helpers import scale, shift", "from .helpers import shift as scale"
                                           ", shift"), "flprivacy/m.py:scale changed"),
    "removed function": (BASE.replace("def f(", "def f_renamed("), "flprivacy/m.py:f removed"),
    "removed import": (BASE.replace("import math\n", ""), "flprivacy/m.py:math removed"),
    "added function shadowing a builtin the run called": (BASE + "\n\ndef sum(xs):\n    return 0\n",
                                                          "flprivacy/m.py:sum added"),
    "added function another file looks up by name": (BASE + "\n\ndef shift_all(x):\n    return x\n",
                                                     "flprivacy/m.py:shift_all added"),
    "added decorated function (a registry)": (BASE + "\n\n@register\ndef g(x):\n    return x\n",
                                              "flprivacy/m.py:g added"),
    "added constant drawn at import": (BASE + "\nNOISE = math.sin(RATE)\n", "flprivacy/m.py:NOISE added"),
    "added top-level statement": (BASE + "\nmath.pi = 3\n", "flprivacy/m.py:<module> added"),
    "added star import": (BASE.replace("import math\n", "import math\nfrom os.path import *\n"),
                          "flprivacy/m.py:<module> added"),
    "added import of a library file the run did not import":
        (BASE.replace("import math\n", "import math\nfrom . import unused\n"), "flprivacy/m.py:unused added"),
    "added class another file names in an annotation": (BASE + "\n\nclass Shape:\n    pass\n",
                                                         "flprivacy/m.py:Shape added"),
    "added module __getattr__": (BASE + "\n\ndef __getattr__(name):\n    return 1\n", "flprivacy/m.py:__getattr__"),
    "reordered top-level statements": (BASE.replace("RATE = 0.5\n", "") + "\nRATE = 0.5\n", "reordered"),
}
OTHER = {"flprivacy/other.py": "from __future__ import annotations\n\nfrom . import m\n\n\n"
                               "def pick(s: Shape):\n    return getattr(m, 'shift_all', None)\n",
         "flprivacy/unused.py": "STATE = 1\n"}


@pytest.mark.parametrize("edit", list(CURRENT))
def test_an_edit_that_cannot_change_the_numbers_keeps_a_result_current(tmp_path, edit):
    extra = dict(OTHER)
    extra.pop("flprivacy/unused.py")  # the run did not import it (only the "stale" case below needs it recorded out)
    assert FP.check_sources(*_lib(tmp_path, BASE, extra), tmp_path) == (True, "")
    assert _after(tmp_path, BASE, CURRENT[edit], extra) == (True, ""), edit


@pytest.mark.parametrize("edit", list(STALE))
def test_an_edit_that_may_change_the_numbers_makes_it_stale(tmp_path, edit):
    after, why = STALE[edit]
    extra = {"flprivacy/other.py": OTHER["flprivacy/other.py"]}
    (tmp_path / "flprivacy").mkdir(parents=True)
    (tmp_path / "flprivacy/unused.py").write_text(OTHER["flprivacy/unused.py"])  # on disk, not imported by the run
    current, reason = _after(tmp_path, BASE, after, extra)
    assert not current and why in reason and "since the run" in reason, (edit, reason)


def test_a_name_bound_twice_keeps_both_bindings_and_their_order(tmp_path):
    two = "X = 1\nY = 2\nX = 3\n"
    assert not _after(tmp_path, two, "X = 5\nY = 2\nX = 3\n")[0]  # the first binding changed
    assert not _after(tmp_path, two, "Y = 2\nX = 1\nX = 3\n")[0]  # same units, another order
    assert _after(tmp_path, two, "X = 1\nY = 2\nZ = 0\nX = 3\n") == (True, "")


def test_code_that_lists_a_namespace_makes_any_added_unit_count(tmp_path):
    lister = {"flprivacy/other.py": "from . import m\n\n\ndef names():\n    return sorted(vars(m))\n"}
    added = BASE + "\n\ndef g():\n    return 1\n"
    assert _after(tmp_path, BASE, added) == (True, "")
    current, why = _after(tmp_path, BASE, added, lister)
    assert not current and "flprivacy/m.py:g added" in why and "lists a namespace" in why


def test_all_matters_only_to_a_star_import(tmp_path):
    text = "__all__ = ['f']\n\n\ndef f():\n    return 1\n"
    grown = text.replace("['f']", "['f', 'g']") + "\n\ndef g():\n    return 2\n"
    assert _after(tmp_path, text, grown) == (True, "")
    star = {"flprivacy/other.py": "from .m import *\n"}
    assert not _after(tmp_path, text, grown, star)[0]
    shrunk = text.replace("['f']", "[]")  # no unit added: the changed __all__ alone decides
    assert _after(tmp_path, text, shrunk) == (True, "")
    assert _after(tmp_path, text, shrunk, star) == (False, "flprivacy/m.py:__all__ changed since the run")


def test_old_records_and_unparsable_files_keep_the_whole_file_rule(tmp_path):
    sources, units = _lib(tmp_path, BASE)
    (tmp_path / "flprivacy/m.py").write_text(CURRENT["docstrings, comments and blank lines"])
    assert FP.check_sources(sources, None, tmp_path) == (False, "flprivacy/m.py changed since the run")
    assert FP.check_sources(sources, {k: v for k, v in units.items() if k != "flprivacy/m.py"}, tmp_path)[0] is False
    assert FP.check_sources(sources, units, tmp_path) == (True, "")
    assert FP.source_units("def broken(:\n") is None
    (tmp_path / "flprivacy/m.py").write_text("def broken(:\n")
    assert FP.check_sources(sources, units, tmp_path) == (False, "flprivacy/m.py changed since the run (it no "
                                                                 "longer parses)")
    (tmp_path / "flprivacy/m.py").unlink()
    assert FP.check_sources(sources, units, tmp_path) == (False, "flprivacy/m.py removed since the run")


def test_units_are_recorded_at_the_first_read_with_the_file_hash(tmp_path, monkeypatch):
    """A command fingerprints each file when it first sees it (at its start): an edit made while it
    runs changes neither the hash nor the units it saves."""
    import flbook.experiments as E

    import hashlib

    path, broken = tmp_path / "flprivacy" / "m.py", tmp_path / "flprivacy" / "broken.py"
    path.parent.mkdir()
    path.write_text(BASE)
    broken.write_text("def broken(:\n")
    monkeypatch.setattr(E, "_imported_library_files", lambda: {"flprivacy/broken.py": str(broken),
                                                                "flprivacy/m.py": str(path)})
    E._fingerprint.cache_clear()
    first = E.library_sources()
    path.write_text(STALE["changed function body"][0])
    assert E.library_sources() == first
    assert first["flprivacy/m.py"] == hashlib.sha256(BASE.encode()).hexdigest()[:16]
    assert E.library_source_units() == {"flprivacy/m.py": FP.source_units(BASE)}  # broken.py: its hash decides
    E._fingerprint.cache_clear()
    assert E.library_source_units() == {"flprivacy/m.py": FP.source_units(STALE["changed function body"][0])}
    E._fingerprint.cache_clear()


def test_status_judges_a_new_record_by_its_units(tmp_path, monkeypatch):
    """On the real library: a record with ``source_units`` is current while they match, whatever its
    whole-file hashes say, and names the unit that changed; save_result writes them."""
    import flbook.experiments as E

    import flbook.experiments.part3_table1  # noqa: F401
    sources, units = E.library_sources(), E.library_source_units()
    fed = units["flprivacy/federation.py"]
    assert " run_fedavg=" in fed and FP.decode_units(fed)[0]["run_fedavg"] in fed
    stale_files = dict(sources, **{"flprivacy/federation.py": "0" * 16})
    _fake(tmp_path, monkeypatch, {"command": JOB.command, "commit": "abc", "sources": stale_files,
                                  "source_units": units})
    assert R.status(JOB) == (True, "current")
    digest = FP.decode_units(fed)[0]["run_fedavg"]
    changed = {**units, "flprivacy/federation.py": fed.replace(f"run_fedavg={digest}", "run_fedavg=" + "0" * 12)}
    _fake(tmp_path, monkeypatch, {"command": JOB.command, "commit": "abc", "sources": sources,
                                  "source_units": changed})
    current, why = R.status(JOB)  # reachable from Table 1's main (the reason may add how)
    assert not current and why.startswith("flprivacy/federation.py:run_fedavg changed since the run")
    monkeypatch.setattr(E, "result_path", lambda name, scale_=None: tmp_path / "saved.json")
    saved = json.loads(E.save_result("x", {}, seeds=[0]).read_text())
    assert saved["source_units"]["flprivacy/federation.py"] == units["flprivacy/federation.py"]


def test_units_of_every_library_file_ignore_docstrings_and_layout():
    """On the real library: rewriting every docstring and the whole layout (``ast.unparse``) keeps
    every unit's hash, and a record of the tree as it is now is current."""
    import ast
    from pathlib import Path

    src = Path(FP.__file__).resolve().parents[2]
    files = sorted(p.relative_to(src).as_posix() for pkg in ("flprivacy", "flbook") for p in (src / pkg).rglob("*.py"))
    assert len(files) > 50
    for rel in files:
        text = (src / rel).read_text()
        tree = ast.parse(text)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            for stmt in body if isinstance(body, list) else []:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                    stmt.value.value = "rewritten: " + stmt.value.value[::-1]
        assert FP.source_units(ast.unparse(tree)) == FP.source_units(text), rel
    sources = {rel: FP._sha(src / rel) for rel in files}
    units = {rel: FP.source_units((src / rel).read_bytes()) for rel in files}
    assert FP.check_sources(sources, units, src) == (True, "")


def test_the_rule_on_a_copy_of_the_library(tmp_path):
    """On real code: a reworded docstring of optimum.tuned_local_models and a new function leave a
    record of the files Table 1's command imports current; one more statement in its body does not."""
    import ast
    import shutil
    from pathlib import Path

    from flbook.experiments import results_dir

    src = Path(FP.__file__).resolve().parents[2]
    shutil.copytree(src / "flprivacy", tmp_path / "flprivacy", ignore=shutil.ignore_patterns("__pycache__"))
    recorded = json.loads((results_dir() / "part3_table1_medical.json").read_text())["sources"]
    files = [rel for rel in recorded if (tmp_path / rel).is_file()]  # the files Table 1's run imported
    assert "flprivacy/optimum.py" in files and len(files) > 20
    sources = {rel: FP._sha(tmp_path / rel) for rel in files}
    units = {rel: FP.source_units((tmp_path / rel).read_bytes()) for rel in files}
    path = tmp_path / "flprivacy" / "optimum.py"
    text = path.read_text()
    fn = next(n for n in ast.parse(text).body if getattr(n, "name", "") == "tuned_local_models")
    lines = text.splitlines(keepends=True)
    doc = fn.body[0]
    assert isinstance(doc, ast.Expr) and isinstance(doc.value.value, str)
    reworded = [*lines[:doc.lineno - 1], '    """Reworded."""\n', *lines[doc.end_lineno:]]
    path.write_text("".join(reworded) + "\n\ndef an_added_helper(x):\n    return x + 1\n")
    assert FP.check_sources(sources, units, tmp_path) == (True, "")
    body = fn.body[1]
    path.write_text("".join([*lines[:body.lineno - 1], " " * body.col_offset + "pass\n", *lines[body.lineno - 1:]]))
    assert FP.check_sources(sources, units, tmp_path) == (False, "flprivacy/optimum.py:tuned_local_models changed "
                                                                 "since the run")


# ---- reachability: with the run's entries, a changed function the run cannot reach does not count -------------------
CMD = '''from . import ledger
from .m import f


def main(name="x"):
    table = {"judge": 1}
    return f(1) + ledger.TABLE[0] + len(table)


if __name__ == "__main__":
    main()
'''
LEDGER = '''TABLE = (1, 2)


def register(fn):
    return fn


def judge(x):
    return x > 0


def rows():
    return [judge(v) for v in TABLE]
'''
M = "def f(x):\n    return 2 * x\n"
ENTRY = [("flprivacy/cmd.py", "main")]


def _reach(tmp_path, edits: dict[str, tuple[str, str]], entries=ENTRY, cmd=CMD, ledger=LEDGER):
    """The verdict on a run of cmd.main once each file of ``edits`` had ``old`` replaced by ``new``."""
    files = {"flprivacy/__init__.py": "", "flprivacy/cmd.py": cmd, "flbook/ledger.py": ledger, "flprivacy/m.py": M}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    sources = {rel: FP._sha(tmp_path / rel) for rel in files}
    units = {rel: FP.source_units(text) for rel, text in files.items()}
    for rel, (old, new) in edits.items():
        assert files[rel].count(old) == 1, old
        (tmp_path / rel).write_text(files[rel].replace(old, new))
    return FP.check_sources(sources, units, tmp_path, entries)


JUDGE = ("return x > 0", "return x >= 0")


def test_a_changed_function_the_run_cannot_reach_keeps_it_current(tmp_path):
    assert _reach(tmp_path, {"flbook/ledger.py": JUDGE}) == (True, "")
    assert _reach(tmp_path, {"flbook/ledger.py": ("for v in TABLE]", "for v in TABLE if v]")}) == (True, "")
    # an added function nothing reachable names, beside the change
    assert _reach(tmp_path, {"flbook/ledger.py": ("def rows():", "def extra():\n    return 3\n\n\ndef rows():")}) \
        == (True, "")
    # without entries, every recorded unit counts (the rule of the records written before)
    assert _reach(tmp_path, {"flbook/ledger.py": JUDGE}, entries=None) == (
        False, "flbook/ledger.py:judge changed since the run")


REACHED = {
    "called through an import": ({"flprivacy/m.py": ("2 * x", "3 * x")}, "flprivacy/m.py:f changed"),
    "the entry itself": ({"flprivacy/cmd.py": ('{"judge": 1}', '{"judge": 2}')}, "flprivacy/cmd.py:main changed"),
    "a constant (run at import)": ({"flbook/ledger.py": ("(1, 2)", "(1, 3)")}, "flbook/ledger.py:TABLE changed"),
    "a point's function": ({"flbook/ledger.py": JUDGE}, "flbook/ledger.py:judge changed"),
}


@pytest.mark.parametrize("case", list(REACHED))
def test_a_changed_unit_the_run_can_reach_makes_it_stale(tmp_path, case):
    edits, why = REACHED[case]
    entries = [("flbook/ledger.py", "judge")] if case == "a point's function" else ENTRY
    current, reason = _reach(tmp_path, edits, entries)
    assert not current and why in reason, (case, reason)


def test_what_reaches_a_unit_without_being_an_edit(tmp_path):
    """Code the run executes names the edited function: by attribute, by a constant name it looks
    up, by any string when a looked-up name is computed, by registering it at import, or by
    listing the namespace; a string alone (a dict key) does not."""
    reach = [("ledger.TABLE[0]", "ledger.judge(1)"), ("len(table)", 'len(table) + getattr(ledger, "judge")(1)'),
             ("len(table)", "len(table) + bool(getattr(ledger, name, None))"), ("len(table)", "len(vars(ledger))")]
    for old, new in reach:
        cmd = CMD.replace(old, new)
        current, why = _reach(tmp_path, {"flbook/ledger.py": JUDGE}, cmd=cmd)
        assert not current and "flbook/ledger.py:judge changed" in why, (new, why)
    by_path = CMD.replace("len(table)", 'len(table) + bool(getattr(ledger, POINT.split(":")[1], None))').replace(
        "def main(", 'POINT = "flbook.ledger:judge"\n\n\ndef main(').replace('"judge": 1', '"other": 1')
    current, why = _reach(tmp_path, {"flbook/ledger.py": JUDGE}, cmd=by_path)  # a point's function, by its path
    assert not current and "flbook/ledger.py:judge changed" in why
    registered = LEDGER.replace("def judge", "@register\ndef judge")
    assert not _reach(tmp_path, {"flbook/ledger.py": JUDGE}, ledger=registered)[0]
    looked_up_by_loop = CMD.replace("len(table)", 'len(table) + sum(hasattr(ledger, k) for k in ("TABLE", "register"))')
    assert _reach(tmp_path, {"flbook/ledger.py": JUDGE}, cmd=looked_up_by_loop) == (True, "")
    assert not _reach(tmp_path, {"flbook/ledger.py": ("x > 0", "x > 1")}, cmd=looked_up_by_loop.replace(
        '("TABLE", "register")', '("TABLE", "judge")'))[0]


def test_a_main_block_runs_only_in_the_commands_own_file(tmp_path):
    """``if __name__ == "__main__":`` runs when the file is the command, not when a point's process
    imports it: main's code counts for the command only."""
    f_edit = {"flprivacy/m.py": ("2 * x", "3 * x")}
    guard = [("flprivacy/cmd.py", FP.MAIN_GUARD)]
    assert not _reach(tmp_path, f_edit, entries=guard)[0]  # the block calls main, which calls f
    assert _reach(tmp_path, f_edit, entries=[("flbook/ledger.py", "rows")]) == (True, "")  # a point in ledger
    assert not _reach(tmp_path, f_edit, entries=[("flbook/ledger.py", "rows")],
                      cmd=CMD.replace("\nif __name__", "\nmain()\nif __name__"))[0]  # a call at import does run


def test_an_added_unit_the_run_reaches_or_a_changed_import_makes_it_stale(tmp_path):
    shadow = {"flprivacy/cmd.py": ("def main(", "def len(x):\n    return 0\n\n\ndef main(")}
    current, why = _reach(tmp_path, shadow)
    assert not current and "flprivacy/cmd.py:len added since the run" in why
    current, why = _reach(tmp_path, {"flprivacy/cmd.py": ("from .m import f", "from .ledger import judge as f")})
    assert not current and "flprivacy/cmd.py:f changed" in why
    # a constant the run computed by a call at import, now a plain value nothing names: the call no longer runs
    drawn = LEDGER.replace("TABLE = (1, 2)", "TABLE = (1, 2)\nSEED = register(0)")
    current, why = _reach(tmp_path, {"flbook/ledger.py": ("SEED = register(0)", "SEED = 0")}, ledger=drawn)
    assert not current and "flbook/ledger.py:SEED changed" in why


def renamed(rel: str) -> str:
    """A recorded file's path as the rename map names it now."""
    from flbook.experiments.moves import renames

    module = renames().module(rel.removesuffix(".py").removesuffix("/__init__").replace("/", "."))
    return module.replace(".", "/") + ("/__init__.py" if rel.endswith("__init__.py") else ".py")


def test_the_ledger_can_change_without_staling_part_iii(tmp_path):
    """On real code: Table 1's run imported the ledger for the paper's numbers only, so an edit to
    how the ledger judges Fig. 3 leaves it current; an edit to the pipeline it ran does not."""
    import ast
    import shutil
    from pathlib import Path

    from flbook.experiments import results_dir

    src = Path(FP.__file__).resolve().parents[2]
    for pkg in ("flprivacy", "flbook"):
        shutil.copytree(src / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    recorded = json.loads((results_dir() / "part3_table1_medical.json").read_text())["sources"]
    own = "flbook/experiments/part3_table1.py"
    files = sorted({renamed(rel) for rel in recorded if (tmp_path / renamed(rel)).is_file()} | {own})
    sources = {rel: FP._sha(tmp_path / rel) for rel in files}
    units = {rel: FP.source_units((tmp_path / rel).read_bytes()) for rel in files}

    def edit(rel, name):
        path = tmp_path / rel
        text = path.read_text()
        fn = next(n for n in ast.parse(text).body if getattr(n, "name", "") == name)
        lines = text.splitlines(keepends=True)
        body = fn.body[1]
        path.write_text("".join([*lines[:body.lineno - 1], " " * body.col_offset + "pass\n", *lines[body.lineno - 1:]]))

    edit("flbook/ledger/diana_aia.py", "_fig3_rows")
    assert FP.check_sources(sources, units, tmp_path, [(own, "main")]) == (True, "")
    assert not FP.check_sources(sources, units, tmp_path)[0]  # without the entry, as before
    edit("flbook/experiments/part3_pipeline.py", "run_pipeline")
    current, why = FP.check_sources(sources, units, tmp_path, [(own, "main")])
    assert not current and why.startswith("flbook/experiments/part3_pipeline.py:run_pipeline changed")


def test_the_commands_own_module_is_judged_at_the_records_commit(tmp_path, monkeypatch):
    """A command runs its own module as ``__main__``, which the record's ``sources`` do not list:
    the rule reads that module at the record's commit (git), so an edit to the experiment's own
    code (its settings, its main) makes its file stale; with an unknown or "+dirty" commit the
    module's code at the run is unknown, and the file is stale."""
    import hashlib

    import flbook.experiments as E
    from flbook.experiments import fingerprint as FP

    import flbook.experiments.part3_table1  # noqa: F401
    own = "flbook/experiments/part3_table1.py"
    sources, units = E.library_sources(), E.library_source_units()
    here = E._imported_library_files()[own]
    data = open(here, "rb").read()
    sources.pop(own), units.pop(own)  # as a record of `python -m flbook.experiments.part3_table1` holds them
    record = {"command": JOB.command, "commit": "abc", "sources": sources, "source_units": units}
    _fake(tmp_path, monkeypatch, record)
    monkeypatch.setattr(MV, "module_at_commit", lambda commit, rel: (hashlib.sha256(data).hexdigest()[:16],
                                                                   FP.source_units(data)) if rel == own else None)
    assert R.status(JOB) == (True, "current")
    line = FP.source_units(data)
    digest = FP.decode_units(line)[0]["PAPER_SETTINGS"]
    monkeypatch.setattr(MV, "module_at_commit", lambda commit, rel: (
        "0" * 16, line.replace(f"PAPER_SETTINGS={digest}", "PAPER_SETTINGS=" + "0" * 12)))
    assert R.status(JOB) == (False, f"{own}:PAPER_SETTINGS changed since the run")
    main = FP.decode_units(line)[0]["main"]  # the function its __main__ block calls
    monkeypatch.setattr(MV, "module_at_commit", lambda commit, rel: (
        "0" * 16, line.replace(f"main={main}", "main=" + "0" * 12)))
    current, why = R.status(JOB)
    assert not current and why.startswith(f"{own}:main changed since the run")
    monkeypatch.setattr(MV, "module_at_commit", lambda commit, rel: None)
    current, why = R.status(JOB)
    assert not current and own in why and "not in the record" in why
    monkeypatch.undo()
    # the real look-up: none for an unknown or uncommitted run, the committed bytes otherwise
    assert MV.module_at_commit("abc+dirty", own) is None and MV.module_at_commit("", own) is None
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=R.project_root()).stdout.strip()
    if head:
        assert MV.module_at_commit(head, "flprivacy/no_such_file.py") is None
        committed = subprocess.run(["git", "show", f"HEAD:src/{own}"], capture_output=True, cwd=R.project_root()).stdout
        assert MV.module_at_commit(head, own) == (hashlib.sha256(committed).hexdigest()[:16], FP.source_units(committed))


def test_recorded_runtime_reads_the_files_cost(tmp_path, monkeypatch):
    _fake(tmp_path, monkeypatch, {"command": JOB.command, "runtime": {"wall_seconds": 12.5, "cpu_seconds": 12.0}})
    assert R.recorded_runtime(JOB) == 12.5
    for jobs in ("--jobs 2", "--jobs=2"):  # a command split over two processes: two cores' work in one wall time
        _fake(tmp_path, monkeypatch, {"command": f"{JOB.command} {jobs}", "runtime": {"wall_seconds": 12.5}})
        assert R.recorded_runtime(JOB) == 25.0
    # a file assembled from resumable points: their CPU seconds over every session, not the last call's wall time
    _fake(tmp_path, monkeypatch, {"command": f"{JOB.command} --jobs 2", "runtime": {"wall_seconds": 3.0},
                                  "data": {"points_record": {"one_core_seconds": 4000.0}}})
    assert R.recorded_runtime(JOB) == 4000.0
    _fake(tmp_path, monkeypatch, {"command": JOB.command})
    assert R.recorded_runtime(JOB) is None
    monkeypatch.setattr(R, "result_path", lambda name, scale_=None: tmp_path / "absent.json")
    assert R.recorded_runtime(JOB) is None


def test_record_status_judges_any_record_as_status_judges_a_planned_one():
    """record_status (pages flag unplanned files with it) gives status's verdict on a planned file,
    reads the module from the command, and a record whose code is gone is stale."""
    job = next(j for j in R.PLAN if j.result == "part2_theorem1")
    rec = json.loads(R.result_path(job.result, job.scale).read_text())
    assert R.record_status(rec) == R.record_status(rec, job.module) == R.status(job)
    gone = {**rec, "sources": {"flprivacy/no_such_file.py": "0" * 16, **rec["sources"]}}
    ok, why = R.record_status(gone)
    assert not ok and "no_such_file.py removed since the run" in why
    ok, why = R.record_status({"command": "python -m elsewhere"})
    assert not ok and "names no flbook.experiments module" in why


def test_time_allocators_runs_each_setting_in_its_own_environment(monkeypatch):
    """The default child runs without glibc's variables (even when the caller's shell sets them), the
    kept child with them; the ratio is default over kept, and a child whose ``same`` differs is reported."""
    import json as _json
    import subprocess as _sp

    import flbook.experiments as E

    monkeypatch.setenv("MALLOC_MMAP_MAX_", "0")  # the caller's own setting must not leak into the default child
    seen = []

    def fake_run(cmd, env, **kw):
        kept = env.get("MALLOC_MMAP_MAX_") == "0" and env.get("MALLOC_TRIM_THRESHOLD_") == "2147483647"
        seen.append((cmd[cmd.index("--child") + 1], kept, env["OMP_NUM_THREADS"]))
        rec = {"wall": 1.0 if kept else 3.0, "user": 1.0, "system": 0.0 if kept else 1.0, "minor_faults": 5,
               "out": outputs.pop(0)}
        return _sp.CompletedProcess(cmd, 0, _json.dumps(rec) + "\n", "")

    monkeypatch.setattr(E.subprocess, "run", fake_run)
    outputs = [1, 1, 1, 1]
    res = E.time_allocators("awa_bench", ["--x"], 2, "out")
    assert seen == [(E.ALLOCATORS[0], False, "1"), (E.ALLOCATORS[1], True, "1")] * 2
    assert res["wall_ratio"] == 3.0 and res["cpu_ratio"] == 2.0 and res["same_numbers"]
    outputs = [1, 2]
    assert not E.time_allocators("awa_bench", [], 1, "out")["same_numbers"]


def test_record_status_gives_the_same_answers_with_and_without_its_memo():
    """record_status memoises what it computes from a file's content (parses, unit digests, the
    names each unit reaches), across records and across the per-commit folders of the old code:
    two records of different commits (their files overlap in content) get the same verdicts and
    reasons as when everything is computed afresh, both the first time and from the memo."""
    from flbook.experiments import fingerprint as F

    recs = [json.loads(R.result_path(stem, scale).read_text())
            for stem, scale in (("part2_theorem1", "paper"), ("bench_fedavg", "fixed"))]
    assert recs[0]["commit"] != recs[1]["commit"]
    with F.memo_disabled():
        fresh = [R.record_status(r) for r in recs]
    F._BY_CONTENT.clear()
    first = [R.record_status(r) for r in recs]
    assert F._BY_CONTENT  # the memo was filled
    again = [R.record_status(r) for r in recs]
    assert fresh == first == again
