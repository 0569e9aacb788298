"""The resumable paper-scale command (flprivacy.experiments.reproduce): its plan and its skip rule."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess

import pytest

from flprivacy.experiments import reproduce as R


def test_plan_names_real_commands_and_distinct_files():
    assert len({j.file for j in R.PLAN}) == len(R.PLAN)
    for job in R.PLAN:
        mod = importlib.import_module(f"flprivacy.experiments.{job.module}")
        assert callable(getattr(mod, "main", None)), job.module
        prefix = "" if job.scale == "fixed" else f"FLPRIVACY_SCALE={job.scale} "
        assert job.command.startswith(prefix + "python -m flprivacy.experiments."), job.command
        assert job.file == (job.result + "_quick" if job.scale == "quick" else job.result)


# ---- the plan is complete: a Diana et al. / Xu & Neglia result left out of it is caught -------------------------------
LEDGER_MODULES = ("diana_reconstruction", "diana_aia", "xu_neglia")
"""The ledger modules of the two papers :mod:`flprivacy.experiments.reproduce` reproduces."""

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
    from flprivacy import ledger

    real, seen = ledger.record_or_none, set()

    def spy(name, scale_="paper"):
        seen.add((name, scale_))
        return real(name, scale_)

    for name in LEDGER_MODULES:
        monkeypatch.setattr(importlib.import_module(f"flprivacy.ledger.{name}"), "record_or_none", spy)
    from flprivacy.ledger import diana, xu_neglia

    diana.rows()
    xu_neglia.rows()
    assert len(seen) >= 20, sorted(seen)  # the spy saw the reads (Tables 1-3, Figs. 1-4, Table 1 of Xu & Neglia, ...)
    missing = sorted(seen - _planned())
    assert not missing, (f"the ledger's Diana/Xu rows read result files that reproduce.PLAN does not make: {missing}; "
                         "add a Job (with the paper-scale arguments) to src/flprivacy/experiments/reproduce.py")


def _experiment_modules() -> list[str]:
    from flprivacy import experiments

    return sorted(m.name for m in pkgutil.iter_modules(experiments.__path__) if re.match(r"part[23]_", m.name))


def test_every_part2_and_part3_experiment_is_planned():
    """Parts II-III are the two papers' results: every such command (a module with a ``main``) is
    in the plan, or in NOT_PLANNED with a reason."""
    planned = {j.module for j in R.PLAN}
    commands = [m for m in _experiment_modules()
                if callable(getattr(importlib.import_module(f"flprivacy.experiments.{m}"), "main", None))]
    assert len(commands) >= 12, commands
    missing = [m for m in commands if m not in planned and m not in NOT_PLANNED]
    assert not missing, f"Part II/III experiment commands missing from reproduce.PLAN: {missing}"
    assert not set(NOT_PLANNED) & planned, "a module is both planned and NOT_PLANNED"


def test_every_committed_paper_scale_part2_and_part3_file_is_planned():
    """Every committed paper-scale (or scale-independent) file of a Part II/III command is one of
    the plan's files, so a variant run of a planned module (e.g. ``--grad-stopping``) is caught too."""
    from flprivacy.experiments import results_dir

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


def test_a_job_runs_at_its_scale(monkeypatch):
    """The subprocess gets the job's scale; a fixed job runs without the variable, as its file records."""
    seen = {}

    def fake_run(cmd, env, **kw):
        seen[cmd[2]] = env.get("FLPRIVACY_SCALE")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(R.subprocess, "run", fake_run)
    for scale in ("paper", "quick", "fixed"):
        job = R.Job("x", "part2_toy", (), scale=scale)
        assert R.run_job(job)["status"] == "ran"
        assert seen["flprivacy.experiments.part2_toy"] == (None if scale == "fixed" else scale)
        assert ("FLPRIVACY_SCALE" in job.command) == (scale != "fixed")
    with pytest.raises(ValueError, match="scale"):
        R.Job("x", "part2_toy", (), scale="huge")


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
    import flprivacy.experiments as E

    import flprivacy.experiments.part3_table1  # noqa: F401  (so its file is among the imported ones)
    sources = E.library_sources()
    assert "flprivacy/experiments/part3_table1.py" in sources and "flprivacy/federation.py" in sources
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
    assert saved["sources"]["flprivacy/experiments/part3_table1.py"] == sources["flprivacy/experiments/part3_table1.py"]


def test_library_unchanged_since_refuses_unknown_commits():
    assert not R.library_unchanged_since("")
    assert not R.library_unchanged_since("unknown")
    assert not R.library_unchanged_since("abc+dirty")


def test_only_rejects_unknown_results(capsys):
    with pytest.raises(SystemExit):
        R.main(["--only", "no_such_result", "--dry-run"])
    assert "unknown results" in capsys.readouterr().err
