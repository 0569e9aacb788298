"""The book-wide switches: scale, base seed, the former FEDLEAK_* names, result-file paths."""

import json
import subprocess
import sys

import pytest
import torch

from flprivacy import config
from flbook.experiments import load_result, load_result_or_none, result_path, save_result, short_long_rows


def test_base_seed_default_and_override(monkeypatch):
    monkeypatch.delenv("FLPRIVACY_SEED", raising=False)
    monkeypatch.delenv("FEDLEAK_SEED", raising=False)
    assert config.base_seed() == config.DEFAULT_SEED
    monkeypatch.setenv("FLPRIVACY_SEED", "7")
    assert config.base_seed() == 7


@pytest.mark.parametrize("bad", ["-1", "one", "1.5"])
def test_base_seed_rejects_bad_values_naming_the_variable(monkeypatch, bad):
    monkeypatch.setenv("FLPRIVACY_SEED", bad)
    with pytest.raises(ValueError, match="FLPRIVACY_SEED"):
        config.base_seed()


def test_old_names_are_refused_naming_the_new_one(monkeypatch):
    """The FEDLEAK_* names were read for one release (0.2) with a warning; since 0.3 they raise, so
    a reader's old setting is never ignored silently."""
    monkeypatch.delenv("FLPRIVACY_SCALE", raising=False)
    monkeypatch.setenv("FEDLEAK_SCALE", "paper")
    with pytest.raises(ValueError, match="set FLPRIVACY_SCALE"):
        config.scale()
    monkeypatch.setenv("FLPRIVACY_SCALE", "quick")  # the new name set: the old one is not read
    assert config.scale() == "quick"


def test_quick_results_never_overwrite_paper_files(monkeypatch, tmp_path):
    monkeypatch.setattr("flbook.results.results_dir", lambda: tmp_path)
    monkeypatch.setenv("FLPRIVACY_SCALE", "quick")
    quick = save_result("demo", {"x": 1}, seeds=[3])
    assert quick.name == "demo_quick.json" and not (tmp_path / "demo.json").exists()
    record = json.loads(quick.read_text())
    assert record["scale"] == "quick" and record["seeds"] == [3]
    assert {"command", "date", "version", "commit", "machine", "runtime"} <= record.keys()
    assert record["runtime"]["wall_seconds"] >= 0 and record["runtime"]["cpu_seconds"] >= 0
    with pytest.raises(FileNotFoundError):
        load_result("demo")  # the paper-scale file does not exist
    assert load_result("demo", "quick")["data"] == {"x": 1}
    assert result_path("demo", "paper").name == "demo.json"


def test_load_result_or_none_is_none_only_for_a_missing_file(monkeypatch, tmp_path):
    monkeypatch.setattr("flbook.results.results_dir", lambda: tmp_path)
    monkeypatch.setenv("FLPRIVACY_SCALE", "quick")
    save_result("demo", {"x": 1}, seeds=[3])
    assert load_result_or_none("demo") is None  # no paper-scale file
    assert load_result_or_none("demo", "quick")["data"] == {"x": 1}
    (tmp_path / "demo.json").write_text((tmp_path / "demo_quick.json").read_text())
    with pytest.raises(ValueError):
        load_result_or_none("demo")  # a quick file under the paper name is an error, not a missing file


def test_short_long_rows_names_the_active_phases_by_length():
    summary = {"passive/Ours": 1, "active-10/Ours": 2, "active-50/Grad": 3, "Model-w-O": 4}
    assert short_long_rows(summary, (10, 50)) == {"passive/Ours": 1, "active-short/Ours": 2, "active-long/Grad": 3,
                                                  "Model-w-O": 4}
    assert short_long_rows({"active-5/Ours": 1, "active-15/Ours": 2}, [5, 15]) == {"active-short/Ours": 1,
                                                                                    "active-long/Ours": 2}


