"""The federated regression tasks of Diana et al. 2025 (§5.1, App. B.4) and a synthetic census.

Three tasks, each a list of clients with a sensitive attribute to infer:

========  ==============================================================  =========
task      clients                                                         attribute
========  ==============================================================  =========
Medical   the insurance table (Lantz 2013) split i.i.d. over 2 clients    smoker
Income-L  ACS Income, Louisiana, 10 clients split by Alg. 5 with          sex
          heterogeneity level h (App. B.4)
Income-A  ACS Income, 51 clients = the 50 states and Puerto Rico,         sex
          each a random 20% of its state's rows
========  ==============================================================  =========

Every client keeps 90% of its rows for training and 10% for validation (§5.1). The target is
the raw medical charge or income in dollars, as in the authors' code (their learning rates,
App. B.5, are tuned for it); numeric features are standardised.

ACS Income cannot be downloaded on every machine (:func:`flprivacy.data.tabular.load_acs_income` says
which file is missing and how to fetch it). :func:`synthetic_census` generates rows with the
same columns from a documented causal model, so that the same pipeline (encoding, Alg. 5,
training, attacks) runs on it; results on it are labelled "synthetic census", never "ACS".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from ..config import generator
from ..federation import ClientData
from ..validation import as_tensor, check_finite, check_int, check_seed
from .files import DataNotFoundError
from .splits import make_clients, train_val_split
from .tabular import STATE_CODES, acs_fetch_command, acs_person_file, encode, load_acs_income, load_medical

SYNTHETIC = "synthetic census"
ACS = "ACS Income 2018 (folktables)"
MEDICAL = "Medical (Lantz 2013)"


@dataclass
class FederatedTask:
    """Clients of a federated regression (or classification) task and the attribute to infer.

    Attributes:
        name: the paper's name of the task (``"Medical"``, ``"Income-L"``, ``"Income-A"``...).
        source: the data set the rows come from (``"Medical (Lantz 2013)"``,
            ``"ACS Income 2018 (folktables)"`` or ``"synthetic census"``): tables name it.
        clients: the clients' data (train and validation rows).
        feature_names: names of the columns of every client's ``X``.
        sensitive_columns, candidates: where the sensitive attribute is and its values.
        attribute_name: e.g. ``"smoker"`` or ``"sex"``.
        meta: anything else worth recording (heterogeneity level, states, ...).
    """

    name: str
    source: str
    clients: list[ClientData]
    feature_names: list[str]
    sensitive_columns: tuple[int, ...]
    candidates: Tensor
    attribute_name: str
    meta: dict = field(default_factory=dict)

    @property
    def attribute(self):
        """The :class:`flprivacy.data.attributes.SensitiveAttribute` to infer."""
        from .attributes import SensitiveAttribute

        return SensitiveAttribute(self.sensitive_columns, self.candidates, self.attribute_name)

    @property
    def sizes(self) -> list[int]:
        """Training rows of every client."""
        return [c.n for c in self.clients]

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def __repr__(self) -> str:
        return (f"FederatedTask({self.name!r} on {self.source}, {len(self.clients)} clients, "
                f"{sum(self.sizes)} training rows, {self.n_features} features, infer {self.attribute_name!r})")


# ---- Medical -------------------------------------------------------------------------------------
def medical_task(n_clients: int = 2, seed: int = 0, val_fraction: float = 0.1) -> FederatedTask:
    """Medical (§5.1): 1,338 people, features age, sex, bmi, children, smoker, region; target
    the yearly charges in dollars; split i.i.d. over ``n_clients`` (2 in the paper); the
    adversary infers ``smoker``."""
    check_int("n_clients", n_clients, "medical_task", minimum=1)
    check_seed("seed", seed, "medical_task")
    df = load_medical()
    tab = encode(df, "charges", categorical=["region"], binary={"sex": "male", "smoker": "yes"},
                 standardize=["age", "bmi", "children"], name="Medical")
    clients = make_clients(tab.X, tab.y, n_clients, val_fraction=val_fraction, seed=seed)
    col = tab.columns("smoker")
    return FederatedTask("Medical", MEDICAL, clients, tab.feature_names, tuple(col), torch.tensor([[0.0], [1.0]]),
                         "smoker", {"seed": seed})


# ---- census encoding (ACS and synthetic) ---------------------------------------------------------
OCCUPATION_GROUPS: list[tuple[int, int, str]] = [
    (10, 440, "management"), (500, 960, "business and financial"), (1005, 1240, "computer and mathematical"),
    (1305, 1560, "architecture and engineering"), (1600, 1980, "science"), (2001, 2060, "community service"),
    (2100, 2180, "legal"), (2205, 2555, "education"), (2600, 2920, "arts and media"),
    (3000, 3550, "healthcare practitioners"), (3601, 3655, "healthcare support"), (3700, 3960, "protective service"),
    (4000, 4160, "food preparation"), (4200, 4255, "building maintenance"), (4330, 4655, "personal care"),
    (4700, 4965, "sales"), (5000, 5940, "office support"), (6005, 6130, "farming and fishing"),
    (6200, 6950, "construction and extraction"), (7000, 7640, "installation and repair"), (7700, 8990, "production"),
    (9005, 9760, "transportation"), (9800, 9830, "military"),
]
"""Major groups of the 2018 ACS occupation codes OCCP (Census occupation code list, SOC 2018)."""


def occupation_group(occp: pd.Series) -> pd.Series:
    """Index of the major occupation group of every OCCP code (-1 when unknown or missing)."""
    codes = pd.to_numeric(occp, errors="coerce").fillna(-1).to_numpy()
    out = np.full(codes.shape, -1, dtype=np.int64)
    for k, (lo, hi, _) in enumerate(OCCUPATION_GROUPS):
        out[(codes >= lo) & (codes <= hi)] = k
    return pd.Series(out, index=occp.index)


CENSUS_COLUMNS = ["AGEP", "COW", "SCHL", "MAR", "OCCP", "RELP", "WKHP", "SEX", "RAC1P"]
"""The ACSIncome features used (folktables' list without POBP, which the authors drop)."""


def encode_census(df: pd.DataFrame, *, occupation: str = "major", classification_threshold: float | None = None,
                  name: str = "") -> tuple:
    """Encode an ACS Income table (or a synthetic census with the same columns).

    AGEP, WKHP and SCHL (an ordinal education code) are standardised; COW, MAR, RELP, RAC1P
    and the occupation are one-hot; SEX becomes one column ``SEX=2`` (1 for women, the ACS
    code 2); POBP is dropped, as in the authors' code. The occupation is one-hot over its 23
    major groups (``occupation="major"``) or over the raw codes (``"code"``, ~500 columns:
    the authors' encoding; it makes the input 10x wider and the gradient-based attack 10x
    slower). The target is PINCP in dollars, or ``1[PINCP > threshold]`` with
    ``classification_threshold`` (the classification task of Fig. 1).

    Returns:
        :class:`flprivacy.data.tabular.TabularData`.
    """
    if occupation not in ("major", "code"):
        raise ValueError(f"occupation must be 'major' or 'code', got {occupation!r}.")
    missing = [c for c in CENSUS_COLUMNS + ["PINCP"] if c not in df.columns]
    if missing:
        raise ValueError(f"encode_census: the table lacks columns {missing}; it needs {CENSUS_COLUMNS + ['PINCP']}.")
    t = df[CENSUS_COLUMNS + ["PINCP"]].copy()
    if occupation == "major":
        t["OCCP"] = occupation_group(t["OCCP"])
    if classification_threshold is not None:
        t["PINCP"] = (t["PINCP"] > classification_threshold).astype(np.int64)
    return encode(t, "PINCP", categorical=["COW", "MAR", "OCCP", "RELP", "RAC1P"], binary={"SEX": 2},
                  standardize=["AGEP", "WKHP", "SCHL"], name=name)


COW_GROUPS = {1: "private", 2: "private", 3: "public", 4: "public", 5: "public",
              6: "other", 7: "other", 8: "other",
              9: "other"}
"""Class of worker (ACS COW codes) in the 3 groups of App. C.1, namely public employees, private employees and others."""


def encode_census_reduced(df: pd.DataFrame, *, name: str = "") -> tuple:
    """The reduced census features of the least-squares experiments (Diana et al. App. C.1).

    Occupation, relationship and place of birth are dropped; race becomes one column
    ``RAC1P=1`` (white or not) and marital status one column ``MAR=1`` (married or not); class
    of worker is one-hot over the 3 groups of ``COW_GROUPS``; AGEP, WKHP and SCHL are
    standardised, SEX is ``SEX=2`` (women), the target PINCP stays in dollars.

    Returns:
        :class:`flprivacy.data.tabular.TabularData`.
    """
    needed = ["AGEP", "COW", "SCHL", "MAR", "WKHP", "SEX", "RAC1P", "PINCP"]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"encode_census_reduced: the table lacks columns {missing}; it needs {needed}.")
    t = df[needed].copy()
    t["COW"] = pd.to_numeric(t["COW"], errors="coerce").map(COW_GROUPS).fillna("other")
    return encode(t, "PINCP", categorical=["COW"], binary={"SEX": 2, "RAC1P": 1, "MAR": 1},
                  standardize=["AGEP", "WKHP", "SCHL"], name=name)


