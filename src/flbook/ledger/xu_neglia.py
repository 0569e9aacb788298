"""Xu & Neglia 2021 ("What else is leaked when eavesdropping Federated Learning?") in the ledger.

The single home of the paper's reported numbers and claims (the constants below; the
experiments ``flbook.experiments.part2_leaf`` and ``flbook.experiments.part2_adult``
record them next to ours), and :func:`rows`, one :class:`~flbook.ledger.Row` per numbered
result: Observation 1 (exact recovery from d+1 messages, O(d³)), Observation 2 (Ω(d) messages),
Algo. 3 (the learned mapping, with Obs. 1 as its affine case), every cell of Table 1 (per client
and the mean, 1/5/10 local steps, last returned vs decoded), the §4 claims on Table 1, Fig. 1's
three panels and the Adult split's sizes.

Observations 1-2 and the affine case of Algo. 3 are checked live on small float64 instances
(seeded, well under two seconds, ``file="live"``); Table 1 reads ``part2_leaf_table1.json`` and
Fig. 1 ``part2_adult_fig1.json``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
import math
from statistics import mean, stdev
from typing import Any

from . import (Row, Verdict, at_least, at_most, bound, combine, not_run, number, ordering,
               record_or_none, row, sign, trend)
from ..papers.xu_neglia import PAPER_ADULT, PAPER_TABLE1  # noqa: F401 - the paper's numbers, read here

PAPER = "Xu & Neglia 2021"

# ---- the paper's numbers ------------------------------------------------------------------------------------


GAIN_RANGE = (10.0, 20.0)
"""§4 — "on average, our attack outperforms the baseline with 10%-20% improvement" (points of
mean train accuracy, Table 1's last column)."""
PHD_SIZE_TOL = 2
"""Counts of rows — within 2 of the paper's (the tolerance of the chapter's search over age-cut
conventions)."""
N_ROWS_TOL = 50
"""Footnote 4's 12300 is rounded to hundreds — half a unit of its last digit."""

NOISE_SE = 2.0
"""Fig. 1's curves are means over seeds and attacked clients (the paper plots 95% intervals over
10 runs): a step or difference within 2 standard errors of those means counts as a tie."""

QUOTES: dict[str, str] = {
    "Obs. 1": "training a least squares linear regression through FedAvg with full batch size, a client's design "
              "matrix of rank d: once the client has communicated with the server d+1 times, the adversary can recover "
              "the client's local optimal model in O(d³) operations ... the adversary does not require knowledge of "
              "the parameters in FedAvg, such as the learning rate and the number of local steps",
    "Obs. 2 rounds": "for any FL algorithm where a client's local update rule can be seen as a first-order black box, at "
                     "least one client is required to communicate with the server Ω(d) times for the convergence to "
                     "the optimum",
    "Obs. 2 messages": "to reconstruct the local optimal model of this client, the adversary must eavesdrop Ω(d) times",
    "Algo. 3": "when executing FedAvg using full batch size, the exact mapping function G^c ... is shown to be linear; "
               "minimizing ||G^c||² corresponds to solving the linear systems ... the decoding algorithm in Observation 1 "
               "can be seen as a particular instance of Algo. 3",
    "Table 1": "average train accuracy on client c's local dataset of the final personalized model of FedAvg θ̃_c and "
               "the decoded model θ̂_c^* over 10 independent runs; LEAF synthetic, 5 clients, batch size 256, learning "
               "rate 0.01",
    "steps": "as the number of local steps increases, the accuracy of the last returned model increases",
    "gain": "on average, our attack outperforms the baseline with 10%-20% improvement",
    "insensitive": "the performance of the local model reconstruction attack is almost insensitive to the number of "
                   "local steps",
    "client 3": "this attack is more effective on client 3, whose local dataset is probably very different from the "
                "others as suggested by the low accuracy of the model θ̃_c",
    "Fig. 1a": "the local models of the first three clients are quite far from the rest of the local models",
    "Fig. 1b": "small batch size would introduce more randomness into the data set ΔM^c; thus, the mapping loss (Eq. 6) "
               "is higher for small batch size",
    "Fig. 1c": "the decoded local model outperforms the baseline (dash line) for test accuracy as well",
    "batch": "our attack ... does not suffer the problem of large batch size (on the contrary, it works better the "
             "larger the batch size)",
    "sizes": "the numbers of training samples for the first three clients are 126, 258 and 134, respectively",
    "rows": "the number of the data points are reduced from 48842 to 12300 (education at least bachelor)",
}
"""The paper's claims, quoted (or closely paraphrased where the sentence is long)."""

CH_EXACT = "part2/exact_recovery"
CH_LOWER = "part2/lower_bound"
CH_LEARNED = "part2/learned_mapping"
CH_ADULT = "part2/learned_mapping_adult"

EXACT_C = 100
"""Backward stability of a least-squares solve — relative error <= C κ(Θ_out) ε, C a modest
polynomial in d (100 >= 8(d+1) for the d <= 11 of the live check)."""


# ---- live checks (float64, seeded, well under two seconds together) ----------------------------------------


@functools.lru_cache(maxsize=1)
def exact_recovery_live() -> dict[str, Any]:
    """Obs. 1 / Diana Prop. 2 on random instances: d ∈ {3, 6, 11}, E ∈ {1, 5} full-batch epochs,
    η ∈ {0.1, 0.5, 0.9} × S_c/(2λ_max(H)); the attack sees exactly d+1 exchanges with random sent
    models and is never told η or E. Returns the relative errors, their backward-stability bounds
    C κ(Θ_out) ε, and whether d exchanges are refused."""
    import torch

    from flprivacy.attacks.reconstruction import reconstruct_least_squares
    from flprivacy.config import generator
    from flprivacy.federation import ClientData
    from flprivacy.federation import LeastSquaresSGD
    from flprivacy.models import design
    from flprivacy.optimum import least_squares_optimum

    eps = torch.finfo(torch.float64).eps
    out = []
    for d in (3, 6, 11):
        for E in (1, 5):
            for frac in (0.1, 0.5, 0.9):
                g = generator(1000 * d + 10 * E + int(10 * frac))
                X = torch.randn(3 * d, d - 1, generator=g, dtype=torch.float64) + 1.0
                w = torch.randn(d, generator=g, dtype=torch.float64)
                data = ClientData(X, X @ w[:-1] + w[-1] + 0.3 * torch.randn(3 * d, generator=g, dtype=torch.float64))
                X1 = design(X)
                lr = frac * data.n / (2 * torch.linalg.eigvalsh(X1.T @ X1)[-1].item())
                star = least_squares_optimum(data)
                sent = star + torch.randn(d + 1, d, generator=g, dtype=torch.float64)
                upd = LeastSquaresSGD(lr=lr, epochs=E)
                returned = torch.stack([upd(None, s, data, g) for s in sent])
                r = reconstruct_least_squares((sent, returned))
                try:
                    reconstruct_least_squares((sent[:d], returned[:d]))
                    refused = False
                except ValueError:
                    refused = True
                out.append(dict(d=d, E=E, frac=frac, error=((r.theta - star).norm() / star.norm()).item(),
                                bound=EXACT_C * r.cond * eps, refused=refused))
    return {"cases": out, "eps": eps}


XU_COST_EXPONENT = (2.2, 3.6)
"""Obs. 1's O(d³): the fitted exponent of the reconstruction's CPU time in d must lie in this range
(a·d³ + b·d² has a log-log slope in (2, 3) rising to 3; cache misses at large d can push it a little
above 3), as the chapter asserts."""


@functools.lru_cache(maxsize=1)
def xu_cost_exponent_live() -> dict[str, Any]:
    """Obs. 1's cost, timed as the chapter times it: one reconstruction from d+1 exchanges for
    d ∈ {150, 300, 600} (a random contraction W with spectrum in [0.05, 0.95]; the chapter times
    d = 100-800), CPU time of one thread, best of 3; returns the fitted log-log exponent and the
    largest relative error (about a CPU-second in all)."""
    import time

    import torch

    from flprivacy.attacks.reconstruction import reconstruct_least_squares
    from flprivacy.config import generator

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ds, secs, errs = (150, 300, 600), [], []
    try:
        for d in ds:
            g = generator(8000 + d)
            star = torch.randn(d, generator=g, dtype=torch.float64)
            Q = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64)).Q
            W = Q @ torch.diag(torch.rand(d, generator=g, dtype=torch.float64) * 0.9 + 0.05) @ Q.T
            sent = torch.randn(d + 1, d, generator=g, dtype=torch.float64)
            returned = sent - (sent - star) @ W.T
            best = math.inf
            for _ in range(3):
                t0 = time.thread_time()
                r = reconstruct_least_squares((sent, returned))
                best = min(best, time.thread_time() - t0)
            secs.append(best)
            errs.append(((r.theta - star).norm() / star.norm()).item())
    finally:
        torch.set_num_threads(threads)
    lx, ly = [math.log(d) for d in ds], [math.log(max(x, 1e-9)) for x in secs]
    mx, my = mean(lx), mean(ly)
    slope = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
    return {"ds": ds, "seconds": secs, "exponent": slope, "max_error": max(errs)}


