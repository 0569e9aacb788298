"""Re-verification by a canary (flbook.experiments.canary): a file stale because code changed
stays current while a cheap re-computation with today's code agrees with its numbers, and only
while that verification is itself current; leaf-by-leaf comparison rules."""

import copy
import json
import math

import pytest

from flbook.experiments import canary as C
from flbook.experiments import points as P
from flbook.experiments import reproduce as R

FN = "flbook.experiments.part2_toy:run_one"
ARGS = [0, 256, 0.1, "per-client"]  # one toy FedAvg run of 300 rounds: a second of CPU
OWN = "flbook/experiments/part2_toy.py"


def _edit_unit(units: dict, rel: str, name: str) -> dict:
    """``units`` with the recorded hash of ``rel``'s unit ``name`` changed: as if the code had changed."""
    words = [f"{name}={'0' * 12}" if w.startswith(f"{name}=") else w for w in units[rel].split()]
    return {**units, rel: " ".join(words)}


@pytest.fixture(scope="module")
def computed():
    """The point computed once in this process (the 'run'), and once by the canary's fresh process."""
    run = P._call(FN, ARGS)
    target = C.Target("point seed=0", FN, ARGS, [C._entry_of(FN)], C.DEFAULT_TOLERANCE)
    fresh = C._run_fresh(target, {"scale": "quick", "command": "python -m flbook.experiments.part2_toy"})
    return run, fresh


@pytest.fixture
def files(tmp_path, computed, monkeypatch):
    """A result file assembled from one point, both stale because part2_toy.run_one 'changed'
    since the run; the canary's process is the one computed above."""
    run, fresh = computed
    monkeypatch.setattr(C, "_run_fresh", lambda t, record: copy.deepcopy(fresh))
    units = _edit_unit(run["source_units"], OWN, "run_one")
    point = {"name": "demo", "point": "seed=0", "fn": FN, "args": ARGS, "command": "python -m x", "scale": "quick",
             "date": "2026-12-01T00:00:00+00:00", "commit": "abc", "cpu_seconds": run["cpu_seconds"],
             "wall_seconds": run["wall_seconds"], "sources": run["sources"], "source_units": units,
             "data": run["data"]}
    record = {"name": "demo", "command": "python -m flbook.experiments.part2_toy", "scale": "quick",
              "date": "2026-12-01T01:00:00+00:00", "commit": "abc", "sources": run["sources"], "source_units": units,
              "data": {"rows": [1, 2], "points_record": {"points": 1, "point_commits": ["abc"]}}}
    (tmp_path / "points" / "demo").mkdir(parents=True)
    (tmp_path / "points" / "demo" / "seed=0.json").write_text(json.dumps(point))
    (tmp_path / "demo.json").write_text(json.dumps(record))
    return tmp_path / "demo.json", tmp_path / "points" / "demo" / "seed=0.json"


def _load(path):
    return json.loads(path.read_text())


def test_the_canary_process_recomputes_the_point_with_its_own_provenance(computed):
    run, fresh = computed
    assert C.compare(fresh["data"], run["data"]).agrees
    assert OWN in fresh["sources"] and OWN in fresh["source_units"] and fresh["cpu_seconds"] > 0


def test_an_agreeing_canary_keeps_a_stale_file_current_and_records_the_verification(files):
    path, point_path = files
    before = _load(path)
    current, why = R.record_status(before, "part2_toy")
    assert not current and "part2_toy.py:run_one changed" in why
    v = C.verify(path)
    assert v.agrees and v.target.canary == "point seed=0" and v.uncovered == []
    after = _load(path)
    assert after["data"] == before["data"]  # never touched
    entry = after["verifications"][-1]
    for key in ("date", "commit", "canary", "fn", "args", "entries", "sources", "source_units", "seconds",
                "max_abs_deviation", "max_rel_deviation", "tolerance", "agrees"):
        assert key in entry
    assert entry["agrees"] is True and entry["entries"] == [[OWN, "run_one"]] and entry["tolerance"]["reason"]
    current, why = R.record_status(after, "part2_toy")
    assert current and why.startswith("current (re-verified ") and "by point seed=0" in why
    assert _load(point_path)["verifications"][-1]["agrees"] is True


