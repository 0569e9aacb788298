"""Tabular data sets: Medical, UCI Adult and ACS Income, plus a small encoder.

Loaders return the raw table as a ``pandas.DataFrame``; :func:`encode` turns a table into a
design matrix with named columns, so that an attack can find the column(s) of a sensitive
attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from .. import config
from .files import OFFLINE_ENV, DataNotFoundError, data_dir, fetch, reachable


# ---- Medical (Lantz 2013) ------------------------------------------------------------------------
def load_medical() -> pd.DataFrame:
    """The Medical insurance data (Diana et al. 2025, §5.1): 1,338 rows; columns age, sex, bmi,
    children, smoker, region and the regression target charges."""
    return pd.read_csv(fetch("medical/insurance.csv"))


# ---- UCI Adult -----------------------------------------------------------------------------------
ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
]


def load_adult(split: str = "train") -> pd.DataFrame:
    """UCI Adult (Becker & Kohavi 1996) as a DataFrame, ``split`` = ``"train"`` (32,561 rows),
    ``"test"`` (16,281) or ``"all"``. ``income`` is ``"<=50K"``/``">50K"`` in both files;
    missing values (``?``) are NaN."""
    if split == "all":
        return pd.concat([load_adult("train"), load_adult("test")], ignore_index=True)
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}.")
    path = fetch(f"adult/adult.{'data' if split == 'train' else 'test'}")
    df = pd.read_csv(path, header=None, names=ADULT_COLUMNS, skipinitialspace=True, na_values="?",
                     skiprows=1 if split == "test" else 0)
    df["income"] = df["income"].str.rstrip(".")
    return df


# ---- ACS Income (folktables) ---------------------------------------------------------------------
STATE_CODES = {
    "AL": "01", "AK": "02", "AZ": "04", "AR": "05", "CA": "06", "CO": "08", "CT": "09", "DE": "10", "FL": "12",
    "GA": "13", "HI": "15", "ID": "16", "IL": "17", "IN": "18", "IA": "19", "KS": "20", "KY": "21", "LA": "22",
    "ME": "23", "MD": "24", "MA": "25", "MI": "26", "MN": "27", "MS": "28", "MO": "29", "MT": "30", "NE": "31",
    "NV": "32", "NH": "33", "NJ": "34", "NM": "35", "NY": "36", "NC": "37", "ND": "38", "OH": "39", "OK": "40",
    "OR": "41", "PA": "42", "RI": "44", "SC": "45", "SD": "46", "TN": "47", "TX": "48", "UT": "49", "VT": "50",
    "VA": "51", "WA": "53", "WV": "54", "WI": "55", "WY": "56", "PR": "72",
}
"""The 50 states and Puerto Rico with their FIPS codes, as folktables names them."""

ACS_INCOME_FEATURES = ["AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "WKHP", "SEX", "RAC1P"]
"""folktables' ACSIncome features (Ding et al. 2021)."""


def acs_dir() -> Path:
    """Root of the ACS files in folktables' layout: ``<data dir>/acs_income``."""
    return data_dir() / "acs_income"


def acs_person_file(state: str, year: int = 2018, horizon: str = "1-Year") -> Path:
    """Where folktables keeps a state's person file: ``acs_income/<year>/<horizon>/psam_pNN.csv``."""
    if state not in STATE_CODES:
        raise ValueError(f"unknown state {state!r}; use a two-letter code such as 'LA' (see STATE_CODES).")
    return acs_dir() / str(year) / horizon / f"psam_p{STATE_CODES[state]}.csv"


def acs_fetch_command(states: Sequence[str], year: int = 2018, horizon: str = "1-Year") -> str:
    """The shell command that downloads the ACS person files of ``states`` (needs internet)."""
    return (f"python -m flprivacy.data fetch-acs --year {year} --horizon {horizon} --states {' '.join(states)}")


def load_acs_income(states: Sequence[str] = ("LA",), year: int = 2018, horizon: str = "1-Year",
                    allow_download: bool | None = None) -> pd.DataFrame:
    """ACS Income (folktables, Ding et al. 2021) with the *raw* income ``PINCP`` as target.

    Reads the PUMS person files through folktables' offline layout, applies folktables'
    ACSIncome filter (age > 16, income > 100, hours > 0, weight >= 1) and returns the ten
    ACSIncome features, the state code ``ST`` and ``PINCP``. Used for Income-L (Louisiana) and
    Income-A (all states) of Diana et al. 2025.

    Raises:
        DataNotFoundError: a state file is missing and could not be downloaded; the message gives
            the command that fetches it.
    """
    from folktables import ACSDataSource
    from folktables.acs import adult_filter

    states = list(states)
    missing = [s for s in states if not acs_person_file(s, year, horizon).is_file()]
    if missing:
        if allow_download is None:
            allow_download = config.env(OFFLINE_ENV, "0").lower() not in ("1", "true", "yes")
        if allow_download:
            fetch_acs(missing, year, horizon)
        missing = [s for s in missing if not acs_person_file(s, year, horizon).is_file()]
    if missing:
        files = ", ".join(str(acs_person_file(s, year, horizon)) for s in missing)
        raise DataNotFoundError(
            f"ACS PUMS person file(s) missing: {files}. They come from the US Census Bureau through folktables; "
            f"on a machine with internet run `{acs_fetch_command(missing, year, horizon)}`, "
            "or copy psam_pNN.csv files into that folder, or point FLPRIVACY_DATA_DIR at a folder holding them."
        )
    for s in states:
        validate_acs_file(acs_person_file(s, year, horizon), s)
    source = ACSDataSource(survey_year=str(year), horizon=horizon, survey="person", root_dir=str(acs_dir()))
    raw = adult_filter(source.get_data(states=states, download=False))
    df = raw[ACS_INCOME_FEATURES + ["ST", "PINCP"]].copy()
    df[ACS_INCOME_FEATURES] = df[ACS_INCOME_FEATURES].fillna(-1)
    return df.reset_index(drop=True)


