"""The rules that decide Xu & Neglia 2021's rows in the ledger (flbook.ledger.xu_neglia), each at
its edge, on made-up inputs: Fig. 1's numbers and claims (panels a-c, §5's batch sentence), the Adult
sizes and row count, §4's Table 1 claims (the decoded range, client 3's gain), the lower bound's
counts, Observation 1's check and the affine map's.

A rule loosened or tightened by one comparison, or reading the wrong client, batch size or
standard error, breaks a test here (`tests/mutants/ledger_xu.py`). `test_part12_checks.py` holds
the tests of Table 1's numbers and of the paper's own Table 1 under its rules.
"""

from __future__ import annotations

import statistics

import pytest

from flbook.ledger import xu_neglia as X


def _fig1_data(loss=None, decoded=None, last=None, dist=None, seeds=(0, 1)):
    """A ``part2_adult_fig1`` data dict: 10 clients, clients 0-1 attacked at B = 16, 64.
    ``loss[(c, B)]``/``decoded[B]``/``last[B]`` give each (seed-)record's value as a list over seeds."""
    Bs = (16, 64)
    loss = loss or {(c, B): [1.0 / B, 1.0 / B] for c in (0, 1) for B in Bs}
    decoded = decoded or {B: [0.8, 0.8] for B in Bs}
    last = last or {B: [0.7, 0.7] for B in Bs}
    recs = [{"seed": s, "client": c, "B": B, "mapping_loss": loss[(c, B)][i], "test_acc_decoded": decoded[B][i],
             "test_acc_last_returned": last[B][i]} for i, s in enumerate(seeds) for c in (0, 1) for B in Bs]
    if dist is None:
        dist = [[0.0 if i == j else (1.0 if (i < 3) != (j < 3) else 0.2) for j in range(10)] for i in range(10)]
    return {"optimum_distances": dist, "records": recs, "sizes": [[126, 30], [258, 60], [134, 30]] + [[500, 100]] * 7,
            "phd_rows": [160, 320, 170], "n_rows": 12300}


def test_fig1_numbers():
    loss = {(0, 16): [0.5, 0.7], (0, 64): [0.1, 0.1], (1, 16): [0.2, 0.2], (1, 64): [0.1, 0.3]}
    dist = [[0.0] * 10 for _ in range(10)]
    for i in range(10):
        for j in range(10):
            if i != j:
                dist[i][j] = 0.1 * (i + j) if min(i, j) >= 3 else 1 + i + j
    f = X.fig1_numbers(_fig1_data(loss=loss, dist=dist, decoded={16: [0.5, 0.7], 64: [0.9, 0.9]}))
    assert f["phd_min_to_rest"] == [1 + 0 + 3, 1 + 1 + 3, 1 + 2 + 3]  # each PhD client's nearest among 3-9
    assert f["rest_max"] == pytest.approx(0.1 * (9 + 8))  # the farthest pair among 3-9
    assert f["loss"][(0, 16)] == pytest.approx(0.6) and f["loss"][(1, 64)] == pytest.approx(0.2)
    se = 0.2 / 2  # two values a, b (0.5, 0.7; 0.1, 0.3): stdev |a - b|/√2, standard error |a - b|/2
    assert f["loss_se"][0] == pytest.approx(se) and f["loss_se"][1] == pytest.approx(se)  # the larger over B
    assert f["decoded"][16] == pytest.approx(0.6)
    assert f["decoded_se"] == pytest.approx(statistics.stdev([0.5, 0.5, 0.7, 0.7]) / 2)  # both clients' records at B = 16
    assert f["train_sizes"] == [126, 258, 134] and f["seeds"] == 2 and f["Bs"] == [16, 64]


def _claim(f, i):
    return X.fig1_claims(f)[i]["verdict"]


def test_fig1a_every_phd_client_farther_than_the_farthest_pair_among_the_rest():
    f = X.fig1_numbers(_fig1_data())
    assert _claim(f, 0).status == "reproduced"
    f = {**f, "phd_min_to_rest": [1.0, 0.15, 1.0], "rest_max": 0.2}  # client 1 has a near neighbour among 3-9
    v = _claim(f, 0)
    assert v.status == "partly" and "client 1" in v.reason


