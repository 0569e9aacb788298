"""Tables and figures of Diana et al. 2025's Table 2 (federated least squares), Table 3 (DP-SGD)
and Figs. 3-4 (what makes attribute inference stronger), for the chapters
``part3/least_squares_aia``, ``part3/dp_defence`` and ``part3/sensitivity`` and their
reproduction pages ``record/diana_least_squares``, ``record/diana_dp`` and
``record/diana_sensitivity``.

Each function lays out numbers a chapter computed or a committed result file holds; none
computes an attack. The verdicts in the tables are the ledger's rules (``flbook.ledger``) applied
to the numbers shown.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter
import pandas as pd
from IPython.display import Markdown, display
from pandas.io.formats.style import Styler

from flbook import ledger
from flbook.experiments import short_long_rows
from flbook.ledger.diana_aia import PAPER_TABLE1, PAPER_TABLE2, PAPER_TABLE3
from flbook.results import load_result_or_none
from flprivacy.tables import style

ROWS = ("passive/Grad", "passive/Grad-w-O", "passive/Ours", "active-short/Grad",
        "active-short/Grad-w-O", "active-short/Ours", "active-long/Grad", "active-long/Grad-w-O",
        "active-long/Ours", "Model-w-O")
"""The rows of the paper's Tables 1-3, with the active phases named by length, short for the
paper's 10 rounds and long for its 50 (see :func:`flbook.experiments.short_long_rows`)."""


def _label(row: str, rounds: Sequence[int]) -> str:
    short, long_ = rounds
    return row.replace("active-short", f"active-{short}").replace("active-long", f"active-{long_}")


def _mean_sd(name: str, xs: Sequence[float]) -> dict[str, float]:
    """A mean over seeds and its standard deviation, as fractions, in ``name`` and ``name sd``."""
    return {name: statistics.mean(xs) / 100,
            f"{name} sd": statistics.stdev(xs) / 100 if len(xs) > 1 else 0.0}


def _paper_cell(name: str, cell: Sequence[float]) -> dict[str, float]:
    return {name: cell[0] / 100, f"{name} sd": cell[1] / 100}


def _seeds_style(frame: pd.DataFrame, means: Sequence[str], n: str | int, **kwargs) -> Styler:
    """Means over ``n`` seeds (the paper's rows: 3 seeds) with their spreads, as percentages."""
    return style(frame, percent=means, sd={m: f"{m} sd" for m in means}, n=n, **kwargs)


def provenance(record: Mapping[str, Any]) -> str:
    """One line naming a result file's command, date and commit."""
    return f"{record['command']} | {record['date'][:10]} | commit {record['commit'][:10]}"


# -- Table 3 (DP-SGD) ---------------------------------------------------------------------------

def clip_table(clip: Mapping[str, Any]) -> Styler:
    """The clipping norms searched (App. C.4): validation MSE of the final global model and the
    per-client epsilon Opacus reports after the passive rounds."""
    frame = pd.DataFrame({
        "clipping norm C": [f"{float(k):.0e}" for k in clip["val_loss"]],
        "validation MSE": list(clip["val_loss"].values()),
        "ε per client after T rounds": [", ".join(f"{e:.3f}" for e in clip["epsilon"][k])
                                        for k in clip["val_loss"]],
    })
    return style(frame, units={"validation MSE": "$²"}, decimals={"validation MSE": 0},
                 caption=f"Chosen C = {clip['best']:.0e}: the lowest validation MSE. Without DP "
                         f"{clip['val_loss_no_dp']:.3g} $², initial model {clip['val_loss_init']:.3g} $²")