# ---- Alg. 5: the heterogeneity split of Income-L ------------------------------------------------
def heterogeneity_split(y: Tensor, is_man: Tensor, h: float, n_clients: int = 10, seed: int = 0) -> list[Tensor]:
    """Row indices of the clients of Alg. 5 (Diana et al. App. B.4), heterogeneity level h.

    D_h holds rich men and poor women (income above / at most the median), D_l the others;
    both are cut to k = min(``|D_h|``, ``|D_l|``) random rows; a random (0.5 - h)k of each are swapped;
    D'_l goes to the first half of the clients and D'_h to the second half, in equal parts.
    h = 0.5 keeps the two clusters pure (most heterogeneous), h = 0 mixes them evenly (i.i.d.).
    """
    y = check_finite("y", as_tensor("y", y, where="heterogeneity_split", ndim=1, min_rows=1), "heterogeneity_split")
    is_man = as_tensor("is_man", is_man, where="heterogeneity_split", ndim=1)
    check_seed("seed", seed, "heterogeneity_split")
    if not 0 <= h <= 0.5:
        raise ValueError(f"the heterogeneity level h must be in [0, 0.5], got {h}.")
    if n_clients < 2 or n_clients % 2:
        raise ValueError(f"Alg. 5 gives half of the clients to each cluster: n_clients must be even, got {n_clients}.")
    if y.shape != is_man.shape:
        raise ValueError(f"y and is_man must have the same shape, got {tuple(y.shape)} and {tuple(is_man.shape)}.")
    g = generator(seed)
    med = torch.quantile(y.double(), 0.5)
    man = is_man.bool()
    in_h = (man & (y.double() > med)) | (~man & (y.double() <= med))
    D_h, D_l = in_h.nonzero().squeeze(1), (~in_h).nonzero().squeeze(1)
    k = min(D_h.numel(), D_l.numel())
    D_h = D_h[torch.randperm(D_h.numel(), generator=g)[:k]]
    D_l = D_l[torch.randperm(D_l.numel(), generator=g)[:k]]
    m = int(round((0.5 - h) * k))
    hs = torch.randperm(k, generator=g)[:m]
    ls = torch.randperm(k, generator=g)[:m]
    keep_h = torch.ones(k, dtype=torch.bool)
    keep_h[hs] = False
    keep_l = torch.ones(k, dtype=torch.bool)
    keep_l[ls] = False
    new_h = torch.cat([D_h[keep_h], D_l[ls]])
    new_l = torch.cat([D_l[keep_l], D_h[hs]])
    half = n_clients // 2
    parts = [p for p in new_l[torch.randperm(k, generator=g)].tensor_split(half)]
    parts += [p for p in new_h[torch.randperm(k, generator=g)].tensor_split(half)]
    return parts