def test_results_record_the_commit_read_when_the_run_started(monkeypatch, tmp_path):
    """A run of hours records the code it imported, not a commit made while it ran."""
    from flbook import experiments

    fresh = subprocess.run([sys.executable, "-c", "import flbook.experiments as e; "
                            "print(e.git_commit.cache_info().currsize)"], capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "0"  # a chapter that only reads results never runs git
    as_command = subprocess.run([sys.executable, "-c", "import sys; sys.orig_argv = ['python', '-m', "
                                 "'flbook.experiments.part2_toy']; import flbook.experiments as e; "
                                 "print(e.git_commit.cache_info().currsize)"], capture_output=True, text=True, check=True)
    assert as_command.stdout.strip() == "1"  # a command reads it when the package is imported, before any run
    assert experiments.started_as_command(["python", "-m", "flbook.experiments.part3_table1", "--seeds", "0"])
    assert not experiments.started_as_command(["python", "-m", "ipykernel_launcher", "-f", "x.json"])
    real_run = subprocess.run

    def run(args, *a, **k):
        if args and args[0] == "git":
            pytest.fail("git read again at save time")
        return real_run(args, *a, **k)

    monkeypatch.setattr(experiments.subprocess, "run", run)
    monkeypatch.setattr("flbook.results.results_dir", lambda: tmp_path)
    record = json.loads(save_result("demo", {"x": 1}, seeds=[0]).read_text())
    assert record["commit"] == experiments.git_commit()


def test_scale_is_read_case_insensitively(monkeypatch):
    monkeypatch.setenv("FLPRIVACY_SCALE", " Paper ")
    assert config.scale() == "paper" and config.at_scale(1, 2) == 2
    monkeypatch.setenv("FLPRIVACY_SCALE", "QUICK")
    assert config.scale() == "quick" and config.at_scale(1, 2) == 1


def test_seed_streams_are_reproducible_and_independent():
    """child_seed gives one stream per key sequence (order matters), the same every call; the
    server's sampling and each client's shuffling draw from their own streams."""
    s = 7
    kids = [config.child_seed(s, k) for k in range(50)]
    assert len(set(kids)) == 50 and config.child_seed(s) not in kids[1:]
    # NumPy's SeedSequence reads the keys as one integer, so trailing zero keys add nothing (the
    # caveat in child_seed's docstring): client 0's shuffling stream (2, 0) is the stream (2)
    assert config.child_seed(s, 2, 0) == config.child_seed(s, 2) and config.child_seed(s, 0) == config.child_seed(s)
    assert config.child_seed(s, 1, 2) != config.child_seed(s, 2, 1)
    assert kids == [config.child_seed(s, k) for k in range(50)]
    assert torch.equal(torch.rand(5, generator=config.generator(s)), torch.rand(5, generator=config.generator(s)))
    draws = [torch.rand(8, generator=g) for g in (config.server_generator(s), config.client_generator(s, 0),
                                                  config.client_generator(s, 1))]
    assert not any(torch.equal(a, b) for i, a in enumerate(draws) for b in draws[i + 1:])


def test_a_clients_shuffling_does_not_depend_on_the_other_clients():
    """The reason for per-client streams: adding a client leaves client 0's mini-batch order, and
    so her first reply, unchanged (same θ^0, same data, same stream)."""
    from flprivacy import ClientData, LocalSGD, linear_regression, run_fedavg

    g = torch.Generator().manual_seed(0)
    clients = [ClientData(torch.randn(n, 3, generator=g, dtype=torch.float64),
                          torch.randn(n, generator=g, dtype=torch.float64)) for n in (12, 9, 15)]
    local = LocalSGD(lr=0.1, epochs=1, batch_size=4)
    two = run_fedavg(linear_regression(3), clients[:2], rounds=1, local=local, seed=3)
    three = run_fedavg(linear_regression(3), clients, rounds=1, local=local, seed=3)
    assert torch.equal(two.log.exchange(0, 0).returned, three.log.exchange(0, 0).returned)
    other = run_fedavg(linear_regression(3), clients[:2], rounds=1, local=local, seed=4)
    assert not torch.equal(two.log.exchange(0, 0).returned, other.log.exchange(0, 0).returned)