def test_fig1b_loss_falls_with_b_beyond_noise_for_every_client():
    f = X.fig1_numbers(_fig1_data())  # 1/B for both: falls, no noise
    assert _claim(f, 1).status == "reproduced"
    rising = {(c, B): [B / 64] * 2 for c in (0, 1) for B in (16, 64)}
    assert _claim(X.fig1_numbers(_fig1_data(loss=rising)), 1).status == "not reproduced"
    # a fall of 0.1: beyond 2 standard errors for client 0 (none), within them for client 1 (0.06 at B = 16)
    noisy = {(0, 16): [0.25, 0.25], (0, 64): [0.15, 0.15], (1, 16): [0.19, 0.31], (1, 64): [0.15, 0.15]}
    f = X.fig1_numbers(_fig1_data(loss=noisy))
    assert f["loss_se"][1] == pytest.approx(0.06) and f["loss_se"][0] == 0
    v = _claim(f, 1)
    assert v.status == "partly" and "client 1" in v.reason


def test_fig1c_decoded_above_last_returned_at_every_b():
    f = X.fig1_numbers(_fig1_data())
    assert _claim(f, 2).status == "reproduced"
    f = X.fig1_numbers(_fig1_data(decoded={16: [0.6, 0.6], 64: [0.8, 0.8]}))  # below the last returned at B = 16
    v = _claim(f, 2)
    assert v.status == "partly" and "B = 16" in v.reason and "B = 64" not in v.reason
    f = X.fig1_numbers(_fig1_data(decoded={16: [0.7, 0.7], 64: [0.7, 0.7]}))  # equal: not above
    v = _claim(f, 2)
    assert v.status == "not reproduced" and "the messages barely move" in v.reason


def test_section5_decoded_accuracy_grows_with_b_beyond_noise():
    up = X.fig1_numbers(_fig1_data(decoded={16: [0.70, 0.70], 64: [0.80, 0.80]}))
    assert _claim(up, 3).status == "reproduced"
    down = X.fig1_numbers(_fig1_data(decoded={16: [0.80, 0.80], 64: [0.70, 0.70]}))
    assert _claim(down, 3).status == "not reproduced"
    # a rise of 0.05 against a standard error of 0.035 at B = 16: within 2 SE, a tie
    noisy = X.fig1_numbers(_fig1_data(decoded={16: [0.69, 0.81], 64: [0.80, 0.80]}))
    assert noisy["decoded_se"] == pytest.approx(statistics.stdev([0.69, 0.69, 0.81, 0.81]) / 2)
    assert _claim(noisy, 3).status == "not reproduced"


def test_table1_decoded_range_and_client3_claims():
    steps = [1, 5, 10]
    p_dec = [X.PAPER_TABLE1[s]["decoded"][-1] for s in steps]
    p_range = max(p_dec) - min(p_dec)
    gains = {(s, c): (10.0 if c == 3 else 1.0) for s in steps for c in range(5)}

    def t(dec, gains=gains):
        return {"steps": steps, "clients": list(range(5)), "gains": gains,
                "acc": {**{(s, "last returned"): [0] * 5 + [60 + s] for s in steps},
                        **{(s, "decoded"): [0] * 5 + [d] for s, d in zip(steps, dec)}}}

    assert X.table1_claims(t([80, 80 + p_range, 80]))[2]["verdict"].status == "reproduced"  # the paper's own range
    assert X.table1_claims(t([80, 80 + p_range + 0.01, 80]))[2]["verdict"].status == "not reproduced"
    assert X.table1_claims(t([80, 80, 80]))[3]["verdict"].status == "reproduced"
    # client 3 must beat the best other client, not the first or the last
    for rival in (0, 2, 4):
        g = {**gains, **{(s, rival): 12.0 for s in steps}}
        v = X.table1_claims(t([80, 80, 80], g))[3]["verdict"]
        assert v.status == "not reproduced" and f"client {rival}" in v.reason, (rival, v.reason)
    g = {**gains, (5, 4): 12.0}  # at 5 local steps only
    v = X.table1_claims(t([80, 80, 80], g))[3]["verdict"]
    assert v.status == "partly" and "5 local steps" in v.reason


def test_lower_bound_counts_and_verdicts():
    d = 5
    hard = {"d": d, "staircase": [True] * d, "optimum_dense": True, "same": [True] * (d - 1) + [False] * 4}
    c = X.lower_bound_counts(hard)
    assert c == dict(d=5, tight=5, before=4, last_before=3, same_before=4, after=4, differ_after=4)
    rounds, messages = X.lower_bound_verdicts(hard)
    assert rounds.status == messages.status == "reproduced"
    # identical messages must last until round d-2 and differ from d-1: off by one either way breaks it
    early = {**hard, "same": [True] * (d - 2) + [False] * 5}
    late = {**hard, "same": [True] * d + [False] * 3}
    for h in (early, late):
        assert X.lower_bound_verdicts(h)[1].status == "partly", h["same"]
    assert X.lower_bound_verdicts({**hard, "staircase": [True] * (d - 1) + [False]})[0].status == "partly"
    assert X.lower_bound_verdicts({**hard, "optimum_dense": False})[0].status == "partly"