def test_a_number_moved_beyond_tolerance_makes_the_canary_disagree(files):
    path, point_path = files
    point = _load(point_path)
    point["data"][0]["error"] *= 1 + 1e-3
    point_path.write_text(json.dumps(point))
    v = C.verify(path)
    assert not v.agrees and "[0].error" in v.comparison.worst
    rec = _load(path)
    assert rec["verifications"][-1]["agrees"] is False and "[0].error" in rec["verifications"][-1]["worst"]
    current, why = R.record_status(rec, "part2_toy")
    assert not current and "disagrees" in why
    # an agreeing verification followed by a disagreeing one: the latest decides
    rec["verifications"] = [dict(rec["verifications"][-1], agrees=True, worst=""), rec["verifications"][-1]]
    assert not R.record_status(rec, "part2_toy")[0]


def test_a_code_change_after_the_verification_makes_the_file_stale_again(files):
    path, point_path = files
    C.verify(path)
    for p in (path, point_path):
        rec = _load(p)  # the change as its recorded hashes show it (git, which would show it too, left out)
        rec["verifications"][-1]["source_units"] = _edit_unit(rec["verifications"][-1]["source_units"], OWN, "run_one")
        rec["verifications"][-1]["commit"] = "abc"
        p.write_text(json.dumps(rec))
    current, why = R.record_status(_load(path), "part2_toy")
    assert not current and "is stale too" in why and "run_one" in why


def test_a_change_the_canary_cannot_reach_is_not_reverified(files):
    path, _ = files
    rec = _load(path)  # the run's main also 'changed': the point's re-computation says nothing about it
    rec["source_units"] = _edit_unit(rec["source_units"], OWN, "main")
    path.write_text(json.dumps(rec))
    v = C.verify(path, "part2_toy")
    assert v.agrees and v.uncovered == [f"{OWN}:main"]
    current, why = R.record_status(_load(path), "part2_toy")
    assert not current and "does not reach" in why


def test_a_command_mismatch_is_never_reverified(files, monkeypatch, capsys):
    path, _ = files
    C.verify(path)
    assert R.record_status(_load(path), "part2_toy")[0]
    monkeypatch.setattr(R, "result_path", lambda name, scale_=None: path)
    monkeypatch.setattr("flbook.experiments.result_path", lambda name, scale_=None: path)
    other = R.Job("demo", "part2_toy", ("--seeds", "3"), scale="quick")
    current, why = R.status(other)
    assert not current and "another command" in why
    assert R.can_reverify(other) is None
    same = R.Job("demo", "part2_toy", (), scale="quick")
    rec = _load(path)
    rec["command"] = same.command
    path.write_text(json.dumps(rec))
    assert R.status(same)[0]  # re-verified
    del rec["verifications"]
    path.write_text(json.dumps(rec))
    assert R.can_reverify(same) == "point seed=0"
    monkeypatch.setattr(R, "PLAN", (same, other))
    R.main(["--dry-run"])
    assert "stale; a canary can re-verify it: point seed=0" in capsys.readouterr().out
    R.main(["--verify"])
    out = capsys.readouterr().out
    assert "demo: point seed=0" in out and "agrees" in out and R.status(same)[0]


