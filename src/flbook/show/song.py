"""The tables and figures of Song, Wang & Zuazua (2025), the approximate and weighted attack (AWA):
the chapter ``part4/awa`` and its two reproduction pages, ``record/song_awa_quick`` (the quick
16x16 CNN) and ``record/song_awa_resnet18`` (ResNet-18, the paper's model).

Every function here lays out numbers that the caller computed or read from a committed result file;
none of them decides a result (the ledger's rules are :mod:`flbook.ledger.song`) or asserts one (the
pages keep their checks in sight).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from flprivacy.tables import style

#: Short names of the three ResNet-18 variants, the paper's model and the two controls.
SHORT = {"resnet18": "ReLU", "resnet18-sigmoid": "sigmoid", "resnet18-bn-eval": "BN stats"}
METHODS = ("DLG", "AGIC", "AWA")
#: Characters of a printed line that fit the text column at 1280 px.
WIDTH = 74


def wrap(text: str, indent: str = "") -> str:
    """``text`` wrapped to the column, continuation lines indented."""
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "    ")


def provenance(rec: Mapping[str, Any], **more: Any) -> pd.DataFrame:
    """One committed result file's provenance as a two-column table: command, scale, date,
    commit, seeds, and any ``more`` entries (name: value)."""
    rows = {"file": rec["name"], "command": rec["command"], "scale": rec.get("scale"),
            "date": rec["date"][:10], "commit": rec["commit"][:12], "seeds": len(rec.get("seeds") or [])}
    rows.update(more)
    return pd.DataFrame({"field": list(rows), "value": [str(v) for v in rows.values()]})


def show_provenance(rec: Mapping[str, Any], **more: Any):
    """:func:`provenance` styled the book's way."""
    return style(provenance(rec, **more), caption=f"Provenance of {rec['name']}")


# ---- the chapter -------------------------------------------------------------------------------