def lower_bound_counts(hard: dict[str, Any]) -> dict[str, int]:
    """The counts behind the Ω(d) lower bound on the live hard instance (:func:`hard_instance_live`):
    ``tight`` of its ``d`` rounds in the staircase; ``same_before`` of the ``before`` = d-1 rounds
    0..``last_before`` with identical exchanges; ``differ_after`` of the ``after`` rounds from d-1 on
    with different ones."""
    d, same = hard["d"], hard["same"]
    return dict(d=d, tight=sum(hard["staircase"]), before=d - 1, last_before=d - 2, same_before=sum(same[:d - 1]),
                after=len(same) - d + 1, differ_after=sum(not s for s in same[d - 1:]))


def lower_bound_verdicts(hard: dict[str, Any]) -> tuple[Verdict, Verdict]:
    """The two halves of the Ω(d) lower bound (Xu & Neglia Obs. 2 = Diana et al. Prop. 3) on the live
    hard instance: θ^t stays in the staircase for t < d and θ* has no zero coordinate (rounds), and
    the two data sets send identical messages before round d-1 and different ones after (messages)."""
    c = lower_bound_counts(hard)
    rounds = combine(bound(c["tight"], c["d"], what="zero pattern of θ^t and of the reply"),
                     bound(int(hard["optimum_dense"]), 1, what="θ* has no zero coordinate"))
    messages = combine(bound(c["same_before"], c["before"], what="identical before round d-1"),
                       bound(c["differ_after"], c["after"], what="different from round d-1"))
    return rounds, messages


def lower_bound_rows(hard: dict[str, Any], *, paper: str, rounds: dict[str, str],
                     messages: dict[str, str]) -> list[Row]:
    """The two rows of the Ω(d) lower bound on the live hard instance (Xu & Neglia Obs. 2 = Diana et al.
    Prop. 3), in each paper's words: ``rounds`` and ``messages`` give the ``result_id``, ``claim``,
    ``paper_value`` and ``ours`` of the two halves, ``ours`` a template filled with the instance
    (:func:`hard_instance_live`) and :func:`lower_bound_counts`; the verdicts are
    :func:`lower_bound_verdicts`'s."""
    fill = {**hard, **lower_bound_counts(hard)}
    common = dict(paper=paper, data="synthetic (as in the paper)", file="live", chapter=CH_LOWER)
    return [row(**common, **{**texts, "ours": texts["ours"].format(**fill)}, verdict=v)
            for texts, v in zip((rounds, messages), lower_bound_verdicts(hard))]


@functools.lru_cache(maxsize=1)
def hard_instance_live(d: int = 12) -> dict[str, Any]:
    """Obs. 2 / Diana Prop. 3 on Nesterov's hard instance (``d`` features, two clients, one
    full-batch step, θ⁰ = 0): rounds t < d in which θ^t vanishes in coordinates t+1..d and the
    target's reply in t+2..d (exactly), whether the staircase is tight, whether the global optimum
    has no zero coordinate, and the rounds in which the alternative client's exchanges equal the
    original's bit for bit."""
    import torch

    from flprivacy.data.synthetic import nesterov_hard_instance
    from flprivacy.federation import LocalSGD, run_fedavg
    from flprivacy.models import linear_regression
    from flprivacy.threats import eavesdrop

    inst = nesterov_hard_instance(d, n_clients=2)
    lr = 0.9 / max(2 * torch.linalg.eigvalsh(c.X.T @ c.X)[-1].item() / c.n for c in inst.clients)
    model = linear_regression(d, bias=False)
    zero = torch.zeros(d, dtype=torch.float64)
    rounds = d + 3

    def log(clients):
        return run_fedavg(model, clients, rounds=rounds, local=LocalSGD(lr=lr, epochs=1), weighting="uniform",
                          theta0=zero, seed=0)

    run = log(inst.clients)
    M = eavesdrop(run.log, 0)
    stair = [bool(torch.all(M.sent[t][t:] == 0) and torch.all(M.returned[t][t + 1:] == 0)
                  and (t == 0 or M.sent[t][t - 1] != 0)) for t in range(d)]
    theta_glob = torch.linalg.solve(sum(c.X.T @ c.X / c.n for c in inst.clients),
                                    sum(c.X.T @ c.y / c.n for c in inst.clients))
    M_alt = eavesdrop(log([inst.alternative] + inst.clients[1:]).log, 0)
    same = [bool(torch.equal(M.sent[t], M_alt.sent[t]) and torch.equal(M.returned[t], M_alt.returned[t]))
            for t in range(rounds)]
    return {"d": d, "staircase": stair, "optimum_dense": bool(torch.all(theta_glob != 0)),
            "min_abs_optimum": theta_glob.abs().min().item(), "same": same}


