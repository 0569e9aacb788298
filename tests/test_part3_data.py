"""Part III's tasks: Alg. 5, the synthetic census, the Income-A split, Medical, ACS announcements."""

from __future__ import annotations

import pytest
import torch

from flprivacy.data import DataNotFoundError
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