def weights_figure(weights: Sequence[float], kinds: Sequence[str], title: str):
    """eq. 24's weight of each layer against its index, one marker per kind of layer."""
    w = np.asarray(weights, dtype=float)
    fig, ax = plt.subplots(figsize=(6.5, 2.4))
    for k, mk in (("cv", "o"), ("bn", "s"), ("fc", "^")):
        ii = [i for i, kk in enumerate(kinds) if kk == k]
        ax.plot(ii, w[ii], mk, label=k, ms=4)
    ax.set(xlabel="layer index l (order in θ)", ylabel="q$^{(l)}$", title=title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    fig.tight_layout()
    return fig


def bo_toy_figure(grid, f_grid, x0, f_x0, ei, ours: float, theirs: float):
    """A 1-D objective with its evaluations (top) and the from-scratch expected improvement
    (bottom), with the next point chosen from scratch and by Optuna."""
    fig, axes = plt.subplots(2, 1, figsize=(6.5, 3.8), sharex=True)
    axes[0].plot(grid, f_grid, "k-", lw=1, label="f")
    axes[0].plot(x0, f_x0, "ko", label="8 evaluations")
    axes[1].plot(grid, np.asarray(ei) / np.max(ei), label="EI (scaled)")
    for ax in axes:
        ax.axvline(ours, color="C1", ls="--", label="next: from scratch")
        ax.axvline(theirs, color="C2", ls=":", label="next: Optuna")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    axes[1].set(xlabel="x")
    fig.tight_layout()
    return fig


def quick_mean(runs: Mapping[str, Any], case: str, method: str, key: str) -> float | None:
    """The mean of ``key`` (ssim, psnr, mse) over the image sets of the quick-scale file's
    ``runs`` for one case and attack; None where the attack did not run (DLG in case 4)."""
    vals = [r[case][method][key] for r in runs.values() if case in r and r[case][method] is not None]
    return float(np.mean(vals)) if vals else None


def _cell(ssim: float | None, psnr: float | None) -> str | None:
    return None if ssim is None else f"{ssim:.3f}\u00a0/\u00a0{psnr:.1f}"


def table4_beside(paper: Mapping[str, Mapping[str, Any]], runs: Mapping[str, Any],
                  r18: Mapping[tuple[str, str, str], Mapping[str, Any]]) -> pd.DataFrame:
    """Table IV beside ours: per case and attack, SSIM / PSNR of the paper, of the quick CNN (mean
    over the quick file's image sets) and of the ReLU ResNet-18 (one image set, 1,000 iterations)."""
    rows = []
    for case, methods in paper.items():
        for m in METHODS:
            cell = methods[m]
            rel = r18.get(("resnet18", case, m))
            rows.append({
                "case": case.removeprefix("case "), "attack": m,
                "paper": None if cell is None else _cell(cell["ssim"], cell["psnr"]),
                "quick CNN": _cell(quick_mean(runs, case, m, "ssim"), quick_mean(runs, case, m, "psnr")),
                "ResNet-18": None if rel is None else _cell(rel["data"]["ssim"], rel["data"]["psnr"]),
            })
    return pd.DataFrame(rows)


def show_table4_beside(table: pd.DataFrame, n_sets: int):
    """:func:`table4_beside` styled, with its caption."""
    return style(table, na="DLG has no exact replay in case 4 (Song's dash)",
                 caption=f"Table IV beside ours, SSIM / PSNR (dB), N = 4 CIFAR-10 images: quick CNN "
                         f"(16x16, mean of {n_sets} image sets), ResNet-18 (32x32, ReLU, one set)")


def live_table(rows: Mapping[str, Mapping[str, float]]):
    """The live attacks' quality (PSNR, SSIM, MSE), one row per attack."""
    df = pd.DataFrame(rows).T.reset_index(names="attack")
    return style(df, decimals=3, caption="The live attacks in case 4, quick scale")


# ---- the quick-scale record --------------------------------------------------------------------


def quick_ranks(runs: Mapping[str, Any], cases: Sequence[str], metrics: Mapping[str, str]):
    """Per case and metric, the order of the attacks by their mean over the image sets (an "="
    where two are equal: AWA's search returned Q = 1, DLG's loss)."""
    rows = []
    for case in cases:
        for k in ("ssim", "psnr"):
            vals = {m: quick_mean(runs, case, m, k) for m in METHODS}
            vals = {m: v for m, v in vals.items() if v is not None}
            order = sorted(vals, key=vals.get, reverse=True)
            text = order[0] + "".join((" = " if vals[a] == vals[b] else " > ") + b for a, b in zip(order, order[1:]))
            rows.append({"case": case, "metric": metrics[k], "order": text, "AWA": f"{vals['AWA']:.3f}",
                         "best other": f"{max(v for m, v in vals.items() if m != 'AWA'):.3f}"})
    return style(pd.DataFrame(rows), caption="The attacks ranked by their mean at quick scale")


def quick_curves_figure(first: Mapping[str, Any]):
    """Fig. 1 (running minimum of the BO objective) and Fig. 4 (PSNR, SSIM along the final attack)
    at quick scale, for one image set's runs."""
    fig, axes = plt.subplots(1, 3, figsize=(7, 2.6))
    for case, r in first.items():
        cm = r["AWA"]["bo_cummin"]
        axes[0].semilogy(range(1, len(cm) + 1), cm, "o-", ms=3, label=case)
        axes[1].plot(r["AWA"]["curve"]["iteration"], r["AWA"]["curve"]["psnr"], label=case)
        axes[2].plot(r["AWA"]["curve"]["iteration"], r["AWA"]["curve"]["ssim"], label=case)
    axes[0].set(xlabel="BO trial", ylabel="min f(Q) so far", title="Fig. 1")
    axes[1].set(xlabel="iteration", ylabel="PSNR (dB)", title="Fig. 4a")
    axes[2].set(xlabel="iteration", ylabel="SSIM", title="Fig. 4b")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=7,
               frameon=False, bbox_to_anchor=(0.5, -0.08))
    fig.tight_layout()
    return fig