def test_adult_rows_sizes_and_row_count_tolerances():
    def rows_for(sizes, n_rows):
        data = _fig1_data()
        data["sizes"] = [[s, 30] for s in sizes] + data["sizes"][3:]
        data["n_rows"] = n_rows
        got = {r.result_id: r for r in X._fig1_rows({"data": data, "name": "part2_adult_fig1", "scale": "paper"})}
        return got["Xu §4 Adult PhD clients' training sizes"], got["Xu §4 Adult rows with at least a bachelor's degree"]

    # footnote 4's 12300 is rounded to hundreds: ±50 rows; a PhD client's size: within 2 rows
    tol, ntol = 2, 50
    p, n = X.PAPER_ADULT["phd_train_sizes"], X.PAPER_ADULT["n_rows"]
    assert (p, n) == ((126, 258, 134), 12300)
    sizes, rows = rows_for([p[0] + tol, p[1] - tol, p[2]], n + ntol)
    assert sizes.status == "reproduced" and rows.status == "reproduced"
    sizes, rows = rows_for([p[0] + tol + 1, p[1], p[2]], n - ntol - 1)
    assert sizes.status == "partly" and "client 0" in sizes.reason
    assert rows.status == "not reproduced"
    sizes, _ = rows_for([p[0], p[1], p[2] - tol - 1], n)
    assert "client 2" in sizes.reason


def test_observation1_row_needs_every_instance_within_its_bound_and_refused(monkeypatch):
    cases = [{"error": 1e-14, "bound": 1e-13, "refused": True} for _ in range(4)]
    hard = {"d": 3, "staircase": [True] * 3, "optimum_dense": True, "min_abs_optimum": 0.1,
            "same": [True, True, False, False]}
    aff = {"fraction_left": 1e-4, "allowed": 1e-3}
    monkeypatch.setattr(X, "hard_instance_live", lambda: hard)
    monkeypatch.setattr(X, "xu_cost_exponent_live", lambda: {"exponent": 2.8, "max_error": 1e-12})

    def obs1(cases, aff=aff):
        monkeypatch.setattr(X, "exact_recovery_live", lambda: {"cases": cases})
        monkeypatch.setattr(X, "affine_mapping_live", lambda: aff)
        rows = {r.result_id: r for r in X._live_rows()}
        return rows["Xu Observation 1 exact recovery from d+1 full-batch messages"], rows["Xu Algo. 3 affine G is Observation 1"]

    assert obs1(cases)[0].status == "reproduced"
    at_bound = [dict(c, error=c["bound"]) for c in cases]  # the bound itself holds
    assert obs1(at_bound)[0].status == "reproduced"
    over = cases[:3] + [dict(cases[3], error=2e-13)]
    v = obs1(over)[0]
    assert v.status == "partly" and "held in 3 of 4" in v.reason
    v = obs1(cases[:3] + [dict(cases[3], refused=False)])[0]
    assert v.status == "partly" and "d exchanges refused" in v.reason
    assert obs1(cases, {"fraction_left": 1e-3, "allowed": 1e-3})[1].status == "reproduced"
    assert obs1(cases, {"fraction_left": 2e-3, "allowed": 1e-3})[1].status == "not reproduced"


# ---- margins from our seeds' spread, Table 1 counted by role, the O(d³) cost live ----------------------


def _leaf_recs(acc, seeds=(0, 1, 2, 3)):
    """``part2_leaf_table1`` records: ``acc(seed, steps, client) -> (last returned, decoded)`` in %."""
    return [{"seed": q, "local_steps": s, "client": c, "acc_last_returned": acc(q, s, c)[0] / 100,
             "acc_decoded": acc(q, s, c)[1] / 100} for q in seeds for s in (1, 5, 10) for c in range(5)]


