"""Plausible bugs in where a sensitive attribute sits (flprivacy.data.attributes) and in how a
data set is split among clients (flprivacy.data.splits): the ground truth every AIA accuracy of
Diana et al. 2025 is scored against, the candidate enumeration its attacks run on (eq. 3), the
90/10 train/validation split of §5.1 and the non-i.i.d. Adult split of Xu & Neglia 2021 (§4).

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD/src:$PWD python tools/mutation.py tests/mutants/data_splits.py

Each mutant breaks one rule; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

AT = "src/flprivacy/data/attributes.py"
SP = "src/flprivacy/data/splits.py"

TESTS = pytest_command("tests/test_data.py", "tests/test_inference.py", "tests/test_part2_common.py",
                       "tests/test_bad_inputs.py")

MUTANTS = [
    # ---- the sensitive attribute ----------------------------------------------------------------------
    Mutant("binary_values_swapped", AT, "torch.tensor([[float(values[0])], [float(values[1])]])",
           "torch.tensor([[float(values[1])], [float(values[0])]])", "candidate index k holds values[k]"),
    Mutant("one_hot_not_unit_vectors", AT, "torch.eye(len(columns)), name)",
           "torch.eye(len(columns)).flip(0), name)", "candidate k of a one-hot group is the k-th unit vector"),
    Mutant("true_index_any_column", AT, ".abs().amax(-1) <= atol  # (n, C)", ".abs().amin(-1) <= atol  # (n, C)",
           "a row holds a candidate when every sensitive column matches it"),
    Mutant("true_index_no_match_silent", AT, "        if not bool(match.any(1).all()):\n",
           "        if False:\n", "a row holding no candidate is an error, not candidate 0"),
    Mutant("fill_edits_the_input", AT, "        out = X.clone()\n", "        out = X\n",
           "fill returns a copy; the caller's data stay as they were"),
    Mutant("expand_sample_major", AT,
           "        Xc = X.unsqueeze(0).repeat(C, 1, 1)\n        Xc[:, :, list(self.columns)] = self.candidates.to(X.dtype).unsqueeze(1)\n",
           "        Xc = X.unsqueeze(1).repeat(1, C, 1)\n        Xc[:, :, list(self.columns)] = self.candidates.to(X.dtype).unsqueeze(0)\n",
           "expand is candidate-major: row c*n + i is sample i with value c"),
    Mutant("check_column_off_by_one", AT, "if max(self.columns) >= X.shape[1] or", "if max(self.columns) > X.shape[1] or",
           "column p of an (n, p) matrix does not exist"),
    Mutant("one_candidate_accepted", AT, "or cand.shape[0] < 2:", "or cand.shape[0] < 1:",
           "an attribute with one value leaves nothing to infer"),
    # ---- the splits -----------------------------------------------------------------------------------
    Mutant("val_takes_every_row", SP, "    n_val = min(int(round(val_fraction * n)), n - 1)\n",
           "    n_val = int(round(val_fraction * n))\n", "at least one row stays in training"),
    Mutant("train_and_val_swapped", SP, "    tr, va = perm[n_val:], perm[:n_val]\n", "    tr, va = perm[:n_val], perm[n_val:]\n",
           "the held-out part is val_fraction of the rows, the rest trains"),
    Mutant("iid_split_not_shuffled", SP, "        return list(perm.tensor_split(n_clients))\n",
           "        return list(torch.arange(n).tensor_split(n_clients))\n", "an i.i.d. split is a random permutation"),
    Mutant("iid_sizes_ignored", SP, "    return list(perm[: sum(sizes)].split(list(sizes)))\n",
           "    return list(perm.tensor_split(n_clients))\n", "the given sizes are the clients' sizes"),
    Mutant("adult_age_boundary", SP, "phd & (age >= lo) & (age <= hi)", "phd & (age >= lo) & (age < hi)",
           "client 1 holds the PhDs aged a..b inclusive (every kept row goes to some client)"),
    Mutant("adult_keeps_every_education", SP, "    rest = np.flatnonzero(kept & ~phd)\n", "    rest = np.flatnonzero(~phd)\n",
           "only education levels of at least a bachelor's degree are kept"),
    Mutant("adult_phds_spread", SP, "    phd = kept & (edu == \"Doctorate\")\n", "    phd = kept & (edu == \"Masters\")\n",
           "the first three clients hold the PhDs (education == Doctorate)"),
]