def vs_unweighted(runs: Mapping[str, Any]) -> pd.DataFrame:
    """Per case and image set, eq. 33 at Q = 1 (trial 0), the best of the search, and both
    followed to the final attack (the quick file's AWA and DLG records)."""
    rows = []
    for i, r in enumerate(runs.values()):
        for case, c in r.items():
            a = c["AWA"]
            rows.append({"case": case.removeprefix("case "), "set": i + 1, "f(1)": a["f_unweighted"],
                         "best f(Q)": a["f_best"], "BO beat Q = 1": a["f_best"] < a["f_unweighted"],
                         "final f(Q*)": a["objective"],
                         "DLG's f": None if c["DLG"] is None else c["DLG"]["objective"]})
    return pd.DataFrame(rows).sort_values(["case", "set"], kind="stable")


def show_vs_unweighted(table: pd.DataFrame, settings: Mapping[str, Any]):
    """:func:`vs_unweighted` styled."""
    return style(table, decimals=3,
                 na="DLG refuses case 4; there f(1) is the unweighted loss on the interpolated epoch",
                 caption=f"eq. 33 per case and image set: f(1) and the best f(Q) after the trials' "
                         f"{settings['trial_iterations']} iterations ({settings['n_trials']} trials); "
                         f"final f(Q*) and DLG's after {settings['iterations']}")


def bo_bench_table(benchmark: Mapping[str, Any]) -> pd.DataFrame:
    """The quick file's benchmark of Song's BO protocol against short, pruned trials."""
    cols = {"total_iterations": "attack iterations", "seconds": "seconds", "trials_stopped": "trials stopped",
            "objective": "best f(Q)", "final_objective": "final f(Q*)", "psnr": "PSNR", "ssim": "SSIM"}
    return pd.DataFrame(benchmark).T[list(cols)].reset_index(names="protocol").rename(columns=cols)


def show_bo_bench(table: pd.DataFrame):
    """:func:`bo_bench_table` styled, one column per protocol."""
    fmt = {"attack iterations": "{:,.0f}", "seconds": "{:.0f} s", "trials stopped": "{:.0f}",
           "best f(Q)": "{:.3g}", "final f(Q*)": "{:.3g}", "PSNR": "{:.2f} dB", "SSIM": "{:.3f}"}
    rows = [{"quantity": k, **{p: f.format(v) for p, v in zip(table["protocol"], table[k])}}
            for k, f in fmt.items()]
    return style(pd.DataFrame(rows), caption="Case 4, first image set, the same number of trials")


def table3_tables(runs: Mapping[str, Any]):
    """Table III's Q beside our BO's Q* per case, and f(Q) and SSIM of the paper's Q, our Q* and
    Q = 1 on our problem (the ``awa_table3`` file's runs): two styled tables."""
    keys = ("q_cv", "q_bn", "q_fc", "q_en", "p_mean", "p_var")
    rows = []
    for k in keys:
        row = {"parameter": k}
        for case, r in runs.items():
            c = case.removeprefix("case ")
            row[f"{c}: paper"] = f"{r['paper']['Q'][k]:.3g}"
            row[f"{c}: ours"] = f"{r['ours']['Q'][k]:.3g}"
        rows.append(row)
    q = style(pd.DataFrame(rows), caption="Q per case: Table III (paper) and our quick BO (ours)")
    fq = pd.DataFrame({case.removeprefix("case "): {
        "f(paper Q)": r["paper"]["objective"], "f(our Q*)": r["ours"]["objective"],
        "f(1), DLG's loss": r["Q = 1"]["objective"], "SSIM, paper Q": r["paper"]["ssim"],
        "SSIM, our Q*": r["ours"]["ssim"], "SSIM, Q = 1": r["Q = 1"]["ssim"]} for case, r in runs.items()})
    fq.columns = [f"case {c}" for c in fq.columns]
    f = style(fq.reset_index(names="quantity"), decimals=3,
              caption="On our problem (quick CNN, one image set), after the quick budget")
    return q, f


