"""The rules behind Diana et al.'s Part II rows read from result files
(flbook.ledger.diana_reconstruction): Theorem 1 (eq. 18 in a 1 - δ fraction of the mini-batch
trials, the error falling with B, the rates O(1/√n_c) and O(η) as log-log slopes within 0.3),
Fig. 2 and App. B.3, App. C.1. Each test builds a record with the fields the command saves and
numbers whose answer is known in closed form (a power law has its exponent as log-log slope);
``tests/mutants/ledger.py`` lists the bugs these tests must catch."""

from __future__ import annotations

import math

import pytest

from flbook.ledger import diana_reconstruction as D

S_C = 256


def _rec(name: str, data: dict, scale: str = "paper") -> dict:
    return {"name": name, "scale": scale, "seeds": [0, 1], "command": f"python -m flbook.experiments.{name}",
            "commit": "abc", "date": "2026-11-28", "data": data}


def _thm1(rate_n: float = -0.5, rate_eta: dict[int, float] | None = None, failing: int = 0, delta: float = 0.05,
          batch_errors=(0.4, 0.3, 0.2), spread: float = 0.0) -> dict:
    """A ``part2_theorem1`` record: error = n_c^rate_n over n_c; error = c_B η^rate over η for two batch
    sizes with different constants; the B sweep's mini-batch errors ``batch_errors`` (B = 16, 32, 64, two
    trials each at ± ``spread``) and two full-batch trials far above their bound (Prop. 2's regime, outside eq. 18); ``failing`` of the 20
    n_c-sweep trials above their bound."""
    rate_eta = rate_eta or {8: 1.0, 128: 1.25}
    recs = []
    for i, n in enumerate((12, 48, 192, 768)):
        for s in range(5):
            e = n ** rate_n
            bad = i * 5 + s < failing
            recs.append({"sweep": "n_c", "n_c": n, "B": 32, "lr": 0.03, "error": e, "bound": e / 2 if bad else 10 * e})
    for B, c in ((8, 3.0), (128, 0.2)):
        for lr in (0.003, 0.01, 0.03, 0.1):
            e = c * lr ** rate_eta[B]
            recs.append({"sweep": "lr", "n_c": 48, "B": B, "lr": lr, "error": e, "bound": 10 * e})
    for B, e in zip((16, 32, 64), batch_errors):  # two trials each, e ± spread: standard error of the mean = spread
        for x in (e - spread, e + spread):
            recs.append({"sweep": "B", "n_c": 48, "B": B, "lr": 0.01, "error": x, "bound": 10 * x})
    for _ in range(2):
        recs.append({"sweep": "B", "n_c": 48, "B": S_C, "lr": 0.01, "error": 1e-3, "bound": 1e-9})
    return _rec("part2_theorem1", {"records": recs, "settings": {"S_c": S_C, "delta": delta}, "seeds": 5})


def _status(rows) -> dict[str, str]:
    return {r.result_id: r.status for r in rows}


def test_theorem1_numbers_are_exact_on_power_laws():
    t = D.theorem1_numbers(_thm1())
    assert t["slope_n"] == pytest.approx(-0.5, abs=1e-12)
    assert t["slope_eta"] == pytest.approx({8: 1.0, 128: 1.25}, abs=1e-12)   # each B's own sweep
    assert (t["holds"], t["trials"]) == (20 + 8 + 6, 34)                       # the full-batch trials are not counted
    assert t["B_se"][16] == 0.0 and t["n_c_se"][12] == 0.0
    assert D.theorem1_numbers(_thm1(spread=0.01))["B_se"][16] == pytest.approx(0.01)  # sd 0.01·√2 over √2 trials


def test_theorem1_rows_on_a_record_that_follows_the_paper():
    assert set(_status(D._theorem1_rows(_thm1())).values()) == {"reproduced"}


