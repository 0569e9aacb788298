"""Plausible bugs in the rules that decide Wilson et al. 2025's rows outside ``ledger/wilson.py``:
Fig. 8 and App. G against ROG's GAN (``ledger/wilson_rog.py``), Fig. 9 against FedInverse
(``ledger/wilson_fedinverse.py``), and Fig. 5, App. H and eq. 3 over three models
(``ledger/wilson_architectures.py``), beyond the six rule mutants already in ``model_inversion.py``
and ``architectures.py``. Each mutant flips a direction, drops a margin or a standard error's √n,
loosens a tolerance, judges the wrong method, model or number of clients, or reads the quick file
where the paper-scale one exists.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/ledger_wilson.py

As ``tests/mutants/ledger.py``, ``TESTS`` leaves out ``test_committed_ledger_is_a_fresh_build``:
a rule's own tests must catch a mutant on constructed numbers.
"""

from tools.mutation import Mutant, pytest_command

ROG = "src/flbook/ledger/wilson_rog.py"
FI = "src/flbook/ledger/wilson_fedinverse.py"
ARC = "src/flbook/ledger/wilson_architectures.py"

TESTS = pytest_command("tests/test_ledger_wilson.py", "tests/test_rog.py", "tests/test_model_inversion.py",
                       "tests/test_architectures.py", "-k", "ledger or verdict or curves or rows")

MUTANTS = [
    # ---- Fig. 8 and App. G (Fig. 15): direct post-processing vs ROG's GAN ------------------------------------
    Mutant("rog_margin_one_se", ROG, "return 2 * (sum((d - m) ** 2", "return 1 * (sum((d - m) ** 2",
           "a directional claim counts beyond two standard errors"),
    Mutant("rog_margin_population_variance", ROG, "for d in diffs) / (n - 1)) ** 0.5", "for d in diffs) / n) ** 0.5",
           "the sample variance of the per-case differences (n - 1)"),
    Mutant("rog_margin_without_sqrt_n", ROG, "/ (n - 1)) ** 0.5 / n ** 0.5", "/ (n - 1)) ** 0.5",
           "a standard error of the mean divides by √n"),
    Mutant("rog_no_margin", ROG, "return sign(sum(d) / len(d), margin=noise_margin(d),", "return sign(sum(d) / len(d), margin=0.0,",
           "a difference within the seed noise does not count"),
    Mutant("fig8_recognised_reversed", ROG, '"recognised", "ddrm", "rog", "recognisability',
           '"recognised", "rog", "ddrm", "recognisability', "Fig. 8: DDRM more recognisable than the GAN"),
    Mutant("fig8_lpips_reversed", ROG, '_directional(record, "lpips", "ddrm", "rog", "LPIPS, DDRM - GAN (the paper',
           '_directional(record, "lpips", "rog", "ddrm", "LPIPS, DDRM - GAN (the paper', "Fig. 8: DDRM's LPIPS worse (higher)"),
    Mutant("fig8_ssim_reversed", ROG, '_directional(record, "ssim", "rog", "ddrm",', '_directional(record, "ssim", "ddrm", "rog",',
           "Fig. 8: DDRM's SSIM worse (lower)"),
    Mutant("fig8_without_ssim", ROG, '"LPIPS, DDRM - GAN (the paper: DDRM worse, higher)"),\n                   _directional(record, "ssim"',
           '"LPIPS, DDRM - GAN (the paper: DDRM worse, higher)"),\n                   Verdict("reproduced") or _directional(record, "ssim"',
           "Fig. 8 has three parts"),
    # App. G's "comparable" is the referee's 3 points: its mutant is app_g_comparable_5_points below
    Mutant("app_g_lpips_pooled", ROG, 'f"K = {K}: LPIPS, DDRM - GAN", K))', 'f"K = {K}: LPIPS, DDRM - GAN"))',
           "App. G: LPIPS higher at every K, each K's cases alone"),
    Mutant("app_g_lpips_reversed", ROG, 'parts.append(_directional(record, "lpips", "ddrm", "rog",',
           'parts.append(_directional(record, "lpips", "rog", "ddrm",', "App. G: DDRM's LPIPS higher"),
    Mutant("per_k_last_seed", ROG, "{K: {m: {k: mean(c[m][k] for c in cs) for k in METRICS}",
           "{K: {m: {k: cs[-1][m][k] for k in METRICS}", "each K's SSIM is the mean over its seeds"),
    Mutant("rog_quick_first", ROG, 'rec = record_or_none(NAME) or record_or_none(NAME, "quick")',
           'rec = record_or_none(NAME, "quick") or record_or_none(NAME)', "the paper-scale file wins over the quick one"),
    # ---- Fig. 9: against FedInverse -----------------------------------------------------------------------------
    Mutant("fig9_ssim_direction", FI, 'at_least(mean["ours"]["ssim"]', 'at_most(mean["ours"]["ssim"]',
           "Fig. 9: ours more similar, higher SSIM"),
    Mutant("fig9_raw_not_mde", FI, 'at_least(mean["ours"]["ssim"], mean[m]["ssim"]', 'at_least(mean["ours_raw"]["ssim"], mean[m]["ssim"]',
           "Fig. 9 judges the attack with MDE post-processing, not the raw reconstructions"),
    Mutant("fig9_always_mi", FI, 'at_most(mean["ours"]["lpips"], mean[m]["lpips"]', 'at_most(mean["ours"]["lpips"], mean["mi"]["lpips"]',
           "both MI and MI-HSIC in LPIPS"),
    Mutant("fig9_without_lpips", FI, '        parts.append(at_most(mean["ours"]["lpips"]', '        0 and parts.append(at_most(mean["ours"]["lpips"]',
           "Fig. 9 in LPIPS (the paper's metric) as well as SSIM"),
    Mutant("fig9_quick_first", FI, 'for rec in (record_or_none(NAME), record_or_none(NAME, "quick")):\n        if rec is not None:\n            return',
           'for rec in (record_or_none(NAME, "quick"), record_or_none(NAME)):\n        if rec is not None:\n            return',
           "the paper-scale file wins over the quick one"),
    # ---- Fig. 5, App. H and eq. 3 over three models -------------------------------------------------------------
    Mutant("pick_one_K_enough", ARC, "            if len(c) >= 2:\n                return rec, c", "            if len(c) >= 1:\n                return rec, c",
           "a trend needs two or more numbers of clients; else the next file"),
    Mutant("pick_quick_first", ARC, '    for rec in (record_or_none(NAME), record_or_none(NAME, "quick")):\n        if rec is not None:\n            c = curves',
           '    for rec in (record_or_none(NAME, "quick"), record_or_none(NAME)):\n        if rec is not None:\n            c = curves',
           "the paper-scale file wins over the quick one"),
    Mutant("fig5_on_batchnorm", ARC, "ours=ours, verdict=fig5_verdict(c), record=rec))", "ours=ours, verdict=fig5_verdict(with_bn or c), record=rec))",
           "Fig. 5's verdict is on the authors' model, without BatchNorm"),
    Mutant("consistent_direction", ARC, 'expected=1, what=f"{n}, LPIPS vs K")', 'expected=-1, what=f"{n}, LPIPS vs K")',
           "consistent: LPIPS rises for all three models"),
    Mutant("consistent_any_model", ARC, "if r is not None and all(len(curves(r).get(a, {})) >= 2 for a in three)]",
           "if r is not None and any(len(curves(r).get(a, {})) >= 2 for a in three)]", "consistent across all three models"),
    Mutant("app_h_one_model", ARC, "verdict=combine(*(app_h_verdict(authors[n][1], baseline) for n in MODELS))",
           'verdict=combine(*(app_h_verdict(authors[n][1], baseline) for n in ("ResNet-18",)))', "App. H: ResNet-9 and ResNet-18"),
    Mutant("exact_any_tau", ARC, "if quick is None or taus != {1} or", "if quick is None or 1 not in taus or",
           "eq. 3 is exact at τ = 1 only (δ(1) = 0); a file with τ = 3 points says nothing"),
    Mutant("exact_on_batchnorm", ARC, "verdict=combine(*(exact_verdict(cq[a]) for a, _ in MODELS.values()))",
           "verdict=combine(*(exact_verdict(cq.get(b, cq[a])) for a, b in MODELS.values()))",
           "eq. 3's exact replay holds for the model without BatchNorm (batch statistics break it)"),
    Mutant("exact_first_K_only", ARC, "for K in sorted(curve)))\n\n\ndef _setting", "for K in sorted(curve)[:1]))\n\n\ndef _setting",
           "eq. 3 at every K"),
]