def table3_curves_figure(runs: Mapping[str, Any], fig4_ssim: float, fig4_iterations: int):
    """Fig. 4 at quick scale: PSNR and SSIM along the long attack with our Q*."""
    fig, axes = plt.subplots(1, 2, figsize=(7, 2.6))
    for case, r in runs.items():
        c = r["long"]["curve"]
        axes[0].plot(c["iteration"], c["psnr"], label=case)
        axes[1].plot(c["iteration"], c["ssim"], label=case)
    axes[1].axhline(fig4_ssim, color="grey", ls=":")
    axes[1].axvline(fig4_iterations, color="grey", ls=":")
    axes[0].set(xlabel="attack iteration", ylabel="PSNR (dB)", title="Fig. 4a (our Q*)")
    axes[1].set(xlabel="attack iteration", ylabel="SSIM", title="Fig. 4b (our Q*)")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    fig.tight_layout()
    return fig


def cost_table(cost: Mapping[str, Any]):
    """Seconds per attack iteration at ResNet-18 per case and attack (the ``awa_table4_cost`` file)."""
    return style(pd.DataFrame(cost["seconds_per_iteration"]).T.reset_index(names="case"),
                 na="DLG refuses case 4 (no exact replay)",
                 caption=f"ResNet-18, 32x32, N = 4: seconds per attack iteration, "
                         f"{cost['threads']} CPU thread(s)")


def awa_bench_tables(bench: Mapping[str, Any]):
    """The ``awa_bench`` file: seconds per iteration of each form of the loss, and the fused
    attack per allocator setting (two styled tables)."""
    spi = bench["seconds_per_iteration"]
    # the file's keys are the benchmark's own names; shown by what each form computes
    names = {"per-layer (before)": "eq. 23, layer by layer", "fused (now)": "eq. 23, one fused sum"}
    forms = style(pd.DataFrame({"objective": [names.get(k, k) for k in spi], "time per attack iteration": list(spi.values())}),
                  units={"time per attack iteration": "s"}, caption="ResNet-18, case 1, N = 4")
    alloc = bench["allocator"]
    rows = [{"allocator": a, "wall": v["wall"], "user": v["user"], "kernel": v["system"],
             "page faults": f"{v['minor_faults'] / alloc['iterations'] / 1000:,.0f}k"}
            for a, v in alloc["median"].items()]
    settings = style(pd.DataFrame(rows), units={"wall": "s", "user": "s", "kernel": "s"},
                     caption=f"The fused attack per iteration by allocator setting (medians of "
                             f"{alloc['repeats']} child processes)")
    return forms, settings


# ---- the ResNet-18 record ----------------------------------------------------------------------


def diagnostics_table(diag: Mapping[str, Any], verdict, sign, paper: Mapping[str, Any], scenario,
                      unweighted: Mapping[str, float], moved: float) -> pd.DataFrame:
    """One row per controlled experiment of the ``awa_diagnostics`` file: what it changes, its
    scores, the paper's SSIM, whether it raises SSIM over the baseline by more than ``moved``
    (``sign``, the ledger's rule) and the status of a Table IV cell's rule (``verdict``)."""
    rows = []
    for name, r in diag["runs"].items():
        case = f"case {scenario(r['epochs'], r['batches']).case}"
        method = "DLG" if r["method"] == "AWA" and r["Q"] == unweighted else r["method"]
        v = verdict(case, method, r["ssim"]) if method in ("DLG", "AWA") else None
        base = diag["runs"]["ours: AWA" if method == "AWA" else "ours: DLG"]["ssim"]
        up = sign(r["ssim"] - base, expected=1, margin=moved)
        cell = paper[case][method] if method in ("DLG", "AWA") else None
        rows.append({
            "run": name, "what we changed": r["change"], "model": r["model"], "N": r["n_images"],
            "SSIM (7x7)": f"{r['ssim']:.3f}", "SSIM (§5.1)": f"{r['ssim_global']:.3f}",
            "PSNR (dB)": f"{r['psnr']:.1f}",
            "eq. 33: start → end": f"{r['objective_start']:.2g} → {r['objective']:.2g}",
            "|∂loss/∂x| at start": f"{r['first_grad_mean_abs']:.1e}",
            "paper SSIM": "—" if cell is None else f"{cell['ssim']:g}",
            "raises SSIM": "—" if name.startswith("ours") else ("yes" if up.ok else "no"),
            "status": "— (no paper cell)" if v is None else v.status,
        })
    return pd.DataFrame(rows)