def table3_medical(with_dp: Mapping[str, float], no_dp: Mapping[str, float], active_rounds: Sequence[int],
                   scale: str) -> Styler:
    """Table 3 on Medical beside Table 1 (no DP): the paper's cells, this execution's and, when
    the paper-scale file (``part3_table3_medical``) is committed, its means over seeds."""
    paper_file = load_result_or_none("part3_table3_medical")
    paper3 = short_long_rows(PAPER_TABLE3["Medical"], (10, 50))
    paper1 = short_long_rows(PAPER_TABLE1["Medical"], (10, 50))
    ours_dp, ours_plain = short_long_rows(with_dp, active_rounds), short_long_rows(no_dp, active_rounds)
    cols: dict[str, list] = {
        "AIA": [_label(r, (10, 50)) for r in ROWS],
        "paper, DP": [paper3[r][0] / 100 for r in ROWS],
        "paper, no DP": [paper1[r][0] / 100 for r in ROWS],
        f"ours, DP ({scale})": [ours_dp[r] / 100 for r in ROWS],
        f"ours, no DP ({scale})": [ours_plain[r] / 100 for r in ROWS],
    }
    sd = n = None
    if paper_file is not None:
        ps = short_long_rows(paper_file["data"]["summary"], paper_file["data"]["settings"]["active_rounds"])
        cols["ours, DP, paper scale"] = [ps[r][0] / 100 for r in ROWS]
        cols["sd"] = [ps[r][1] / 100 for r in ROWS]
        sd, n = {"ours, DP, paper scale": "sd"}, {"ours, DP, paper scale": len(paper_file["data"]["seeds"])}
    short, long_ = active_rounds
    return style(pd.DataFrame(cols), percent=[c for c in cols if c not in ("AIA", "sd")], decimals=1,
                 sd=sd, n=n,
                 caption=f"Medical (real data), AIA accuracy. The paper's columns: means over 3 seeds; "
                         f"ours at {scale} scale: one seed, with {short} and {long_} active rounds "
                         "where the paper runs 10 and 50")


