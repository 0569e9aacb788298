"""Resumable runs (flbook.experiments.points, part3_points): a finished point is kept and reused
while its function, arguments, scale and library code are unchanged, and a command assembled from
points gives the numbers of the command it resumes (Fig. 3's sweep, Table 3's run)."""

import json
from dataclasses import replace

import pytest

from flbook.experiments import points as P


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setattr(P, "points_dir", lambda result, scale_=None: tmp_path / result)
    return tmp_path


def test_a_finished_point_is_written_with_provenance_and_reused(folder, monkeypatch):
    pts = [P.Point("a", "math:hypot", (3, 4)), P.Point("b", "math:hypot", (5, 12))]
    recs = P.run_points("demo", pts, log=None)
    assert [r["data"] for r in recs.values()] == [5.0, 13.0]
    rec = json.loads((folder / "demo" / "a.json").read_text())
    for field in ("command", "scale", "date", "version", "commit", "machine", "sources", "source_units",
                  "cpu_seconds", "wall_seconds"):
        assert field in rec
    assert rec["args"] == [3, 4] and rec["fn"] == "math:hypot" and "flbook/experiments/points.py" in rec["sources"]
    calls = []
    real = P._call
    monkeypatch.setattr(P, "_call", lambda fn, args, threads=0: calls.append(args) or real(fn, args, threads))
    assert P.run_points("demo", pts, log=None) == recs and calls == []  # resumed: nothing runs again
    # another argument, a corrupt file, or library code changed since: that point runs again
    (folder / "demo" / "b.json").write_text("{not json")
    edited = dict(rec, sources={**rec["sources"], "flbook/experiments/points.py": "0" * 16},
                  source_units={k: v for k, v in rec["source_units"].items() if k != "flbook/experiments/points.py"})
    (folder / "demo" / "a.json").write_text(json.dumps(edited))
    out = P.run_points("demo", [*pts, P.Point("c", "math:hypot", (8, 15))], log=None)
    assert calls == [[3, 4], [5, 12], [8, 15]] and out["c"]["data"] == 17.0
    # the same key with other arguments, or a file of another scale, runs again too
    calls.clear()
    assert P.run_points("demo", [P.Point("a", "math:hypot", (6, 8))], log=None)["a"]["data"] == 10.0
    other = json.loads((folder / "demo" / "b.json").read_text())
    (folder / "demo" / "b.json").write_text(json.dumps(dict(other, scale="paper" if other["scale"] != "paper" else "quick")))
    P.run_points("demo", pts, log=None)
    assert calls == [[6, 8], [3, 4], [5, 12]]
    assert P.provenance(out)["points"] == 3 and P.provenance(out)["one_core_seconds"] >= 0


def test_points_run_in_worker_processes(folder):
    pts = [P.Point(f"p{i}", "math:hypot", (i, 1)) for i in range(3)]
    assert [r["data"] for r in P.run_points("pool", pts, jobs=2, log=None).values()] == \
        [pytest.approx((i * i + 1) ** 0.5) for i in range(3)]


def test_bad_points_raise(folder):
    with pytest.raises(ValueError, match="key"):
        P.Point("a/b", "math:hypot")
    with pytest.raises(ValueError, match="fn"):
        P.Point("a", "math.hypot")
    with pytest.raises(TypeError, match="JSON"):
        P.Point("a", "math:hypot", (object(),))
    with pytest.raises(ValueError, match="unique"):
        P.run_points("x", [P.Point("a", "math:hypot", (1, 1))] * 2, log=None)
    with pytest.raises(ValueError, match="jobs"):
        P.run_points("x", [], jobs=0, log=None)


def _tiny(s):
    return replace(s, rounds=6, active_rounds=(2,), adam_trials=2, adam_batch=2, grad_learning_rates=(1e3,),
                   grad_iterations=2, grad_patience=None, model_wo_steps=10, seeds=(0,))


