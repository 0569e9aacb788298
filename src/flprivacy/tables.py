"""One table style for the book: what a reader sees instead of a DataFrame dump.

``style(df, ...)`` returns a pandas ``Styler`` that the notebook displays as an HTML table:

- numbers rounded (``decimals``), integers with thousands separators, very small or very large
  numbers as ``4.19 × 10⁻⁵`` instead of ``4.186e-05``; a unit goes in the header (``units``);
- fractions shown as percentages (``percent``), so that accuracies read the same on every page;
- a missing value shows as "n/a", explained by a footnote the caller must write (``na``);
- no index column; seed columns are never shown (a seed is an identifier, not a result);
- a mean with its spread reads "73.2 ± 1.1 % (3 seeds)" only when it was measured on more than
  one seed; a single-seed value reads "73.2 % (1 seed)", never "± 0.00"; where every row of a
  column has the same count, it is said once, in the header ("accuracy (3 seeds)"), and the
  cells read "73.2 ± 1.1 %" (a count in every cell made tables of six such columns twice as
  wide as the page);
- cells padded (CSS), so adjacent numbers never run together; columns of text (an attack's
  name, a verdict, a command) are left-aligned and wrap, so that a long sentence does not
  widen the table past a narrow screen; headers wrap at their spaces, numbers never.

Example::

    from flprivacy.tables import style
    style(df, percent=["accuracy"], sd={"accuracy": "accuracy_sd"},
          n="n_seeds", units={"time": "s"},
          na="not run at this scale", caption="Table 1, ours")
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from numbers import Integral, Real

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

__all__ = ["style", "format_number", "SEED_COLUMNS", "CELL_CSS", "TEXT_CSS"]

#: Column names dropped as seeds (case-insensitive) unless ``seeds=`` names others.
SEED_COLUMNS = ("seed", "seeds", "base_seed", "random_state")

#: The CSS every styled table carries (padded cells, right-aligned numbers, a rule under the header).
CELL_CSS = [
    {"selector": "th, td", "props": [("padding", "0.3em 0.55em"), ("text-align", "right"),
                                     ("white-space", "nowrap"), ("vertical-align", "top")]},
    # a header wraps at its spaces: "gain, 10 steps (points)" must not widen a column of short numbers
    {"selector": "th", "props": [("border-bottom", "1px solid #888"), ("font-weight", "600"),
                                 ("white-space", "normal")]},
    {"selector": "td:first-child, th:first-child", "props": [("text-align", "left")]},
    # a caption wraps within the visible width and stays in view while a wide table scrolls
    # sideways (the theme keeps table text on one line; a phone then saw only its first words)
    {"selector": "caption", "props": [("caption-side", "bottom"), ("text-align", "left"),
                                      ("font-size", "0.9em"), ("padding-top", "0.4em"),
                                      ("white-space", "normal"), ("position", "sticky"), ("left", "0"),
                                      ("max-width", "min(calc(100vw - 3rem), 40rem)")]},
]

#: The CSS of a text column (left-aligned, wrapping, top-aligned), set on its header and cells.
TEXT_CSS = [{"selector": "", "props": [("text-align", "left"), ("white-space", "normal"),
                                        ("vertical-align", "top"), ("min-width", "6em")]}]

_NUMBER_TEXT = re.compile(r"^[−+-]?\d[\d,.]*( × 10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?( ?%)?$")

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def format_number(value: object, decimals: int = 2) -> str:
    """One number as the book prints it.

    Integers get thousands separators; a real is rounded to ``decimals`` places, except where
    that would print 0.00 for a non-zero value or more than 7 digits before the point: then it
    is written with three significant digits as ``4.19 × 10⁻⁵``. NaN and None give "n/a";
    booleans "yes"/"no"; anything else ``str(value)``.
    """
    if isinstance(decimals, bool) or not isinstance(decimals, Integral) or decimals < 0:
        raise ValueError(f"decimals must be a non-negative integer, got {decimals!r}")
    if value is None:
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, Integral):
        return f"{int(value):,}"
    if isinstance(value, Real):
        v = float(value)
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v != 0 and (abs(v) < 0.5 * 10.0 ** (-decimals) or abs(v) >= 1e7):
            mantissa, exponent = f"{v:.2e}".split("e")
            return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"
        return f"{v:,.{decimals}f}"
    return str(value)


def _is_text(column: pd.Series) -> bool:
    """True for a column of words (strings), not numbers: it is left-aligned and wraps."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return False
    values = column.dropna()
    if not (len(values) > 0 and all(isinstance(v, str) for v in values)):
        return False
    # numbers the caller formatted ("3.16 × 10⁻¹⁴", "25.7 %", "n/a") stay right-aligned like numbers
    return not all(_NUMBER_TEXT.match(v) or v == "n/a" for v in values)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _seeds(k: int) -> str:
    return f"{k} seed{'s' if k > 1 else ''}"


