"""Income-L's size (Diana et al. §5.1: 15,982 records held by the 10 clients) on the synthetic
census: the table drawn, the rows Alg. 5 leaves the clients, and the ledger's sentence saying both."""

from __future__ import annotations

import inspect

import torch

from flbook.ledger.diana_aia import income_l_size_text, income_l_sizes, referee_stand_in_text
from flbook.papers.diana import PAPER_INCOME_L_RECORDS
from flprivacy.data.census import heterogeneity_split, income_l_task, synthetic_census


def test_synthetic_table_has_the_papers_count():
    default = inspect.signature(income_l_task).parameters["n_synthetic"].default
    assert default == PAPER_INCOME_L_RECORDS == 15_982
    assert len(synthetic_census(default, ["LA"], seed=0)) == PAPER_INCOME_L_RECORDS


def test_clients_hold_alg5_cut():
    """Alg. 5 (App. B.3, lines 4-6) keeps k = min(|D_h|, |D_l|) rows of each group: the clients
    hold exactly 2k rows, for every h (the swap moves rows between groups, it drops none)."""
    df = synthetic_census(PAPER_INCOME_L_RECORDS, ["LA"], seed=0)
    y = torch.tensor(df["PINCP"].to_numpy(), dtype=torch.float64)
    man = torch.tensor((df["SEX"] == 1).to_numpy())
    med = torch.quantile(y, 0.5)
    in_h = (man & (y > med)) | (~man & (y <= med))
    k = min(int(in_h.sum()), int((~in_h).sum()))
    for h in (0.0, 0.4, 0.5):
        parts = heterogeneity_split(y, man, h, 10, seed=0)
        assert sum(p.numel() for p in parts) == 2 * k
        assert len(torch.cat(parts).unique()) == 2 * k  # no row twice
    z = income_l_sizes()
    assert z["drawn"] == PAPER_INCOME_L_RECORDS and z["kept"] == 2 * k and z["train"] < z["kept"]
    assert z["kept"] < PAPER_INCOME_L_RECORDS  # the clients hold fewer rows than the paper's 15,982


def test_ledger_says_both_sizes():
    z = income_l_sizes()
    text = income_l_size_text()
    assert f"{z['kept']:,}" in text and f"{PAPER_INCOME_L_RECORDS:,}" in text and "before Alg. 5" in text
    assert text in referee_stand_in_text("Income-L", 1)
