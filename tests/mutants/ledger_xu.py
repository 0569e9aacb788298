"""Plausible bugs in the rules that decide Xu & Neglia 2021's rows (flbook.ledger.xu_neglia),
beyond the Table 1 mutants of ``part12.py`` and ``part2_leaf.py``: Fig. 1's numbers and claims,
§4's decoded-range and client-3 claims, the Adult sizes and row count, the lower bound's counts and
verdicts, Observation 1's and the affine map's checks. Each mutant moves a threshold or margin,
flips a direction, or reads the wrong client, batch size, round or standard error.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/ledger_xu.py

As ``tests/mutants/ledger.py``, ``TESTS`` leaves out ``test_committed_ledger_is_a_fresh_build``.
"""

from tools.mutation import Mutant, pytest_command

XUL = "src/flbook/ledger/xu_neglia.py"

TESTS = pytest_command("tests/test_ledger_xu.py", "tests/test_part12_checks.py", "-k", "not slow")

MUTANTS = [
    Mutant("phd_nearest_is_farthest", XUL, '"phd_min_to_rest": [min(D[i][j] for j in rest) for i in range(3)],',
           '"phd_min_to_rest": [max(D[i][j] for j in rest) for i in range(3)],',
           "Fig. 1a: a PhD client's nearest other client must be far"),
    Mutant("rest_nearest_pair", XUL, '"rest_max": max(D[i][j] for i in rest for j in rest if i != j),',
           '"rest_max": min(D[i][j] for i in rest for j in rest if i != j),',
           "Fig. 1a: against the farthest pair among clients 3-9"),
    Mutant("se_without_sqrt_n", XUL, "return stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0",
           "return stdev(values) if len(values) > 1 else 0.0", "the standard error of a mean"),
    Mutant("loss_se_smallest", XUL,
           'return max(se([r["mapping_loss"] for r in recs if r["client"] == c and r["B"] == B]) for B in Bs)',
           'return min(se([r["mapping_loss"] for r in recs if r["client"] == c and r["B"] == B]) for B in Bs)',
           "Fig. 1b's margin: the largest standard error over B"),
    Mutant("decoded_se_smallest", XUL, '"decoded_se": max(se([r["test_acc_decoded"] for r in recs if r["B"] == B]) for B in Bs),',
           '"decoded_se": min(se([r["test_acc_decoded"] for r in recs if r["B"] == B]) for B in Bs),',
           "§5's margin: the largest standard error over B"),
    Mutant("fig1b_rises", XUL, 'verdict=combine(*(trend(Bs, [f["loss"][(c, B)] for B in Bs], expected=-1,',
           'verdict=combine(*(trend(Bs, [f["loss"][(c, B)] for B in Bs], expected=1,',
           "Fig. 1b: the mapping loss is higher for small batch size"),
    Mutant("fig1b_no_margin", XUL, "expected=-1, margin=NOISE_SE * f[\"loss_se\"][c],", "expected=-1, margin=0.0,",
           "a fall within 2 standard errors is a tie"),
    Mutant("noise_se_one", XUL, "NOISE_SE = 2.0\n", "NOISE_SE = 1.0\n", "2 standard errors"),
    Mutant("fig1c_ties_count", XUL, 'verdict=_because(combine(*(sign(f["decoded"][B] - f["last"][B], margin=NOISE_SE * f["gain_se"],',
           'verdict=_because(combine(*(sign(f["decoded"][B] - f["last"][B] + 1e-9, margin=NOISE_SE * f["gain_se"],',
           "Fig. 1c: the decoded model outperforms the baseline"),
    Mutant("batch_trend_falls", XUL, 'verdict=trend(Bs, [f["decoded"][B] for B in Bs], expected=1, margin=NOISE_SE * f["decoded_se"],',
           'verdict=trend(Bs, [f["decoded"][B] for B in Bs], expected=-1, margin=NOISE_SE * f["decoded_se"],',
           "§5: it works better the larger the batch size"),
    Mutant("batch_trend_no_margin", XUL, "expected=1, margin=NOISE_SE * f[\"decoded_se\"],", "expected=1, margin=0.0,",
           "a rise within 2 standard errors is a tie"),
    Mutant("decoded_range_loose", XUL, "verdict=at_most(max(dec) - min(dec), p_range,",
           "verdict=at_most(max(dec) - min(dec), 2 * p_range,", "almost insensitive: the paper's own range"),
    Mutant("client3_against_weakest", XUL, 'other = {s: max((k for k in g3[s] if k != "client 3"), key=g3[s].get) for s in steps}',
           'other = {s: min((k for k in g3[s] if k != "client 3"), key=g3[s].get) for s in steps}',
           "client 3 gains more than every other client"),
    Mutant("lower_bound_same_one_more", XUL, "same_before=sum(same[:d - 1]),", "same_before=sum(same[:d - 2]),",
           "identical messages in rounds 0..d-2"),
    Mutant("lower_bound_differ_late", XUL, "differ_after=sum(not s for s in same[d - 1:]))",
           "differ_after=sum(not s for s in same[d:]))", "different from round d-1 on"),
    Mutant("lower_bound_ignores_dense", XUL, 'bound(int(hard["optimum_dense"]), 1, what="θ* has no zero coordinate"))',
           'bound(1, 1, what="θ* has no zero coordinate"))', "Obs. 2: θ* has no zero coordinate"),
    Mutant("obs1_bound_strict", XUL, 'holds = sum(c["error"] <= c["bound"] for c in cases)',
           'holds = sum(c["error"] < c["bound"] for c in cases)', "relative error within the bound"),
    Mutant("obs1_refused_ignored", XUL, 'bound(sum(c["refused"] for c in cases), len(cases), what="d exchanges refused")),',
           'bound(len(cases), len(cases), what="d exchanges refused")),', "d exchanges are too few"),
    Mutant("affine_bound_ignored", XUL, 'verdict=at_most(aff["fraction_left"], aff["allowed"], what="distance left after decoding"),',
           'verdict=at_most(aff["fraction_left"], 10 * aff["allowed"], what="distance left after decoding"),',
           "Algo. 3: within 10 κ(W) √(relative mapping loss)"),
    Mutant("phd_tol_loose", XUL, "PHD_SIZE_TOL = 2\n", "PHD_SIZE_TOL = 20\n", "within 2 rows"),
    Mutant("n_rows_tol_loose", XUL, "N_ROWS_TOL = 50\n", "N_ROWS_TOL = 500\n", "12300 rounded to hundreds"),
    Mutant("phd_sizes_shifted", XUL, '"train_sizes": [s[0] for s in data["sizes"][:3]],',
           '"train_sizes": [s[0] for s in data["sizes"][1:4]],', "the first three clients are the PhDs"),
]
MUTANTS += [  # the referee's counting, margins from our seeds' spread, the live O(d³) row
    Mutant("referee_excludes_means", XUL, '(?:last returned|decoded) client (\\d)", rid)',
           '(?:last returned|decoded) (?:mean over )?client(s?)", rid)', "Table 1's means over clients are comparable and count"),
    Mutant("referee_counts_client3_by_index", XUL, "    if rid == TABLE1_CLAIMS[3]:\n", "    if rid == TABLE1_CLAIMS[2]:\n",
           "client 3 of a fresh draw is not the paper's client 3"),
    Mutant("table1_printed_tol_zero", XUL, "    printed = 0.1  #", "    printed = 0.0  #",
           "no spread known: the rounding of printed numbers, never 0"),
    Mutant("table1_noise_smallest_pair", XUL, "    return max(noise_margin(std_error([y - x for x, y in zip(a, b)])) for a, b in pairs)",
           "    return min(noise_margin(std_error([y - x for x, y in zip(a, b)])) for a, b in pairs)",
           "the margin of the noisiest pair"),
    Mutant("table1_noise_unpaired", XUL, "    return max(noise_margin(std_error([y - x for x, y in zip(a, b)])) for a, b in pairs)",
           "    return max(noise_margin(std_error(a), std_error(b)) for a, b in pairs)",
           "the same seeds (draws) at each step count: paired differences"),
    Mutant("table1_trend_printed_margin", XUL, "                           margin=steps_margin)),",
           "                           margin=0.1)),", "the trend's margin from our seeds"),
    Mutant("client3_printed_margin", XUL, "margin=c3_margin[s],", "margin=0.1,", "client 3's margin from our seeds"),
    Mutant("worst_served_is_best_served", XUL, 'key=lambda r: (r["acc_last_returned"], r["client"]))',
           'key=lambda r: (-r["acc_last_returned"], r["client"]))', "the role: the lowest last returned accuracy"),
    Mutant("worst_served_no_margin", XUL, "margin=xu_table1_noise((others, worst)),", "margin=0.1,",
           "the role's margin from our seeds"),
    Mutant("fig1c_no_margin", XUL, 'margin=NOISE_SE * f["gain_se"],', 'margin=0.0,',
           "Fig. 1c: a gain within 2 standard errors is a tie"),
    Mutant("fig1a_loose_tolerance", XUL, "margin=1e-6, what=f\"client {i}'s nearest", "margin=1e-4, what=f\"client {i}'s nearest",
           "Fig. 1a: a rounding-level tolerance on deterministic distances"),
    Mutant("cost_exponent_loose", XUL, 'verdict=combine(at_least(cost["exponent"], XU_COST_EXPONENT[0],',
           'verdict=combine(at_least(cost["exponent"], XU_COST_EXPONENT[0] - 0.5,', "Obs. 1: O(d³), the exponent's range"),
]