def test_leaf_comparison_rules():
    tol = C.Tolerance(abs=1e-6, rel=1e-5, reason="test")
    ok = {"a": [1.0, {"b": "x", "n": 3, "flag": True, "none": None}], "nan": math.nan, "inf": -math.inf}
    assert C.compare(copy.deepcopy(ok), ok, tol).agrees
    for bad in ({"a": [1.0, {"b": "y", "n": 3, "flag": True, "none": None}], "nan": math.nan, "inf": -math.inf},
                {"a": [1.0, {"b": "x", "n": 4, "flag": True, "none": None}], "nan": math.nan, "inf": -math.inf},
                {"a": [1.0, {"b": "x", "n": 3, "flag": False, "none": None}], "nan": math.nan, "inf": -math.inf},
                {"a": [1.0, {"b": "x", "n": 3, "flag": True, "none": 0.0}], "nan": math.nan, "inf": -math.inf},
                {"a": [1.0, {"b": "x", "n": 3, "flag": True}], "nan": math.nan, "inf": -math.inf},  # missing key
                {"a": [1.0, {"b": "x", "n": 3, "flag": True, "none": None}, 2.0], "nan": math.nan, "inf": -math.inf},
                {"a": [1.0, {"b": "x", "n": 3, "flag": True, "none": None}], "nan": 0.0, "inf": -math.inf},
                {"a": [1.0, {"b": "x", "n": 3, "flag": True, "none": None}], "nan": math.nan, "inf": math.inf},
                {"a": [1.0, {"b": "x", "n": 3, "flag": 1, "none": None}], "nan": math.nan, "inf": -math.inf}):
        assert not C.compare(bad, ok, tol).agrees, bad
    assert not C.compare({"a": 1.0, "extra": 2.0}, {"a": 1.0}, tol).agrees
    assert not C.compare([1.0], 1.0, tol).agrees
    # the tolerance: |fresh - recorded| <= abs + rel |recorded|, on either side
    assert C.compare(1.0 + 0.9e-5, 1.0, tol).agrees and C.compare(1.0 - 0.9e-5, 1.0, tol).agrees
    assert not C.compare(1.0 + 2e-5, 1.0, tol).agrees and not C.compare(1.0 - 2e-5, 1.0, tol).agrees
    assert C.compare(5e-7, 0.0, tol).agrees and not C.compare(-2e-6, 0.0, tol).agrees
    assert not C.compare(0.0, -2e-6, tol).agrees
    c = C.compare([1.0 + 3e-6, 2.0], [1.0, 2.0], tol)
    assert c.agrees and c.max_abs == pytest.approx(3e-6) and c.max_rel == pytest.approx(3e-6) and c.leaves == 2
    assert C.compare(2, 2.0, tol).agrees  # an int against a float: compared as numbers


def test_a_registered_canary_reruns_a_cheap_command(tmp_path):
    rec = json.loads((R.result_path("part2_toy_fig2", "paper")).read_text())
    fresh, recorded = C.CANARIES["part2_toy"].run(rec)
    assert len(recorded) == 2 and C.compare(fresh, recorded, C.CANARIES["part2_toy"].tolerance).agrees
    assert C.target(tmp_path / "part2_toy_fig2.json", rec).fn == "flbook.experiments.canary:run_registered"


def test_a_verified_point_is_reused_by_a_resumed_run(files):
    path, point_path = files
    pt = P.Point("seed=0", FN, tuple(ARGS))
    assert P.load_point(point_path, pt, "quick") is None  # stale: run_one 'changed' since the run
    C.verify(path)
    assert P.load_point(point_path, pt, "quick") is not None
    rec = _load(point_path)  # a code change after the verification, as its hashes show it: stale again
    rec["verifications"][-1]["source_units"] = _edit_unit(rec["verifications"][-1]["source_units"], OWN, "run_one")
    rec["verifications"][-1]["commit"] = "abc"  # (git, which would show it too, left out)
    point_path.write_text(json.dumps(rec))
    assert P.load_point(point_path, pt, "quick") is None


def test_the_canary_follows_moves_a_moved_file_is_not_removed(computed, monkeypatch):
    """A record of a run under the old module names (flprivacy/experiments/...), all moved since
    by the rename map: judged where the code lives now, nothing is uncovered; file by file
    (without git's copy of the run's code), every moved file would read as removed."""
    from pathlib import Path

    from flbook.experiments.moves import known_commit

    _, fresh = computed
    record = json.loads((Path(C._src_root()).parent / "book/results/part2_toy_fig2.json").read_text())
    if not known_commit(str(record.get("commit"))):
        pytest.skip("the record's commit is not in this clone's history (a shallow clone)")
    assert any(rel.startswith("flprivacy/experiments/") for rel in record["sources"])
    entries = [[OWN, "run_one"]]
    assert C.uncovered(record, fresh["sources"], fresh["source_units"], entries, "part2_toy") == []
    monkeypatch.setattr(C, "_uncovered_modulo_moves", lambda *a: None)  # as without the run's code
    by_path = C.uncovered(record, fresh["sources"], fresh["source_units"], entries, "part2_toy")
    assert any(w.endswith("(removed)") and w.startswith("flprivacy/experiments/") for w in by_path)


