"""Tables and figures of the chapters on attribute inference in federated regression
(Diana et al. 2025): the active attack's trajectories, Table 1 at quick and at paper scale, the
paper's orderings, the controlled experiments and the benchmark of the reproduction record, and
Fig. 1 (gradient-based AIA against the local dataset size).

Each function takes what a chapter computed (or the name of a committed result file) and returns
a styled table (:func:`flprivacy.tables.style`) or a Matplotlib figure sized for the book's
column."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from matplotlib.ticker import FuncFormatter
from pandas.io.formats.style import Styler

from flbook import ledger
from flbook.experiments import (
    load_result,
    load_result_or_none,
    part3_table1,
    short_long_rows,
)
from flbook.ledger.diana_aia import PAPER_TABLE1
from flprivacy.attacks.model_based_aia import model_based_accuracy
from flprivacy.tables import style
from flprivacy.threats import eavesdrop

# Table 1's rows, with the active phase's length as "short" and "long" (10 and 50 rounds in the
# paper, 5 and 15 at quick scale; flbook.experiments.short_long_rows)
ROWS = [
    "passive/Grad", "passive/Grad-w-O", "passive/Ours",
    "active-short/Grad", "active-short/Grad-w-O", "active-short/Ours",
    "active-long/Grad", "active-long/Grad-w-O", "active-long/Ours",
    "Model-w-O",
]
# the column width of the book's pages at 1280 px, in inches at the book's dpi (110)
COLUMN_IN = 7.0


def row_label(row: str, rounds: Sequence[int]) -> str:
    """``"active-short/Ours"`` as ``"active 10 / Ours"`` for ``rounds = (10, 50)``."""
    short, long_ = rounds
    return (row.replace("active-short/", f"active {short}/").replace("active-long/", f"active {long_}/")
            .replace("/", " / "))


# ---------------------------------------------------------------------------------------------
# Section 2: the active attack's trajectories


def trajectories(model, clients, attribute, last: Sequence[torch.Tensor], send_back_log, active_log,
                 final: Mapping[int, torch.Tensor], rounds: int) -> pd.DataFrame:
    """The adversary's estimate of each client's model after 0..``rounds`` attack rounds, for
    "send back" and Alg. 4: its training MSE and the model-based AIA accuracy on it."""
    rows = []
    for c, cl in enumerate(clients):
        paths = {
            "send back": [last[c], *eavesdrop(send_back_log, c, range(rounds)).returned],
            # θ_c^a is what Alg. 4 sends; its last estimate is the adversary's final model
            "Alg. 4 (Adam)": [*eavesdrop(active_log, c, range(rounds)).sent, final[c]],
        }
        for kind, path in paths.items():
            for r, th in enumerate(path):
                rows.append({"client": c, "attack": kind, "active rounds": r,
                             "training MSE": float(model.loss(th, cl.X, cl.y)),
                             "AIA accuracy": model_based_accuracy(model, th, cl.X, cl.y, attribute)})
    return pd.DataFrame(rows)


def plot_trajectories(traj: pd.DataFrame, oracle: float) -> Any:
    """A Matplotlib figure: training MSE and AIA accuracy along the attack rounds (mean over the clients), with the
    oracle's accuracy (Model-w-O) as a dashed line."""
    fig, axes = plt.subplots(1, 2, figsize=(COLUMN_IN, 3.0))
    for kind, grp in traj.groupby("attack", sort=False):
        g = grp.groupby("active rounds").mean(numeric_only=True)
        axes[0].plot(g.index, g["training MSE"] / 1e6, label=kind)
        axes[1].plot(g.index, 100 * g["AIA accuracy"], label=kind)
    axes[1].axhline(100 * oracle, color="k", ls="--", lw=1, label="Model-w-O")
    axes[0].set(xlabel="active rounds", ylabel="training MSE (million $²)", yscale="log")
    # plain numbers on the log axis: every decade, and 2 and 5 times it
    axes[0].yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axes[0].yaxis.set_minor_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if f"{v:e}"[0] in "25" else ""))
    axes[1].set(xlabel="active rounds", ylabel="AIA accuracy (%)")
    fig.legend(*axes[1].get_legend_handles_labels(), loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def end_of_attack(traj: pd.DataFrame, rounds: int) -> pd.DataFrame:
    """Mean over the clients of each attack's training MSE and accuracy after ``rounds`` rounds."""
    return traj[traj["active rounds"] == rounds].groupby("attack").mean(numeric_only=True)


def end_table(end: pd.DataFrame, rounds: int, n_clients: int) -> Styler:
    """Each attack's training MSE and AIA accuracy at the end of the quick run (``end``, indexed
    by attack), after ``rounds`` rounds over ``n_clients`` clients, in the book's table style."""
    return style(end.reset_index()[["attack", "training MSE", "AIA accuracy"]],
                 percent=["AIA accuracy"], decimals={"AIA accuracy": 1, "training MSE": 0},
                 units={"training MSE": "$²"},
                 caption=f"Medical, after {rounds} active rounds, mean over the {n_clients} clients")


# ---------------------------------------------------------------------------------------------
# Section 3: Table 1


def means(out: Mapping[str, Any]) -> dict[str, float]:
    """A Table 1 result's mean accuracy (%) per row, rows named as in ``ROWS``."""
    return {k: v[0] for k, v in short_long_rows(out["summary"], tuple(out["settings"]["active_rounds"])).items()}


def quick_table(quick: Mapping[str, Mapping[str, Any]]) -> Styler:
    """Table 1 at quick scale: one column per task, one seed."""
    rounds = {tuple(out["settings"]["active_rounds"]) for out in quick.values()}
    assert len(rounds) == 1, rounds
    (r,) = rounds
    frame = pd.DataFrame({"attack": [row_label(x, r) for x in ROWS]})
    for name, out in quick.items():
        m = means(out)
        col = name if name == "Medical" else f"{name} ({'synthetic' if 'synthetic' in out['source'] else 'ACS'})"
        frame[col] = [m.get(x, float("nan")) / 100 for x in ROWS]
    return style(frame, percent=list(frame.columns[1:]), decimals=1, na="not run",
                 caption="Table 1 at quick scale (one seed): AIA accuracy")


def paper_file(task: str, source: str) -> dict | None:
    """The committed paper-scale Table 1 file of ``task`` on data ``source``, or None."""
    return load_result_or_none(part3_table1.result_name(task, source).removesuffix("_quick"))


def paper_scale_frame(sources: Mapping[str, str]) -> pd.DataFrame:
    """Every row of the paper-scale files next to the paper's: means and sds in %."""
    rows = []
    for task, src in sources.items():
        pf = paper_file(task, src)
        if pf is None:
            continue
        d = pf["data"]
        ours = short_long_rows(d["summary"], tuple(d["settings"]["active_rounds"]))
        paper = short_long_rows(PAPER_TABLE1[task], (10, 50))
        for x in ROWS:
            if x not in ours:
                continue
            rows.append({"task": task, "data": d["source"], "seeds": len(d["seeds"]),
                         "attack": row_label(x, tuple(d["settings"]["active_rounds"])),
                         "paper": paper[x][0], "paper sd": paper[x][1],
                         "ours": ours[x][0], "ours sd": ours[x][1]})
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["difference (pp)"] = frame["ours"] - frame["paper"]
    return frame


def paper_scale_table(frame: pd.DataFrame, tasks: Sequence[str], caption: str) -> Styler | str:
    """The rows of ``tasks`` of :func:`paper_scale_frame`, paper against ours."""
    sel = frame[frame["task"].isin(tasks)] if len(frame) else frame
    if not len(sel):
        return "no paper-scale result file for " + ", ".join(tasks)
    cols = ["attack", "paper", "paper sd", "ours", "ours sd", "difference (pp)"]
    if len(tasks) > 1:
        cols.insert(0, "task")
    t = sel[cols].copy()
    for c in ("paper", "paper sd", "ours", "ours sd"):
        t[c] = t[c] / 100
    return style(t, percent=["paper", "ours"], decimals={"paper": 2, "ours": 2, "difference (pp)": 1},
                 sd={"paper": "paper sd", "ours": "ours sd"},
                 n={"paper": 3, "ours": int(sel["seeds"].iloc[0])}, caption=caption)


ORDERINGS: dict[str, Callable[[Mapping[str, float]], bool]] = {
    "(a) active-long Ours > passive Ours, passive Grad": lambda m: (
        m["active-long/Ours"] > m["passive/Ours"] and m["active-long/Ours"] > m["passive/Grad"]),
    "(b) Model-w-O >= every Ours row - 1": lambda m: (
        m["Model-w-O"] >= max(m["passive/Ours"], m["active-short/Ours"], m["active-long/Ours"]) - 1.0),
    "(c) passive Ours >= passive Grad": lambda m: m["passive/Ours"] >= m["passive/Grad"],
    "(d) active-short Ours >= active-short Grad": lambda m: (
        m["active-short/Ours"] >= m["active-short/Grad"]),
    "(d) active-long Ours >= active-long Grad": lambda m: (
        m["active-long/Ours"] >= m["active-long/Grad"]),
    "(e) |active-long Ours - Model-w-O| <= 5": lambda m: (
        abs(m["active-long/Ours"] - m["Model-w-O"]) <= 5),
}


def orderings_table(quick: Mapping[str, Mapping[str, Any]]) -> Styler:
    """Whether each of the paper's orderings holds in the paper's Table 1 and in the quick run:
    one column per task, each cell "paper / ours"."""
    cells: dict[str, dict[str, str]] = {}
    for name, out in quick.items():
        m = means(out)
        paper_m = {k: v[0] for k, v in short_long_rows(PAPER_TABLE1[name], (10, 50)).items()}
        for claim, holds in ORDERINGS.items():
            yes = lambda ok: "yes" if ok else "no"
            cells.setdefault(claim, {})[name] = f"{yes(holds(paper_m))} / {yes(holds(m))}"
    frame = pd.DataFrame(cells).T.reset_index(names="ordering")
    return style(frame, caption="The paper's orderings: does each hold in the paper's Table 1 / "
                                "in the quick run (one seed)?")


# ---------------------------------------------------------------------------------------------
# The reproduction record: controlled experiments and benchmark


def _ms(name: str, xs: list[float], scale: float = 100) -> dict:
    """Mean and sd over seeds in columns ``name`` and ``name sd`` (fractions for percentages)."""
    return {name: statistics.mean(xs) / scale,
            f"{name} sd": statistics.stdev(xs) / scale if len(xs) > 1 else 0.0}


def controls(name: str, task: str) -> tuple[Styler | None, str]:
    """The controlled experiments of one task's file: the table and the computed conclusions
    (Markdown); ``(None, how to compute the file)`` when the file is missing."""
    try:
        rec = load_result(name)
    except FileNotFoundError:
        return None, (f"{task}: no paper-scale file; `FLPRIVACY_SCALE=paper python -m "
                      f"flbook.experiments.part3_table1_controls --task {task} --seeds 0 1 2` computes it")
    runs = rec["data"]["per_seed"]
    paper = PAPER_TABLE1[task]
    mw = [x["Model-w-O"] for x in runs]
    rows = []
    for key in runs[0]["attack"]:
        a = [x["attack"][key] for x in runs]
        r = a[0]["rounds"]
        cell = "active-10/Ours" if r == 10 else "active-50/Ours"
        acc = [v["accuracy"] for v in a]
        rows.append({
            "Adam tuned": "per client" if a[0]["per_client"] else "one study",
            "rounds": r, **_ms("accuracy", acc),
            "loss ratio": statistics.mean(v["loss"] / x["loss_last_returned"] for v, x in zip(a, runs)),
            "paper": paper[cell][0] / 100,
            "vs paper": ledger.number(paper[cell][0], statistics.mean(acc), paper_spread=paper[cell][1]).status,
        })
    oracles = [("oracle, ours", "Model-w-O", "loss_model_wo")]
    if "Model-w-O (authors' code)" in runs[0]:
        oracles.append(("oracle, authors' code", "Model-w-O (authors' code)", "loss_model_wo_authors"))
    for label, key, loss in oracles:
        acc = [x[key] for x in runs]
        rows.append({
            "Adam tuned": label, "rounds": None, **_ms("accuracy", acc),
            "loss ratio": statistics.mean(x[loss] / x["loss_last_returned"] for x in runs),
            "paper": paper["Model-w-O"][0] / 100,
            "vs paper": ledger.number(paper["Model-w-O"][0], statistics.mean(acc),
                                      paper_spread=paper["Model-w-O"][1]).status,
        })
    table = style(
        pd.DataFrame(rows), percent=["accuracy", "paper"],
        decimals={"accuracy": 2, "paper": 2, "loss ratio": 3, "rounds": 0},
        sd={"accuracy": "accuracy sd"}, n=len(runs), na="none: an oracle (Model-w-O) runs no attack",
        caption=f"{task} ({rec['data']['source']} data), paper scale: the model-based AIA on Alg. 4's "
                "estimate (Adam tuned per client or by one study for all) or on an oracle's optimal local model; loss ratio: the clients' training loss "
                "at the estimate over the loss at the last returned model (mean over the seeds)")
    attacks = [x for x in rows if x["rounds"] is not None]
    close = [x for x in attacks if abs(x["accuracy"] * 100 - statistics.mean(mw)) <= 3.0]
    lines = ["Alg. 4 gets within 3 points of our Model-w-O "
             + (f"from {min(x['rounds'] for x in close)} attack rounds on." if close else
                f"in none of the numbers of attack rounds tried (up to {max(x['rounds'] for x in attacks)}).")]
    if len(oracles) > 1:
        aw = statistics.mean(x["Model-w-O (authors' code)"] for x in runs)
        A = max(rec["data"]["settings"]["active_rounds"])
        a50 = statistics.mean(x["attack"][f"active-{A}, per client"]["accuracy"] for x in runs)
        lines.append(
            f"The oracle found as the authors' code finds it: {aw:.2f} % (ours {statistics.mean(mw):.2f} %, "
            f"the paper's {paper['Model-w-O'][0]:.2f} %); Alg. 4 after {A} rounds ({a50:.2f} %) is within 3 "
            f"points of it: {'yes' if abs(a50 - aw) <= 3.0 else 'no'}.")
    head = (f"**{task}**: `{rec['command']}` ({rec['date'][:10]}, commit {rec['commit'][:10]}, "
            f"{len(runs)} seeds).")
    return table, head + " " + " ".join(lines)


def bench_table(name: str = "part3_bench") -> tuple[Styler | None, str]:
    """The benchmark file's time per step, and a line giving its command and conditions."""
    try:
        bench = load_result(name, "fixed")
    except FileNotFoundError as e:
        return None, str(e)
    b = bench["data"]
    steps = pd.DataFrame({"step": [*b["steps_s"], "total"], "time": [*b["steps_s"].values(), b["total_s"]]})
    line = (f"`{bench['command']}` ({bench['date'][:10]}; torch threads {b['torch_threads']}, "
            f"load average {b['load_average_1min']:.1f})")
    return style(steps, units={"time": "s"}, decimals=1,
                 caption="Paper-scale Medical Table 1, one seed: time per step"), line


# ---------------------------------------------------------------------------------------------
# Fig. 1: AIA accuracy against the local dataset size


def curves_frame(res: Mapping[str, Any]) -> pd.DataFrame:
    """Fig. 1's curves (``part3_fig1.run``'s output) as one row per point: mean and sd (%)."""
    return pd.DataFrame([
        {"data | task": key, "curve": curve, "S_c": int(size),
         "accuracy (%)": float(np.mean(v)), "sd": float(np.std(v))}
        for key, cs in res["curves"].items() for curve, pts in cs.items() for size, v in pts.items()])


def plot_fig1(frame: pd.DataFrame) -> Any:
    """Fig. 1 as a Matplotlib figure: one panel per data set and task, accuracy against
    ``|D_c|`` (log scale), error bars the sd over seeds; the legend below the panels, a dotted
    line at a coin flip."""
    keys = list(dict.fromkeys(frame["data | task"]))
    n = len(keys)
    fig, axes = plt.subplots(1, n, figsize=(COLUMN_IN, 3.2), sharey=True, squeeze=False)
    axes = axes[0]
    sizes = sorted(set(frame.S_c))
    for ax, key in zip(axes, keys):
        for curve, grp in frame[frame["data | task"] == key].groupby("curve", sort=False):
            ax.errorbar(grp.S_c, grp["accuracy (%)"], yerr=grp.sd, marker="o", ms=3, capsize=2,
                        label=curve, ls="--" if curve.startswith("Grad") else "-")
        ax.axhline(50, color="k", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(v) for v in sizes], fontsize=8, rotation=45)
        ax.minorticks_off()
        ax.set_title(re.sub(r" \(.*?\)", "", key).replace(" | ", "\n"), fontsize=9)
        ax.set_xlabel("$|D_c|$")
    axes[0].set_ylabel("AIA accuracy (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def fig1_table(frame: pd.DataFrame, n_seeds: int, caption: str = "AIA accuracy") -> Styler:
    """Fig. 1's points as a table: one row per curve, one column per ``|D_c|``, mean ± sd over
    seeds."""
    keys = ["data, task", "curve"]
    frame = frame.assign(**{"data, task": [re.sub(r" \(.*?\)", "", k).replace(" | ", ", ")
                                           for k in frame["data | task"]]})
    mean = frame.pivot_table(index=keys, columns="S_c", values="accuracy (%)") / 100
    sd = frame.pivot_table(index=keys, columns="S_c", values="sd") / 100
    cols = [str(c) for c in mean.columns]
    mean.columns, sd.columns = cols, [c + " sd" for c in cols]
    table = mean.join(sd).reset_index()
    return style(table, percent=cols, decimals=1, sd={c: c + " sd" for c in cols}, n=n_seeds,
                 na="this size is not run for this curve",
                 caption=caption + "; one column per local dataset size |D_c|")


SHORT_CURVES = {"model-based, global model": "global model",
                "model-based, optimal local model": "local optimum"}


def fig1_panel_table(frame: pd.DataFrame, key: str, n_seeds: int) -> Styler:
    """One panel of Fig. 1 (``key``, a "data | task" value) as a table: one row per ``|D_c|``,
    one column per curve (the model-based attack on the global model and on the optimal local
    model shortened to "global model" and "local optimum"), mean ± sd over seeds."""
    sel = frame[frame["data | task"] == key].assign(curve=lambda f: f.curve.replace(SHORT_CURVES))
    curves = list(dict.fromkeys(sel.curve))
    mean = sel.pivot_table(index="S_c", columns="curve", values="accuracy (%)")[curves] / 100
    sd = sel.pivot_table(index="S_c", columns="curve", values="sd")[curves] / 100
    sd.columns = [c + " sd" for c in curves]
    table = mean.join(sd).reset_index().rename(columns={"S_c": "|D_c|"})
    return style(table, percent=curves, decimals={c: 2 if c == "local optimum" else 1 for c in curves},
                 sd={c: c + " sd" for c in curves}, n=n_seeds,
                 caption=f"Fig. 1, {re.sub(r' [(].*?[)]', '', key).replace(' | ', ', ')}: AIA accuracy "
                         "(global model, local optimum: the model-based attack on them)")


__all__ = [
    "COLUMN_IN", "ORDERINGS", "ROWS", "bench_table", "controls", "curves_frame", "end_of_attack", "end_table",
    "fig1_panel_table", "fig1_table", "means", "orderings_table", "paper_file", "paper_scale_frame", "paper_scale_table",
    "plot_fig1", "plot_trajectories", "quick_table", "row_label", "trajectories",
]
