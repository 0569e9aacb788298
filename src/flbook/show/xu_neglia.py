"""Tables and figures of Xu & Neglia's chapters (``book/part2/learned_mapping`` and its
reproduction record ``book/record/xu_neglia_leaf_table1``): Table 1 on LEAF synthetic beside
the paper's, the gain figure, and the names under which the controlled experiments of
``flbook.experiments.part2_leaf_diagnostics`` are shown.

The experiments' variant names are keys of their committed result files, so they stay as they
are; :data:`flbook.ledger.xu_neglia.VARIANT_LABELS` gives each the name a reader sees
(:func:`flbook.ledger.xu_neglia.variant_label`, imported here as ``variant_name``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from pandas.io.formats.style import Styler

from flbook.ledger.xu_neglia import PAPER_TABLE1
from flbook.ledger.xu_neglia import VARIANT_LABELS as VARIANT_NAMES
from flbook.ledger.xu_neglia import variant_label as variant_name
from flprivacy.tables import style

__all__ = ["VARIANT_NAMES", "variant_name", "table1_per_client", "table1_tables", "table1_means",
           "table1_figure"]

_MODELS = {"acc_last_returned": "last returned θ_c", "acc_decoded": "decoded θ̂_c*",
           "acc_local_optimum": "true local optimum θ_c*"}


def table1_per_client(records: Sequence[Mapping]) -> pd.DataFrame:
    """Train accuracy (%) per (local steps, model) and client, averaged over seeds, with the
    mean over clients (column ``"mean"``), from Table 1 records (``part2_leaf.rows_of``)."""
    df = pd.DataFrame(list(records))
    t = df.melt(id_vars=["seed", "local_steps", "client"], value_vars=[k for k in _MODELS if k in df],
                var_name="model", value_name="acc")
    t["model"] = t["model"].map(_MODELS)
    per_client = 100 * t.pivot_table(index=["local_steps", "model"], columns="client", values="acc",
                                     aggfunc="mean")
    per_client["mean"] = per_client.mean(axis=1)
    return per_client


def _rows(which: str, sources: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    rows = []
    for steps in PAPER_TABLE1:
        for source, table in sources.items():
            key = (steps, which)
            if key not in table.index:
                continue
            vals = table.loc[key]
            rows.append({"local steps": steps, "source": source,
                         **{f"client {c}": vals[c] for c in range(5)}, "mean": vals["mean"]})
    return pd.DataFrame(rows)


def table1_tables(quick: Sequence[Mapping], full: Sequence[Mapping], *, quick_seeds: int,
                  full_seeds: int) -> tuple[Styler, Styler]:
    """Table 1 of Xu & Neglia as two tables of the book's style, the last returned models and the
    decoded ones, each client's train accuracy (%) by the paper (10 runs), by this execution
    (``quick``, ``quick_seeds`` seeds) and by the paper-scale file (``full``, ``full_seeds``
    seeds), labelled "paper", "quick" and "file"; the decoded table adds each client's true local
    optimum (rows "θ_c*", from the file), the ceiling a perfect decoder would reach."""
    paper = pd.DataFrame([(s, _MODELS["acc_" + m.replace(" ", "_")], *vals)
                          for s, rows in PAPER_TABLE1.items() for m, vals in rows.items()],
                         columns=["local_steps", "model", 0, 1, 2, 3, 4, "mean"]
                         ).set_index(["local_steps", "model"])
    ours_q, ours_f = table1_per_client(quick), table1_per_client(full)
    runs = {"paper": paper, "quick": ours_q, "file": ours_f}
    sources = (f"paper: the paper's mean of 10 runs; quick: ours at quick scale "
               f"({quick_seeds} seed{'s' * (quick_seeds > 1)}); file: ours from the paper-scale "
               f"file ({full_seeds} seeds)")
    units = {c: "%" for c in [*(f"client {c}" for c in range(5)), "mean"]}
    last = style(_rows(_MODELS["acc_last_returned"], runs), decimals=1, units=units,
                 caption="Table 1, the last model each client returned: train accuracy on her own "
                         f"data ({sources}).")
    dec = _rows(_MODELS["acc_decoded"], runs)
    opt = _rows(_MODELS["acc_local_optimum"], {"θ_c*": ours_f})
    both = pd.concat([dec, opt]).sort_values("local steps", kind="stable")
    decoded = style(both, decimals=1, units=units,
                    caption="Table 1, the decoded models θ̂_c* (eq. 7): train accuracy on the "
                            f"client's own data ({sources}); the rows θ_c* give each client's true "
                            "local optimum in the file, the ceiling a perfect decoder would reach "
                            "(the paper does not report it).")
    return last, decoded


def table1_means(records: Sequence[Mapping]) -> pd.DataFrame:
    """Mean over clients and seeds (%) of the last returned and decoded models' train accuracy,
    and the gain of decoding (points), one row per number of local steps."""
    df = pd.DataFrame(list(records))
    m = 100 * df.groupby("local_steps")[["acc_last_returned", "acc_decoded"]].mean()
    m["gain"] = m.acc_decoded - m.acc_last_returned
    return m


def table1_figure(full: Sequence[Mapping]) -> Any:
    """Left: the mean over clients of Table 1 by local steps, the paper's and the paper-scale
    file's; right: the gain of decoding per client and seed against the last returned model's
    accuracy. Returns the matplotlib figure."""
    df = pd.DataFrame(list(full))
    means = table1_means(full)
    fig, axes = plt.subplots(1, 2, figsize=(7, 3.5))
    x = list(PAPER_TABLE1)
    for key, col, mark in (("last returned", "acc_last_returned", "o"), ("decoded", "acc_decoded", "s")):
        c = "C0" if key == "last returned" else "C1"
        axes[0].plot(x, [PAPER_TABLE1[s][key][-1] for s in x], mark + "--", color=c,
                     label=f"paper, {key}")
        axes[0].plot(x, means[col], mark + "-", color=c, label=f"ours, {key}")
    axes[0].set(xlabel="local steps", ylabel="mean train accuracy (%)", xticks=x,
                title="Mean over clients")
    gain = 100 * (df.acc_decoded - df.acc_last_returned)
    sc = axes[1].scatter(100 * df.acc_last_returned, gain, c=df.local_steps, cmap="viridis", s=10)
    axes[1].axhline(0, color="k", lw=0.8)
    axes[1].set(xlabel="last returned model (%)", ylabel="gain of decoding (points)",
                title="Per client and seed")
    fig.colorbar(sc, ax=axes[1], label="local steps", ticks=x)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=7,
               frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