# ---- synthetic census -----------------------------------------------------------------------------
# approximate 2018 populations (millions) of the 50 states and Puerto Rico, for client sizes
STATE_POPULATION = {
    "AL": 4.9, "AK": 0.74, "AZ": 7.2, "AR": 3.0, "CA": 39.6, "CO": 5.7, "CT": 3.6, "DE": 0.97, "FL": 21.3, "GA": 10.5,
    "HI": 1.4, "ID": 1.75, "IL": 12.7, "IN": 6.7, "IA": 3.2, "KS": 2.9, "KY": 4.5, "LA": 4.7, "ME": 1.34, "MD": 6.0,
    "MA": 6.9, "MI": 10.0, "MN": 5.6, "MS": 3.0, "MO": 6.1, "MT": 1.06, "NE": 1.9, "NV": 3.0, "NH": 1.36, "NJ": 8.9,
    "NM": 2.1, "NY": 19.5, "NC": 10.4, "ND": 0.76, "OH": 11.7, "OK": 3.9, "OR": 4.2, "PA": 12.8, "RI": 1.06, "SC": 5.1,
    "SD": 0.88, "TN": 6.8, "TX": 28.7, "UT": 3.2, "VT": 0.63, "VA": 8.5, "WA": 7.5, "WV": 1.8, "WI": 5.8, "WY": 0.58,
    "PR": 3.2,
}