def test_table1_noise_is_two_standard_errors_of_paired_differences():
    a, b = [0.0, 0.0, 0.0, 0.0], [1.0, 3.0, 1.0, 3.0]  # differences 1, 3, 1, 3: sd 2/√3, SE 1/√3
    assert X.xu_table1_noise((a, b)) == pytest.approx(2 / 3 ** 0.5)
    assert X.xu_table1_noise((a, b), (a, [x + 5 for x in a])) == pytest.approx(2 / 3 ** 0.5)  # the largest pair's
    # the paper's printed table, or one run: no spread, the rounding of two printed numbers (never 0)
    assert X.xu_table1_noise((None, None)) == X.xu_table1_noise(([1.0], [2.0])) == 0.1


def test_table1_trend_of_last_returned_needs_paired_noise_margin():
    # the draw (seed) shifts every step count alike: the paired differences cancel it
    def acc(rise, jitter):
        return lambda q, s, c: (50 + 10 * q + rise * (s > 1) + rise * (s > 5) + jitter * (q % 2) * (s > 1), 60)

    t = X.table1_numbers(_leaf_recs(acc(1.0, 0.0)))
    assert t["by_seed"][(5, "last returned")] == pytest.approx([51, 61, 71, 81])
    assert X.table1_claims(t)[0]["verdict"].status == "reproduced"  # no spread in the differences
    # 1 to 5 steps: per-seed differences rise + {0, 4} (sd 2.31, SE 1.15): margin 2.31 for the whole trend;
    # first to last: 2 rise + 2 on average, just beyond it at rise 0.2 (2.4), just within at 0.1 (2.2)
    assert X.table1_claims(X.table1_numbers(_leaf_recs(acc(0.2, 4.0))))[0]["verdict"].status == "reproduced"
    v = X.table1_claims(X.table1_numbers(_leaf_recs(acc(0.1, 4.0))))[0]["verdict"]
    assert v.status == "not reproduced" and "beyond 2.31" in v.reason


def test_table1_client3_by_index_needs_margin():
    def acc(c3_gain, spread):
        return lambda q, s, c: (50, 50 + (c3_gain + spread * (q % 2) if c == 3 else 5 if c == 4 else 1))
    # client 3 vs client 4 (the best other): paired differences c3_gain - 5 + {0, spread}
    assert X.table1_claims(X.table1_numbers(_leaf_recs(acc(8.0, 0.0))))[3]["verdict"].status == "reproduced"
    # differences 1 or 5 (mean 3, sd 2.31, SE 1.15, margin 2.31): beyond; 0 or 4 (mean 2): within
    assert X.table1_claims(X.table1_numbers(_leaf_recs(acc(6.0, 4.0))))[3]["verdict"].status == "reproduced"
    v = X.table1_claims(X.table1_numbers(_leaf_recs(acc(5.0, 4.0))))[3]["verdict"]
    assert v.status == "not reproduced" and "client 4" in v.reason


def test_worst_served_row_reads_the_role_not_the_index():
    # in each seed the worst-served client is another index (q % 5): it gains `g`, the others 1
    def acc(g, spread=0.0):
        return lambda q, s, c: ((30, 30 + g + spread * (q % 2)) if c == q % 5 else (80, 81))
    c = X.xu_table1_worst_served(_leaf_recs(acc(10.0)))
    assert c["result_id"] == X.XU_WORST_SERVED_ID and c["verdict"].status == "reproduced"
    assert "worst-served +10.0" in c["ours"]
    # a gain equal to the others': no effect beyond noise, at any step
    assert X.xu_table1_worst_served(_leaf_recs(acc(1.0)))["verdict"].status == "not reproduced"
    # paired differences g - 1 + {0, 4} against the others' mean and the runner-up (SE 1.15, margin 2.31):
    # g = 1.4 just beyond (mean 2.4), g = 1.2 just within (2.2)
    assert X.xu_table1_worst_served(_leaf_recs(acc(1.4, 4.0)))["verdict"].status == "reproduced"
    v = X.xu_table1_worst_served(_leaf_recs(acc(1.2, 4.0)))["verdict"]
    assert v.status == "not reproduced" and "beyond 2.31" in v.reason
    # by index, client 3 is worst-served in one seed of four only: the index row cannot see the role
    t = X.table1_numbers(_leaf_recs(acc(10.0)))
    assert not X.table1_claims(t)[3]["verdict"].ok


