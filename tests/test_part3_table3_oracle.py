"""Table 3's Model-w-O three ways (``part3_table3_controls --dp-oracle``): ours, the authors' oracle,
and the authors' oracle under the federation's DP (flprivacy.optimum.tuned_local_models(dp=...))."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

pytest.importorskip("opacus")

from flprivacy import mlp  # noqa: E402
from flprivacy.config import child_seed  # noqa: E402
from flbook.experiments import load_result, part3_pipeline, part3_table3, part3_table3_controls  # noqa: E402
from flprivacy.optimum import tuned_local_models  # noqa: E402

TINY_ORACLE = {"quick": {"epochs": 2, "n_trials": 2}, "paper": {"epochs": 2, "n_trials": 2}}


def _tiny():
    return replace(part3_table3.table3_settings("Medical"), rounds=4, active_rounds=(2,), adam_trials=2, adam_batch=2,
                   model_wo_steps=10, grad_iterations=2, grad_learning_rates=(1e3,), seeds=(0,))


def test_dp_oracle_rows_are_the_tables_and_the_oracles(monkeypatch):
    """Ours is Table 3's Model-w-O cell (run_table3 on the same seed and clipping norm); the two
    authors' oracles are tuned_local_models without and with the federation's DP (its clipping
    norm, ε, δ), with σ for the oracle's own epochs (not the federation's rounds)."""
    monkeypatch.setattr(part3_table3_controls, "AUTHORS_ORACLE", TINY_ORACLE)
    s = _tiny()
    out = part3_table3_controls.dp_oracle_seed("Medical", s, 0, log=lambda m: None)
    task = part3_pipeline.make_task("Medical", "medical", 0, s)
    clip = part3_table3_controls.TABLE3_CLIP["Medical"]
    table = part3_table3.run_table3(task, s, 0, clip, log=None)
    assert out["ours"]["accuracy"] == table["rows"]["Model-w-O"]
    assert out["ours"]["rows"]["passive/Ours"] == table["rows"]["passive/Ours"]
    assert out["federation"]["noise_multiplier"] == table["details"]["after_training"]["noise_multiplier"]
    model = mlp(task.n_features, s.hidden)
    dp = part3_table3.dp_trainer("Medical", s, clip)
    for name, kw in (("authors", {}), ("authors, DP", {"dp": dp})):
        tuned = tuned_local_models(model, task.clients, batch_size=s.batch_size, seed=child_seed(0, 15), epochs=2,
                                   n_trials=2, **kw)
        acc = part3_pipeline.model_based_accuracy(model, [t.theta for t in tuned], task.clients, task.attribute)
        assert out[name]["accuracy"] == acc and out[name]["params"] == [t.params for t in tuned]
        assert 0 <= out[name]["accuracy"] <= 100
    from opacus.accountants.utils import get_noise_multiplier

    for sigma, c in zip(out["authors, DP"]["noise_multiplier"], task.clients):
        assert sigma == pytest.approx(get_noise_multiplier(
            target_epsilon=part3_table3.TARGET_EPSILON, target_delta=part3_table3.TARGET_DELTA["Medical"],
            sample_rate=1 / -(-c.n // s.batch_size), epochs=2, accountant="rdp"), rel=1e-12)
    assert out["authors, DP"]["noise_multiplier"][0] != out["federation"]["noise_multiplier"]
    # the noise is there: the DP oracle's models differ from the non-private ones
    assert out["authors, DP"]["loss"] != out["authors"]["loss"]


def test_table3_clip_is_the_committed_tables_choice():
    """TABLE3_CLIP is the clipping norm App. C.4's rule selected in the committed paper-scale
    Table 3 files, so that --dp-oracle's federation is the table's."""
    for task, (source, _) in part3_table3_controls.ORACLE_TASKS.items():
        try:
            rec = load_result(part3_table3.result_name(task, source), "paper")
        except FileNotFoundError:
            continue
        assert rec["data"]["clip"]["best"] == part3_table3_controls.TABLE3_CLIP[task]


def test_dp_oracle_command_line_rejects_mixed_flags():
    with pytest.raises(SystemExit):
        part3_table3_controls.main(["--dp-oracle", "--grad-stopping", "--seeds", "0"])
    with pytest.raises(SystemExit):
        part3_table3_controls.main(["--task", "Income-L", "--seeds", "0"])


def test_dp_oracle_sigma_grows_with_the_oracles_epochs():
    """The federation's budget spread over more epochs needs more noise: σ(200 epochs) > σ(20)."""
    from flprivacy.defences import DPLocalSGD
    from flprivacy.federation import ClientData

    g = torch.Generator().manual_seed(0)
    X = torch.randn(60, 3, generator=g, dtype=torch.float64)
    data = [ClientData(X, X.sum(1))]
    dp = DPLocalSGD(lr=0.1, max_grad_norm=1.0, target_epsilon=1.0, target_delta=1e-5, total_rounds=3, batch_size=8)
    model = mlp(3, 4, dtype=torch.float64)
    s20, s200 = (tuned_local_models(model, data, epochs=e, batch_size=8, n_trials=1, batch=1, dp=dp)[0].noise_multiplier
                 for e in (2, 20))
    assert s200 > s20 > 0


def test_ledger_reason_reads_the_dp_oracle_file(monkeypatch):
    """Table 3's Model-w-O reason states the three oracles' means and their distances to the
    paper's value, computed from the file (not typed); "" for a task without the file."""
    from flbook.ledger import diana_aia

    assert diana_aia.DP_ORACLE_FILES == {t: n for t, (_, n) in part3_table3_controls.ORACLE_TASKS.items()}

    def seed(o, a, d):
        return {"ours": {"accuracy": o}, "authors": {"accuracy": a},
                "authors, DP": {"accuracy": d, "noise_multiplier": [13.0, 15.0]}}

    rec = {"data": {"task": "Medical", "target_epsilon": 1.0, "authors_oracle": {"epochs": 200},
                    "per_seed": [seed(99.0, 97.0, 95.0), seed(98.0, 96.0, 94.0)]}}
    monkeypatch.setattr(diana_aia, "record_or_none", lambda name: rec if name == "part3_table3_controls_oracle" else None)
    text = diana_aia.dp_oracle_controls_reason("Medical", 94.30)
    assert "2 seeds" in text and "98.50" in text and "96.50" in text and "94.50" in text and "σ = 14.00" in text
    assert "0.20 p.p. from the paper's 94.30 against ours' 4.20" in text and "200 epochs" in text
    assert diana_aia.dp_oracle_controls_reason("Income-A", 58.53) == ""
    assert diana_aia.dp_oracle_controls_reason("Income-L", 79.33) == ""