def _decimals_for(decimals: int | Mapping[str, int], col: str) -> int:
    return decimals.get(col, 2) if isinstance(decimals, Mapping) else decimals


def _check_columns(df: pd.DataFrame, arg: str, names) -> None:
    unknown = [c for c in names if c not in df.columns]
    if unknown:
        raise KeyError(f"{arg} names columns that are not in the table: {unknown}; "
                       f"the table's columns are {list(df.columns)}")


def style(df: pd.DataFrame, *, units: Mapping[str, str] | None = None, percent: Sequence[str] = (),
          decimals: int | Mapping[str, int] = 2, sd: Mapping[str, str] | None = None,
          n: str | int | Mapping[str, str | int] | None = None, na: str | None = None, seeds: Sequence[str] | None = None,
          caption: str | None = None) -> Styler:
    """Style a result table the book's way (see the module's docstring).

    Args:
        df: the table, one row per result; its index is not shown (``reset_index()`` first if
            it holds a column the reader needs).
        units: header suffix per column, e.g. ``{"time": "s"}`` gives the header "time (s)".
        percent: columns holding fractions in [0, 1], shown as percentages ("73.2 %").
        decimals: places after the point, for all columns or per column (default 2; a percentage
            column counts places of the percentage).
        sd: for a column of means, the column holding its standard deviation over seeds; both
            are shown in one cell, "mean ± sd (n seeds)", and the sd column is not shown. Where
            the column's rows (those with a value) share one n, the header carries it,
            "name (n seeds)", and the cells read "mean ± sd".
        n: the number of seeds behind each row: a column name, or one integer for all rows.
            Required with ``sd``. Where n is 1 the value has no spread ("value (1 seed)", or the
            header says "1 seed").
            Where the columns of means differ (the paper's 3 seeds beside our 1), a mapping
            from each column of ``sd`` to its own column name or integer.
        na: the footnote explaining the "n/a" cells (e.g. "not run at this scale"); required
            when the table has a missing value, so that no NaN appears unexplained.
        seeds: the seed columns to drop (default: any column named seed, seeds, base_seed or
            random_state, any case). Seeds are identifiers; the count goes in ``n``.
        caption: a caption under the table; the "n/a" footnote is appended to it.

    Returns:
        A ``pandas.io.formats.style.Styler``: display it, or call ``.to_html()``.

    Raises:
        TypeError: ``df`` is not a DataFrame.
        KeyError: ``units``, ``percent``, ``sd``, ``n`` or ``seeds`` names a column the table lacks.
        ValueError: a ``percent`` column holds a value outside [0, 1]; ``sd`` without ``n``; an
            ``n`` below 1; a missing value and no ``na`` footnote; an integer column that looks
            like a seed (values of 2³¹ and more) under another name.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}; wrap it: pd.DataFrame(...)")
    units = dict(units or {})
    sd = dict(sd or {})
    percent = list(percent)
    _check_columns(df, "units", units)
    _check_columns(df, "percent", percent)
    _check_columns(df, "sd", list(sd) + list(sd.values()))
    if isinstance(decimals, Mapping):
        _check_columns(df, "decimals", decimals)
        for d in decimals.values():
            format_number(0.0, d)
    else:
        format_number(0.0, decimals)
    if sd and n is None:
        raise ValueError("sd needs n: the number of seeds behind each mean (a column name or an integer)")

    table = df.reset_index(drop=True).copy()
    if seeds is None:
        drop = [c for c in table.columns if str(c).lower() in SEED_COLUMNS]
    else:
        _check_columns(df, "seeds", list(seeds))
        drop = list(seeds)

    def seeds_per_row(spec, arg: str) -> pd.Series:
        if isinstance(spec, str):
            _check_columns(df, arg, [spec])
            drop.append(spec)
            counts = table[spec]
        else:
            if isinstance(spec, bool) or not isinstance(spec, Integral):
                raise ValueError(f"{arg} must be a column name or an integer number of seeds, got {spec!r}")
            counts = pd.Series([int(spec)] * len(table))
        if counts.isna().any() or (counts < 1).any():
            raise ValueError(f"{arg} must be at least 1 seed in every row, got {counts.tolist()}")
        return counts

    n_of: dict[str, pd.Series] = {}
    if isinstance(n, Mapping):
        _check_columns(df, "n", list(n))
        missing_n = [c for c in sd if c not in n]
        if missing_n:
            raise ValueError(f"n is a mapping but has no entry for the sd columns {missing_n}: give each "
                             f"column of means its number of seeds")
        n_of = {col: seeds_per_row(spec, f"n[{col!r}]") for col, spec in n.items()}
    elif n is not None:
        counts = seeds_per_row(n, "n")
        n_of = {col: counts for col in sd}

    for col in table.columns:
        if col in drop or col in sd.values() or not pd.api.types.is_integer_dtype(table[col]):
            continue
        if (table[col].abs() >= 2**31).any():
            raise ValueError(f"column {col!r} holds integers of 2^31 and more, which look like seeds; seeds are "
                             f"never shown: name it in seeds=[...] (it is dropped) or convert it")

    for col in percent:
        vals = pd.to_numeric(table[col], errors="coerce")
        if ((vals < 0) | (vals > 1)).any():
            raise ValueError(f"percent column {col!r} must hold fractions in [0, 1] (0.73 for 73 %), "
                             f"got values from {vals.min()} to {vals.max()}")

    missing = table.drop(columns=drop + list(sd.values())).isna().any().any()
    if missing and not na:
        raise ValueError("the table has missing values: pass na='<why they are missing>' (shown as a footnote "
                         "to the 'n/a' cells), or drop the rows or columns")

    shown = pd.DataFrame(index=table.index)
    for col in table.columns:
        if col in drop or col in sd.values():
            continue
        d = _decimals_for(decimals, col)
        scale, suffix = (100.0, " %") if col in percent else (1.0, "")

        # one seed count for the whole column (every row with a value): said once, in the header
        counts = {int(n_of[col][i]) for i in table.index if not _missing(table.at[i, col])} if col in sd else set()
        in_header = len(counts) == 1

        def cell(i: int, col=col, d=d, scale=scale, suffix=suffix, in_header=in_header) -> str:
            v = table.at[i, col]
            if _missing(v):
                return "n/a"
            if not isinstance(v, Real) or isinstance(v, (bool, np.bool_)) or scale == 1.0:
                text = format_number(v, d)
            else:
                text = format_number(float(v) * scale, d)
            if isinstance(v, Real) and not isinstance(v, (bool, np.bool_)):
                text += suffix
            if col in sd:
                k = int(n_of[col][i])
                s = table.at[i, sd[col]]
                if k > 1 and not _missing(s):
                    text = f"{format_number(float(v) * scale, d)} ± {format_number(float(s) * scale, d)}{suffix}"
                if not in_header:
                    text += f" ({_seeds(k)})"
            return text

        notes_of_header = ([units[col]] if col in units else []) + ([_seeds(counts.pop())] if in_header else [])
        header = f"{col} ({', '.join(notes_of_header)})" if notes_of_header else str(col)
        shown[header] = [cell(i) for i in table.index]

    text_cols = [i for i, col in enumerate(c for c in table.columns if c not in drop and c not in sd.values())
                 if _is_text(table[col])]
    notes = [caption if caption.rstrip().endswith((".", "!", "?")) else caption.rstrip() + "."] if caption else []
    if missing:
        notes.append(f"n/a: {na}")
    # no per-cell id attributes (pandas still gives one to a cell styled on its own): the column CSS
    # uses classes, and the ids were a third of each table's HTML, which every page of the book carries
    styler = Styler(shown, cell_ids=False).hide(axis="index").set_table_styles(CELL_CSS)
    if text_cols:
        styler = styler.set_table_styles({shown.columns[i]: TEXT_CSS for i in text_cols}, overwrite=False)
    if notes:
        styler = styler.set_caption(" ".join(notes))
    return styler
