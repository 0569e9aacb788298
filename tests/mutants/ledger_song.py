"""Plausible bugs in the rules that decide Song et al. 2025's rows (flprivacy.ledger.song): Figs. 3-4
and BO's Q* against Q = 1 on the quick model, §5.2's ordering of the attacks and its case-4 PSNR
sentence, a controlled experiment's cell, which cases count as fully run, Table IV's tolerances,
and the live checks of §3, eq. 19-30 and eq. 39 the propositions' rows read. Each mutant moves a
threshold, flips a direction, reads the wrong case or attack, or loosens a check.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/ledger_song.py

As ``tests/mutants/ledger.py``, ``TESTS`` leaves out ``test_committed_ledger_is_a_fresh_build``: the
rules' tests must catch a mutant on constructed numbers at the rule's edges, not by a changed
verdict on the committed files.
"""

from tools.mutation import Mutant, pytest_command

SONG = "src/flprivacy/ledger/song.py"

TESTS = pytest_command("tests/test_ledger_song.py", "tests/test_ledger.py", "-k", "not fresh_build")

MUTANTS = [
    Mutant("first_above_inclusive", SONG, "if v > threshold), None)", "if v >= threshold), None)",
           "Fig. 4: SSIM values exceeding 0.9"),
    Mutant("fig3_ties_count", SONG, 'fig3 = sum(runs[c]["long"]["ssim"] > runs[c]["ours"]["ssim"]',
           'fig3 = sum(runs[c]["long"]["ssim"] >= runs[c]["ours"]["ssim"]', "Fig. 3: surpass the 1,000-iteration SSIM"),
    Mutant("fig4_budget_strict", SONG, "fig4 = sum(h is not None and h <= FIG4_ITERATIONS for h in hits)",
           "fig4 = sum(h is not None and h < FIG4_ITERATIONS for h in hits)", "Fig. 4: within 1,500 iterations"),
    Mutant("fig4_any_case", SONG, 'what=f"SSIM > {FIG4_SSIM} by iteration {FIG4_ITERATIONS:,}"),',
           'what=f"SSIM > {FIG4_SSIM} by iteration {FIG4_ITERATIONS:,}", required=0.5),',
           "Fig. 4: in all four cases"),
    Mutant("fig4_case4_against_all", SONG, 'others = min(runs[c]["long"]["ssim"] for c in cases if c != "case 4")',
           'others = max(runs[c]["long"]["ssim"] for c in cases if c != "case 4")',
           "Fig. 4: case 4 below the lowest of cases 1-3"),
    Mutant("q_star_strict", SONG, 'beat = sum(runs[c]["ours"]["objective"] <= runs[c]["Q = 1"]["objective"]',
           'beat = sum(runs[c]["ours"]["objective"] < runs[c]["Q = 1"]["objective"]',
           "Q* no worse than Q = 1, a point of the box"),
    Mutant("order_worst_other", SONG, 'best = max(by_method[m][k] for m in by_method if m != "AWA")',
           'best = min(by_method[m][k] for m in by_method if m != "AWA")', "§5.2: AWA above the best other attack"),
    Mutant("order_no_margin", SONG, "parts.append(sign(by_method[\"AWA\"][k] - best, expected=1, margin=TOL[k],",
           "parts.append(sign(by_method[\"AWA\"][k] - best, expected=1, margin=0.0,",
           "a lead inside a cell's tolerance shows no ordering"),
    Mutant("order_psnr_only", SONG, '        for k in ("psnr", "ssim"):\n            best',
           '        for k in ("psnr",):\n            best', "§5.2: PSNR and SSIM"),
    Mutant("case4_shortfall_max", SONG,
           'shortfall = min(TABLE_IV[c]["AWA"]["psnr"] for c in first) - TABLE_IV["case 4"]["AWA"]["psnr"]',
           'shortfall = max(TABLE_IV[c]["AWA"]["psnr"] for c in first) - TABLE_IV["case 4"]["AWA"]["psnr"]',
           "the paper's own shortfall below its lowest case (0.72 dB)"),
    Mutant("case4_no_tolerance", SONG, "min(awa_psnr[c] for c in first) - shortfall - TOL[\"psnr\"],",
           "min(awa_psnr[c] for c in first) - shortfall,", "a cell's tolerance below the lowest case"),
    Mutant("case4_against_paper_lowest", SONG, "min(awa_psnr[c] for c in first) - shortfall - TOL[\"psnr\"],",
           "min(TABLE_IV[c][\"AWA\"][\"psnr\"] for c in first) - shortfall - TOL[\"psnr\"],",
           "comparable to our cases 1-3, not the paper's"),
    Mutant("case4_skips_precondition", SONG, "    if not all(v.ok for v in pre):\n", "    if False:\n",
           "the comparison presupposes reconstructions in cases 1-3"),
    Mutant("diagnostic_psnr_tolerance", SONG, 'return number(cell["ssim"], ssim, tol=TOL["ssim"], what=f"{case} {method} SSIM")',
           'return number(cell["ssim"], ssim, tol=TOL["psnr"], what=f"{case} {method} SSIM")',
           "a controlled experiment's SSIM against the SSIM cell's tolerance"),
    Mutant("fully_run_any", SONG, "        if all((model, case, m) in r18 for m in ran):\n",
           "        if any((model, case, m) in r18 for m in ran):\n", "a case counts when every attack ran"),
    Mutant("tol_ssim_loose", SONG, '"ssim": 0.03,', '"ssim": 0.3,', "3 points of SSIM"),
    Mutant("rate_per_decade_one", SONG, "RATE_PER_DECADE = 5.0\n", "RATE_PER_DECADE = 1.0\n",
           "first order: tenfold per decade, at least 5x asked"),
    Mutant("interp_ratio_inverted", SONG, "combine(*(at_least(e[1] / e[0], RATE_PER_DECADE,",
           "combine(*(at_least(e[2] / e[0], RATE_PER_DECADE,", "the ratio between η = 1e-2 and 1e-3"),
    Mutant("scenario_tolerance_loose", SONG, "bound(sum(g <= 1e-12 for g in gaps), len(gaps),",
           "bound(sum(g <= 1e-3 for g in gaps), len(gaps),", "exact replay: float64 rounding"),
    Mutant("eq30_union", SONG, "== top_m & top_v)", "== top_m | top_v)", "eq. 30: 𝒫 = 𝒫_mean ∩ 𝒫_var"),
    Mutant("eq24_wrong_slope", SONG, "want = [qk] if Lk == 1 else [(qk - 1) / (Lk - 1) * (l - 1) + 1 for l in range(1, Lk + 1)]",
           "want = [qk] if Lk == 1 else [qk / Lk * l for l in range(1, Lk + 1)]", "eq. 24's line from 1 to q_k"),
    Mutant("eq39_sign", SONG, "closed = (fmin - mu) * norm.cdf(z) + sd * norm.pdf(z)",
           "closed = (fmin - mu) * norm.cdf(z) - sd * norm.pdf(z)", "eq. 39"),
    # Figs. 3-4 at ResNet-18 (awa_curves_resnet18's curves)
    Mutant("curves_fig3_ties_count", SONG, "fig3 = _every_case({c: end[c] > ssim_at(d, budget)",
           "fig3 = _every_case({c: end[c] >= ssim_at(d, budget)", "Fig. 3 at ResNet-18: surpass the 1,000-iteration SSIM"),
    Mutant("curves_fig4_budget_strict", SONG, "fig4 = _every_case({c: h is not None and h <= FIG4_ITERATIONS",
           "fig4 = _every_case({c: h is not None and h < FIG4_ITERATIONS", "Fig. 4 at ResNet-18: within 1,500"),
    Mutant("curves_missing_cases_reproduce", SONG, "    if missing:\n        return not_run(",
           "    if False:\n        return not_run(", "all four cases: an unrun case is not evidence"),
    Mutant("curves_failure_waits", SONG, "    if failed:\n        return Verdict(\"not reproduced\"",
           "    if failed and not missing:\n        return Verdict(\"not reproduced\"",
           "one case that breaks an every-case claim refutes it"),
    Mutant("curves_case4_against_highest", SONG,
           'case4 = at_most(end["case 4"], min(v for c, v in end.items() if c != "case 4"),',
           'case4 = at_most(end["case 4"], max(v for c, v in end.items() if c != "case 4"),',
           "Fig. 4: case 4 below the lowest of cases 1-3"),
    Mutant("curves_case4_partial", SONG, "    if set(curves) == set(CASES):\n        case4 = at_most(",
           "    if \"case 4\" in curves and len(curves) > 1:\n        case4 = at_most(", "case 4 against all of cases 1-3"),
    Mutant("curves_short_accepted", SONG, 'if d["trace"]["iteration"][-1] < long or ssim_at(d, budget) is None:',
           'if ssim_at(d, budget) is None:', "Fig. 3: after 3,000 iterations"),
    Mutant("ssim_at_nearest", SONG, 'return next((v for it, v in zip(tr["iteration"], tr["ssim"]) if it == iteration), None)',
           'return next((v for it, v in zip(tr["iteration"], tr["ssim"]) if it >= iteration), None)',
           "the SSIM at the recorded point"),
]
