"""Plausible bugs in ``flbook.ledger.diana``, which assembles Diana et al. 2025's rows from its three
parts and says, on each Table 1-3 Grad cell that is not reproduced, which relaxation of eq. 2 its
file ran (beyond ``old_rows_kept`` in ``ledger_sensitivity.py``). Each mutant lets the earlier
part's row win, hides a failing import, or puts the relaxation note on the wrong rows or with the
wrong words.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/ledger_diana.py

As ``tests/mutants/ledger.py``, ``TESTS`` leaves out ``test_committed_ledger_is_a_fresh_build``.
"""

from tools.mutation import Mutant, pytest_command

DI = "src/flbook/ledger/diana.py"

TESTS = pytest_command("tests/test_ledger_diana.py", "tests/test_ledger.py", "-k", "not fresh_build")

MUTANTS = [
    Mutant("earlier_part_wins", DI, "out = [r for r in out if r.result_id not in ids] + new",
           "out = out + [r for r in new if r.result_id not in {x.result_id for x in out}]",
           "the later part (diana_sensitivity, theory margins) decides Fig. 3 and App. C.2-C.3"),
    Mutant("import_error_hidden", DI, "            if e.name != f\"{__package__}.{part}\":\n                raise\n",
           "            pass\n", "only a missing part is skipped; a part whose own import fails must raise"),
    Mutant("note_on_reproduced_rows", DI, '"/Grad" in r.result_id and r.reason and r.file)', '"/Grad" in r.result_id and r.file)',
           "the note explains a Grad cell that is not reproduced"),
    Mutant("note_beyond_tables", DI, 'if not (r.result_id.startswith("Diana Table") and', 'if not (r.result_id.startswith("Diana") and',
           "Tables 1-3's Grad cells only, not §5.3's gains over Grad"),
    Mutant("note_without_file_check", DI, 'return r if rec is None else dataclasses.replace(', 'return dataclasses.replace(',
           "a row whose file is not committed has no settings to read"),
    Mutant("authors_softmax", DI, 'if (relaxation, sampler) == ("input", "sigmoid"):', 'if (relaxation, sampler) == ("input", "softmax"):',
           "the authors' code: the sample written into the input, a sigmoid sampler"),
    Mutant("authors_relaxation_only", DI, 'if (relaxation, sampler) == ("input", "sigmoid"):', 'if relaxation == "input":',
           "both the relaxation and the sampler are the authors'"),
    Mutant("old_files_authors", DI, 'st.get("grad_relaxation", "mixture")', 'st.get("grad_relaxation", "input")',
           "a file without the setting ran the mixture, the book's default before it followed the authors' code"),
]

# ---- the referee of Diana et al.'s Part III rows (flbook.ledger.diana_aia: made_here, count_row and the
# claims that had no row); their tests are in tests/test_ledger_diana_aia.py and tests/test_ledger_diana.py
DA = "src/flbook/ledger/diana_aia.py"
TESTS = pytest_command("tests/test_ledger_diana.py", "tests/test_ledger.py", "tests/test_ledger_diana_aia.py",
                       "-k", "not fresh_build")

MUTANTS += [
    Mutant("gain_no_size_margin", DA, "    size = at_least(gain, stated - noise_margin(se_ours, se_paper),",
           "    size = at_least(gain, stated,", "a stated gain is met within 2 SE of ours and the paper's, no fixed slack"),
    Mutant("gain_noise_not_partly", DA, "    return direction if direction.ok else Verdict(\"partly\"",
           "    return Verdict(\"reproduced\") if True else Verdict(\"partly\"",
           "a gain within our noise is partly, not established"),
    Mutant("direction_no_margin", DA, "    return sign(diff, expected=expected, margin=noise_margin(se), what=what)",
           "    return sign(diff, expected=expected, margin=0.0, what=what)", "\"outperforms\" clears 2 SE of the paired difference"),
    Mutant("made_here_all_app_c", DA, "*(f\"Diana App. C.{n} {t}:\" for n in (1, 4) for t in TASKS))",
           "\"Diana App. C.1\", \"Diana App. C.4\")", "Part II's App. C.1 row is diana_reconstruction's"),
    Mutant("duplicate_without_our_values", DA,
           "    if ours != theirs:\n        return \"\"\n", "",
           "a duplicate repeats the passive cell's values in our file"),
    Mutant("duplicate_without_the_papers", DA, "    if rec is None or pt[key] != pt[passive]:",
           "    if rec is None:", "a duplicate repeats the passive cell in the paper too"),
    Mutant("least_squares_oracle_our_protocol", DA, "            if key == \"Model-w-O\" and (table, task) != (2, \"Income-L\") and authors_oracle(table, task) is None:",
           "            if key == \"Model-w-O\" and authors_oracle(table, task) is None:", "no control explains Table 2's least-squares oracle"),
    Mutant("grad_cause_softmax", DA, "== (\"input\", \"sigmoid\") else \"our protocol\"",
           "== (\"input\", \"softmax\") else \"our protocol\"", "the authors' relaxation: input and sigmoid"),
    Mutant("random_client_table3_only", DA, "    if table in (2, 3):\n", "    if table in (3,):\n",
           "Tables 2 and 3 both attack one random client in the paper"),
    Mutant("gain_redecided_without_paper_se", DA, "v = referee_gain_rule(gain, x, se, referee_paper_diff_se(1, task, a, b),",
           "v = referee_gain_rule(gain, x, se, 0.0,", "the paper's spread widens the comparison of a stated gain"),
    Mutant("fig1_fall_no_margin", DA, "sign(fall, expected=1, margin=m, what=f\"Grad falls",
           "sign(fall, expected=1, margin=0.0, what=f\"Grad falls", "the fall clears 2 SE over the seeds"),
    Mutant("capacity_trend_no_margin", DA, "        m = noise_margin(max(steps))\n", "        m = 0.0\n",
           "a flat step within 2 SE does not break \"consistently improve\""),
    Mutant("grad_rises_inverted", DA, "beyond {m:.2f}\") if rises.ok", "beyond {m:.2f}\") if not rises.ok",
           "Grad rising with capacity contradicts the claim"),
]
