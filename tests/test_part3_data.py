"""Part III's tasks: Alg. 5, the synthetic census, the Income-A split, Medical, ACS announcements."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from flprivacy.data import DataNotFoundError
from flprivacy.data import census as CE
from flprivacy.data.census import (
    CENSUS_COLUMNS,
    SYNTHETIC,
    acs_available,
    encode_census,
    heterogeneity_split,
    income_a_task,
    income_l_task,
    medical_task,
    occupation_group,
    synthetic_census,
)


def _table(n=10_000, seed=0):
    g = torch.Generator().manual_seed(seed)
    man = torch.rand(n, generator=g) < 0.5
    y = torch.rand(n, generator=g) * 100 + 20 * man
    return y, man


@pytest.mark.parametrize("h", [0.0, 0.2, 0.4, 0.5])
def test_heterogeneity_split_follows_alg5(h):
    y, man = _table()
    parts = heterogeneity_split(y, man, h, n_clients=10, seed=1)
    allidx = torch.cat(parts)
    assert len(parts) == 10 and allidx.unique().numel() == allidx.numel()  # disjoint
    assert max(p.numel() for p in parts) - min(p.numel() for p in parts) <= 1  # equal parts
    med = torch.quantile(y.double(), 0.5)
    in_h = (man & (y > med)) | (~man & (y <= med))
    k = allidx.numel() // 2
    assert k == min(int(in_h.sum()), int((~in_h).sum()))
    frac_h = [float(in_h[p].double().mean()) for p in parts]
    expected = 0.5 + h  # the second half holds D'_h: a fraction (0.5 + h) of rich men / poor women
    assert all(abs(f - (1 - expected)) < 0.05 for f in frac_h[:5])
    assert all(abs(f - expected) < 0.05 for f in frac_h[5:])


def test_heterogeneity_split_errors():
    y, man = _table(50)
    with pytest.raises(ValueError, match="\\[0, 0.5\\]"):
        heterogeneity_split(y, man, 0.7)
    with pytest.raises(ValueError, match="even"):
        heterogeneity_split(y, man, 0.2, n_clients=5)


def test_synthetic_census_columns_structure_and_reproducibility():
    df = synthetic_census(20_000, seed=3)
    assert list(df.columns) == CENSUS_COLUMNS + ["ST", "PINCP"]
    assert df.equals(synthetic_census(20_000, seed=3))
    assert (df["PINCP"] > 100).all() and df["AGEP"].between(17, 90).all() and df["SEX"].isin([1, 2]).all()
    men, women = df[df.SEX == 1], df[df.SEX == 2]
    assert men.PINCP.median() > 1.2 * women.PINCP.median()  # the documented gap, direct and indirect
    assert men.WKHP.mean() > women.WKHP.mean() + 3
    assert (occupation_group(df["OCCP"]) >= 0).all()
    many = synthetic_census(5000, states=None, seed=0)
    assert many["ST"].nunique() > 40 and (many.ST == 6).sum() > (many.ST == 56).sum()  # CA > WY
    with pytest.raises(ValueError, match="unknown states"):
        synthetic_census(10, states=["XX"])


def test_encode_census_and_classification_target():
    df = synthetic_census(500, seed=0)
    tab = encode_census(df)
    sex = tab.columns("SEX")
    assert len(sex) == 1 and set(tab.X[:, sex[0]].tolist()) == {0.0, 1.0}
    assert float(tab.y.mean()) > 1000  # dollars
    cls = encode_census(df, classification_threshold=39_000)
    assert set(cls.y.tolist()) <= {0.0, 1.0}
    assert tab.X.shape[1] < encode_census(df, occupation="code").X.shape[1] + 20
    with pytest.raises(ValueError, match="lacks columns"):
        encode_census(df.drop(columns=["WKHP"]))


def test_income_tasks_on_the_synthetic_census():
    t = income_l_task(0.4, n_synthetic=3000, seed=0)
    assert t.source == SYNTHETIC and len(t.clients) == 10 and t.attribute_name == "sex"
    assert all(c.X_val is not None for c in t.clients)
    s = t.sensitive_columns[0]
    # Alg. 5 at h = 0.4: women earn more on the first clients, less on the last ones
    gap = [float(c.y[c.X[:, s] == 1].mean() - c.y[c.X[:, s] == 0].mean()) for c in t.clients]
    assert all(g > 0 for g in gap[:5]) and all(g < 0 for g in gap[5:])
    a = income_a_task(n_synthetic=8000, seed=0)
    assert len(a.clients) == 51 and a.meta["fraction"] == 0.2
    assert abs(sum(c.n + (0 if c.X_val is None else c.X_val.shape[0]) for c in a.clients) - 1600) < 60


def test_acs_absence_is_announced_with_the_fetch_command(empty_data_dir, capsys):
    assert not acs_available(["LA"])
    out = capsys.readouterr().out
    assert "psam_p22.csv" in out and "python -m flprivacy.data fetch-acs" in out and "--states LA" in out
    with pytest.raises(DataNotFoundError, match="fetch-acs"):
        income_l_task(source="acs")


def test_medical_task(data_file):
    data_file("medical/insurance.csv")
    t = medical_task(seed=0)
    assert len(t.clients) == 2 and t.attribute_name == "smoker"
    assert sum(t.sizes) + sum(c.X_val.shape[0] for c in t.clients) == 1338
    truth = t.attribute.true_index(t.clients[0].X)
    assert 0.1 < float(truth.double().mean()) < 0.3  # about 20% smokers


# ---- the synthetic census's causal model, as its docstring states it (mutants: tests/mutants/census.py) -------
Z = 5.0
"""Every estimate below must lie within 5 standard errors of the documented value: for a normal
estimate that fails with probability 6e-7 per check, so the checks hold on any seed and machine."""


def _ols(X, y):
    """Least squares with the classical standard errors (homoscedastic noise, as the model draws it)."""
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    r = y - X @ beta
    s2 = r @ r / (len(y) - X.shape[1])
    return beta, np.sqrt(s2 * np.diag(np.linalg.inv(X.T @ X))), np.sqrt(s2)


@pytest.fixture(scope="module")
def census():
    return synthetic_census(60_000, seed=5)


def test_synthetic_income_model_recovers_its_documented_coefficients(census):
    """log PINCP = 10.1 + α_ST + 0.045 a - 0.0007 a² + 0.09 (SCHL - 16) + occupation + 0.85 log(WKHP/40)
    + 0.08 married + class of worker - 0.22 woman + ε, ε ~ N(0, 0.55²), a = age - 17: with one state
    (α_ST constant) least squares on these regressors is unbiased (the clipping to [104, 1.2M] sits
    10 and 6 noise deviations away), so each coefficient and the noise's deviation are recovered."""
    df, occ = census, np.array(CE._SYN_OCCUPATIONS)
    n, a = len(df), df.AGEP.to_numpy() - 17
    cow = np.array([0.0, -0.05, 0.0, 0.02, 0.1, -0.25, 0.2])  # the docstring's "class-of-worker effect", COW 1..7
    X = np.stack([np.ones(n), a, a ** 2, df.SCHL.to_numpy() - 16, np.log(df.WKHP.to_numpy() / 40), (df.MAR == 1) * 1.0,
                  (df.SEX == 2) * 1.0, *[(df.OCCP == c) * 1.0 for c in occ[1:, 0].astype(int)],
                  *[(df.COW == c) * 1.0 for c in range(2, 8)]], 1)
    beta, se, sigma = _ols(X, np.log(df.PINCP.to_numpy()))
    truth = np.r_[0.045, -0.0007, 0.09, 0.85, 0.08, -0.22, occ[1:, 4] - occ[0, 4], cow[1:] - cow[0]]
    z = (beta[1:] - truth) / se[1:]
    assert np.abs(z).max() < Z, dict(zip(range(1, len(z) + 1), np.round(z, 1)))
    assert abs(sigma - 0.55) < Z * 0.55 / np.sqrt(2 * n)  # the standard error of a normal sample's deviation