@functools.lru_cache(maxsize=1)
def affine_mapping_live() -> dict[str, Any]:
    """Algo. 3 with an affine G (``hidden=0``, normalised inputs, eq. 7 by L-BFGS) on full-batch least
    squares (d = 6, 16 exchanges with random sent models): the distance of the decoded model to θ_c^*,
    relative to the start of eq. 7 (the last returned model), and the perturbation bound
    10 κ(W) √(relative mapping loss) it must stay within (an exact affine fit lands exactly)."""
    import torch

    from flprivacy.attacks.learned_mapping import learned_mapping_reconstruction
    from flprivacy.config import generator
    from flprivacy.federation import ClientData
    from flprivacy.federation import LeastSquaresSGD
    from flprivacy.models import design
    from flprivacy.optimum import least_squares_optimum

    g = generator(6)
    d = 6
    X = torch.randn(12, d - 1, generator=g, dtype=torch.float64) + 1.0
    w = torch.randn(d, generator=g, dtype=torch.float64)
    data = ClientData(X, X @ w[:-1] + w[-1] + 0.5 * torch.randn(12, generator=g, dtype=torch.float64))
    X1 = design(X)
    lr = 0.5 * data.n / (2 * torch.linalg.eigvalsh(X1.T @ X1)[-1].item())
    star = least_squares_optimum(data)
    sent = star + 2 * torch.randn(16, d, generator=g, dtype=torch.float64)
    returned = torch.stack([LeastSquaresSGD(lr=lr)(None, s, data, g) for s in sent])
    with torch.random.fork_rng(devices=[]):  # the fit's global draws are seeded; the caller's generator is untouched
        torch.manual_seed(0)
        r = learned_mapping_reconstruction((sent, returned), hidden=0, normalize_inputs=True, fit_steps=800, fit_lr=1e-2,
                                           decode_optimizer="lbfgs", decode_steps=100, seed=0)
    W = 2 * lr / data.n * X1.T @ X1
    base = (returned[-1] - star).norm().item()
    return {"fraction_left": (r.theta - star).norm().item() / base,
            "allowed": 10 * torch.linalg.cond(W).item() * r.relative_mapping_loss ** 0.5,
            "relative_mapping_loss": r.relative_mapping_loss}


# ---- result files ----------------------------------------------------------------------------------------------


