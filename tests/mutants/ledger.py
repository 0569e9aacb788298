"""Plausible bugs in the ledger's rules (flbook.ledger: number, at_least, at_most, sign, trend,
ordering, bound, combine, provenance_of) and in the rules of Diana et al.'s Part III rows
(flbook.ledger.diana_aia: Tables 1-3, §5.3's sentences, Prop. 1, Fig. 1, Fig. 3, Fig. 4) and
of its Part II rows read from result files (flbook.ledger.diana_reconstruction: Theorem 1,
Fig. 2, App. B.3, App. C.1).
These rules decide every verdict the book shows; each mutant moves a tolerance, flips a
direction or drops a step of one of them.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/ledger.py

``TESTS`` leaves out ``test_committed_ledger_is_a_fresh_build``: that test compares the committed
ledger with a fresh build, so it flags any change of a verdict on the committed files, right or
wrong, and catches nothing in a rule whose verdict the committed numbers do not reach. The
rules' tests must catch a mutant on their own, on constructed numbers at the rule's edges.
"""

from tools.mutation import Mutant, pytest_command

LG = "src/flbook/ledger/__init__.py"
DA = "src/flbook/ledger/diana_aia.py"

TESTS = pytest_command("tests/test_ledger.py", "tests/test_ledger_diana_aia.py", "tests/test_ledger_diana_reconstruction.py",
                       "tests/test_ledger_sensitivity.py",
                       "tests/test_part3_table1_controls.py", "tests/test_part3_experiments.py",
                       "-k", "not committed_ledger_is_a_fresh_build and (test_ledger or fig4_ledger or fig4_method "
                             "or controls_reason or sensitivity)")