# occupation groups of the synthetic census: (OCCP code, base log-odds, women's shift, per-year-of-school
# shift, income effect in log dollars); the codes fall in the major groups of OCCUPATION_GROUPS
_SYN_OCCUPATIONS = [
    (10, 0.0, -0.3, 0.25, 0.35),     # management
    (800, -0.3, 0.2, 0.25, 0.25),    # business and financial
    (1020, -0.8, -1.2, 0.35, 0.40),  # computer and mathematical
    (1360, -1.2, -1.4, 0.35, 0.35),  # architecture and engineering
    (2310, -0.6, 1.0, 0.30, -0.05),  # education
    (3255, -0.6, 1.0, 0.30, 0.30),   # healthcare practitioners
    (3602, -0.8, 1.5, -0.10, -0.35), # healthcare support
    (4020, 0.2, 0.3, -0.25, -0.55),  # food preparation
    (4720, 0.5, 0.2, -0.05, -0.10),  # sales
    (5240, 0.4, 1.0, 0.00, -0.20),   # office support
    (6230, -0.2, -2.5, -0.20, 0.00), # construction and extraction
    (7750, 0.0, -1.0, -0.15, -0.10), # production
    (9130, -0.2, -1.5, -0.20, -0.15),# transportation
]


def synthetic_census(n: int, states: Sequence[str] | None = ("LA",), seed: int = 0) -> pd.DataFrame:
    """A synthetic census with the columns of ACS Income (``CENSUS_COLUMNS``, ``ST``, ``PINCP``).

    **Not ACS data.** Each row is drawn from this causal model (log dollars; ε noise):

    - ``ST``: a state (weights: 2018 populations) with its own income level α_ST ~ N(0, 0.15²)
      and working-hours culture; ``SEX``: 1 (man) or 2 (woman), equally likely;
    - ``AGEP`` ~ N(42, 14²) clipped to [17, 90]; ``SCHL`` (ACS education code 1..24) ~
      round(N(17.5 + 0.6·woman + 0.03·(age - 42), 2.8²)) clipped;
    - ``MAR``: married with probability 0.65·σ((age - 30)/5), else never married (young),
      divorced or widowed; ``RELP``: householder, spouse (married) or other relative;
      ``RAC1P``: ACS race code, US proportions; ``COW``: ACS class of worker;
    - ``OCCP``: 13 occupations whose choice depends on sex and schooling (segregated
      occupations: construction mostly men, healthcare support mostly women);
    - ``WKHP`` ~ N(42 - 5·woman - 0.004·(age - 45)², 9²) clipped to [1, 99];
    - ``PINCP`` = exp(10.1 + α_ST + 0.045·(age - 17) - 0.0007·(age - 17)² + 0.09·(SCHL - 16)
      + occupation effect + 0.85·log(WKHP / 40) + 0.08·married + class-of-worker effect
      - 0.22·woman + ε), ε ~ N(0, 0.55²), clipped to [104, 1.2M].

    So sex acts on income directly (a 20% gap at equal features) and through hours and
    occupation; Alg. 5 then makes the sex–income link local (rich men and poor women on one
    half of the clients), small clients overfit more, and larger batches mean fewer local
    steps: the mechanisms behind the paper's Income results.

    Args:
        n: number of people.
        states: the states to draw from (two-letter codes), None for all 51 (Income-A).
        seed: the random seed.
    """
    check_int("n", n, "synthetic_census", minimum=1)
    check_seed("seed", seed, "synthetic_census")
    rng = np.random.default_rng(seed)
    states = list(STATE_POPULATION) if states is None else list(states)
    unknown = [s for s in states if s not in STATE_POPULATION]
    if unknown:
        raise ValueError(f"unknown states {unknown}; use two-letter codes from flprivacy.data.tabular.STATE_CODES.")
    state_rng = np.random.default_rng(12345)  # state effects are fixed features of the "country"
    level = dict(zip(STATE_POPULATION, state_rng.normal(0, 0.15, len(STATE_POPULATION))))
    hours = dict(zip(STATE_POPULATION, state_rng.normal(0, 1.5, len(STATE_POPULATION))))
    w = np.array([STATE_POPULATION[s] for s in states])
    st = np.array(states)[rng.choice(len(states), n, p=w / w.sum())]
    woman = rng.random(n) < 0.5
    age = np.clip(np.round(rng.normal(42, 14, n)), 17, 90)
    schl = np.clip(np.round(rng.normal(17.5 + 0.6 * woman + 0.03 * (age - 42), 2.8)), 1, 24)
    married = rng.random(n) < 0.65 / (1 + np.exp(-(age - 30) / 5))
    other = rng.random(n)
    mar = np.where(married, 1, np.where(age < 35, 5, np.where(other < 0.6, 3, np.where(age > 65, 2, 5))))
    relp = np.where(married, np.where(rng.random(n) < 0.5, 0, 1), np.where(age < 25, 2, 0))
    rac = rng.choice([1, 2, 3, 6, 8, 9], n, p=[0.73, 0.13, 0.01, 0.06, 0.04, 0.03])
    cow_codes = np.array([1, 2, 3, 4, 5, 6, 7])
    cow = cow_codes[rng.choice(7, n, p=[0.70, 0.08, 0.07, 0.04, 0.02, 0.06, 0.03])]
    cow_effect = np.array([0.0, -0.05, 0.0, 0.02, 0.1, -0.25, 0.2])[cow - 1]
    occ = np.array(_SYN_OCCUPATIONS)
    logits = occ[:, 1] + np.outer(woman, occ[:, 2]) + np.outer(schl - 18, occ[:, 3])
    prob = np.exp(logits - logits.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    k = (prob.cumsum(1) < rng.random((n, 1))).sum(1).clip(max=len(occ) - 1)
    occp, occ_effect = occ[k, 0].astype(int), occ[k, 4]
    wkhp = np.clip(np.round(rng.normal(42 - 5 * woman - 0.004 * (age - 45) ** 2
                                       + np.array([hours[s] for s in st]), 9)), 1, 99)
    a = age - 17
    log_income = (10.1 + np.array([level[s] for s in st]) + 0.045 * a - 0.0007 * a**2 + 0.09 * (schl - 16)
                  + occ_effect + 0.85 * np.log(wkhp / 40) + 0.08 * married + cow_effect - 0.22 * woman
                  + rng.normal(0, 0.55, n))
    pincp = np.clip(np.round(np.exp(log_income)), 104, 1_200_000)
    return pd.DataFrame({
        "AGEP": age, "COW": cow, "SCHL": schl, "MAR": mar, "OCCP": occp, "RELP": relp, "WKHP": wkhp,
        "SEX": np.where(woman, 2, 1), "RAC1P": rac, "ST": [int(STATE_CODES[s]) for s in st], "PINCP": pincp,
    })


# ---- ACS availability: announced, never silent ------------------------------------------------------
def acs_available(states: Sequence[str], announce: bool = True) -> bool:
    """Whether the ACS person files of ``states`` are in the data directory. When they are
    not and ``announce``, prints which file is missing and the command that fetches it."""
    missing = [s for s in states if not acs_person_file(s).is_file()]
    if missing and announce:
        first = acs_person_file(missing[0])
        more = f" (and {len(missing) - 1} more states)" if len(missing) > 1 else ""
        print(f"ACS Income is not available: {first} is missing{more}. The ACS rows are skipped; "
              f"fetch the files with `{acs_fetch_command(missing)}` (needs internet).")
    return not missing


def _income_table(source: str, states: Sequence[str] | None, n_synthetic: int, seed: int) -> pd.DataFrame:
    if source == "acs":
        all_states = list(STATE_CODES) if states is None else list(states)
        if not acs_available(all_states, announce=False):
            missing = [s for s in all_states if not acs_person_file(s).is_file()]
            raise DataNotFoundError(
                f"ACS person file {acs_person_file(missing[0])} is missing ({len(missing)} state(s)); fetch them with "
                f"`{acs_fetch_command(missing)}`, or use source='synthetic' for the synthetic census."
            )
        df = load_acs_income(all_states, allow_download=False)
        return df.dropna().drop_duplicates().reset_index(drop=True)
    if source == "synthetic":
        return synthetic_census(n_synthetic, states, seed=seed)
    raise ValueError(f"source must be 'acs' or 'synthetic', got {source!r}.")


def _encode_features(df: pd.DataFrame, features: str, occupation: str, name: str):
    if features == "full":
        return encode_census(df, occupation=occupation, name=name)
    if features == "reduced":
        return encode_census_reduced(df, name=name)
    raise ValueError(f"features must be 'full' or 'reduced' (App. C.1's least-squares features), got {features!r}.")


def income_l_task(h: float = 0.4, *, source: str = "synthetic", n_clients: int = 10, seed: int = 0,
                  n_synthetic: int = 15_982, occupation: str = "major", val_fraction: float = 0.1,
                  features: str = "full") -> FederatedTask:
    """Income-L (§5.1, App. B.4): Louisiana, ``n_clients`` clients split by Alg. 5 with
    heterogeneity ``h`` (0.4 in Table 1); infer sex. ``source="acs"`` needs ``psam_p22.csv``
    (raises with the fetch command otherwise); ``"synthetic"`` draws ``n_synthetic`` people
    (the paper's Louisiana table has 15,982 records) from :func:`synthetic_census`.
    ``features="reduced"`` uses :func:`encode_census_reduced` (the least-squares features of
    App. C.1) instead of :func:`encode_census`."""
    check_int("n_synthetic", n_synthetic, "income_l_task", minimum=1)
    check_seed("seed", seed, "income_l_task")
    df = _income_table(source, ["LA"], n_synthetic, seed)
    tab = _encode_features(df, features, occupation, "Income-L")
    sex = tab.columns("SEX")
    parts = heterogeneity_split(tab.y, tab.X[:, sex[0]] == 0, h, n_clients, seed=seed)
    clients = [train_val_split(tab.X[idx], tab.y[idx], val_fraction, seed=seed + 1 + c) for c, idx in enumerate(parts)]
    return FederatedTask("Income-L", ACS if source == "acs" else SYNTHETIC, clients, tab.feature_names, tuple(sex),
                         torch.tensor([[0.0], [1.0]]), "sex", {"h": h, "seed": seed, "occupation": occupation,
                                                               "features": features})


def income_a_task(fraction: float = 0.2, *, source: str = "synthetic", seed: int = 0, n_synthetic: int = 40_000,
                  occupation: str = "major", val_fraction: float = 0.1, features: str = "full") -> FederatedTask:
    """Income-A (§5.1): 51 clients, one per state (and Puerto Rico), each a random ``fraction``
    (20%) of its state's rows; infer sex. ``"synthetic"`` draws ``n_synthetic`` people over all
    states (population-weighted) before the 20% sampling (the real table has ~1.66M rows)."""
    check_int("n_synthetic", n_synthetic, "income_a_task", minimum=1)
    check_seed("seed", seed, "income_a_task")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}.")
    df = _income_table(source, None, n_synthetic, seed)
    tab = _encode_features(df, features, occupation, "Income-A")
    sex = tab.columns("SEX")
    g = generator(seed)
    st = torch.tensor(df["ST"].to_numpy())
    clients, names = [], []
    for code in sorted(set(st.tolist())):
        rows = (st == code).nonzero().squeeze(1)
        take = rows[torch.randperm(rows.numel(), generator=g)[: max(2, int(round(fraction * rows.numel())))]]
        clients.append(train_val_split(tab.X[take], tab.y[take], val_fraction, seed=seed + 1 + code))
        names.append(code)
    return FederatedTask("Income-A", ACS if source == "acs" else SYNTHETIC, clients, tab.feature_names, tuple(sex),
                         torch.tensor([[0.0], [1.0]]), "sex", {"fraction": fraction, "state_codes": names,
                                                               "seed": seed, "occupation": occupation,
                                                               "features": features})
