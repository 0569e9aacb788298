"""flprivacy.tables.style: the book's one table style."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from flprivacy.tables import format_number, style


def cells(styler) -> list[list[str]]:
    return styler.data.values.tolist()


def test_format_number():
    assert format_number(0.12345) == "0.12"
    assert format_number(12345) == "12,345"
    assert format_number(np.int64(7)) == "7"
    assert format_number(4.186e-05) == "4.19 × 10⁻⁵"      # would be 0.00: three significant digits
    assert format_number(3.87e18) == "3.87 × 10¹⁸"
    assert format_number(float("nan")) == "n/a" and format_number(None) == "n/a"
    assert format_number(True) == "yes" and format_number(np.bool_(False)) == "no"
    assert format_number(0.0) == "0.00"
    assert format_number(1.5, 0) == "2"
    with pytest.raises(ValueError, match="decimals"):
        format_number(1.0, -1)


def test_style_reads_like_a_table_in_a_textbook():
    df = pd.DataFrame({"attack": ["model-based", "gradient"], "seed": [2**62, 3],
                       "accuracy": [0.731, 0.5], "accuracy_sd": [0.011, 0.0], "n_seeds": [3, 1],
                       "time": [4.186e-05, 12.3456], "other": [np.nan, 2.0]}, index=[5, 9])
    s = style(df, percent=["accuracy"], sd={"accuracy": "accuracy_sd"}, n="n_seeds", units={"time": "s"},
              na="not run at this scale", decimals={"accuracy": 1})
    assert list(s.data.columns) == ["attack", "accuracy", "time (s)", "other"]   # no seed, sd or n column
    assert cells(s) == [["model-based", "73.1 ± 1.1 % (3 seeds)", "4.19 × 10⁻⁵", "n/a"],
                        ["gradient", "50.0 % (1 seed)", "12.35", "2.00"]]        # no "± 0.0" for one seed
    html = s.to_html()
    assert "n/a: not run at this scale" in html                                  # the footnote
    assert "padding" in html                                                     # cells do not run together
    assert "nan" not in html.lower().replace("nanosec", "") and ">5<" not in html and ">9<" not in html
    assert str(2**62) not in html


def test_n_as_an_integer_and_no_missing_values_needs_no_footnote():
    df = pd.DataFrame({"m": ["a"], "acc": [0.9], "acc_sd": [0.05]})
    s = style(df, percent=["acc"], sd={"acc": "acc_sd"}, n=5)
    assert list(s.data.columns) == ["m", "acc (5 seeds)"]        # one count for the column: said once
    assert cells(s) == [["a", "90.00 ± 5.00 %"]]
    assert "n/a" not in s.to_html()


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(units={"nope": "s"}), KeyError, "units"),
    (dict(percent=["nope"]), KeyError, "percent"),
    (dict(sd={"acc": "nope"}, n=3), KeyError, "sd"),
    (dict(sd={"acc": "acc"}), ValueError, "sd needs n"),
    (dict(n=0), ValueError, "at least 1"),
    (dict(n="nope"), KeyError, "n names"),
    (dict(decimals=-2), ValueError, "decimals"),
    (dict(decimals={"nope": 1}), KeyError, "decimals"),
    (dict(seeds=["nope"]), KeyError, "seeds"),
])
def test_bad_arguments_name_themselves(kwargs, error, words):
    df = pd.DataFrame({"m": ["a"], "acc": [0.5]})
    with pytest.raises(error, match=words):
        style(df, **kwargs)


def test_bad_tables_are_refused_with_the_fix():
    with pytest.raises(TypeError, match="DataFrame"):
        style([[1, 2]])
    with pytest.raises(ValueError, match="fractions in \\[0, 1\\]"):
        style(pd.DataFrame({"acc": [73.0]}), percent=["acc"])
    with pytest.raises(ValueError, match="na="):
        style(pd.DataFrame({"acc": [np.nan, 0.2]}))
    with pytest.raises(ValueError, match="look like seeds"):
        style(pd.DataFrame({"run_id": [3_870_000_000_000_000_000 // 1000]}))
    # a seed column under another name is dropped when named
    assert list(style(pd.DataFrame({"rng": [2**40], "v": [1.0]}), seeds=["rng"]).data.columns) == ["v"]


def test_text_columns_are_left_aligned_and_wrap():
    df = pd.DataFrame({"attack": ["a long name of an attack"], "acc": [0.5], "what we found": ["a sentence " * 8]})
    s = style(df, percent=["acc"])
    html = s.to_html()
    css = {k: [p for p in v] for k, v in ((t["selector"], t["props"]) for t in s.table_styles)}
    left = [sel for sel, props in css.items() if ("white-space", "normal") in props and sel not in ("th", "caption")]
    assert len(left) == 2 and ".col0" in " ".join(left) and ".col2" in " ".join(left)   # the two text columns
    assert not any(".col1" in sel for sel in left)                                       # numbers stay right
    assert "white-space: normal" in html


def test_a_caption_wraps_within_the_visible_width_and_stays_in_view():
    """A wide table scrolls sideways on a phone; its caption must not scroll out of view with it
    (the theme keeps table text on one line, so at 400 px only its first words showed)."""
    css = {t["selector"]: dict(t["props"]) for t in style(pd.DataFrame({"a": [1]}), caption="A caption.").table_styles}
    cap = css["caption"]
    assert cap["white-space"] == "normal" and cap["position"] == "sticky" and cap["left"] == "0"
    assert "100vw" in cap["max-width"]


def test_headers_wrap_but_numbers_do_not():
    """A long header ("gain, 10 steps (points)") wraps at its spaces instead of widening a column of
    short numbers; a number never breaks across lines."""
    css = {t["selector"]: t["props"] for t in style(pd.DataFrame({"gain, 10 steps": [1.5]})).table_styles}
    assert ("white-space", "normal") in css["th"]
    assert ("white-space", "nowrap") in css["th, td"]


def test_caption_and_footnote_read_as_two_sentences():
    html = style(pd.DataFrame({"acc": [np.nan, 0.2]}), na="not run", caption="Table 1, ours").to_html()
    assert "Table 1, ours. n/a: not run" in html


def test_boolean_columns_read_yes_no():
    s = style(pd.DataFrame({"d": [3, 4], "refused": np.array([True, False])}))
    assert cells(s) == [["3", "yes"], ["4", "no"]]


def test_numbers_formatted_by_the_caller_stay_right_aligned():
    df = pd.DataFrame({"q": ["error", "AIA"], "v": ["3.16 × 10⁻¹⁴", "25.7 %"], "w": ["-63.538", "n/a"]})
    left = " ".join(t["selector"] for t in style(df).table_styles if ("white-space", "normal") in t["props"])
    assert ".col0" in left and ".col1" not in left and ".col2" not in left


def test_n_per_column_when_the_columns_of_means_have_different_seed_counts():
    # the paper's mean over 3 seeds beside ours over 1 seed, and a paper-scale file over a seeds column
    df = pd.DataFrame({"row": ["passive/Ours", "Model-w-O"], "paper": [0.959, 0.9679], "paper_sd": [0.0004, 0.0079],
                       "ours": [0.95, 0.97], "ours_sd": [0.0, 0.0], "big": [0.96, np.nan], "big_sd": [0.01, np.nan],
                       "k": [3, 2]})
    s = style(df, percent=["paper", "ours", "big"], decimals=2, na="no result file",
              sd={"paper": "paper_sd", "ours": "ours_sd", "big": "big_sd"}, n={"paper": 3, "ours": 1, "big": "k"})
    # each column's rows with a value share one count, so the header says it (big's missing row has none)
    assert list(s.data.columns) == ["row", "paper (3 seeds)", "ours (1 seed)", "big (3 seeds)"]
    assert cells(s) == [["passive/Ours", "95.90 ± 0.04 %", "95.00 %", "96.00 ± 1.00 %"],
                        ["Model-w-O", "96.79 ± 0.79 %", "97.00 %", "n/a"]]
    # counts that differ within a column stay in the cells; a unit and a count share the header
    two = pd.DataFrame({"row": ["a", "b"], "t": [0.96, 0.95], "t_sd": [0.01, 0.02], "k": [3, 2]})
    mixed = style(two, percent=["t"], sd={"t": "t_sd"}, n="k")
    assert list(mixed.data.columns) == ["row", "t"]
    assert cells(mixed) == [["a", "96.00 ± 1.00 % (3 seeds)"], ["b", "95.00 ± 2.00 % (2 seeds)"]]
    same = style(two.assign(k=[3, 3]), units={"t": "share"}, sd={"t": "t_sd"}, n="k")
    assert list(same.data.columns) == ["row", "t (share, 3 seeds)"] and cells(same)[0] == ["a", "0.96 ± 0.01"]
    with pytest.raises(ValueError, match="no entry for the sd columns"):
        style(df, sd={"paper": "paper_sd", "ours": "ours_sd"}, n={"paper": 3})
    with pytest.raises(KeyError, match="n names"):
        style(df, sd={"paper": "paper_sd"}, n={"nope": 3})
    with pytest.raises(ValueError, match="at least 1"):
        style(df, sd={"paper": "paper_sd"}, n={"paper": 0})