def show_diagnostics(table: pd.DataFrame):
    """:func:`diagnostics_table` as three styled tables that fit the column."""
    diagnostics = ["eq. 33: start → end", "|∂loss/∂x| at start"]
    return (style(table[["run", "what we changed", "model", "N"]], caption="The runs: what each changes"),
            style(table[["run", "SSIM (7x7)", "SSIM (§5.1)", "PSNR (dB)", "paper SSIM", "raises SSIM", "status"]],
                  caption="Their scores and verdicts"),
            style(table[["run", *diagnostics]], caption="Eq. 33 from a grey image, and the pixel gradient"))


def resnet18_files(r18: Mapping[tuple[str, str, str], Mapping[str, Any]], status) -> pd.DataFrame:
    """The provenance of the ResNet-18 grid's files, one row each: model, case, attack, device,
    runs sharing it at once, seconds per iteration, commit, and whether the code it ran is current by
    ``status`` (``reproduce``'s rule, ``record_status``)."""
    rows = []
    for key, rec in sorted(r18.items()):
        d = rec["data"]
        ok, _ = status(rec)
        rows.append({"model": SHORT[key[0]], "case": key[1].removeprefix("case "), "attack": key[2],
                     "device": d["device_name"].removeprefix("NVIDIA "), "runs": d["workers"],
                     "s/it": d["seconds_per_iteration"], "commit": rec["commit"][:7],
                     "code": "current" if ok else "stale"})
    return pd.DataFrame(rows)


def commands(recs) -> list[str]:
    """The distinct commands that made ``recs``, without the options each worker process adds."""
    return list(dict.fromkeys(re.sub(r" --(worker|commit) \S+", "", rec["command"]) for rec in recs))


def table4_resnet18(paper: Mapping[str, Mapping[str, Any]], r18: Mapping[tuple[str, str, str], Mapping[str, Any]],
                    status_of, controls: Sequence[str]):
    """Table IV at ResNet-18 (ReLU, the ledger's status of each SSIM cell from ``status_of``) and
    the same cells at the ``controls`` (SSIM): two styled tables."""
    rows, control_rows = [], []
    for case, methods in paper.items():
        for method, cell in methods.items():
            if cell is None:
                continue
            relu = r18.get(("resnet18", case, method))
            rows.append({"case": case, "attack": method, "paper": _cell(cell["ssim"], cell["psnr"]),
                         "ReLU": _cell(relu["data"]["ssim"], relu["data"]["psnr"]) if relu else "not run",
                         "status": status_of(case, method)})
            row = {"case": case, "attack": method, "paper SSIM": f"{cell['ssim']:.3f}"}
            for c in controls:
                run = r18.get((c, case, method))
                row[SHORT[c]] = f"{run['data']['ssim']:.3f}" if run else "not run"
            control_rows.append(row)
    return (style(pd.DataFrame(rows), caption="Table IV at ResNet-18 (ReLU, §5.1's model), 1,000 iterations, "
                                              "one image set: SSIM / PSNR (dB)"),
            style(pd.DataFrame(control_rows), caption="The same cells at the two control models: SSIM"))


