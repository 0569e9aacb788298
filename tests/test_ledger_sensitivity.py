"""The ledger's rules for Diana et al.'s Fig. 3 and App. C.2-C.3 (flbook.ledger.diana_sensitivity),
on constructed sweeps whose verdicts follow from the margins' formula by hand."""

from __future__ import annotations

import math

import pytest

from flbook.ledger import diana, diana_sensitivity as DS

N = 10_000  # rows attacked per seed


def _sweep(factor: str, curves: dict[str, list[float]], *, sd: float = 0.0, k: int = 1,
           xs: list[float] | None = None) -> DS.Sweep:
    xs = xs or list(range(len(next(iter(curves.values())))))
    rec = {"name": f"part3_fig3_{factor}_synthetic", "scale": "paper", "command": "x", "date": "d",
           "data": {"factor": factor, "seeds": list(range(k)),
                    "points": [{"settings": {"grad_relaxation": "input", "grad_sampler": "sigmoid"}}]}}
    return DS.Sweep(factor, rec, xs, curves, {c: [sd] * len(v) for c, v in curves.items()}, N, k)


def test_margin_is_three_standard_errors_of_a_difference():
    s = _sweep("heterogeneity", {"a": [50.0, 50.0]})
    se = 100 * math.sqrt(0.25 / N)  # 0.5 p.p.
    assert s.se("a", 0) == pytest.approx(se)
    assert s.margin("a", 0, "a", 1) == pytest.approx(3 * math.sqrt(2) * se)
    three = _sweep("heterogeneity", {"a": [50.0, 50.0]}, k=3)  # more seeds: smaller binomial error
    assert three.se("a", 0) == pytest.approx(se / math.sqrt(3))
    spread = _sweep("heterogeneity", {"a": [50.0, 50.0]}, sd=6.0, k=4)  # the seeds' spread dominates
    assert spread.se("a", 0) == pytest.approx(3.0)


def test_a_rise_must_clear_the_margin():
    m = 3 * math.sqrt(2) * 0.5  # ≈ 2.12 p.p. at p = 0.5
    rule = DS._rises("passive/Ours")
    assert rule(_sweep("heterogeneity", {"passive/Ours": [50.0, 50.0 + m + 0.2]}))[1].status == "reproduced"
    assert rule(_sweep("heterogeneity", {"passive/Ours": [50.0, 50.0 + m - 0.2]}))[1].status == "not reproduced"
    fall = DS._rises("active/Ours", -1)
    assert fall(_sweep("batch_size", {"active/Ours": [60.0, 55.0]}))[1].status == "reproduced"
    assert fall(_sweep("batch_size", {"active/Ours": [55.0, 60.0]}))[1].status == "not reproduced"


def test_coin_flip_and_not_sensitive_are_comparable():
    """"Random guessing" and "not sensitive" use the referee's "comparable": within 3 p.p. (not "within
    noise", which passes more easily the fewer rows are attacked)."""
    near = _sweep("epochs", {"passive/Grad": [70.0, 60.0, 53.0], "passive/Ours": [70.0, 73.0, 71.0]})
    assert DS._coin_flip(near)[1].status == "reproduced"  # |53 - 50| = 3
    assert DS._not_sensitive(near)[1].status == "reproduced"  # highest 73, lowest 70
    far = _sweep("epochs", {"passive/Grad": [70.0, 60.0, 53.1], "passive/Ours": [70.0, 73.1, 72.0]})
    assert DS._coin_flip(far)[1].status == "not reproduced"  # 3.1 > 3
    v = DS._not_sensitive(far)[1]
    assert v.status == "not reproduced" and "73.1" in v.reason  # a middle E counts, not only the last


def test_sizes_compare_the_mean_with_the_papers_number():
    s = _sweep("heterogeneity", {"passive/Ours": [50.0, 80.0], "passive/Grad": [52.0, 59.0],
                                 "active/Ours": [90.0, 95.0], "active/Grad": [59.0, 66.0]})
    assert DS._gap_at_least("passive/Ours", "passive/Grad", 20.0, "last")(s)[1].status == "reproduced"  # 21
    assert DS._gap_at_least("active/Ours", "active/Grad", 30.0, "every")(s)[1].status == "not reproduced"  # 29
    assert DS._faster(s)[1].status == "reproduced"  # +30 vs +7
    assert DS._below_on_iid(s)[1].status == "not reproduced"  # 2 < 2.12: within noise
    below = _sweep("heterogeneity", {"passive/Ours": [47.0, 75.0], "passive/Grad": [52.0, 65.0]})
    assert DS._below_on_iid(below)[1].status == "reproduced"  # 5 below Grad: beyond noise, at most 5 ("slightly")
    far_below = _sweep("heterogeneity", {"passive/Ours": [45.9, 75.0], "passive/Grad": [52.0, 65.0]})
    assert DS._below_on_iid(far_below)[1].status == "partly"  # 6.1 below: the direction holds, "slightly" not
    assert DS._faster(below)[1].status == "reproduced"  # +28 vs +13
    slower = _sweep("heterogeneity", {"passive/Ours": [70.0, 75.0], "passive/Grad": [50.0, 65.0]})
    assert DS._faster(slower)[1].status == "not reproduced"  # higher, but gains +5 against +15