def test_theorem1_bound_needs_a_one_minus_delta_fraction():
    rid = "Diana Thm. 1 bound holds with probability 1-δ"
    assert _status(D._theorem1_rows(_thm1(failing=1, delta=0.05)))[rid] == "reproduced"     # 33 of 34 >= 95 %
    assert _status(D._theorem1_rows(_thm1(failing=2, delta=0.05)))[rid] == "not reproduced"  # 32 of 34 < 95 %


def test_theorem1_rates_within_their_tolerance():
    assert _status(D._theorem1_rows(_thm1(rate_n=-0.75)))["Diana Thm. 1 error O(1/√n_c)"] == "reproduced"
    assert _status(D._theorem1_rows(_thm1(rate_n=-0.9)))["Diana Thm. 1 error O(1/√n_c)"] == "partly"  # falls, too fast
    eta = "Diana Thm. 1 error O(η)"
    assert _status(D._theorem1_rows(_thm1(rate_eta={8: 1.0, 128: 1.4})))[eta] == "partly"
    assert _status(D._theorem1_rows(_thm1(batch_errors=(0.2, 0.3, 0.4))))["Diana Thm. 1 error falls as the batch size grows"] \
        == "not reproduced"


def _fig2(errors=(0.5, 0.2, 0.01), aia=(0.6, 0.7, 0.8), full_zero: bool = False, full_error: float | None = None,
          jitter: float = 0.0) -> dict:
    """Five seeds of two clients; seed s's errors are ``errors`` times 10^(jitter (s - 2)) (its log10 error
    moves by jitter (s - 2): a standard error of jitter·sd(-2..2)/√5 = jitter/√2 over the seeds)."""
    recs = []
    for reading in ("per-client", "shared"):
        for B, e, a in zip(D.FIG2_BATCH_SIZES, errors, aia):
            for seed in range(5):
                for client in (0, 1):
                    err = e * 10 ** (jitter * (seed - 2))
                    if B == max(D.FIG2_BATCH_SIZES) and (full_zero or full_error is not None):
                        err = 0.0 if full_zero else full_error
                    recs.append({"reading": reading, "lr": 0.01, "B": B, "seed": seed, "client": client, "error": err,
                                 "aia_reconstructed": a, "aia_local_optimum": 0.9})
    return _rec("part2_toy_fig2", {"records": recs, "seeds": 5})


def test_fig2_and_b3_rows():
    ids = ["Diana Fig. 2 left error falls with batch size", "Diana Fig. 2 right AIA accuracy rises with batch size",
           "Diana App. B.3 full-batch error close to but not zero"]
    assert [_status(D._toy_rows(_fig2()))[i] for i in ids] == ["reproduced"] * 3
    assert _status(D._toy_rows(_fig2(aia=(0.8, 0.7, 0.6))))[ids[1]] == "not reproduced"
    # B.3: "close to but not exactly equal to zero": an exact zero at B = S_c is not the paper's picture
    assert _status(D._toy_rows(_fig2(full_zero=True)))[ids[2]] == "partly"
    # a full-batch error above the B = 64 one contradicts its "close to zero" (non-zero still holds)
    assert _status(D._toy_rows(_fig2(errors=(0.1, 0.2, 0.3))))[ids[2]] == "partly"


def test_c1_min_cond_subset_must_lower_the_error():
    def rec(first: float, best: float) -> dict:
        logs = {"toy (d=11)": {"first_d_plus_1": {"cond": 1e4, "relative_error": first},
                               "random": {"cond": 400.0, "relative_error": best}}}
        return _rec("part2_subset_benchmark", {"logs": logs, "budget": 1e7}, scale="fixed")

    rid = "Diana App. C.1 messages chosen to minimise cond(Θ_out)"
    assert _status(D._subset_rows(rec(0.9, 0.5)))[rid] == "reproduced"
    assert _status(D._subset_rows(rec(0.5, 0.9)))[rid] == "not reproduced"


def test_theorem1_batch_trend_needs_two_standard_errors():
    """The error's fall from B = 16 to B = 64 (0.4 -> 0.2) must clear 2 SE of the difference, 2√2·spread."""
    rid = "Diana Thm. 1 error falls as the batch size grows"
    assert _status(D._theorem1_rows(_thm1(spread=0.07)))[rid] == "reproduced"       # 0.2 > 0.198
    assert _status(D._theorem1_rows(_thm1(spread=0.071)))[rid] == "not reproduced"  # 0.2 < 0.2008