WIL = "src/flbook/ledger/wilson.py"

MUTANTS += [
    # ---- the referee's margins and counts --------------------------------------------------------------
    Mutant("seed_sd_not_halved", WIL, "return math.sqrt(sum(d * d / 2 for d in diffs) / len(diffs))",
           "return math.sqrt(sum(d * d for d in diffs) / len(diffs))", "one run's SD is the pair difference over √2"),
    Mutant("paired_margin_one_se", WIL, "return noise_margin(std_error(diffs)) if len(diffs) >= 2 else 0.0",
           "return std_error(diffs) if len(diffs) >= 2 else 0.0", "the margin is 2 standard errors, not 1"),
    Mutant("arch_margin_smallest_se", ARC, "se = max(std_error(v) for v in per)", "se = min(std_error(v) for v in per)",
           "the trend's margin takes the noisiest point"),
    Mutant("x4_not_a_control", WIL, 'return Count(excluded="control", excluded_why=(',
           'return Count(excluded="", excluded_why=("" and ', "the diagnostics' x4 rerun is our control"),
    Mutant("seed0_not_capped", WIL, 'if r.status == "reproduced":\n            return Count(stand_in=stand, cause="compute", verdict=_Verdict(',
           'if False:\n            return Count(stand_in=stand, cause="compute", verdict=_Verdict(',
           "a rule on seed 0 alone cannot establish the paper's claim"),
    Mutant("quick_counted", ARC, 'if r.scale == "quick":\n        return Count(excluded="quick stand-in"',
           'if r.scale == "never":\n        return Count(excluded="quick stand-in"', "the quick ResNet rows stand in"),
    Mutant("exact_not_one_run", ARC, 'return Count(one_run_enough="a deterministic computation',
           'return Count(one_run_enough="" and "a deterministic computation', "eq. 3's exact replay is deterministic"),
    Mutant("rog_not_stand_in", ROG, "return Count(stand_in=f\"MNIST (28x28 grey digits, 8 per client;",
           "return COUNTS or Count(stand_in=f\"MNIST (28x28 grey digits, 8 per client;", "Fig. 8 and App. G stand in"),
    Mutant("strict_verdict_ignored", WIL, "    if stand or strict is not None:\n        return Count(stand_in=stand, verdict=strict)",
           "    if stand or strict is not None:\n        return Count(stand_in=stand)", "the referee's stricter verdict is applied"),
    Mutant("app_g_comparable_5_points", ROG, "parts.append(comparable(100 * v[\"ddrm\"][\"ssim\"], 100 * v[\"rog\"][\"ssim\"],",
           "parts.append(comparable(100 * v[\"ddrm\"][\"ssim\"], 100 * v[\"rog\"][\"ssim\"], within=5,",
           "comparable: the referee's 3 points"),
]