def test_synthetic_census_draws_sex_hours_marriage_and_states_as_documented(census):
    df, n = census, len(census)
    woman = (df.SEX == 2).to_numpy()
    assert abs(woman.mean() - 0.5) < Z * np.sqrt(0.25 / n)  # SEX: equally likely
    age = df.AGEP.to_numpy()
    p = 0.65 / (1 + np.exp(-(age - 30) / 5))  # married with probability 0.65 σ((age - 30)/5)
    assert abs((df.MAR == 1).mean() - p.mean()) < Z * np.sqrt((p * (1 - p)).sum()) / n
    # WKHP ~ N(42 - 5 woman - 0.004 (age - 45)², 9²) (+ a state's culture: one state here, in the intercept)
    X = np.stack([np.ones(n), woman * 1.0, (age - 45.0) ** 2], 1)
    beta, se, sigma = _ols(X, df.WKHP.to_numpy())
    assert np.all(np.abs((beta[1:] - [-5, -0.004]) / se[1:]) < Z)
    assert abs(sigma - np.sqrt(81 + 1 / 12)) < Z * 9 / np.sqrt(2 * n)  # 9² plus rounding to whole hours (1/12)
    many = synthetic_census(n, states=None, seed=5)  # states weighted by their 2018 populations
    share = CE.STATE_POPULATION["CA"] / sum(CE.STATE_POPULATION.values())
    assert abs((many.ST == 6).mean() - share) < Z * np.sqrt(share * (1 - share) / n)