def bo_resnet18_table(bo18, r18):
    """Our BO at ResNet-18 (pruned protocol): SSIM of DLG, of AWA with Table III's Q and with our
    Q*, eq. 33 at Q* relative to Q = 1, trials stopped, iterations, seconds per iteration."""
    rows = []
    for (m, case), rec in bo18.items():
        d = rec["data"]
        dlg = r18.get((m, case, "DLG"))
        rows.append({"model, case": f"{SHORT[m]}, {case}",
                     "DLG": f"{dlg['data']['ssim']:.3f}" if dlg else "not run",
                     "AWA, Table III Q": f"{r18[(m, case, 'AWA')]['data']['ssim']:.3f}",
                     "AWA, our Q*": f"{d['ssim']:.3f}", "f(Q*) / f(1)": f"{d['f_best'] / d['f_unweighted']:.3f}",
                     "stopped": f"{sum(d['stopped'])} of {len(d['values'])}",
                     "iterations": f"{d['total_iterations']:,}", "s/it": f"{d['seconds_per_iteration']:.3f}"})
    return style(pd.DataFrame(rows), caption="Our BO at ResNet-18 (pruned protocol), one image set: SSIM; "
                                             "eq. 33 at our Q* relative to Q = 1; s/it of the final attack")


def sittings(study, gap_minutes: int = 10) -> pd.DataFrame:
    """An Optuna study's trials by sitting (a sitting ends when no trial starts within
    ``gap_minutes`` of the last one's end): start (UTC), trials finished, their minutes and seconds
    per attack iteration, and trials cut off while running (never finished, not used)."""
    import optuna

    groups, last_end = [], None
    for t in sorted(study.trials, key=lambda t: t.datetime_start):
        if last_end is None or (t.datetime_start - last_end).total_seconds() > gap_minutes * 60:
            groups.append([])
        groups[-1].append(t)
        last_end = max(last_end or t.datetime_start, t.datetime_complete or t.datetime_start)
    rows = []
    for g in groups:
        done = [t for t in g if t.state == optuna.trial.TrialState.COMPLETE]
        seconds = sum((t.datetime_complete - t.datetime_start).total_seconds() for t in done)
        its = sum(t.user_attrs["iterations"] for t in done)
        rows.append({"start (UTC)": f"{g[0].datetime_start:%Y-%m-%d %H:%M}", "trials": len(done),
                     "minutes": round(seconds / 60), "s/it": round(seconds / max(1, its), 3),
                     "cut off": len(g) - len(done)})
    return pd.DataFrame(rows)


def curves_figure(curves, cases: Sequence[str], fig4_ssim: float, fig4_iterations: int):
    """Fig. 4b at ResNet-18: SSIM along the AWA attack with Table III's Q, line style by model,
    colour by case; the legend below the axes."""
    dashes = {"resnet18": "-", "resnet18-sigmoid": "--", "resnet18-bn-eval": "-."}
    colours = dict(zip(cases, ("C0", "C1", "C2", "C4")))
    fig, ax = plt.subplots(figsize=(6.5, 3))
    for (m, case), rec in curves.items():
        tr = rec["data"]["trace"]
        ax.plot(tr["iteration"], tr["ssim"], dashes[m], color=colours[case], label=f"{SHORT[m]}, {case}")
    ax.axhline(fig4_ssim, color="grey", lw=0.8)
    ax.axvline(fig4_iterations, color="grey", lw=0.8)
    ax.axvline(1000, color="grey", ls=":", lw=0.8)
    ax.set(xlabel="attack iteration", ylabel="SSIM", ylim=(0, 1), title="Fig. 4b at ResNet-18 (Table III's Q)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4, frameon=False)
    fig.tight_layout()
    return fig


__all__ = [
    "METHODS", "SHORT", "WIDTH", "awa_bench_tables", "bo_bench_table", "bo_resnet18_table", "bo_toy_figure",
    "commands", "cost_table", "curves_figure", "diagnostics_table", "live_table", "provenance", "quick_curves_figure",
    "quick_mean", "quick_ranks", "resnet18_files", "show_bo_bench", "show_diagnostics", "show_provenance",
    "show_table4_beside", "show_vs_unweighted", "sittings", "table3_curves_figure", "table3_tables",
    "table4_beside", "table4_resnet18", "vs_unweighted", "weights_figure", "wrap",
]