def test_fig2_seed_trend_margins():
    xs = [1, 2, 3]
    # first to last: means 2 -> c, each with standard error 1: margin 2√2 ≈ 2.83
    assert D.fig2_seed_trend(xs[::2], [[1, 3], [3.9, 5.9]], expected=1, what="x").status == "reproduced"      # +2.9
    assert D.fig2_seed_trend(xs[::2], [[1, 3], [3.7, 5.7]], expected=1, what="x").status == "not reproduced"  # +2.7
    # a step against the claim is judged by its own noise (2 SE of that step: 2·3 = 6 here), not the ends' (0)
    assert D.fig2_seed_trend(xs, [[2, 2], [-5, 1], [10, 10]], expected=1, what="x").status == "reproduced"   # -4 < 6
    v = D.fig2_seed_trend(xs, [[2, 2], [-8, -2], [10, 10]], expected=1, what="x")                              # -7 > 6
    assert v.status == "partly" and "1 -> 2" in v.reason


def test_fig2_rows_read_per_seed_log_errors():
    left = "Diana Fig. 2 left error falls with batch size"
    # log10 errors -0.30, -0.70, -2.0: the fall of 1.7 clears 2 SE of the difference (2·jitter) up to jitter 0.85
    assert _status(D._toy_rows(_fig2(jitter=0.8)))[left] == "reproduced"
    assert _status(D._toy_rows(_fig2(jitter=0.9)))[left] == "not reproduced"
    f = D.fig2_numbers(_fig2(jitter=0.5))
    assert f["seed_log_error"][("shared", 0.01, 64)] == pytest.approx([math.log10(0.5) + 0.5 * (s - 2) for s in range(5)])


def test_b3_nonzero_is_above_rounding():
    rid = "Diana App. B.3 full-batch error close to but not zero"
    assert _status(D._toy_rows(_fig2(full_error=2e-10)))[rid] == "reproduced"
    assert _status(D._toy_rows(_fig2(full_error=0.5e-10)))[rid] == "partly"  # at rounding level: "exactly zero"


def test_c1_ties_within_rounding_only():
    def rec(first: float, best: float) -> dict:
        logs = {"toy (d=11)": {"first_d_plus_1": {"cond": 1e4, "relative_error": first},
                               "random": {"cond": 400.0, "relative_error": best}}}
        return _rec("part2_subset_benchmark", {"logs": logs, "budget": 1e7}, scale="fixed")

    rid = "Diana App. C.1 messages chosen to minimise cond(Θ_out)"
    assert _status(D._subset_rows(rec(0.5, 0.5 + 5e-10)))[rid] == "reproduced"      # a tie within 1e-9
    assert _status(D._subset_rows(rec(0.5, 0.5 + 1e-8)))[rid] == "not reproduced"


def test_referee_counts_the_part2_rows():
    from flbook.ledger import referee as R

    rows = D.rows()
    assert [r.result_id for r in rows] == list(D.reconstruction_row_ids())
    assert all(D.made_here(r) for r in rows)
    counts = {r.result_id: D.count_row(r) for r in rows}
    alg3 = counts["Diana Alg. 3 passive least-squares estimator"]
    assert alg3.excluded == "control" and "implementation" in alg3.excluded_why
    assert counts["Diana App. A Lemma 2 W invertible"].cause == "the paper"
    assert counts["Diana App. C.1 messages chosen to minimise cond(Θ_out)"].cause == "our protocol"
    others = [k for k, c in counts.items() if c == R.COUNTS]
    assert len(others) == len(rows) - 4
    for r in rows:  # every row is a valid ledger entry, none on stand-in data
        e = R.judge(r, counts[r.result_id])
        assert not e.stand_in and e.section in ("paper", "apart")
    from flbook.ledger import diana

    assert diana.referee(rows[0]) == alg3