def test_fig1c_decoded_above_last_needs_two_standard_errors():
    last = {B: [0.70, 0.70] for B in (16, 64)}
    # gains per record (two clients, two seeds) d + {0, 0.02}: SE 0.00577, margin 0.01155
    f = X.fig1_numbers(_fig1_data(decoded={B: [0.72, 0.74] for B in (16, 64)}, last=last))
    assert f["gain_se"] == pytest.approx(statistics.stdev([0.02, 0.02, 0.04, 0.04]) / 2)
    assert _claim(f, 2).status == "reproduced"
    # mean gain 0.012 just beyond the margin, 0.011 just within it (a tie at every B)
    assert _claim(X.fig1_numbers(_fig1_data(decoded={B: [0.702, 0.722] for B in (16, 64)}, last=last)), 2).status \
        == "reproduced"
    v = _claim(X.fig1_numbers(_fig1_data(decoded={B: [0.701, 0.721] for B in (16, 64)}, last=last)), 2)
    assert v.status == "not reproduced" and "beyond 0.0115" in v.reason


def test_fig1a_tolerance_is_rounding_level():
    f = X.fig1_numbers(_fig1_data())
    assert _claim({**f, "phd_min_to_rest": [1.0, 0.2 - 1e-7, 1.0], "rest_max": 0.2}, 0).status == "reproduced"
    assert _claim({**f, "phd_min_to_rest": [1.0, 0.2 - 1e-5, 1.0], "rest_max": 0.2}, 0).status == "partly"


def test_observation1_cost_row_is_a_live_check(monkeypatch):
    monkeypatch.setattr(X, "exact_recovery_live", lambda: {"cases": [{"error": 0.0, "bound": 1.0, "refused": True}]})
    monkeypatch.setattr(X, "hard_instance_live", lambda: {"d": 2, "staircase": [True] * 2, "optimum_dense": True,
                                                          "min_abs_optimum": 0.1, "same": [True, False]})
    monkeypatch.setattr(X, "affine_mapping_live", lambda: {"fraction_left": 0.0, "allowed": 1.0})

    def cost(e, err=1e-12):
        monkeypatch.setattr(X, "xu_cost_exponent_live", lambda: {"exponent": e, "max_error": err})
        return {r.result_id: r for r in X._live_rows()}["Xu Observation 1 cost O(d³)"]

    lo, hi = X.XU_COST_EXPONENT
    for e in (lo, 3.0, hi):
        r = cost(e)
        assert r.status == "reproduced" and r.file == "live" and "within" in r.ours, e
    for e in (lo - 0.01, hi + 0.01):
        r = cost(e)
        assert r.status == "partly" and f"{e:.2f}" in r.ours, e
    assert cost(3.0, 1e-6).status == "partly"


def test_live_cost_exponent_is_cubic_ish():
    X.xu_cost_exponent_live.cache_clear()
    c = X.xu_cost_exponent_live()
    assert X.XU_COST_EXPONENT[0] <= c["exponent"] <= X.XU_COST_EXPONENT[1] and c["max_error"] < 1e-8


def test_referee_counts_table1_means_and_roles_not_per_client_cells():
    from flbook.ledger import referee as R
    from flbook.ledger import row

    def count(rid, **kw):
        r = row(paper=X.PAPER, result_id=rid, claim="", paper_value="", ours="", verdict=R.Verdict("not reproduced", "x"),
                chapter=X.CH_LEARNED, data="synthetic (as in the paper)", **kw)
        return X.referee(r)

    for s in ("1 local step", "5 local steps", "10 local steps"):
        for m in ("last returned", "decoded"):
            for c in range(5):
                k = count(f"Xu Table 1 {s} {m} client {c}")
                assert k.excluded == "not comparable" and f"client {c}" in k.excluded_why
            assert count(f"Xu Table 1 {s} {m} mean over clients") == R.COUNTS
    k = count(X.TABLE1_CLAIMS[3])
    assert k.excluded == "not comparable" and X.XU_WORST_SERVED_ID in k.excluded_why
    for rid in (*X.TABLE1_CLAIMS[:3], X.XU_WORST_SERVED_ID, *X.FIG1_CLAIMS, "Xu Observation 1 cost O(d³)"):
        assert count(rid) == R.COUNTS, rid


def test_committed_rows_count_as_the_referee_says():
    """On the committed result files: 30 per-client cells and the index-based client-3 claim apart,
    the role-based row counted, no Xu row 'not run'."""
    from flbook.ledger import referee as R

    entries = [R.judge(r, X.referee(r)) for r in X.rows()]
    apart = [e for e in entries if e.section == "apart"]
    assert len(apart) == 31 and all(e.excluded == "not comparable" for e in apart)
    ids = {e.result_id: e for e in entries}
    assert ids[X.XU_WORST_SERVED_ID].section == "paper"
    assert all(e.status != "not run" for e in entries)
    assert all(e.section != "stand-in" for e in entries)
