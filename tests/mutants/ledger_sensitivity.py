"""Plausible bugs in the ledger's rules for Diana et al.'s Fig. 3 and App. C.2-C.3
(flbook.ledger.diana_sensitivity): each changes a margin's formula or a rule's direction.

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/ledger_sensitivity.py
"""

from tools.mutation import Mutant, pytest_command

DS = "src/flbook/ledger/diana_sensitivity.py"
DI = "src/flbook/ledger/diana.py"

TESTS = pytest_command("tests/test_ledger_sensitivity.py")

MUTANTS = [
    Mutant("one_standard_error", DS, "Z = 3.0\n", "Z = 1.0\n", "margins of one standard error, not three"),
    Mutant("seeds_ignored_in_binomial", DS, "p * (1 - p) / (self.n * self.k)", "p * (1 - p) / self.n",
           "the binomial error of a mean over k seeds does not shrink with k"),
    Mutant("spread_not_divided", DS, "self.sd[col][i] / math.sqrt(self.k)", "self.sd[col][i]",
           "the seeds' standard deviation used as the standard error of their mean"),
    Mutant("errors_added_not_in_quadrature", DS, "return Z * math.hypot(self.se(a, i), self.se(b, j))",
           "return Z * (self.se(a, i) + self.se(b, j))", "a difference's standard errors added, not in quadrature"),
    Mutant("spread_ignored", DS, "return max(100 * math.sqrt(p * (1 - p) / (self.n * self.k)), self.sd[col][i] / math.sqrt(self.k))",
           "return 100 * math.sqrt(p * (1 - p) / (self.n * self.k))", "the seeds' spread never widens the margin"),
    Mutant("coin_flip_at_zero", DS, "comparable(last, 50.0,", "comparable(last, 0.0,",
           "random guessing taken as 0% instead of 50%"),
    Mutant("early_sign_flipped", DS, 'd = s.mean["active/Grad"][0] - s.mean["active/Grad"][-1]',
           'd = s.mean["active/Grad"][-1] - s.mean["active/Grad"][0]', "\"more effective early\" read as later"),
    Mutant("gap_at_first_point", DS, "worst = g[-1] if where == \"last\" else min(g)",
           "worst = g[0] if where == \"last\" else min(g)", "\"in the most heterogeneous case\" read at h = 0"),
    Mutant("every_point_as_best", DS, "worst = g[-1] if where == \"last\" else min(g)",
           "worst = g[-1] if where == \"last\" else max(g)", "\"at every level\" read as at the best level"),
    Mutant("below_sign_flipped", DS, 'g = s.mean["passive/Grad"][0] - s.mean["passive/Ours"][0]',
           'g = s.mean["passive/Ours"][0] - s.mean["passive/Grad"][0]', "\"Ours slightly worse than Grad\" reversed"),
    Mutant("faster_by_level_not_gain", DS,
           'ours, grad = (s.mean[c][-1] - s.mean[c][0] for c in ("passive/Ours", "passive/Grad"))',
           'ours, grad = (s.mean[c][-1] for c in ("passive/Ours", "passive/Grad"))',
           "\"increases more rapidly\" judged on levels, not gains"),
    Mutant("indistinguishable_one_sided", DS,
           "if not comparable(s.mean[\"Model-w-O\"][i], s.mean[\"active/Ours\"][i]).ok]",
           "if s.mean[\"Model-w-O\"][i] - s.mean[\"active/Ours\"][i] > 3.0]",
           "active Ours far above Model-w-O counts as indistinguishable"),
    Mutant("grad_gain_not_compared", DS, "sign(ours - grad, margin=m,\n                                                                   what=\"active Ours' gain minus Grad's\")",
           "sign(ours, margin=m,\n                                                                   what=\"active Ours' gain minus Grad's\")",
           "C.3: Grad's gain ignored"),
    Mutant("active_columns_from_smallest_r", DS, 'add(pt["value"], pt["summary"], max(pt["settings"]["active_rounds"]))',
           'add(pt["value"], pt["summary"], min(pt["settings"]["active_rounds"]))',
           "a sweep's active columns read at its fewest active rounds, not the figure's 50"),
    # the referee's words and counts
    Mutant("slight_cap_ignored", DS, "expected=expected, margin=m,\n", "expected=expected, margin=m, at_most=100.0,\n",
           "\"slightly\": at most 5 p.p. (a -13.8 p.p. fall is not slight)"),
    Mutant("slight_claim_by_trend", DS, 'sensitivity_slightly("passive/Ours", -1)),', '_rises("passive/Ours", -1)),',
           "every \"slightly\" is judged by the word's threshold"),
    Mutant("below_not_slight", DS, "            slight(g, expected=1, margin=", "            sign(g, expected=1, margin=",
           "\"slightly worse than Grad\": at most 5 p.p."),
    Mutant("not_sensitive_ends_only", DS, "comparable(max(c), min(c),", "comparable(c[-1], c[0],",
           "\"not sensitive\": every E, not only the first and the last"),
    Mutant("indistinguishable_wider", DS, 's.mean["active/Ours"][i]).ok]', 's.mean["active/Ours"][i], within=5.0).ok]',
           "\"almost indistinguishable\": within the referee's 3 p.p."),
    Mutant("no_stand_in", DS, "return Count(stand_in=sensitivity_stand_in(r), cause=", "return Count(cause=",
           "every sensitivity row runs on the synthetic census: counted apart, saying what stood in for what"),
    Mutant("fig4_not_made_here", DS, "return r.result_id == SENSITIVITY_FIG4_ID or r.result_id in", "return r.result_id in",
           "the Fig. 4 row this module makes is counted by it"),
    Mutant("old_rows_kept", DI, "out = [r for r in out if r.result_id not in ids] + new", "out = out + new",
           "diana_aia's old Fig. 3 rows stay beside the new ones (duplicate ids)"),
]