def test_indistinguishable_and_the_grad_comparisons():
    s = _sweep("heterogeneity", {"Model-w-O": [98.0, 97.0], "active/Ours": [97.5, 80.0]})
    st, v = DS._indistinguishable(s)
    assert v.status == "not reproduced" and "1: +17.0" in v.reason and "0:" not in v.reason
    edge = _sweep("heterogeneity", {"Model-w-O": [98.0, 97.0], "active/Ours": [95.0, 93.9]})
    assert DS._indistinguishable(edge)[1].status == "not reproduced"  # 3.0 is comparable, 3.1 is not
    assert "1: +3.1" in DS._indistinguishable(edge)[1].reason and "0:" not in DS._indistinguishable(edge)[1].reason
    above = _sweep("heterogeneity", {"Model-w-O": [98.0, 80.0], "active/Ours": [97.5, 97.0]})
    assert DS._indistinguishable(above)[1].status == "not reproduced"  # 17 p.p. the other way
    assert DS._indistinguishable(_sweep("heterogeneity", {"Model-w-O": [98.0, 97.0], "active/Ours": [97.5, 97.4]})
                                 )[1].status == "reproduced"
    same = _sweep("epochs", {"active/Grad": [70.0, 71.0], "passive/Grad": [70.0, 71.0]})
    v = DS._active_grad_gains(same)[1]
    assert v.status == "not reproduced" and "active Grad is passive Grad" in v.reason
    gains = _sweep("epochs", {"active/Grad": [70.0, 80.0], "passive/Grad": [70.0, 60.0]})
    assert DS._active_grad_gains(gains)[1].status == "reproduced"
    early = _sweep("start_round", {"active/Grad": [80.0, 70.0]})
    assert DS._early(early)[1].status == "reproduced"
    assert DS._early(_sweep("start_round", {"active/Grad": [70.0, 80.0]}))[1].status == "not reproduced"
    c3 = _sweep("active_rounds", {"active/Ours": [70.0, 80.0], "active/Grad": [70.0, 71.0]})
    assert DS._grad_gains_less(c3)[1].status == "reproduced"
    both = _sweep("active_rounds", {"active/Ours": [70.0, 80.0], "active/Grad": [60.0, 70.0]})
    assert DS._grad_gains_less(both)[1].status == "not reproduced"  # Grad gains as much
    b = _sweep("batch_size", {"passive/Ours": [70.0, 70.0], "passive/Grad": [60.0, 69.5],
                              "active/Ours": [80.0, 80.0], "active/Grad": [60.0, 60.0]})
    assert DS._ours_above_grad(b)[1].status == "partly"  # passive: +0.5 at the second B is within noise


def test_curves_read_a_sweep_file():
    pts = [{"value": v, "settings": {"active_rounds": [10, 50]},
            "summary": {"passive/Ours": [60.0 + v, 1.0], "active-10/Ours": [0.0, 0.0], "active-50/Ours": [70.0 + v, 2.0],
                        "Model-w-O": [98.0, 0.1]}} for v in (1, 5)]
    xs, mean, sd = DS.curves({"data": {"factor": "epochs", "points": pts}})
    assert xs == [1, 5] and mean["active/Ours"] == [71.0, 75.0] and sd["active/Ours"] == [2.0, 2.0]
    assert "active-10/Ours" not in mean and "active/Ours" in mean
    rounds = [{"value": [1, 5], "settings": {"active_rounds": [1, 5]},
               "summary": {"passive/Ours": [60.0, 1.0], "active-1/Ours": [61.0, 0.0], "active-5/Ours": [66.0, 0.0]}}]
    xs, mean, _ = DS.curves({"data": {"factor": "active_rounds", "points": rounds}})
    assert xs == [1, 5] and mean["active/Ours"] == [61.0, 66.0] and mean["passive/Ours"] == [60.0, 60.0]
    with pytest.raises(ValueError, match="factor"):
        DS.sweep("learning_rate")


def test_a_missing_sweep_is_not_run_and_every_claim_has_one_row():
    rows = DS.rows({f: None for f in DS.FACTORS})
    assert [r.result_id for r in rows] == [c.result_id for c in DS.CLAIMS] + [DS.fig4_row().result_id]
    assert {r.status for r in rows[:-1]} == {"not run"}
    assert len({c.result_id for c in DS.CLAIMS}) == len(DS.CLAIMS)


