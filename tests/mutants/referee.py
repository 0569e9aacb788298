"""Plausible bugs in the ledger's referee (flbook.ledger.referee): the shared thresholds (2
standard errors, "slightly", "comparable", non-trivial SSIM), the cap on one-run rows, the
sections a row counts towards and the counts by section. Each decides what the book's headline
counts say.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD/src:$PWD python tools/mutation.py tests/mutants/referee.py
"""

from tools.mutation import Mutant, pytest_command

RF = "src/flbook/ledger/referee.py"

TESTS = pytest_command("tests/test_referee.py", "-k", "not round_trips and not every_counted and not in_step "
                                                      "and not states_its_margin and not across_sections "
                                                      "and not verdict_tables")

MUTANTS = [
    Mutant("k_se_one", RF, "K_SE = 2.0\n", "K_SE = 1.0\n", "a margin of 2 standard errors"),
    Mutant("margin_sum_not_quadrature", RF, "    return kk * math.sqrt(sum(x * x for x in ses))\n",
           "    return kk * sum(ses)\n", "standard errors of independent quantities add in quadrature"),
    Mutant("std_error_population_sd", RF, "    return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v))\n",
           "    return math.sqrt(sum((x - m) ** 2 for x in v) / len(v) / len(v))\n", "the sample standard deviation (n - 1)"),
    Mutant("std_error_no_root_n", RF, "    return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v))\n",
           "    return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))\n", "the error of the mean, sd / sqrt(n)"),
    Mutant("slight_cap_ten", RF, "SLIGHT_AT_MOST = 5.0\n", "SLIGHT_AT_MOST = 10.0\n", "slightly: at most 5 points"),
    Mutant("slight_no_cap", RF, "    if abs(c) > cap:\n", "    if False:\n", "a large change is not slight"),
    Mutant("slight_ignores_noise", RF, "    v = sign(change, expected=expected, margin=margin, what=what)\n",
           "    v = sign(change, expected=expected, margin=0.0, what=what)\n", "slightly is still beyond the noise"),
    Mutant("comparable_strict", RF, "    if abs(x - y) <= t:\n", "    if abs(x - y) < t:\n", "within 3 points includes 3"),
    Mutant("nontrivial_lower", RF, "NONTRIVIAL_SSIM = 0.2\n", "NONTRIVIAL_SSIM = 0.1\n", "an attack recovers at SSIM 0.2"),
    Mutant("decidable_strict", RF, "    return max(_finite(k, v) for k, v in scores.items()) >= t\n",
           "    return max(_finite(k, v) for k, v in scores.items()) > t\n", "SSIM exactly 0.2 is non-trivial"),
    Mutant("decidable_min", RF, "    return max(_finite(k, v) for k, v in scores.items()) >= t\n",
           "    return min(_finite(k, v) for k, v in scores.items()) >= t\n", "one attack at non-trivial SSIM decides"),
    Mutant("one_seed_allowed", RF, "    few = len(r.seeds) < 2\n", "    few = len(r.seeds) < 1\n",
           "one seed cannot establish a paper-scale claim"),
    Mutant("quick_allowed", RF, '    quick = r.scale == "quick"\n', "    quick = False\n",
           "a quick run cannot establish a paper-scale claim"),
    Mutant("cap_ignores_reason", RF, "    if v.ok and one and not count.one_run_enough.strip():\n",
           "    if v.ok and one:\n", "a stated reason lets one run decide"),
    Mutant("stand_in_counted", RF, '    return "stand-in" if stand_in else "paper"\n', '    return "paper"\n',
           "stand-in rows are counted apart"),
    Mutant("excluded_counted", RF, "    if excluded:\n        return \"apart\"\n", "    if False:\n        return \"apart\"\n",
           "excluded rows are kept apart"),
    Mutant("tally_mixes", RF, "        if e.section == section:\n", "        if True:\n", "one section per count"),
    Mutant("no_unknown_cause", RF, '        cause = "unknown"\n', '        cause = ""\n',
           "a counted gap without a known cause says unknown"),
    Mutant("rule_status_lost", RF, '                 rule_status=r.status if v.status != r.status else "")\n',
           '                 rule_status="")\n', "a re-decided row keeps the rule's status"),
    Mutant("summary_findings_any_cause", RF, '    found = [e for e in head if e.cause == "the paper"]\n',
           '    found = [e for e in head if e.cause]\n', "only gaps traced to the paper are findings about it"),
    Mutant("summary_counts_all_rows", RF, '    head = [e for e in mine if e.section == "paper"]\n',
           "    head = mine\n", "the paragraph's headline counts the paper's data only"),
    Mutant("stand_in_label_keeps_details", RF, '    return re.split(r"; |, |: ", plain)[0].strip()\n',
           "    return plain.strip()\n", "a stand-in's short name stops at its first clause"),
]