def test_fig3_from_points_equals_the_sweep(folder, monkeypatch):
    from flbook.experiments import part3_fig3, part3_points

    monkeypatch.setattr(part3_fig3, "QUICK_BASE", replace(_tiny(part3_fig3.QUICK_BASE), n_synthetic=800))
    monkeypatch.setitem(part3_fig3.QUICK_VALUES, "batch_size", (32, 128))
    want = part3_fig3.sweep("batch_size", [0, 1], log=None)
    got = part3_points.fig3("batch_size", [0, 1], save=False)
    assert len(got["points"]) == 2 and got["points_record"]["points"] == 4
    for g, w in zip(got["points"], want["points"]):
        assert g["value"] == w["value"] and g["settings"] == w["settings"]
        assert [s["rows"] for s in g["per_seed"]] == [s["rows"] for s in w["per_seed"]]
        assert g["summary"] == w["summary"]  # the same floats (JSON keeps them exactly)


def test_table3_from_points_equals_the_run(folder, monkeypatch):
    from flbook.experiments import part3_points, part3_table3

    tiny = _tiny(part3_table3.table3_settings("Medical"))
    for mod in (part3_table3, part3_points):
        monkeypatch.setattr(mod, "table3_settings", lambda task: tiny)
    monkeypatch.setitem(part3_table3.QUICK_CLIP_GRID, "Medical", (3e6, 1e7))
    want = part3_table3.run("Medical", "medical", [0], save=False)
    got = part3_points.table3("Medical", "medical", [0], save=False)
    assert got["clip"] == json.loads(json.dumps(want["clip"]))
    assert got["per_seed"][0]["details"]["after_training"]["max_grad_norm"] == got["clip"]["best"]
    assert got["per_seed"][0]["rows"] == want["per_seed"][0]["rows"] and got["summary"] == want["summary"]
    assert got["points_record"]["points"] == 2 and got["seconds"] == got["points_record"]["one_core_seconds"]
    assert sorted(p.name for p in (folder / "part3_table3_medical").iterdir()) == ["clip_seed=0.json", "seed=0.json"]


def test_run_point_computes_one_point_the_command_reuses(folder, monkeypatch):
    """experiments.run_point writes the point a command would write, and the command reuses it."""
    from flbook.experiments import run_point

    rec = run_point.main(["demo", "a", "math:hypot", "[3, 4]"])
    assert rec["data"] == 5.0 and rec["args"] == [3, 4]
    calls = []
    real = P._call
    monkeypatch.setattr(P, "_call", lambda fn, args, threads=0: calls.append(args) or real(fn, args, threads))
    out = P.run_points("demo", [P.Point("a", "math:hypot", (3, 4)), P.Point("b", "math:hypot", (5, 12))], log=None)
    assert calls == [[5, 12]] and out["a"]["data"] == 5.0
    for bad in ("{not json", '{"a": 1}'):
        with pytest.raises(SystemExit, match="JSON list"):
            run_point.main(["demo", "c", "math:hypot", bad])


def test_a_point_is_judged_from_its_own_function(tmp_path, monkeypatch):
    """load_point gives the point's function as the run's entry: an edit to library code it cannot
    reach keeps the point, an edit to code it calls runs it again."""
    from flbook.experiments import fingerprint as FP

    text = ("def helper(x):\n    return x + 1\n\n\ndef compute(x):\n    return helper(x)\n\n\n"
            "def unused(x):\n    return x\n")
    files = {"flprivacy/__init__.py": "", "flprivacy/pt.py": text}
    for rel, t in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(t)
    monkeypatch.setattr(P, "_src_root", lambda: tmp_path)
    point = P.Point("a", "flprivacy.pt:compute", (1,))
    rec = {"sources": {rel: FP._sha(tmp_path / rel) for rel in files},
           "source_units": {rel: FP.source_units(t) for rel, t in files.items()},
           "fn": point.fn, "args": point.recorded_args(), "scale": "quick", "data": 2}
    path = tmp_path / "a.json"
    path.write_text(json.dumps(rec))
    assert P.load_point(path, point, "quick") == rec
    (tmp_path / "flprivacy/pt.py").write_text(text.replace("return x\n", "return -x\n"))
    assert P.load_point(path, point, "quick") == rec  # unused: the point never ran it
    (tmp_path / "flprivacy/pt.py").write_text(text.replace("x + 1", "x + 2"))
    assert P.load_point(path, point, "quick") is None  # helper: compute calls it
