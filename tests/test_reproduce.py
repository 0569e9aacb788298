"""The resumable paper-scale command (flprivacy.experiments.reproduce): its plan and its skip rule."""

from __future__ import annotations

import importlib
import json

import pytest

from flprivacy.experiments import reproduce as R


def test_plan_names_real_commands_and_distinct_files():
    assert len({j.result for j in R.PLAN}) == len(R.PLAN)
    for job in R.PLAN:
        mod = importlib.import_module(f"flprivacy.experiments.{job.module}")
        assert callable(getattr(mod, "main", None)), job.module
        assert job.command.startswith("FLPRIVACY_SCALE=paper python -m flprivacy.experiments.")


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


def test_library_unchanged_since_refuses_unknown_commits():
    assert not R.library_unchanged_since("")
    assert not R.library_unchanged_since("unknown")
    assert not R.library_unchanged_since("abc+dirty")


def test_only_rejects_unknown_results(capsys):
    with pytest.raises(SystemExit):
        R.main(["--only", "no_such_result", "--dry-run"])
    assert "unknown results" in capsys.readouterr().err
