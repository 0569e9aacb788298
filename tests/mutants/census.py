"""Plausible bugs in the census data of Part III (``flprivacy.data.census``): the occupation groups'
ranges, the two encodings (women's column, the classification threshold, the occupation groups,
standardisation, App. C.1's class-of-worker groups and married column), Alg. 5's halves and swaps,
Income-L's sex column, Income-A's 20 % sampling, and the synthetic census's causal model (each
constant of its docstring), beyond the four census mutants in ``aia2.py`` and ``part3.py``.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/census.py
"""

from tools.mutation import Mutant, pytest_command

CEN = "src/flprivacy/data/census.py"

TESTS = pytest_command("tests/test_part3_data.py")

MUTANTS = [
    # ---- occupation groups and encodings --------------------------------------------------------------------
    Mutant("occ_group_hi_exclusive", CEN, "out[(codes >= lo) & (codes <= hi)] = k", "out[(codes >= lo) & (codes < hi)] = k",
           "a major group's range includes its last code"),
    Mutant("occ_group_lo_exclusive", CEN, "out[(codes >= lo) & (codes <= hi)] = k", "out[(codes > lo) & (codes <= hi)] = k",
           "a major group's range includes its first code"),
    Mutant("full_sex_marks_men", CEN, 'binary={"SEX": 2},', 'binary={"SEX": 1},', "SEX=2 (women) is the attribute's column"),
    Mutant("threshold_inclusive", CEN, '(t["PINCP"] > classification_threshold)', '(t["PINCP"] >= classification_threshold)',
           "Fig. 1's classification target is 1[PINCP > threshold]"),
    Mutant("major_not_grouped", CEN, 'if occupation == "major":\n        t["OCCP"]', 'if occupation == "code":\n        t["OCCP"]',
           "occupation='major' one-hot encodes the 23 groups, not the raw codes"),
    Mutant("full_schl_raw", CEN, 'binary={"SEX": 2},\n                  standardize=["AGEP", "WKHP", "SCHL"]',
           'binary={"SEX": 2},\n                  standardize=["AGEP", "WKHP"]', "SCHL is standardised"),
    Mutant("reduced_unknown_cow_private", CEN, '.map(COW_GROUPS).fillna("other")', '.map(COW_GROUPS).fillna("private")',
           "an unknown class of worker is 'other'"),
    Mutant("cow5_other", CEN, '5: "public",', '5: "other",', "COW 5 (federal government) is a public employee"),
    Mutant("reduced_mar_never", CEN, '"RAC1P": 1, "MAR": 1}', '"RAC1P": 1, "MAR": 5}', "MAR=1: married"),
    # ---- Alg. 5, Income-L, Income-A --------------------------------------------------------------------------
    Mutant("alg5_halves_swapped", CEN,
           "parts = [p for p in new_l[torch.randperm(k, generator=g)].tensor_split(half)]\n    parts += [p for p in new_h[",
           "parts = [p for p in new_h[torch.randperm(k, generator=g)].tensor_split(half)]\n    parts += [p for p in new_l[",
           "D'_l goes to the first half of the clients, D'_h to the second"),
    Mutant("alg5_swap_wrong_rows", CEN, "new_h = torch.cat([D_h[keep_h], D_l[ls]])", "new_h = torch.cat([D_h[keep_h], D_l[hs]])",
           "the rows moved from D_l are the ones removed from it"),
    Mutant("income_l_women_as_men", CEN, "tab.X[:, sex[0]] == 0, h, n_clients", "tab.X[:, sex[0]] == 1, h, n_clients",
           "Alg. 5's is_man: SEX=2 is 0 for men"),
    Mutant("income_a_no_sampling", CEN, "[: max(2, int(round(fraction * rows.numel())))]", "[: rows.numel()]",
           "Income-A keeps 20 % of each state's rows"),
    # ---- the synthetic census's causal model -------------------------------------------------------------------
    Mutant("syn_sex_effect_halved", CEN, "cow_effect - 0.22 * woman", "cow_effect - 0.12 * woman",
           "the direct sex effect on log income is -0.22"),
    Mutant("syn_school_effect", CEN, "+ 0.09 * (schl - 16)", "+ 0.07 * (schl - 16)", "0.09 per year of school"),
    Mutant("syn_hours_elasticity", CEN, "+ 0.85 * np.log(wkhp / 40)", "+ 0.75 * np.log(wkhp / 40)", "hours elasticity 0.85"),
    Mutant("syn_married_effect", CEN, "+ 0.08 * married", "+ 0.04 * married", "0.08 for the married"),
    Mutant("syn_age_curvature", CEN, "- 0.0007 * a**2", "- 0.0006 * a**2", "age's curvature -0.0007"),
    Mutant("syn_noise", CEN, "rng.normal(0, 0.55, n))", "rng.normal(0, 0.5, n))", "ε ~ N(0, 0.55²)"),
    Mutant("syn_women_share", CEN, "woman = rng.random(n) < 0.5", "woman = rng.random(n) < 0.48", "SEX equally likely"),
    Mutant("syn_hours_gap", CEN, "rng.normal(42 - 5 * woman", "rng.normal(42 - 4 * woman", "women work 5 hours less"),
    Mutant("syn_married_prob", CEN, "married = rng.random(n) < 0.65 /", "married = rng.random(n) < 0.7 /",
           "married with probability 0.65 σ((age - 30)/5)"),
    Mutant("syn_states_uniform", CEN, "rng.choice(len(states), n, p=w / w.sum())", "rng.choice(len(states), n)",
           "states weighted by their 2018 populations"),
    Mutant("syn_cow_effect", CEN, "[0.0, -0.05, 0.0, 0.02, 0.1, -0.25, 0.2]", "[0.0, -0.05, 0.0, 0.02, 0.1, -0.15, 0.2]",
           "the class-of-worker effects"),
]