def test_occupation_groups_include_both_ends_of_each_range():
    codes = [lo for lo, _, _ in CE.OCCUPATION_GROUPS] + [hi for _, hi, _ in CE.OCCUPATION_GROUPS]
    got = occupation_group(pd.Series(codes)).tolist()
    assert got == list(range(23)) * 2
    assert occupation_group(pd.Series([9, 445, 9831, None])).tolist() == [-1, -1, -1, -1]


def test_census_encodings_mark_women_threshold_and_groups():
    df = pd.DataFrame({"AGEP": [30, 40, 50, 60], "COW": [5, 7, 1, 99], "SCHL": [16, 18, 20, 22], "MAR": [1, 5, 1, 3],
                       "OCCP": [10, 440, 9830, 4020], "RELP": [0, 2, 1, 0], "WKHP": [40, 20, 50, 35], "SEX": [2, 1, 2, 1],
                       "RAC1P": [1, 2, 1, 6], "PINCP": [39_000, 39_001, 10_000, 80_000]})
    full = encode_census(df, name="t")
    assert full.X[:, full.columns("SEX")[0]].tolist() == [1.0, 0.0, 1.0, 0.0]  # SEX=2: women
    assert all(abs(float(full.X[:, j].mean())) < 1e-6 for j in full.columns("SCHL"))  # standardised
    occ = [full.feature_names[j] for j in full.columns("OCCP")]
    assert len(occ) == 3  # codes 10 and 440 are one group (management): 3 groups, not 4 raw codes
    assert encode_census(df, classification_threshold=39_000).y.tolist() == [0.0, 1.0, 0.0, 1.0]  # PINCP > threshold
    red = CE.encode_census_reduced(df, name="t")
    col = {name: red.X[:, j].tolist() for j, name in enumerate(red.feature_names)}
    # App. C.1's 3 groups: COW 5 (federal government) public, 1 private, 7 (self-employed) and 99 (unknown) other
    assert (col["COW=public"], col["COW=private"], col["COW=other"]) == ([1.0, 0, 0, 0], [0, 0, 1.0, 0], [0, 1.0, 0, 1.0])
    assert col["MAR=1"] == [1.0, 0.0, 1.0, 0.0] and col["RAC1P=1"] == [1.0, 0.0, 1.0, 0.0]