def test_the_sensitivity_rows_replace_diana_aias_old_ones():
    """Same ids, one row each in the Diana ledger, decided by the margins of this module."""
    rows = diana.rows()
    ids = [r.result_id for r in rows]
    assert len(ids) == len(set(ids))
    for c in DS.CLAIMS:
        (r,) = [r for r in rows if r.result_id == c.result_id]
        assert r.claim == c.claim


def test_fig4_row_keeps_the_decided_verdict_and_shows_the_other_rows(monkeypatch):
    """diana_sensitivity.fig4_row replaces diana_aia's Fig. 4 row of the same id: same verdict (active-50 Ours'
    mean rho against the no-relation level), and the text gives passive Ours' and Model-w-O's trends."""
    from flbook.ledger import diana_aia

    def record(active: float, oracle: float) -> dict:
        return {"name": "part3_fig4_synthetic", "scale": "paper", "command": "x", "date": "d", "seeds": [0, 1, 2],
                "data": {"trend": {"level": -0.245, "clients": 51, "seeds": 3,
                                   "passive/Ours": {"rho": [0.0], "mean_rho": -0.06},
                                   "active-50/Ours": {"rho": [active], "mean_rho": active},
                                   "Model-w-O": {"rho": [oracle], "mean_rho": oracle}}}}

    for active, status in ((-0.67, "reproduced"), (-0.10, "not reproduced")):
        rec = record(active, -0.86)
        real = DS.record_or_none
        monkeypatch.setattr(DS, "record_or_none", lambda name, scale_="paper", _r=rec, _real=real:
                            _r if name == "part3_fig4_synthetic" else _real(name, scale_))
        got, decided = DS.fig4_row(), diana_aia.fig4_row(rec, DS.CHAPTER, DS.DATA)
        assert got.result_id == decided.result_id and got.status == decided.status == status
        assert "Model-w-O -0.86" in got.ours and "passive/Ours -0.06" in got.ours and got.ours.startswith(decided.ours)
    ids = [r.result_id for r in diana.rows()]
    assert ids.count(decided.result_id) == 1


def test_slightly_needs_the_direction_beyond_noise_and_at_most_five_points():
    m = 3 * math.sqrt(2) * 0.5  # ≈ 2.12 p.p. at p = 0.5 (N rows, one seed)
    fall = DS.sensitivity_slightly("active/Ours", -1)
    assert fall(_sweep("batch_size", {"active/Ours": [55.0, 50.0]}))[1].status == "reproduced"  # -5.0
    v = fall(_sweep("batch_size", {"active/Ours": [55.2, 50.0]}))[1]
    assert v.status == "partly" and "not slight" in v.reason  # -5.2: the "-13.8 passes slightly" case
    assert fall(_sweep("batch_size", {"active/Ours": [50.0 + m - 0.2, 50.0]}))[1].status == "not reproduced"
    assert fall(_sweep("batch_size", {"active/Ours": [50.0 + m + 0.2, 50.0]}))[1].status == "reproduced"
    rise = DS.sensitivity_slightly("active/Ours")
    assert rise(_sweep("start_round", {"active/Ours": [60.0, 63.0]}))[1].status == "reproduced"
    assert rise(_sweep("start_round", {"active/Ours": [63.0, 60.0]}))[1].status == "not reproduced"
    words = [c for c in DS.CLAIMS if "slight" in c.claim]
    assert len(words) == 5  # every "slightly" of §5.4 and App. C.2 is judged by the word's threshold
    up = _sweep("x", {"active/Ours": [60.0, 70.0], "passive/Ours": [60.0, 70.0], "passive/Grad": [70.0, 70.0]})
    down = _sweep("x", {"active/Ours": [70.0, 60.0], "passive/Ours": [70.0, 60.0]})
    for c in words:  # a 10-point change the claimed way is never "slight"
        assert c.rule(down if c.paper_value == "falls" else up)[1].status == "partly", c.result_id


def test_referee_counts_every_row_as_stand_in():
    from flbook.ledger import referee as R

    rows = DS.rows()
    assert all(DS.made_here(r) for r in rows)
    assert not DS.made_here(diana.rows()[0])  # Part II's first row is not this module's
    for r in rows:
        c = DS.count_row(r)
        e = R.judge(r, c)
        assert e.section == "stand-in" and not e.excluded
        assert "synthetic census" in c.stand_in and ("15,982" in c.stand_in or "332,900" in c.stand_in)
        assert diana.referee(r) == c
        if e.status in ("partly", "not reproduced"):
            assert e.cause in R.CAUSES
    fig4 = [r for r in rows if r.result_id == DS.SENSITIVITY_FIG4_ID]
    assert len(fig4) == 1 and "332,900" in DS.count_row(fig4[0]).stand_in and "Income-A" in DS.count_row(fig4[0]).stand_in
    assert set(DS.SENSITIVITY_CAUSES) <= {c.result_id for c in DS.CLAIMS}
    assert set(DS.SENSITIVITY_CAUSES.values()) <= set(R.CAUSES)