MUTANTS = [
    # ---- the generic rules (flbook.ledger) ----------------------------------------------------------------
    Mutant("default_tolerance_5", LG, "DEFAULT_TOL = 3.0\n", "DEFAULT_TOL = 5.0\n",
           "a reported number is reproduced within 3 points"),
    Mutant("number_edge_excluded", LG, "    if abs(d) <= t:\n        return Verdict(\"reproduced\")\n    lead",
           "    if abs(d) < t:\n        return Verdict(\"reproduced\")\n    lead",
           "a number exactly 3 points off is within the tolerance"),
    Mutant("number_spread_ignored", LG, '    t = max(_finite("tol", tol), _finite("paper_spread", paper_spread))\n',
           '    t = _finite("tol", tol)\n', "the paper's own standard deviation widens the tolerance"),
    Mutant("number_spread_added", LG, '    t = max(_finite("tol", tol), _finite("paper_spread", paper_spread))\n',
           '    t = _finite("tol", tol) + _finite("paper_spread", paper_spread)\n',
           "the tolerance is the larger of the two, not their sum"),
    Mutant("number_one_sided", LG, "    if abs(d) <= t:\n        return Verdict(\"reproduced\")\n    lead",
           "    if d <= t:\n        return Verdict(\"reproduced\")\n    lead",
           "a number far below the paper's is not reproduced"),
    Mutant("at_least_strict", LG, "    if o >= t:\n", "    if o > t:\n", "\"at least 20\" holds at 20"),
    Mutant("at_most_strict", LG, "    if o <= t:\n", "    if o < t:\n", "\"at most 55\" holds at 55"),
    Mutant("sign_ignores_expected", LG, "    if expected * e > m:\n", "    if e > m:\n",
           "a claimed fall needs a negative effect"),
    Mutant("sign_margin_dropped", LG, "    if expected * e > m:\n", "    if expected * e > 0:\n",
           "an effect inside the noise margin is not a direction"),
    Mutant("trend_not_sorted", LG, "    order = sorted(range(len(xs)), key=lambda i: float(xs[i]))\n",
           "    order = list(range(len(xs)))\n", "a trend is read along x, not in the order given"),
    Mutant("trend_step_margin_dropped", LG, "    if worst < -margin:\n", "    if worst < 0:\n",
           "a step against the trend by less than the margin is noise"),
    Mutant("trend_steps_ignored", LG, "    if worst < -margin:\n", "    if False:\n",
           "a step against the trend beyond the margin makes it partly"),
    Mutant("ordering_margin_sign", LG, "_finite(a, values[a]) < _finite(b, values[b]) - margin]",
           "_finite(a, values[a]) < _finite(b, values[b]) + margin]", "ties within the margin count as holding"),
    Mutant("bound_fraction_ignored", LG, "    if holds >= required * trials:\n", "    if holds >= trials:\n",
           "a bound with probability 1 - delta may fail in a delta fraction"),
    Mutant("bound_strict", LG, "    if holds >= required * trials:\n", "    if holds > required * trials:\n",
           "a bound that held in every trial holds"),
    Mutant("combine_partly_lost", LG, '    if any(v.ok or v.status == "partly" for v in verdicts):\n',
           "    if any(v.ok for v in verdicts):\n", "a partly part and a failed part make a partly result"),
    Mutant("combine_not_run_hidden", LG, '    if any(v.status in ("not run", "not covered") for v in verdicts):\n',
           "    if False:\n", "a result with a part not run is not run, not partly"),
    Mutant("provenance_dirty_passes", LG, '    elif commit.endswith("+dirty"):\n', "    elif False:\n",
           "a file made from an uncommitted tree says so"),
    # ---- Diana et al., Part III rows (flbook.ledger.diana_aia) -------------------------------------------
    Mutant("table_spread_dropped", DA, "v = number(pm, s[key][0], paper_spread=psd, what=",
           "v = number(pm, s[key][0], what=", "Tables 1-3: the paper's std widens a cell's tolerance"),
    Mutant("table_reads_std", DA, "v = number(pm, s[key][0], paper_spread=psd, what=",
           "v = number(pm, s[key][1], paper_spread=psd, what=", "a cell compares our mean, not our std"),
    Mutant("table_file_swapped", DA,
           "    return f\"{prefix}_medical\" if task == \"Medical\" else f\"{prefix}_{task.lower().replace('-', '_')}_synthetic\"\n",
           "    return f\"{prefix}_medical\" if task != \"Income-A\" else f\"{prefix}_{task.lower().replace('-', '_')}_synthetic\"\n",
           "each task's cells read its own file"),
    Mutant("passive_gain_reversed", DA, '            gain = m["passive/Ours"] - m["passive/Grad"]\n',
           '            gain = m["passive/Grad"] - m["passive/Ours"]\n', "§5.3: passive Ours gains over Grad"),
    Mutant("passive_gain_size", DA, 'PASSIVE_GAIN = {"Income-L": 15.0, "Medical": 8.0}\n',
           'PASSIVE_GAIN = {"Income-L": 8.0, "Medical": 8.0}\n', "§5.3: over 15 p.p. on Income-L"),
    Mutant("active_gain_no_tolerance", DA, "at_least(gain, ACTIVE_GAIN_OVER_ORACLE[task] - 3.0,",
           "at_least(gain, ACTIVE_GAIN_OVER_ORACLE[task],", "§5.3's gains with 3 points of tolerance"),
    Mutant("active_gain_over_grad", DA, '        gain = m["active-50/Ours"] - m["active-50/Grad-w-O"]\n',
           '        gain = m["active-50/Ours"] - m["active-50/Grad"]\n', "§5.3: the gain is over Grad-w-O"),
    Mutant("reaches_oracle_one_sided", DA, '        v = (Verdict("reproduced") if abs(gap) <= 3.0 else',
           '        v = (Verdict("reproduced") if gap <= 3.0 else', "active-50 far above Model-w-O does not equal it"),
    Mutant("prop1_bound_loose", DA, "        holds += acc >= aia_accuracy_lower_bound(mse, float(theta[d - 1])) - 1e-12\n",
           "        holds += acc >= aia_accuracy_lower_bound(mse, float(theta[d - 1])) - 0.5\n",
           "Prop. 1 is checked at rounding, not with slack"),
    Mutant("fig1_coin_one_se", DA, "    coin = 50 + 3 * 100 * (0.25 / n) ** 0.5\n", "    coin = 50 + 100 * (0.25 / n) ** 0.5\n",
           "Fig. 1: 'about 50%' is within 3 standard errors of a coin flip"),
    Mutant("fig1_fall_reversed", DA, "sign(grad[min(grad)] - grad[big], what=", "sign(grad[big] - grad[min(grad)], what=",
           "Fig. 1: Grad falls as clients grow"),
    Mutant("fig3_margin_dropped", DA, "        v = trend(xs, ys, expected=sgn, margin=1.0, what=",
           "        v = trend(xs, ys, expected=sgn, margin=0.0, what=", "Fig. 3: a 1-point margin on each trend"),
    Mutant("fig3_grad_e5_wide", DA, "verdict=at_most(last, 55.0, what=\"passive Grad at E = 5", "verdict=at_most(last, 60.0, what=\"passive Grad at E = 5",
           "Fig. 3 right: random guessing is within 5 points of 50 %"),
    Mutant("fig3_grad_e5_first_epoch", DA, '        last = sums[xs.index(max(xs))]["passive/Grad"]\n',
           '        last = sums[xs.index(min(xs))]["passive/Grad"]\n', "Fig. 3 right: Grad at E = 5, the last point"),
    Mutant("fig4_rho_sign", DA, '    v = sign(rho, expected=-1, margin=-tr["level"], what=',
           '    v = sign(rho, expected=1, margin=-tr["level"], what=', "Fig. 4: smaller clients leak more, rho < 0"),
    Mutant("fig4_level_dropped", DA, '    v = sign(rho, expected=-1, margin=-tr["level"], what=',
           '    v = sign(rho, expected=-1, margin=0.0, what=', "Fig. 4: rho beyond the no-relation level"),
    Mutant("fig4_large_threshold", DA, "FIG4_LARGE_CLIENT = 20_000\n", "FIG4_LARGE_CLIENT = 2_000\n",
           "Fig. 4: clients over 20,000 rows"),
    Mutant("fig4_large_hi_lo_swapped", DA, "    if at_most(hi, 55.0).ok:\n", "    if at_most(lo, 55.0).ok:\n",
           "reproduced only when every configuration is near 50 %"),
    Mutant("fig4_large_partly_always", DA, '        verdict = Verdict("partly" if rule.ok else "not reproduced",',
           '        verdict = Verdict("partly",', "partly only when Grad's own rule lands near 50 %"),
]