def table1_numbers(recs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Table 1 from the records of ``part2_leaf_table1.json`` (or of a live
    ``flbook.experiments.part2_leaf.run_table1``): mean train accuracy (%) per (local
    steps, model, client), the mean over clients, the mean gain of decoding per (steps, client),
    the number of seeds and ``ceiling``, the true local optima's mean train accuracy (%) when the
    records hold it (else ``None``); ``by_seed`` (per steps and model, each seed's mean over clients)
    and ``gains_by_seed`` (per steps and client, each seed's gain), in seed order, for the paired
    margins of ``xu_table1_noise``."""
    steps = sorted({r["local_steps"] for r in recs})
    clients = sorted({r["client"] for r in recs})
    key = {"last returned": "acc_last_returned", "decoded": "acc_decoded"}
    acc: dict[tuple[int, str], list[float]] = {}
    for s in steps:
        for m, k in key.items():
            per = [100 * mean(r[k] for r in recs if r["local_steps"] == s and r["client"] == c) for c in clients]
            acc[(s, m)] = per + [mean(per)]
    gains = {(s, c): 100 * mean(r["acc_decoded"] - r["acc_last_returned"] for r in recs
                                if r["local_steps"] == s and r["client"] == c) for s in steps for c in clients}
    ceiling = (100 * mean(r["acc_local_optimum"] for r in recs)
               if recs and all("acc_local_optimum" in r for r in recs) else None)
    seeds = sorted({r["seed"] for r in recs})

    def of_seed(s: int, q: Any, k: str, c: int | None = None) -> float:  # one seed's %, the mean over clients or one
        sel = [r for r in recs if r["local_steps"] == s and r["seed"] == q and (c is None or r["client"] == c)]
        return 100 * mean(r[k] if k in r else r["acc_decoded"] - r["acc_last_returned"] for r in sel)

    # per seed, in seed order: a seed's data draw is the same at 1/5/10 steps, so differences are paired
    by_seed = {(s, m): [of_seed(s, q, k) for q in seeds] for s in steps for m, k in key.items()}
    gains_by_seed = {(s, c): [of_seed(s, q, "gain", c) for q in seeds] for s in steps for c in clients}
    return {"acc": acc, "steps": steps, "clients": clients, "gains": gains,
            "seeds": len({r["seed"] for r in recs}), "ceiling": ceiling, "by_seed": by_seed,
            "gains_by_seed": gains_by_seed}


TABLE1_CLAIMS = ("Xu Table 1 last returned fits better with more local steps", "Xu Table 1 decoding gains 10-20 points",
                 "Xu Table 1 decoded almost insensitive to local steps", "Xu Table 1 largest gain on client 3")
"""The ids of §4's four claims about Table 1 (:func:`table1_claims`)."""


def xu_table1_noise(*pairs: tuple[Sequence[float] | None, Sequence[float] | None]) -> float:
    """The margin of a Table 1 sign, trend or ordering on paired per-seed values: 2 standard
    errors (:func:`flbook.ledger.referee.noise_margin`) of the per-seed differences ``b - a`` of
    each pair ``(a, b)`` (the same seeds, hence the same data draws), the largest over the pairs.
    Where the per-seed values are unknown or one run (``None`` or fewer than two: the paper's
    printed table, which reports no spread, or a one-seed run), 0.1 point: the rounding of two
    numbers printed to one decimal; one run then decides only that run (the ledger caps one-run
    rows, :func:`flbook.ledger.referee.judge`)."""
    from .referee import noise_margin, std_error

    printed = 0.1  # two numbers rounded to 0.1 point each differ by up to 0.1 from the unrounded difference
    if not pairs or any(a is None or b is None or len(a) < 2 or len(a) != len(b) for a, b in pairs):
        return printed
    return max(noise_margin(std_error([y - x for x, y in zip(a, b)])) for a, b in pairs)


def table1_claims(t: Mapping[str, Any]) -> list[dict[str, Any]]:
    """§4's claims about Table 1 decided on :func:`table1_numbers` ``t`` (a committed file's or a
    live run's): one dict per claim with ``result_id``, ``claim``, ``paper_value``, ``ours`` and
    ``verdict``, in the order of :data:`TABLE1_CLAIMS`."""
    steps = t["steps"]
    last = [t["acc"][(s, "last returned")][-1] for s in steps]
    dec = [t["acc"][(s, "decoded")][-1] for s in steps]
    p_last = [PAPER_TABLE1[s]["last returned"][-1] for s in steps]
    p_dec = [PAPER_TABLE1[s]["decoded"][-1] for s in steps]
    gain = [b - a for a, b in zip(last, dec)]
    p_gain = [b - a for a, b in zip(p_last, p_dec)]
    p_range = max(p_dec) - min(p_dec)
    g3 = {s: {f"client {c}": t["gains"][(s, c)] for c in t["clients"]} for s in steps}
    other = {s: max((k for k in g3[s] if k != "client 3"), key=g3[s].get) for s in steps}
    p3 = [PAPER_TABLE1[s]["decoded"][3] - PAPER_TABLE1[s]["last returned"][3] for s in steps]
    by_seed, gains_by_seed = t.get("by_seed", {}), t.get("gains_by_seed", {})  # absent: the paper's printed table
    lr = [by_seed.get((s, "last returned")) for s in steps]
    steps_margin = xu_table1_noise(*zip(lr, lr[1:]), (lr[0], lr[-1]))  # each step, and first to last
    c3_margin = {s: xu_table1_noise((gains_by_seed.get((s, int(other[s].split()[-1]))), gains_by_seed.get((s, 3))))
                 for s in steps}
    arrow = " → ".join
    return [
        dict(result_id=TABLE1_CLAIMS[0], claim=QUOTES["steps"],
             paper_value=arrow(f"{v:.1f}" for v in p_last) + "% (mean, 1/5/10 steps)",
             ours=arrow(f"{v:.1f}" for v in last) + "%",
             verdict=trend(steps, last, expected=1, what="mean accuracy of the last returned model",
                           margin=steps_margin)),
        dict(result_id=TABLE1_CLAIMS[1], claim=QUOTES["gain"],
             paper_value=", ".join(f"{g:+.1f}" for g in p_gain) + f" points (average {mean(p_gain):+.1f})",
             ours=", ".join(f"{g:+.1f}" for g in gain) + f" points (average {mean(gain):+.1f})",
             verdict=_because(at_least(mean(gain), GAIN_RANGE[0], what="gain averaged over 1/5/10 steps"),
                              ("our last returned models fit their clients better than the paper's"
                               if mean(last) > mean(p_last) + 3 else
                               "our last returned models fit their clients about as well as the paper's")
                              + ("" if t.get("ceiling") is None else
                                 f", yet their true local optima reach {t['ceiling']:.1f}% (mean): the decoded models "
                                 "stay near the last returned ones instead of reaching them"))),
        dict(result_id=TABLE1_CLAIMS[2], claim=QUOTES["insensitive"],
             paper_value=", ".join(f"{v:.1f}" for v in p_dec) + f"% (range {p_range:.1f})",
             ours=", ".join(f"{v:.1f}" for v in dec) + f"% (range {max(dec) - min(dec):.1f})",
             verdict=at_most(max(dec) - min(dec), p_range, what="range of the decoded mean over 1/5/10 steps "
                                                                "(threshold: the paper's own range)")),
        dict(result_id=TABLE1_CLAIMS[3], claim=QUOTES["client 3"],
             paper_value="client 3: " + ", ".join(f"{g:+.1f}" for g in p3) + " points (the largest at 1/5/10 steps)",
             ours="; ".join(f"{_steps(s)}: client 3 {g3[s]['client 3']:+.1f}, {other[s]} {g3[s][other[s]]:+.1f}"
                            for s in steps),
             # "more effective on client 3": its gain above the best other client's beyond 2 SE (a tie is no win)
             verdict=_because(combine(*(sign(g3[s]["client 3"] - g3[s][other[s]], margin=c3_margin[s],
                                             what=f"{_steps(s)}, client 3 vs {other[s]}") for s in steps)),
                              "one LEAF draw under every seed: its client 3 is the paper's by size, not necessarily "
                              "the most different one" if t.get("fixed_draw") else
                              "client identities come from a fresh LEAF draw per seed, so no client of ours is "
                              "systematically the most different one")),
    ]


XU_WORST_SERVED_ID = "Xu Table 1 largest gain on the worst-served client (client 3's role)"


def xu_table1_worst_served(recs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """§4's client-3 claim by role, on the records of ``part2_leaf_table1.json``: the paper singles
    out client 3 as the client "whose local dataset is probably very different from the others as
    suggested by the low accuracy of the model θ̃_c", so in each seed's draw and at each number of
    local steps the *worst-served* client is the one whose last returned model has the lowest train
    accuracy. The claim "this attack is more effective on client 3" is decided at each number of
    local steps on the per-seed (paired) differences of decoding gains: the worst-served client's
    gain above the mean gain of the other four, and above the gain of the runner-up role (the rank
    by last returned accuracy with the largest mean gain among the others), each beyond 2 standard
    errors of those differences (``xu_table1_noise``). One row dict (``result_id``,
    ``claim``, ``paper_value``, ``ours``, ``verdict``)."""
    steps = sorted({r["local_steps"] for r in recs})
    seeds = sorted({r["seed"] for r in recs})
    names = ["worst-served", "2nd lowest", "3rd lowest", "4th lowest", "best-served"]
    parts, texts = [], []
    for s in steps:
        by_rank: dict[int, list[float]] = {}
        for q in seeds:
            ranked = sorted((r for r in recs if r["local_steps"] == s and r["seed"] == q),
                            key=lambda r: (r["acc_last_returned"], r["client"]))
            for k, r in enumerate(ranked):
                by_rank.setdefault(k, []).append(100 * (r["acc_decoded"] - r["acc_last_returned"]))
        worst = by_rank[0]
        others = [mean(by_rank[k][i] for k in by_rank if k) for i in range(len(seeds))]
        runner = max((k for k in by_rank if k), key=lambda k: mean(by_rank[k]))
        name = names[runner] if runner < len(names) else f"rank {runner + 1}"
        parts.append(sign(mean(worst) - mean(others), margin=xu_table1_noise((others, worst)),
                          what=f"{_steps(s)}, worst-served vs the others' mean"))
        parts.append(sign(mean(worst) - mean(by_rank[runner]), margin=xu_table1_noise((by_rank[runner], worst)),
                          what=f"{_steps(s)}, worst-served vs the {name} client"))
        texts.append(f"{_steps(s)}: worst-served {mean(worst):+.1f}, others' mean {mean(others):+.1f}, "
                     f"{name} {mean(by_rank[runner]):+.1f}")
    p3 = [PAPER_TABLE1[s]["decoded"][3] - PAPER_TABLE1[s]["last returned"][3] for s in sorted(PAPER_TABLE1)]
    return dict(result_id=XU_WORST_SERVED_ID, claim=QUOTES["client 3"],
                paper_value="client 3 (lowest last returned accuracy at 1/5/10 steps): "
                            + ", ".join(f"{g:+.1f}" for g in p3) + " points, the largest",
                ours="; ".join(texts) + f" points (gain of decoding, {len(seeds)} seeds; the worst-served client "
                                        "is the one with the lowest last returned accuracy in each draw)",
                verdict=combine(*parts))


VARIANT_LABELS: dict[str, str] = {
    # the settings study (part2_leaf_diagnostics.VARIANTS)
    "K SGD steps (the book before)": "K SGD steps",
    "K local epochs (Algo. 2, FedEM; the book now)": "K local epochs (Algo. 2, FedEM)",
    "normalised inputs of G": "normalised inputs of G",
    "eq. (6) fitted 5,000 steps": "eq. (6) fitted 5,000 steps",
    "T = 20 rounds": "T = 20 rounds",
    "T = 200 rounds": "T = 200 rounds",
    "one fixed data draw": "one fixed data draw (seed 0)",
    "K local epochs, one logit (BCE, d = 11)": "one logit, BCE (d = 11), K epochs",
    "K local epochs, G initialised from another seed": "G's initial weights redrawn, K epochs",
    # the data-draw study (part2_leaf_diagnostics.DRAWS)
    "a fresh draw per training seed (the book)": "a fresh draw per training seed",
    "one fixed draw (data seed 0), K local epochs": "one fixed draw (data seed 0)",
    **{f"one fixed draw screened to look like the paper's (#{r + 1} closest)": f"screened draw #{r + 1}"
       for r in range(10)},
}
"""The name a reader sees for each variant of the LEAF controlled experiments (the keys of
``part2_leaf_diagnostics*.json``, which keep the experiments' own names): each by what it changes.

:meta hide-value:
"""


def variant_label(name: str) -> str:
    """The reader's name of a recorded variant of the LEAF controlled experiments
    (:data:`VARIANT_LABELS`; other names are already plain)."""
    return VARIANT_LABELS.get(name, name)


def table1_variants(recs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The controlled experiments of ``part2_leaf_diagnostics.json`` (records with a ``variant``):
    per variant, in file order, the gain of decoding (points of mean train accuracy) at each number
    of local steps, its average, the number of seeds, and §4's "10%-20% improvement" decided on that
    average (:data:`GAIN_RANGE`, lower end)."""
    out: dict[str, dict[str, Any]] = {}
    for v in dict.fromkeys(r["variant"] for r in recs):
        t = table1_numbers([r for r in recs if r["variant"] == v])
        gains = [t["acc"][(s, "decoded")][-1] - t["acc"][(s, "last returned")][-1] for s in t["steps"]]
        out[v] = {"steps": t["steps"], "gains": gains, "mean_gain": mean(gains), "seeds": t["seeds"],
                  "verdict": at_least(mean(gains), GAIN_RANGE[0], what=f"{v}: gain averaged over 1/5/10 steps")}
    return out


def _variants_sentence(rec: Mapping[str, Any] | None, name: str = "part2_leaf_diagnostics") -> str:
    """The controlled experiments' mean gains in result file ``name`` as a sentence for the Table 1
    reasons ("" if the file is not committed)."""
    if rec is None:
        return ""
    v = table1_variants(rec["data"]["records"])
    return (f"controlled experiments ({name}, " + f"{rec['data']['seeds']} seeds) give mean gains of "
            + "; ".join(f"{variant_label(k)} {x['mean_gain']:+.1f}" for k, x in v.items()) + " points (the paper: 10-20)")


def _follow_sentence(rec: Mapping[str, Any] | None) -> str:
    """The probed runs of ``part2_leaf_diagnostics.json`` decoded by following the learned map
    (θ ← θ - α G(θ)) beside eq. (7) by Adam, as mean gains over the last returned model ("" if the
    file is missing or holds no such probe)."""
    if rec is None or "follow" not in rec["data"]:
        return ""
    probed = [r for r in rec["data"]["records"] if "acc_follow_1.0" in r]
    if not probed:
        return ""

    def gain(key: str) -> str:
        ok = [r for r in probed if r.get(key) is not None]  # None: the iteration diverged for an attack of that run
        if not ok:
            return f"none (it diverged on every run, {len(probed)} attacks)"
        g = f"{100 * mean(r[key] - r['acc_last_returned'] for r in ok):+.1f}"
        return g if len(ok) == len(probed) else (f"{g} (over {len(ok)} of {len(probed)} attacks; the others' runs "
                                                 "diverged)")
    return ("on the probed runs, eq. (7) by Adam gains " + f"{gain('acc_decoded')} points and following the "
            "learned map (θ ← θ - α G(θ), 1,000 steps) " + ", ".join(f"{gain(f'acc_follow_{a}')} at α = {a:g}"
                                                                     for a in rec["data"]["follow"]["alphas"]))


def fig1_numbers(data: Mapping[str, Any]) -> dict[str, Any]:
    """Fig. 1 from the ``data`` of ``part2_adult_fig1.json`` (or a live
    ``flbook.experiments.part2_adult.run_fig1``): distances between local optima (PhD
    clients 0-2 vs the others), mean mapping loss per (client, B), mean test accuracies per B, the
    sizes."""
    D = data["optimum_distances"]
    n = len(D)
    rest = range(3, n)
    recs = data["records"]
    Bs = sorted({r["B"] for r in recs})
    attacked = sorted({r["client"] for r in recs})

    def avg(key: str, **cond: Any) -> float:
        return mean(r[key] for r in recs if all(r[k] == v for k, v in cond.items()))

    def se(values: list[float]) -> float:
        return stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0

    def loss_se(c: int) -> float:
        return max(se([r["mapping_loss"] for r in recs if r["client"] == c and r["B"] == B]) for B in Bs)

    return {
        "phd_min_to_rest": [min(D[i][j] for j in rest) for i in range(3)],
        "rest_max": max(D[i][j] for i in rest for j in rest if i != j),
        "Bs": Bs, "attacked": attacked,
        "loss": {(c, B): avg("mapping_loss", client=c, B=B) for c in attacked for B in Bs},
        "loss_se": {c: loss_se(c) for c in attacked},
        "decoded_se": max(se([r["test_acc_decoded"] for r in recs if r["B"] == B]) for B in Bs),
        "gain_se": max(se([r["test_acc_decoded"] - r["test_acc_last_returned"] for r in recs if r["B"] == B])
                       for B in Bs),
        "decoded": {B: avg("test_acc_decoded", B=B) for B in Bs},
        "last": {B: avg("test_acc_last_returned", B=B) for B in Bs},
        "train_sizes": [s[0] for s in data["sizes"][:3]],
        "phd_rows": data.get("phd_rows"), "n_rows": data.get("n_rows"), "seeds": len({r["seed"] for r in recs}),
    }


FIG1_CLAIMS = ("Xu Fig. 1a PhD clients' optima far from the others", "Xu Fig. 1b mapping loss falls with batch size",
               "Xu Fig. 1c decoded beats last returned in test accuracy",
               "Xu §5 the attack works better with larger batches")
"""The ids of Fig. 1's claims (:func:`fig1_claims`)."""


def fig1_claims(f: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Fig. 1's claims (panels a-c and §5's "works better the larger the batch size") decided on
    :func:`fig1_numbers` ``f``; one dict per claim, in the order of :data:`FIG1_CLAIMS`."""
    Bs = f["Bs"]
    return [
        dict(result_id=FIG1_CLAIMS[0], claim=QUOTES["Fig. 1a"],
            paper_value="PhD clients 0-2 far from clients 3-9 (heat map)",
            ours="smallest relative distance from clients 0/1/2 to clients 3-9: "
                 + ", ".join(f"{v:.2f}" for v in f["phd_min_to_rest"]) + f"; largest among clients 3-9: {f['rest_max']:.2f}",
            # distances between the local optima of one fixed split (no seed spread): a rounding-level tolerance
            verdict=combine(*(ordering({f"client {i}": v, "among 3-9": f["rest_max"]}, [f"client {i}", "among 3-9"],
                                       margin=1e-6, what=f"client {i}'s nearest other vs the farthest pair among 3-9")
                              for i, v in enumerate(f["phd_min_to_rest"])))),
        dict(result_id=FIG1_CLAIMS[1], claim=QUOTES["Fig. 1b"], paper_value="mapping loss decreasing in B",
            ours="; ".join(f"client {c}: " + ", ".join(f"{f['loss'][(c, B)]:.1e}" for B in Bs) for c in f["attacked"])
                 + f" (B = {', '.join(map(str, Bs))}; {f['seeds']} seeds)",
            verdict=combine(*(trend(Bs, [f["loss"][(c, B)] for B in Bs], expected=-1, margin=NOISE_SE * f["loss_se"][c],
                                    what=f"client {c}") for c in f["attacked"]))),
        dict(result_id=FIG1_CLAIMS[2], claim=QUOTES["Fig. 1c"], paper_value="decoded above the last returned model",
            ours="mean test accuracy decoded / last returned (%): " + ", ".join(
                f"B = {B}: {100 * f['decoded'][B]:.1f} / {100 * f['last'][B]:.1f}" for B in Bs),
            verdict=_because(combine(*(sign(f["decoded"][B] - f["last"][B], margin=NOISE_SE * f["gain_se"],
                                            what=f"B = {B}") for B in Bs)),
                             "with η = 0.001, one local step and 100 rounds the messages barely move, and the map "
                             "fitted to noisy small-batch updates extrapolates badly")),
        dict(result_id=FIG1_CLAIMS[3], claim=QUOTES["batch"], paper_value="decoded model better as B grows",
            ours="mean test accuracy of the decoded model (%): " + ", ".join(
                f"B = {B}: {100 * f['decoded'][B]:.1f}" for B in Bs),
            verdict=trend(Bs, [f["decoded"][B] for B in Bs], expected=1, margin=NOISE_SE * f["decoded_se"],
                          what="decoded test accuracy vs B")),
    ]


# ---- the rows -------------------------------------------------------------------------------------------------------


def _below(x: float, floor: float = 1e-10) -> str:
    """A rounding-level number as "below ``floor``" (its digits differ between CPUs and BLAS builds, and
    the committed ledger must be the same on any machine); larger numbers with one digit."""
    return f"below {floor:.0e}" if x < floor else f"{x:.0e}"


def _steps(s: int) -> str:
    return f"{s} local step" + ("s" if s > 1 else "")


def _because(v: Verdict, why: str) -> Verdict:
    """``v`` with ``why`` appended to its reason when it is not reproduced."""
    return v if v.ok else Verdict(v.status, f"{v.reason}; {why}")


def _live_rows() -> list[Row]:
    ex = exact_recovery_live()
    cases = ex["cases"]
    holds = sum(c["error"] <= c["bound"] for c in cases)
    hard = hard_instance_live()
    aff = affine_mapping_live()
    cost = xu_cost_exponent_live()
    cost_ok = XU_COST_EXPONENT[0] <= cost["exponent"] <= XU_COST_EXPONENT[1] and cost["max_error"] <= 1e-8
    common = dict(paper=PAPER, data="synthetic (as in the paper)", file="live")
    return [
        row(**common, result_id="Xu Observation 1 exact recovery from d+1 full-batch messages", claim=QUOTES["Obs. 1"],
            paper_value="θ_c^* exactly from d+1 exchanges, η and E unknown",
            ours=f"{len(cases)} instances (d 3-11, E 1 and 5, three η), d+1 random sent models each: largest relative "
                 f"error {_below(max(c['error'] for c in cases))}, within {EXACT_C} κ(Θ_out) ε in {holds}; d exchanges "
                 f"refused in {sum(c['refused'] for c in cases)}",
            verdict=combine(bound(holds, len(cases), what=f"relative error <= {EXACT_C} κ(Θ_out) ε"),
                            bound(sum(c["refused"] for c in cases), len(cases), what="d exchanges refused")),
            chapter=CH_EXACT),
        row(**common, result_id="Xu Observation 1 cost O(d³)", claim=QUOTES["Obs. 1"], paper_value="O(d³) operations",
            # timed at every ledger build; the digits depend on the machine, so "ours" shows them only on a failure
            ours="CPU time of one thread for one reconstruction from d+1 exchanges, best of 3, d = 150-600: fitted "
                 "exponent " + (f"within {XU_COST_EXPONENT[0]}-{XU_COST_EXPONENT[1]}" if cost_ok
                                else f"{cost['exponent']:.2f}") + f"; relative error {_below(cost['max_error'], 1e-8)}",
            verdict=combine(at_least(cost["exponent"], XU_COST_EXPONENT[0], what="fitted exponent of the CPU time"),
                            at_most(cost["exponent"], XU_COST_EXPONENT[1], what="fitted exponent of the CPU time"),
                            at_most(cost["max_error"], 1e-8, what="relative error")),
            chapter=CH_EXACT),
        *lower_bound_rows(
            hard, paper=PAPER,
            rounds=dict(result_id="Xu Observation 2 Ω(d) rounds to learn the global model", claim=QUOTES["Obs. 2 rounds"],
                        paper_value="θ^t has at most t non-zero coordinates for t < d; θ* has none zero",
                        ours="hard instance, d = {d}: staircase exact and tight in {tight} of {d} rounds; smallest "
                             "|θ*_i| = {min_abs_optimum:.2e}"),
            messages=dict(result_id="Xu Observation 2 Ω(d) messages to reconstruct", claim=QUOTES["Obs. 2 messages"],
                          paper_value="two clients with different optima send identical messages before round d-1",
                          ours="d = {d}: identical exchanges in rounds 0-{last_before}: {same_before} of {before}; "
                               "different from round {before} on: {differ_after} of {after}")),
        row(**common, result_id="Xu Algo. 3 affine G is Observation 1", claim=QUOTES["Algo. 3"],
            paper_value="affine G on full-batch least squares decodes θ_c^*",
            ours=f"distance left / start {_below(aff['fraction_left'], 1e-3)}, allowed 10 κ(W) √(relative mapping "
                 f"loss) = {_below(aff['allowed'], 1e-3)}",
            verdict=at_most(aff["fraction_left"], aff["allowed"], what="distance left after decoding"),
            chapter=CH_LEARNED),
    ]


def _draws_sentence(rec: Mapping[str, Any] | None) -> str:
    """What the data-draw study (``part2_leaf_diagnostics_draws``) says about §4's gain and client-3
    claims on the draws screened to look like the paper's ("" if the file is not committed)."""
    if rec is None:
        return ""
    recs, specs = rec["data"]["records"], rec["data"]["variants"]
    screened = [v for v, spec in specs.items() if "screened_rank" in spec]
    if not screened:
        return ""
    v = table1_variants(recs)
    client3 = [k for k in screened
               if table1_claims(table1_numbers([r for r in recs if r["variant"] == k]))[3]["verdict"].ok]
    met = sum(v[k]["verdict"].ok for k in screened)
    return (f"the data-draw study (part2_leaf_diagnostics_draws, {rec['data']['seeds']} training seeds per draw) gives "
            "mean gains of " + "; ".join(f"{variant_label(k)} {x['mean_gain']:+.1f}" for k, x in v.items() if k not in screened)
            + f" points, and on the {len(screened)} LEAF draws (of {rec['data']['screen_settings']['candidates']}) whose "
            "last returned models look most like the paper's " + ", ".join(f"{v[k]['mean_gain']:+.1f}" for k in screened)
            + f" points: §4's 10-20 is met on {met} of {len(screened)}, and client 3 gains most at 1/5/10 steps on "
            f"{len(client3)} of {len(screened)}"
            + ("; the gap follows the data draw, which the paper does not publish" if 2 * met > len(screened) else ""))


PAPER_READING_FILE = "part2_leaf_table1_paper_reading"
"""Table 1 as the paper's text and the authors' code read it (``part2_leaf --reading paper``): the
main rows; ``part2_leaf_table1`` (two logits, argmax labels, a fresh draw per seed) is the control."""


def _reading_text(rec: Mapping[str, Any]) -> str:
    """What a Table 1 result file ran, in words."""
    d = rec["data"]
    if "reading" in d:
        return (f"one logit with the binary cross-entropy (d = 11, the group's code), LEAF's reference labels, one "
                f"fixed draw (data seed {d['data_seed']}, the closest to the paper's last returned models of "
                f"{rec_screen_candidates(d)} screened on those alone, with two logits) under every seed, eq. (7) by Adam "
                f"(§4); " + (f"{d['seeds']} seeds, as the paper" if d['seeds'] == 10
                              else f"{d['seeds']} seeds where the paper has 10"))
    return ("two logits (d = 22), the stated argmax labels, a fresh LEAF draw per seed, eq. (7) by Adam")


def rec_screen_candidates(d: Mapping[str, Any]) -> int:
    """How many draws the screen behind the paper's reading compared (its committed file)."""
    screen = record_or_none(d["reading"]["screen"], d["reading"]["screen_scale"])
    return 0 if screen is None else screen["data"]["screen_settings"]["candidates"]


def _table1_rows(rec: Mapping[str, Any] | None, control: Mapping[str, Any] | None = None) -> list[Row]:
    clients = ["client 0", "client 1", "client 2", "client 3", "client 4", "mean over clients"]
    ids = [f"Xu Table 1 {_steps(s)} {m} {c}" for s in PAPER_TABLE1 for m in PAPER_TABLE1[s]
           for c in clients]
    claims = list(TABLE1_CLAIMS)
    if rec is None:
        why = not_run("part2_leaf_table1.json is not committed; FLPRIVACY_SCALE=paper python -m "
                      "flbook.experiments.part2_leaf (about 3 CPU-minutes)")
        return [row(paper=PAPER, result_id=i, claim=QUOTES["Table 1"], paper_value="", ours="", verdict=why,
                    chapter=CH_LEARNED, data="synthetic (as in the paper)") for i in ids + claims]
    t = table1_numbers(rec["data"]["records"])
    t["fixed_draw"] = "data_seed" in rec["data"]
    n = t["seeds"]
    why = (_reading_text(rec) + ", 'local steps' as Algo. 2's epochs; §4 states the map ('one hidden layer of size "
           "1000', 'Adam') but no rounds (ours 50) and no step counts for eqs. (6)-(7)")
    tc = None if control is None else table1_numbers(control["data"]["records"])
    if tc is not None:
        why += (f"; the control ({_reading_text(control)}, part2_leaf_table1, {tc['seeds']} seeds) is given beside "
                "each cell")
        ctrl_claims = {c["result_id"]: c for c in table1_claims(tc)}
    diagnostics = record_or_none("part2_leaf_diagnostics", "quick")
    tested = "; ".join(x for x in (_variants_sentence(diagnostics), _follow_sentence(diagnostics)) if x)
    common = dict(paper=PAPER, data="synthetic (as in the paper)", record=rec, chapter=CH_LEARNED)
    out = []
    it = iter(ids)
    for s in PAPER_TABLE1:
        for m, vals in PAPER_TABLE1[s].items():
            for c, (p, o) in enumerate(zip(vals, t["acc"][(s, m)])):
                ctrl = "" if tc is None else f"; control {tc['acc'][(s, m)][c]:.1f}% ({tc['seeds']} seeds)"
                out.append(row(**common, result_id=next(it), claim=QUOTES["Table 1"] + f" ({m}, {s} local steps, "
                                                                                        f"{clients[c]})",
                               paper_value=f"{p:.1f}%", ours=f"{o:.1f}% ({n} seeds){ctrl}",
                               verdict=_because(number(p, o, what=f"{m}, {clients[c]}"), why)))
    draws = _draws_sentence(record_or_none("part2_leaf_diagnostics_draws", "quick"))
    for c in table1_claims(t):
        if c["result_id"] == TABLE1_CLAIMS[1] and tested:
            c["verdict"] = _because(c["verdict"], tested)
        if c["result_id"] in TABLE1_CLAIMS[1::2] and draws:
            c["verdict"] = _because(c["verdict"], draws)
        if tc is not None:
            k = ctrl_claims[c["result_id"]]
            c["ours"] += f"; control ({tc['seeds']} seeds): {k['ours']}, {k['verdict'].status}"
        out.append(row(**common, **c))
    out.append(row(**common, **xu_table1_worst_served(rec["data"]["records"])))
    return out


def _fig1_rows(rec: Mapping[str, Any] | None) -> list[Row]:
    ids = [*FIG1_CLAIMS, "Xu §4 Adult PhD clients' training sizes", "Xu §4 Adult rows with at least a bachelor's degree"]
    if rec is None:
        why = not_run("part2_adult_fig1.json is not committed; FLPRIVACY_SCALE=paper python -m "
                      "flbook.experiments.part2_adult")
        return [row(paper=PAPER, result_id=i, claim="", paper_value="", ours="", verdict=why, chapter=CH_ADULT,
                    data="real") for i in ids]
    f = fig1_numbers(rec["data"])
    common = dict(paper=PAPER, data="real", record=rec, chapter=CH_ADULT)
    out = [row(**common, **c) for c in fig1_claims(f)]
    sizes = f["train_sizes"]
    phd = f["phd_rows"]
    out.append(row(**common, result_id=ids[4], claim=QUOTES["sizes"],
                   paper_value=", ".join(map(str, PAPER_ADULT["phd_train_sizes"])),
                   ours=", ".join(map(str, sizes)) + " (80% of the PhDs by the stated age rule"
                        + (f": {', '.join(map(str, phd))} of {sum(phd)}" if phd else "") + ")",
                   verdict=_because(combine(*(number(p, o, tol=PHD_SIZE_TOL, what=f"client {i}") for i, (p, o) in
                                              enumerate(zip(PAPER_ADULT["phd_train_sizes"], sizes)))),
                                    f"the paper's three sizes sum to {sum(PAPER_ADULT['phd_train_sizes'])}, more than "
                                    "80% of the UCI file's PhDs"
                                    + (f" ({sum(phd)})" if phd else "") + "; §4 and footnote 4 describe no other "
                                    "preprocessing")))
    if f["n_rows"] is None:
        out.append(row(paper=PAPER, result_id=ids[5], claim=QUOTES["rows"], paper_value=str(PAPER_ADULT["n_rows"]),
                       ours="", verdict=not_run("part2_adult_fig1.json predates the row count; rerun its command"),
                       chapter=CH_ADULT, data="real"))
    else:
        out.append(row(**common, result_id=ids[5], claim=QUOTES["rows"], paper_value=str(PAPER_ADULT["n_rows"]),
                       ours=str(f["n_rows"]),
                       verdict=_because(number(PAPER_ADULT["n_rows"], f["n_rows"], tol=N_ROWS_TOL, what="rows kept"),
                                        "the UCI file (train and test) with education Bachelors, Masters, "
                                        "Prof-school or Doctorate")))
    return out


def rows() -> list[Row]:
    """Every Xu & Neglia result: the live observations, Table 1 and Fig. 1 from their result files."""
    book = record_or_none("part2_leaf_table1")
    paper = record_or_none(PAPER_READING_FILE)
    table1 = _table1_rows(book) if paper is None else _table1_rows(paper, control=book)
    return _live_rows() + table1 + _fig1_rows(record_or_none("part2_adult_fig1"))


__all__ = ["GAIN_RANGE", "NOISE_SE", "N_ROWS_TOL", "PAPER", "PAPER_ADULT", "PAPER_TABLE1", "PHD_SIZE_TOL", "QUOTES",
           "FIG1_CLAIMS", "TABLE1_CLAIMS", "affine_mapping_live", "exact_recovery_live", "fig1_claims", "fig1_numbers", "hard_instance_live", "rows",
           "table1_claims", "table1_numbers", "table1_variants", "VARIANT_LABELS", "variant_label"]


def referee(r: Row) -> Any:
    """How row ``r`` counts towards the ledger's tallies (:class:`flbook.ledger.referee.Count`).

    - Table 1's per-client cells (30 rows) and the client-3 claim judged by index are apart as *not
      comparable*: the paper's Table 1 is one fixed LEAF draw, ours a fresh draw per seed, so client
      3 of ours is another client than the paper's; the means over clients (6 rows) count, and the
      client-3 claim counts by role (:func:`xu_table1_worst_served`).
    - The live checks (Obs. 1-2, the O(d³) cost, the affine case of Algo. 3) are computed at every
      build on seeded instances (``file="live"``): not capped as one run.
    - Every other row counts as it is: LEAF synthetic is synthetic data as the paper makes it,
      Adult is the real UCI file; all read from 10 seeds at paper scale.
    """
    import re

    from .referee import COUNTS, Count

    rid = r.result_id
    cell = re.fullmatch(r"Xu Table 1 \d+ local steps? (?:last returned|decoded) client (\d)", rid)
    if cell:
        c = cell.group(1)
        return Count(excluded="not comparable",
                     excluded_why=f"the paper's Table 1 is one fixed LEAF draw; ours draws the data afresh for each "
                                  f"of its seeds, so our client {c} is another client than the paper's client {c} "
                                  "(a per-client cell cannot correspond); the mean over clients counts")
    if rid == TABLE1_CLAIMS[3]:
        return Count(excluded="not comparable",
                     excluded_why="judged by index: client 3 of a fresh LEAF draw is not the paper's client 3; the "
                                  f"claim counts by role instead ('{XU_WORST_SERVED_ID}': the client with the lowest "
                                  "last returned accuracy, as the paper characterises client 3)")
    return COUNTS
