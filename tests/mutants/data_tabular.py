"""Plausible bugs in the tabular loaders and the encoder (flprivacy.data.tabular): the design
matrices of Medical, Adult and ACS Income that every Part II-III experiment starts from (Diana et
al. 2025 §5.1, Xu & Neglia 2021 §4). A column scaled wrongly, a one-hot group out of order, a
binary attribute inverted or the test split's labels left with their trailing dot changes the
task the attacks run on.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD/src:$PWD FLPRIVACY_DATA_DIR=../shared/data python tools/mutation.py tests/mutants/data_tabular.py
"""

from tools.mutation import Mutant, pytest_command

TA = "src/flprivacy/data/tabular.py"

TESTS = pytest_command("tests/test_data.py", "tests/test_part3_data.py")

MUTANTS = [
    Mutant("standardize_not_scaled", TA, "                x = (x - x.mean()) / (x.std() or 1.0)\n",
           "                x = x - x.mean()\n", "standardised columns have standard deviation 1"),
    Mutant("standardize_not_centred", TA, "                x = (x - x.mean()) / (x.std() or 1.0)\n",
           "                x = x / (x.std() or 1.0)\n", "standardised columns have mean 0"),
    Mutant("categories_unsorted", TA, "            levels = sorted(v.dropna().unique().tolist())\n",
           "            levels = v.dropna().unique().tolist()\n", "one-hot columns come in sorted order of the values"),
    Mutant("binary_inverted", TA, "            cols.append((v == binary[col]).to_numpy(np.float64))\n",
           "            cols.append((v != binary[col]).to_numpy(np.float64))\n", "a binary column is 1 where it equals the value"),
    Mutant("target_scale_multiplied", TA, "t.to_numpy(np.float64) / target_scale", "t.to_numpy(np.float64) * target_scale",
           "the target is divided by target_scale"),
    Mutant("labels_reversed", TA, "        levels = sorted(t.unique().tolist())\n", "        levels = sorted(t.unique().tolist(), reverse=True)\n",
           "class labels map to 0..K-1 in sorted order"),
    Mutant("group_off_by_one", TA, "        groups[col] = list(range(start, len(names)))\n",
           "        groups[col] = list(range(start + 1, len(names) + 1))\n", "a column's group lists its own encoded columns"),
    Mutant("adult_test_labels_dotted", TA, '    df["income"] = df["income"].str.rstrip(".")\n', "",
           "Adult's test file writes '>50K.': one label set for both splits"),
    Mutant("adult_test_header_read", TA, "skiprows=1 if split == \"test\" else 0)", "skiprows=0)",
           "adult.test opens with a non-data line"),
    Mutant("acs_missing_as_zero", TA, "    df[ACS_INCOME_FEATURES] = df[ACS_INCOME_FEATURES].fillna(-1)\n",
           "    df[ACS_INCOME_FEATURES] = df[ACS_INCOME_FEATURES].fillna(0)\n", "folktables codes a missing feature as -1"),
]
