"""Plausible bugs in the experiments' bookkeeping: result provenance, the Fig. 3 sweeps and the
shared per-seed loop of Tables 1-3.

    python tools/mutation.py tests/mutants/provenance.py
"""

from tools.mutation import Mutant, pytest_command

EXP = "src/flbook/experiments/__init__.py"
F3 = "src/flbook/experiments/part3_fig3.py"
T1 = "src/flbook/experiments/part3_pipeline.py"

TESTS = pytest_command("tests/test_config.py", "tests/test_part3_dp.py", "-k", "commit or sweeps or per_seed or fig3")

MUTANTS = [
    Mutant("commit_read_at_save", EXP, "@functools.lru_cache(maxsize=1)\ndef git_commit", "def git_commit",
           "the commit is read when the file is written: a commit made during a long run is recorded"),
    Mutant("commit_not_read_at_import", EXP, "\n    git_commit()  # the commit", "\n    pass  # the commit",
           "the commit is first read at save time"),
    Mutant("commit_read_by_chapters", EXP, "\nif started_as_command():\n", "\nif True:\n",
           "a chapter that only reads results runs git"),
    Mutant("sweeps_runs_misgrouped", F3, "for f, pv in plans for v in pv for seed in seeds",
           "for f, pv in plans for seed in seeds for v in pv", "runs of one seed filed under different values"),
    Mutant("sweeps_seconds_wall_of_one", F3, '"seconds": sum(r["seconds"] for r in per_seed)})',
           '"seconds": max(r["seconds"] for r in per_seed)})', "a point's runtime counts one seed only"),
    Mutant("over_seeds_drops_data", T1, "**(data(ft) if data else {})}", "}",
           "the per-seed record forgets the data it ran on (Table 2's feature list)"),
    Mutant("over_seeds_same_task", T1, "        ft = make(seed)\n", "        ft = make(seeds[0])\n",
           "every seed runs on the first seed's clients"),
]