def test_a_difference_modulo_moves_is_covered_only_where_the_canary_reaches(computed, monkeypatch):
    from flbook.experiments import moves

    _, fresh = computed
    record = {"command": "python -m flbook.experiments.part2_toy", "commit": "abc", "sources": {OWN: "0" * 16}}
    found = [(("flprivacy.federation", "run_fedavg"), "run_fedavg changed"),  # part2_toy.run_one runs FedAvg
             (("flbook.experiments.part2_toy", "main"), "main changed"),  # the command's main: not the canary's
             (None, "a module runs something new at import")]  # carried by no unit: never covered
    monkeypatch.setattr(moves, "moved_differences", lambda *a: found)
    missed = C._uncovered_modulo_moves(record, fresh["source_units"], [[OWN, "run_one"]], "part2_toy")
    assert missed == [f"{OWN}:main (main changed)", "a module runs something new at import"]


def test_a_whole_command_canary_reruns_the_command_and_ignores_only_timings(monkeypatch):
    """Theorem 1's sweeps at quick scale (a few seconds): the command's __main__ run again with
    the recorded arguments, its result caught (nothing written), compared without timings."""
    from flbook.experiments.fingerprint import MAIN_GUARD
    from flprivacy.config import SCALE_ENV

    monkeypatch.setenv(SCALE_ENV, "quick")
    run = C._whole_command("part2_theorem1")
    record = {"name": "part2_theorem1", "command": "python -m flprivacy.experiments.part2_theorem1", "data": {}}
    fresh, _ = run(record)  # recorded under the package's old name: the command as named now runs
    assert fresh["records"] and not C.compare(fresh, {}).agrees
    timed = {**copy.deepcopy(fresh), "wall_seconds": 12.5, "seconds": {"total": 3.0}}
    again, recorded = run({**record, "data": timed})
    assert C.compare(again, recorded).agrees and "wall_seconds" not in recorded  # deterministic, timings aside
    recorded["records"][0] = {**recorded["records"][0], **{k: v * (1 + 1e-3) for k, v in recorded["records"][0].items()
                                                          if type(v) is float and v != 0}}
    assert not C.compare(again, recorded).agrees
    t = C.target("unused.json", {"command": "python -m flbook.experiments.part2_theorem1", "data": {}})
    assert t is not None and ["flbook/experiments/part2_theorem1.py", MAIN_GUARD] in t.entries


def test_a_rounded_file_may_move_by_one_unit_in_its_last_place_and_no_more():
    t = C.ROUNDED_TOLERANCE
    assert C.compare({"ssim": 0.5525}, {"ssim": 0.5524}, t).agrees  # 0.55244999 vs 0.55245001, rounded
    assert not C.compare({"ssim": 0.5526}, {"ssim": 0.5524}, t).agrees
    assert not C.compare({"n": 3}, {"n": 4}, t).agrees
    assert C.compare({"ssim": 0.5525, "wall_seconds": 3.0}, {"ssim": 0.5525, "wall_seconds": 9.0}).differing == 1
    assert all(C.CANARIES[m].tolerance is t for m in C.ROUNDED)


def test_a_shown_image_may_move_by_one_pixel_level_and_its_truth_not_at_all():
    t = C.ROUNDED_TOLERANCE
    rec = {"shown_reconstruction": [[7, 200]], "shown_truth": [[7, 200]]}
    assert C.compare({"shown_reconstruction": [[8, 199]], "shown_truth": [[7, 200]]}, rec, t).agrees
    assert not C.compare({"shown_reconstruction": [[9, 200]], "shown_truth": [[7, 200]]}, rec, t).agrees
    assert not C.compare({"shown_reconstruction": [[7, 200]], "shown_truth": [[8, 200]]}, rec, t).agrees
    assert not C.compare({"shown_reconstruction": [[8, 200]]}, {"shown_reconstruction": [[7, 200]]}).agrees
