"""Plausible bugs in the book's table formatting (flprivacy.tables.style and format_number): what a
reader sees of every result. A wrong scale of a percentage, a lost ± or seed count, a missing
value shown as 0 or "nan", a unit missing from its header.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD/src:$PWD python tools/mutation.py tests/mutants/tables.py
"""

from tools.mutation import Mutant, pytest_command

TB = "src/flprivacy/tables.py"

TESTS = pytest_command("tests/test_tables.py")

MUTANTS = [
    Mutant("rounding_ignores_decimals", TB, '        return f"{v:,.{decimals}f}"\n', '        return f"{v:,.2f}"\n',
           "decimals sets the places after the point"),
    Mutant("tiny_values_print_zero", TB, "        if v != 0 and (abs(v) < 0.5 * 10.0 ** (-decimals) or abs(v) >= 1e7):\n",
           "        if v != 0 and abs(v) >= 1e7:\n", "a non-zero value never prints as 0.00"),
    Mutant("scientific_exponent_sign", TB, '            return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"\n',
           '            return f"{mantissa} × 10{str(abs(int(exponent))).translate(_SUPERSCRIPT)}"\n',
           "4.19e-05 is 4.19 × 10⁻⁵"),
    Mutant("integers_without_separators", TB, '        return f"{int(value):,}"\n', '        return f"{int(value)}"\n',
           "integers get thousands separators"),
    Mutant("nan_prints_nan", TB, "        if math.isnan(v):\n            return \"n/a\"\n", "        if False:\n            return \"n/a\"\n",
           "a missing value reads n/a, never nan"),
    Mutant("percent_not_scaled", TB, '        scale, suffix = (100.0, " %") if col in percent else (1.0, "")\n',
           '        scale, suffix = (1.0, " %") if col in percent else (1.0, "")\n', "a fraction 0.73 reads 73 %"),
    Mutant("sd_dropped", TB, "                if k > 1 and not _missing(s):\n",
           "                if False:\n", "a mean over seeds shows its standard deviation"),
    Mutant("seed_count_dropped", TB, "                    text += f\" ({_seeds(k)})\"\n", "                    pass\n",
           "a mean says over how many seeds"),
    Mutant("seed_count_never_in_header", TB, "        in_header = len(counts) == 1\n", "        in_header = False\n",
           "a column's one seed count is said once, in its header"),
    Mutant("seed_count_always_in_header", TB, "        in_header = len(counts) == 1\n", "        in_header = True\n",
           "counts that differ within a column stay in the cells"),
    Mutant("missing_rows_counted", TB, "if not _missing(table.at[i, col])} if col in sd", "} if col in sd",
           "a missing row has no seed count of its own"),
    Mutant("header_seed_count_dropped", TB,
           "        notes_of_header = ([units[col]] if col in units else []) + ([_seeds(counts.pop())] if in_header else [])\n",
           "        notes_of_header = [units[col]] if col in units else []\n", "the header says the column's seed count"),
    Mutant("unit_not_in_header", TB,
           "        notes_of_header = ([units[col]] if col in units else []) + ([_seeds(counts.pop())] if in_header else [])\n",
           "        notes_of_header = [_seeds(counts.pop())] if in_header else []\n", "the unit goes in the header"),
    Mutant("missing_without_footnote", TB, "    if missing and not na:\n", "    if False:\n",
           "n/a cells need the footnote that explains them"),
    Mutant("footnote_dropped", TB, '        notes.append(f"n/a: {na}")\n', "        pass\n",
           "the n/a footnote is shown with the table"),
    Mutant("percent_range_unchecked", TB, "        if ((vals < 0) | (vals > 1)).any():\n", "        if False:\n",
           "a percent column holds fractions (73 passed for 0.73 would print 7,300 %)"),
]