ACS_HOST = "https://www2.census.gov"

ACS_MIN_ROWS = 2_000
"""Fewest person records a real 1-Year PUMS state file holds (Wyoming, the smallest state, has
about 5,800); a smaller file is a stub or a truncated download."""

ACS_REQUIRED_COLUMNS = ["ST", "PINCP", "PWGTP", *ACS_INCOME_FEATURES]
"""Columns folktables' ACSIncome task reads (features, target, filter, state)."""


def validate_acs_file(path: Path, state: str) -> None:
    """Check that ``path`` looks like a real ACS PUMS person file of ``state``: the columns
    folktables needs, the state's FIPS code in ``ST``, and at least :data:`ACS_MIN_ROWS` rows.

    Raises:
        ValueError: naming the file, what is wrong and how to fetch the real file.
    """
    fix = f"delete it and fetch the real file with `{acs_fetch_command([state])}`."
    try:
        head = pd.read_csv(path, nrows=200)
    except (ValueError, OSError, pd.errors.ParserError) as e:
        raise ValueError(f"ACS file {path} cannot be read as CSV ({e}); {fix}") from None
    missing = [c for c in ACS_REQUIRED_COLUMNS if c not in head.columns]
    if missing:
        raise ValueError(f"ACS file {path} lacks the PUMS columns {missing}; it is not a person file; {fix}")
    st = pd.to_numeric(head["ST"], errors="coerce")
    if not bool((st == int(STATE_CODES[state])).all()):
        raise ValueError(f"ACS file {path} should hold state {state} (ST = {int(STATE_CODES[state])}) but its ST column "
                         f"holds {sorted(set(st.dropna().astype(int).tolist()))[:5]}; {fix}")
    with open(path, "rb") as f:
        rows = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 22), b"")) - 1
    if rows < ACS_MIN_ROWS:
        raise ValueError(f"ACS file {path} has {rows} rows; a real PUMS person file of a state has at least "
                         f"{ACS_MIN_ROWS:,} (a stub or truncated file?); {fix}")


def fetch_acs(states: Sequence[str], year: int = 2018, horizon: str = "1-Year") -> None:
    """Download ACS person files with folktables (from www2.census.gov) into :func:`acs_dir`.

    Does nothing when the Census server cannot be reached (folktables would otherwise create
    folders and print errors); callers check for the files afterwards.
    """
    from folktables import ACSDataSource

    if not reachable(ACS_HOST):
        return
    source = ACSDataSource(survey_year=str(year), horizon=horizon, survey="person", root_dir=str(acs_dir()))
    for s in states:
        try:
            source.get_data(states=[s], download=True)
        except OSError as e:  # folktables prints and continues on network errors; callers re-check the files
            print(f"folktables could not download {s}: {e}")


# ---- encoding ----------------------------------------------------------------------------------
@dataclass
class TabularData:
    """An encoded table: design matrix ``X``, target ``y`` and the encoded columns of each
    original column (``groups["region"]`` lists the one-hot columns of ``region``)."""

    X: Tensor
    y: Tensor
    feature_names: list[str]
    groups: dict[str, list[int]] = field(default_factory=dict)
    name: str = ""

    def columns(self, column: str) -> list[int]:
        """Indices in ``X`` of an original column."""
        if column not in self.groups:
            raise KeyError(f"{column!r} is not a column of {self.name or 'this table'}; columns: {list(self.groups)}.")
        return self.groups[column]


def encode(
    df: pd.DataFrame,
    target: str,
    *,
    categorical: Sequence[str] = (),
    binary: dict[str, object] | None = None,
    standardize: Sequence[str] = (),
    target_scale: float = 1.0,
    dtype: torch.dtype = torch.float32,
    name: str = "",
) -> TabularData:
    """Encode ``df`` into a design matrix.

    Args:
        target: target column (divided by ``target_scale``; class labels stay as they are if
            non-numeric: they are mapped to 0..K-1 in sorted order).
        categorical: columns one-hot encoded (one column per value, sorted).
        binary: ``{column: positive_value}``: columns encoded as 1 where equal to the value, else 0.
        standardize: numeric columns scaled to mean 0, standard deviation 1.

    Every other column is used as it is (it must be numeric).
    """
    if target not in df.columns:
        raise ValueError(f"encode: target={target!r} is not a column of the table; columns: {list(df.columns)}.")
    binary = binary or {}
    cols, names, groups = [], [], {}
    for col in df.columns:
        if col == target:
            continue
        v = df[col]
        start = len(names)
        if col in categorical:
            levels = sorted(v.dropna().unique().tolist())
            for lv in levels:
                cols.append((v == lv).to_numpy(np.float64))
                names.append(f"{col}={lv}")
        elif col in binary:
            cols.append((v == binary[col]).to_numpy(np.float64))
            names.append(f"{col}={binary[col]}")
        else:
            x = pd.to_numeric(v, errors="raise").to_numpy(np.float64)
            if col in standardize:
                x = (x - x.mean()) / (x.std() or 1.0)
            cols.append(x)
            names.append(col)
        groups[col] = list(range(start, len(names)))
    X = torch.tensor(np.stack(cols, axis=1), dtype=dtype)
    t = df[target]
    if pd.api.types.is_numeric_dtype(t):
        y = torch.tensor(t.to_numpy(np.float64) / target_scale, dtype=dtype)
    else:
        levels = sorted(t.unique().tolist())
        y = torch.tensor(t.map({lv: i for i, lv in enumerate(levels)}).to_numpy(np.int64))
    return TabularData(X, y, names, groups, name)
