"""Plausible bugs in ``flprivacy.ledger.diana``, which assembles Diana et al. 2025's rows from its three
parts and says, on each Table 1-3 Grad cell that is not reproduced, which relaxation of eq. 2 its
file ran (beyond ``old_rows_kept`` in ``ledger_sensitivity.py``). Each mutant lets the earlier
part's row win, hides a failing import, or puts the relaxation note on the wrong rows or with the
wrong words.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/ledger_diana.py

As ``tests/mutants/ledger.py``, ``TESTS`` leaves out ``test_committed_ledger_is_a_fresh_build``.
"""

from tools.mutation import Mutant, pytest_command

DI = "src/flprivacy/ledger/diana.py"

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