def utility_figure(clip: Mapping[str, Any]) -> None:
    """Validation RMSE of the final global model against the clipping norm, and without DP."""
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.semilogx([float(k) for k in clip["val_loss"]], [v ** 0.5 for v in clip["val_loss"].values()], "o-",
                label="DP-SGD, ε = 1")
    ax.axhline(clip["val_loss_no_dp"] ** 0.5, color="k", ls="--", label="no DP")
    ax.xaxis.set_minor_formatter(NullFormatter())  # labels at the decades only
    ax.set_xlabel("clipping norm C")
    ax.set_ylabel("validation RMSE ($)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    plt.show()


def utility_table(clip: Mapping[str, Any]) -> Styler:
    """Validation MSE and RMSE of the initial model, DP-SGD at the chosen C, and no DP."""
    c_best = clip["best"]
    mse = [clip["val_loss_init"], clip["val_loss"][str(c_best)], clip["val_loss_no_dp"]]
    frame = pd.DataFrame({"model": ["initial model θ⁰", f"DP-SGD, ε = 1, C = {c_best:.0e}", "no DP"],
                          "validation MSE": mse, "RMSE": [v ** 0.5 for v in mse]})
    return style(frame, units={"validation MSE": "$²", "RMSE": "$"}, decimals=0,
                 caption="The final global model on the validation rows")


def paper_scale_gap(pf: Mapping[str, Any], table: str = "Table 3") -> Styler:
    """A Medical paper-scale file (Table 2 or Table 3) against the paper's cells, with the
    ledger's rule for a number (3 points, or the paper's own spread)."""
    cells = {"Table 2": PAPER_TABLE2, "Table 3": PAPER_TABLE3}[table]["Medical"]
    summary = pf["data"]["summary"]
    gap = pd.DataFrame([{"row": r, **_paper_cell("paper", cells[r]), **_mean_sd_pair("ours", m, sd),
                         "ours − paper": m - cells[r][0],
                         "status": ledger.number(cells[r][0], m, paper_spread=cells[r][1]).status}
                        for r, (m, sd) in summary.items()])
    return style(gap, percent=["paper", "ours"], decimals=1, units={"ours − paper": "pp"},
                 sd={"paper": "paper sd", "ours": "ours sd"}, n={"paper": 3, "ours": len(pf["data"]["seeds"])},
                 caption=f"{table} on Medical at paper scale; status: 3 points, or the paper's spread")


def _mean_sd_pair(name: str, mean: float, sd: float) -> dict[str, float]:
    return {name: mean / 100, f"{name} sd": sd / 100}


ADAM_LABEL = {
    "sgd replay, all clients": "tuned on a noise-free SGD replay, one study",
    "dp replay, all clients": "tuned on a DP-SGD replay, one study (authors' code)",
    "dp replay, per client": "tuned on a DP-SGD replay, per client (App. B.5)",
}


def adam_controls(ctl: Mapping[str, Any]) -> Styler:
    """How Alg. 4's Adam is chosen, and the authors' privacy settings, against Table 3's cells."""
    seeds = ctl["data"]["per_seed"]
    p10, p50 = PAPER_TABLE3["Medical"]["active-10/Ours"], PAPER_TABLE3["Medical"]["active-50/Ours"]
    rows = []
    for key in seeds[0]["adam"]["active-50"]:
        a10 = [x["adam"]["active-10"][key]["iterate"] for x in seeds]
        a50 = [x["adam"]["active-50"][key]["iterate"] for x in seeds]
        r50 = [x["adam"]["active-50"][key]["returned"] for x in seeds]
        rows.append({"Adam of Alg. 4": ADAM_LABEL.get(key, key.replace("fixed lr", "no tuning, lr")),
                     **_mean_sd("active-10", a10), **_mean_sd("active-50", a50),
                     **_mean_sd("active-50, returned", r50), "n": len(seeds),
                     "active-50 vs paper": ledger.number(p50[0], statistics.mean(a50), paper_spread=p50[1]).status})
    scripts = [x["privacy"]["scripts"] for x in seeds]
    a50 = [x["active-50"]["iterate"] for x in scripts]
    rows.append({"Adam of Alg. 4": "δ = 1e-6, C = 5e5 (authors' scripts), DP-SGD replay, one study",
                 "active-10": None, "active-10 sd": None, **_mean_sd("active-50", a50),
                 **_mean_sd("active-50, returned", [x["active-50"]["returned"] for x in scripts]),
                 "n": len(seeds),
                 "active-50 vs paper": ledger.number(p50[0], statistics.mean(a50), paper_spread=p50[1]).status})
    rows.append({"Adam of Alg. 4": "paper (Table 3)", **_paper_cell("active-10", p10),
                 **_paper_cell("active-50", p50), "active-50, returned": None,
                 "active-50, returned sd": None, "n": 3, "active-50 vs paper": None})
    return _seeds_style(pd.DataFrame(rows), ["active-10", "active-50", "active-50, returned"], "n",
                        na="not run (the authors' scripts attack with 50 active rounds only) or not "
                           "reported by the paper",
                        caption="Active Ours on Medical under DP-SGD: Alg. 4's iterate, or the model the "
                                "client returned in the last attack round")


def grad_choice(ctl: Mapping[str, Any]) -> Styler:
    """Grad's choice of attack rounds with 50 active rounds: how often a one-round set wins, under
    our statistic and the authors', and Grad without the one-round sets."""
    pg = PAPER_TABLE3["Medical"]["active-50/Grad"]
    picks = [g for x in ctl["data"]["per_seed"] for g in x["grad"]]

    def row(label: str, wins: str | None, accs: list[float]) -> dict:
        return {"Grad, active-50": label, "one-round set wins": wins, **_mean_sd("accuracy", accs),
                "n": len(accs),
                "vs paper": ledger.number(pg[0], statistics.mean(accs), paper_spread=pg[1]).status}

    frame = pd.DataFrame([
        row("our rule, all sets", f"{sum(g['singleton_won'] for g in picks)} of {len(picks)}",
            [g["Grad"] for g in picks]),
        row("authors' statistic, all sets", f"{sum(g['singleton_won_sample'] for g in picks)} of {len(picks)}",
            [g["Grad (authors' statistic)"] for g in picks]),
        row("our rule, no one-round sets", None, [g["Grad without one-round attack sets"] for g in picks]),
        {"Grad, active-50": "paper (Table 3)", "one-round set wins": None, **_paper_cell("accuracy", pg),
         "n": 3, "vs paper": None},
    ])
    same = sum(g["choice_sample"]["round_set_size"] == g["choice"]["round_set_size"]
               and g["choice_sample"]["lr"] == g["choice"]["lr"] for g in picks)
    seeds = len(ctl["data"]["per_seed"])
    return _seeds_style(frame, ["accuracy"], "n", na="does not apply to this row",
                        caption=f"n counts runs: {seeds} training seeds × {len(picks) // seeds} attack "
                                f"seeds. The two statistics pick the same (round-set size, learning rate) "
                                f"in {same} of {len(picks)} runs")


def grad_stopping(gstop: Mapping[str, Any]) -> Styler:
    """The gradient-based rows with our early stopping and with all 100 iterations."""
    gs = gstop["data"]["per_seed"]
    ways = ("early stopping", "all iterations")
    frame = pd.DataFrame([
        {"Grad row": r,
         **{k: v for way in ways for k, v in _mean_sd(way, [x[way]["rows"][r] for x in gs]).items()},
         **_paper_cell("paper", PAPER_TABLE3["Medical"][r]),
         "all iterations vs paper": ledger.number(
             PAPER_TABLE3["Medical"][r][0], statistics.mean(x["all iterations"]["rows"][r] for x in gs),
             paper_spread=PAPER_TABLE3["Medical"][r][1]).status}
        for r in gs[0]["all iterations"]["rows"]])
    cols = (*ways, "paper")
    return style(frame, percent=list(cols), decimals=1, sd={c: f"{c} sd" for c in cols},
                 n={"early stopping": len(gs), "all iterations": len(gs), "paper": 3},
                 caption="Grad and Grad-w-O on Medical under DP-SGD")


RELAXATION_LABEL = {"mixture": "mixture, softmax (ours)", "input": "input, softmax",
                    "input, sigmoid sampler": "input, sigmoid (authors')"}


def grad_relaxation(relax: Mapping[str, Any]) -> None:
    """The Grad rows under the four relaxations of eq. 2: means, the ledger's status of each, and
    the change from ours to the authors' variant."""
    rs = relax["data"]["per_seed"]
    variants = list(relax["data"]["variants"])  # "mixture" (ours) first, the authors' last
    groups = [r.removesuffix("/Grad") for r in rs[0]["mixture"]["rows"] if r.endswith("/Grad")]
    cells = [f"{g}/{k}" for g in groups for k in ("Grad", "Grad-w-O")] + [f"{groups[-1]}/Grad (authors' statistic)"]

    def paper_of(cell: str):
        return PAPER_TABLE3["Medical"][cell.replace(" (authors' statistic)", "")]

    mean_of = {(v, c): statistics.mean(x[v]["rows"][c] for x in rs) for v in variants for c in cells}
    label = {v: RELAXATION_LABEL.get(v, v) for v in variants}
    long_rows = [{"cell": c, "variant": label[v], **_mean_sd("accuracy", [x[v]["rows"][c] for x in rs]),
                  "n": len(rs),
                  "vs paper": ledger.number(paper_of(c)[0], mean_of[(v, c)], paper_spread=paper_of(c)[1]).status}
                 for c in cells for v in variants]
    long_rows += [{"cell": c, "variant": "paper (Table 3)", **_paper_cell("accuracy", paper_of(c)), "n": 3,
                   "vs paper": None} for c in cells]
    frame = pd.DataFrame(long_rows)
    frame["order"] = [cells.index(c) for c in frame["cell"]]
    frame = frame.sort_values("order", kind="stable").drop(columns="order")
    frame["cell"] = frame["cell"].str.replace(" (authors' statistic)", ", authors' stat.")
    display(_seeds_style(frame, ["accuracy"], "n", na="the paper's own row",
                         caption="Grad rows of Table 3 (Medical, DP-SGD) under each relaxation of eq. 2; "
                                 "vs paper: 3 points, or the paper's spread"))
    wins = pd.DataFrame([{"variant": label[v], **{
        f"{g}: one-round set wins": f"{sum(x[v]['choices'][f'{g}/grad_choice']['Grad']['round_set_size'] == 1 for x in rs)} of {len(rs)}"  # noqa: E501
        for g in groups[1:]}} for v in variants])
    display(style(wins, caption="How often Grad's chosen round set is a single round"))
    ours, theirs = variants[0], variants[-1]
    lines = [f"- {c}: from ours to the authors' variant "
             f"{mean_of[(theirs, c)] - mean_of[(ours, c)]:+.2f} pp; distance to the paper "
             f"{abs(mean_of[(ours, c)] - paper_of(c)[0]):.2f} → {abs(mean_of[(theirs, c)] - paper_of(c)[0]):.2f} pp"
             for c in cells]
    secs = ", ".join(f"{label[v]} {statistics.mean(x[v]['seconds'] for x in rs):.0f} s" for v in variants)
    display(Markdown("\n".join(lines) + f"\n\nSeconds per seed of the gradient-based attack: {secs}."))


ORACLE_WAYS = {"ours": "ours: full-batch Adam to convergence",
               "authors": "authors' oracle, no DP",
               "authors, DP": "authors' oracle under the federation's DP"}


def dp_oracle(task_name: str, orc: Mapping[str, Any]) -> None:
    """Model-w-O three ways on Table 3's DP federation (a ``part3_table3_controls --dp-oracle``
    file), against the paper's Table 3 cell."""
    runs = orc["data"]["per_seed"]
    pm = PAPER_TABLE3[task_name]["Model-w-O"]
    acc = {k: statistics.mean(x[k]["accuracy"] for x in runs) for k in ORACLE_WAYS}
    rows = [{"Model-w-O": label, **_mean_sd("accuracy", [x[k]["accuracy"] for x in runs]),
             "training loss": statistics.mean(x[k]["loss"] for x in runs), "n": len(runs),
             "vs paper": ledger.number(pm[0], acc[k], paper_spread=pm[1]).status}
            for k, label in ORACLE_WAYS.items()]
    rows.append({"Model-w-O": "paper (Table 3)", **_paper_cell("accuracy", pm), "training loss": None, "n": 3,
                 "vs paper": None})
    print(provenance(orc))
    display(_seeds_style(pd.DataFrame(rows), ["accuracy"], "n", na="not reported by the paper",
                         caption=f"{task_name}: Model-w-O three ways on Table 3's DP federation"))
    sig = statistics.mean(s for x in runs for s in x["authors, DP"]["noise_multiplier"])
    fed_sig = statistics.mean(x["federation"]["noise_multiplier"] for x in runs)
    per_seed = "; ".join(f"seed {x['seed']}: {x['ours']['accuracy']:.2f} / {x['authors']['accuracy']:.2f} / "
                         f"{x['authors, DP']['accuracy']:.2f}" for x in runs)
    closest = min(ORACLE_WAYS, key=lambda k: abs(acc[k] - pm[0]))
    display(Markdown(
        f"{task_name}: the DP oracle runs with σ = {sig:.2f} over {orc['data']['authors_oracle']['epochs']} "
        f"epochs (the clients: σ = {fed_sig:.2f}) and scores {acc['authors, DP']:.2f} %, "
        f"{abs(acc['authors, DP'] - pm[0]):.2f} points from the paper's {pm[0]:.2f}; without DP "
        f"{acc['authors']:.2f} %, ours {acc['ours']:.2f} % ({abs(acc['ours'] - pm[0]):.2f} points from the "
        f"paper). Per seed (ours / authors' / authors' under DP): {per_seed}. Closest to the paper: "
        f"{ORACLE_WAYS[closest]}."))


def census_table(record: Mapping[str, Any], title: str) -> Styler:
    """A Table 2 or Table 3 file on the synthetic census: our mean per row beside the paper's ACS
    value (indicative only: other data)."""
    d = record["data"]
    frame = pd.DataFrame([{"row": row, **_mean_sd_pair("ours", m, sd),
                           "paper (ACS)": None if d["paper"].get(row) is None else d["paper"][row][0] / 100}
                          for row, (m, sd) in d["summary"].items()])
    return style(frame, percent=["ours", "paper (ACS)"], decimals=1, sd={"ours": "ours sd"}, n=len(d["seeds"]),
                 na="the paper reports no such row",
                 caption=f"{title} on the synthetic census ({record['scale']} scale), AIA accuracy")


# -- Table 2 (least squares) --------------------------------------------------------------------

def table2_medical(rows: Mapping[str, float], active_rounds: Sequence[int], scale: str) -> Styler:
    """Table 2 on Medical: the paper's cells, this execution's and, when the paper-scale file
    (``part3_table2_medical``) is committed, its means over seeds."""
    paper_file = load_result_or_none("part3_table2_medical")
    paper = short_long_rows(PAPER_TABLE2["Medical"], (10, 50))
    ours = short_long_rows(rows, active_rounds)
    cols: dict[str, list] = {"AIA": [_label(r, (10, 50)) for r in ROWS],
                             "paper": [paper[r][0] / 100 for r in ROWS],
                             "paper sd": [paper[r][1] / 100 for r in ROWS],
                             f"ours ({scale})": [ours[r] / 100 for r in ROWS]}
    sd, n = {"paper": "paper sd"}, {"paper": 3}
    if paper_file is not None:
        ps = short_long_rows(paper_file["data"]["summary"], paper_file["data"]["settings"]["active_rounds"])
        cols["ours, paper scale"] = [ps[r][0] / 100 for r in ROWS]
        cols["ps sd"] = [ps[r][1] / 100 for r in ROWS]
        sd["ours, paper scale"], n["ours, paper scale"] = "ps sd", len(paper_file["data"]["seeds"])
    short, long_ = active_rounds
    return style(pd.DataFrame(cols), percent=[c for c in cols if c != "AIA" and not c.endswith("sd")],
                 decimals=1, sd=sd, n=n,
                 caption=f"Medical (real data), linear model, AIA accuracy. Ours at {scale} scale: one seed, "
                         f"{short} and {long_} active rounds where the paper runs 10 and 50")


# -- Figs. 3 and 4 (sensitivity) ----------------------------------------------------------------

FACTORS = {"heterogeneity": "heterogeneity level h", "batch_size": "batch size B",
           "epochs": "local epochs E", "start_round": "start round of the attack (C.2)",
           "active_rounds": "active rounds (C.3)"}
CURVES = (("passive/Grad", "x--"), ("active/Grad", "o--"), ("passive/Ours", "x-"), ("active/Ours", "o-"),
          ("Model-w-O", "s-"))


def sweep_figure(sweeps: Mapping[str, Any]) -> None:
    """Fig. 3 and App. C.2-C.3: one panel per factor, AIA accuracy of each attack. Crosses:
    passive; dots: active; dashed: Grad; solid: Ours and Model-w-O."""
    fig, axes = plt.subplots(3, 2, figsize=(7, 7.5), sharey=True)
    axes = axes.ravel()
    for ax, (factor, label) in zip(axes, FACTORS.items()):
        ax.set_xlabel(label)
        sw = sweeps.get(factor)
        if sw is None:
            ax.set_title("no result file")
            continue
        for col, marker in CURVES:
            if col in sw.mean:
                ax.plot(sw.xs, sw.mean[col], marker, ms=4, label=col)
        ax.set_title(f"{sw.record['scale']} scale, {sw.k} seed{'s' if sw.k > 1 else ''}", fontsize=9)
    for ax in axes[::2]:
        ax.set_ylabel("AIA accuracy (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    axes[-1].axis("off")
    axes[-1].legend(handles, labels, loc="center", frameon=False)
    fig.tight_layout()
    plt.show()


def sweep_tables(sweeps: Mapping[str, Any]) -> None:
    """Each panel's numbers in two tables: the passive adversary's rows (with the oracle) and the
    active one's (seven columns of "mean ± sd" in one table are wider than the column)."""
    for factor, sw in sweeps.items():
        for who in ("passive", "active"):
            cols = [c for c in sw.mean if c.startswith(who) or (who == "passive" and not c.startswith("active"))]
            shown = pd.DataFrame({FACTORS[factor]: sw.xs, **{c: [v / 100 for v in sw.mean[c]] for c in cols},
                                  **{c + " sd": [v / 100 for v in sw.sd[c]] for c in cols}})
            display(style(shown, percent=cols, decimals=1, sd={c: c + " sd" for c in cols}, n=sw.k,
                          caption=f"{FACTORS[factor]}, {who} adversary: AIA accuracy on the synthetic census "
                                  f"({sw.record['scale']} scale, {sw.n:,} rows attacked per seed)"))


def figure_of(row) -> str:
    """The figure or appendix a sweep claim's ledger row belongs to ("Fig. 3 left", "App. C.2")."""
    return row.result_id.split(":")[0].removeprefix("Diana ")


def verdict_counts(rows: Sequence[Any]) -> Styler:
    """How many claims of each figure the ledger finds in each status, in the paper's order."""
    by_figure = pd.DataFrame({"figure": [figure_of(r) for r in rows], "status": [r.status for r in rows]})
    counts = pd.crosstab(by_figure["figure"], by_figure["status"])
    counts = counts.reindex(columns=[s for s in ledger.STATUSES if s in counts.columns])
    counts = counts.loc[list(dict.fromkeys(by_figure["figure"]))].reset_index()
    return style(counts, caption="The claims of each figure by the ledger's verdict")


def verdict_lines(rows: Sequence[Any], sweeps: Mapping[str, Any], factor_of: Mapping[str, str]) -> None:
    """Per figure, the claims that hold and the others with their status, and the two causes of
    the sizes missed, measured at Table 1's setting (h = 0.4) of the heterogeneity sweep."""
    def short(r) -> str:
        return r.result_id.split(": ", 1)[1]

    lines = []
    for figure in dict.fromkeys(figure_of(r) for r in rows):
        sw = sweeps[factor_of[figure]]
        group = [r for r in rows if figure_of(r) == figure]
        held = [short(r) for r in group if r.status == "reproduced"]
        missed = [f"{short(r)} ({r.status})" for r in group if r.status != "reproduced"]
        lines.append(f"- **{figure}** ({sw.record['scale']} scale, {sw.k} seed{'s' if sw.k > 1 else ''}): "
                     f"as the paper says: {'; '.join(held) or 'none'}. Otherwise: {'; '.join(missed) or 'none'}.")
    hsw = sweeps["heterogeneity"]
    at = hsw.xs.index(0.4)
    paper = PAPER_TABLE1["Income-L"]
    gap = hsw.mean["Model-w-O"][at] - hsw.mean["active/Ours"][at]
    lines += ["", "The two causes, at Table 1's setting (h = 0.4) of the heterogeneity sweep:",
              f"- passive Grad: ours {hsw.mean['passive/Grad'][at]:.1f} %, the paper's Table 1 (ACS) "
              f"{paper['passive/Grad'][0]:.1f} %;",
              f"- Model-w-O minus active Ours: ours {gap:+.1f} points, the paper's Table 1 "
              f"{paper['Model-w-O'][0] - paper['active-50/Ours'][0]:+.1f} points."]
    display(Markdown("\n".join(lines)))


def fig4_quick_figure(fig4: pd.DataFrame) -> None:
    """Each client's accuracy against her training rows, passive and after 50 active rounds."""
    fig, axes = plt.subplots(1, 2, figsize=(7, 3), sharey=True)
    for ax, col in zip(axes, ("passive Ours", "active-50 Ours")):
        for k, g in fig4.groupby("run"):
            ax.semilogx(g["size"], g[col], "o", ms=3, label=f"run {k}")
        ax.set_title(col, fontsize=9)
        ax.set_xlabel("client's training rows")
    axes[0].set_ylabel("AIA accuracy (%)")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    plt.show()


def fig4_files() -> tuple[dict | None, dict | None]:
    """The paper-scale Fig. 4 files: the model-based rows (``part3_fig4_synthetic``) and the
    gradient-based ones (``part3_fig4_grad_synthetic``), each None when not committed."""
    return load_result_or_none("part3_fig4_synthetic"), load_result_or_none("part3_fig4_grad_synthetic")


def fig4_trend(rec: Mapping[str, Any], rows: tuple[str, ...]) -> list[dict]:
    """One line per row of a Fig. 4 file's trend: mean Spearman rho, per seed, the sign rule."""
    tr = rec["data"]["trend"]
    return [{"row": k, "mean ρ(size, accuracy)": round(tr[k]["mean_rho"], 3),
             "per seed": ", ".join(f"{r:+.2f}" for r in tr[k]["rho"]),
             "smaller leak more": ledger.sign(tr[k]["mean_rho"], expected=-1, margin=-tr["level"]).status}
            for k in tr if isinstance(tr[k], dict) and any(k.endswith(m) for m in rows)]


def fig4_paper_table(f4: Mapping[str, Any] | None, f4g: Mapping[str, Any] | None) -> Styler | None:
    """The size trend of each row in the paper-scale Fig. 4 files (None without them)."""
    if f4 is None:
        return None
    lines = fig4_trend(f4, ("Ours", "Model-w-O")) + ([] if f4g is None else fig4_trend(f4g, ("Grad", "Grad-w-O")))
    tr = f4["data"]["trend"]
    return style(pd.DataFrame(lines), decimals=3,
                 caption=f"Income-A, synthetic census, paper scale: {tr['clients']} clients, {tr['seeds']} seeds. "
                         f"No-relation level of the mean ρ: {tr['level']:.3f} (one-sided 0.14 %)")


def fig4_paper_figure(f4: Mapping[str, Any] | None, f4g: Mapping[str, Any] | None) -> None:
    """Fig. 4 from the paper-scale files: each dot one client of one seed; dashed: 50 %."""
    if f4 is None:
        print("no paper-scale file: `FLPRIVACY_SCALE=paper python -m flbook.experiments.part3_fig4 --seeds 0 1 2`")
        return
    panels = [(f4, "active-50/Ours"), (f4, "Model-w-O")]
    if f4g is not None:
        panels += [(f4g, "active-50/Grad"), (f4g, "active-50/Grad-w-O")]
    nrows = (len(panels) + 1) // 2
    fig, axes = plt.subplots(nrows, 2, figsize=(7, 2.8 * nrows), sharey=True, squeeze=False)
    for ax, (rec, row) in zip(axes.flat, panels):
        for seed_rec in rec["data"]["per_seed"]:
            pc = seed_rec["per_client"]
            ax.semilogx(pc["sizes"], pc[row], "o", ms=2.5, alpha=0.6, label=f"seed {seed_rec['seed']}")
        ax.axhline(50, ls="--", lw=0.8, color="grey")
        ax.set_title(row.replace("active-50/", "active-50 "), fontsize=9)
        ax.set_xlabel("client's training rows")
    for ax in axes[:, 0]:
        ax.set_ylabel("AIA accuracy (%)")
    axes[0][1].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    plt.show()


def fig4_large_table(f4l: Mapping[str, Any] | None, points: Sequence[Mapping[str, Any]] = ()) -> Styler | None:
    """Clients of more than 20,000 rows (``part3_fig4_large``): Grad's weakest and strongest
    configuration and passive Ours; before the file exists, the finished points."""
    from flprivacy.data.tabular import STATE_CODES

    state = {int(v): k for k, v in STATE_CODES.items()}
    if f4l is None:
        if not points:
            return None
        return style(pd.DataFrame([{
            "training run": 1 + q["data"]["seed"], "state": state[q["data"]["state_code"]],
            "training rows": q["data"]["rows"], "round sets": q["data"]["phase"],
            "Grad, weakest (%)": 100 * min(map(min, q["data"]["accuracy"])),
            "strongest (%)": 100 * max(map(max, q["data"]["accuracy"])),
            "CPU minutes": q["cpu_seconds"] / 60} for q in points]), decimals=1,
            caption="The finished points: one seed, client and phase each")
    d = f4l["data"]
    return style(pd.DataFrame([{
        "run": 1 + p["seed"], "state": state[c["state_code"]], "training rows": c["rows"],
        "passive Ours (%)": c["passive_ours"], "Grad, weakest (%)": c["lo"], "strongest (%)": c["hi"],
        "Grad's rule (%)": c["grad_rule_among_large"]} for p in d["per_seed"] for c in p["large"]]),
        decimals=1,
        caption=f"Clients over {d['min_rows']:,} rows: Grad's weakest and strongest configuration (round set, "
                "learning rate) of both phases, and Grad's rule applied among the large clients; random "
                "guessing is 50 %")


def finished_points(name: str) -> list[dict]:
    """The finished points of a point-by-point command at paper scale (committed files)."""
    from flbook.experiments.points import points_dir

    return [json.loads(f.read_text()) for f in sorted(points_dir(name, "paper").glob("*.json"))]


__all__ = ["ROWS", "adam_controls", "census_table", "clip_table", "dp_oracle", "fig4_large_table",
           "fig4_files", "fig4_paper_figure", "fig4_paper_table", "fig4_quick_figure", "fig4_trend", "figure_of",
           "finished_points", "grad_choice", "grad_relaxation", "grad_stopping", "paper_scale_gap",
           "provenance", "sweep_figure", "sweep_tables", "table2_medical", "table3_medical", "utility_figure",
           "utility_table", "verdict_counts", "verdict_lines"]