DR = "src/flbook/ledger/diana_reconstruction.py"

MUTANTS += [
    # ---- Diana et al., Part II rows from result files (flbook.ledger.diana_reconstruction) ----------------------
    Mutant("thm1_slope_wrong_regression", DR, "/ sum((a - mx) ** 2 for a in xs)", "/ sum((b - my) ** 2 for b in ys)",
           "a log-log slope is cov(x, y) / var(x)"),
    Mutant("thm1_slope_not_log", DR, "        ys = [math.log(y) for y in curve.values()]\n",
           "        ys = list(curve.values())\n", "a rate O(n^a) is the slope of log error on log n"),
    Mutant("thm1_sweep_condition_ignored", DR,
           '        sel = [r for r in recs if r["sweep"] == sweep and all(r[k] == v for k, v in cond.items())]\n',
           '        sel = [r for r in recs if r["sweep"] == sweep]\n', "the η sweep is read per batch size"),
    Mutant("thm1_full_batch_counted", DR, '    mb = [r for r in recs if r["B"] < S_c]\n', '    mb = list(recs)\n',
           "eq. (18) is the mini-batch bound; full-batch trials are Prop. 2's"),
    Mutant("thm1_delta_ignored", DR, 'verdict=bound(t["holds"], t["trials"], required=1 - t["delta"], what="eq. (18)")',
           'verdict=bound(t["holds"], t["trials"], what="eq. (18)")', "the bound holds with probability 1 - δ"),
    Mutant("thm1_rate_n_sign", DR, "THM1_RATE_N = -0.5\n", "THM1_RATE_N = 0.5\n", "eq. (6): O(1/√n_c)"),
    Mutant("thm1_rate_tolerance_wide", DR, "RATE_TOL = 0.3\n", "RATE_TOL = 1.0\n", "a fitted rate within 0.3"),
    Mutant("thm1_eta_no_tolerance", DR, "at_most(s, THM1_RATE_ETA + RATE_TOL, what=", "at_most(s, THM1_RATE_ETA, what=",
           "a fitted slope in η within the rate tolerance"),
    Mutant("thm1_batch_trend_up", DR, 'verdict=trend(list(mb), list(mb.values()), expected=-1, margin=m_B, what="error vs B < S_c")',
           'verdict=trend(list(mb), list(mb.values()), expected=1, margin=m_B, what="error vs B < S_c")',
           "Theorem 1: the error falls as B grows"),
    Mutant("fig2_full_batch_is_smallest_B", DR, '    out["min_error_full"] = min(r["error"] for r in recs if r["B"] == max(FIG2_BATCH_SIZES))\n',
           '    out["min_error_full"] = min(r["error"] for r in recs if r["B"] == min(FIG2_BATCH_SIZES))\n',
           "App. B.3 reads the full-batch error, B = S_c"),
    Mutant("fig2_aia_trend_down", DR, '[f["seed_aia"][(rd, lr, B)] for B in Bs], expected=1,',
           '[f["seed_aia"][(rd, lr, B)] for B in Bs], expected=-1,', "Fig. 2 right: AIA accuracy rises with B"),
    Mutant("b3_order_swapped", DR, "return sign(mean(a) - mean(b), margin=", "return sign(mean(b) - mean(a), margin=",
           "App. B.3: the full-batch error is below the mini-batch one"),
    Mutant("c1_order_swapped", DR, '["first d+1", "min-cond subset"], margin=',
           '["min-cond subset", "first d+1"], margin=', "App. C.1: the min-cond subset lowers the error"),
    # the referee's margins and counts: each moves a margin to zero or a count to another kind
    Mutant("thm1_batch_margin_zero", DR, 'm_B = noise_margin(t["B_se"][min(mb)], t["B_se"][max(mb)])', "m_B = 0.0",
           "Theorem 1's trend in B clears 2 SE of the difference of mean errors"),
    Mutant("fig2_ends_margin_zero", DR, "margin=noise_margin(ses[0], ses[-1]), what=what)", "margin=0.0, what=what)",
           "Fig. 2's first-to-last change clears 2 SE of the difference of the seeds' means"),
    Mutant("fig2_steps_by_the_ends_margin", DR,
           "if expected * (means[i + 1] - means[i]) < -noise_margin(ses[i], ses[i + 1])]",
           "if expected * (means[i + 1] - means[i]) < -noise_margin(ses[0], ses[-1])]",
           "a step against the claim is judged by its own noise"),
    Mutant("fig2_raw_errors", DR, 'lambda r: math.log10(max(r["error"], 1e-300))', 'lambda r: r["error"]',
           "Fig. 2's errors span four orders of magnitude: the rule reads log10 error per seed"),
    Mutant("b3_no_rounding_tolerance", DR, 'sign(f["min_error_full"], margin=1e-10,', 'sign(f["min_error_full"], margin=0.0,',
           "App. B.3's \"not exactly zero\" is above float64 rounding"),
    Mutant("c1_tolerance_wide", DR, "margin=1e-9 * max(first[", "margin=1e-7 * max(first[",
           "App. C.1's deterministic errors tie only within rounding"),
    Mutant("alg3_counted", DR, 'if rid == "Diana Alg. 3 passive least-squares estimator":', 'if rid == "Diana Alg. 3":',
           "Alg. 3's row checks our implementation: a control, out of the paper's count"),
    Mutant("lemma2_cause_unknown", DR, 'return Count(cause="the paper")', 'return Count(cause="unknown")',
           "Lemma 2 fails as stated on exact counterexamples: a finding about the paper"),
]
