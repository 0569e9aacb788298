"""Plausible bugs in Table 1 on LEAF (Xu & Neglia §4) and its controlled experiments.

Run from the repository root (in a private clone):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/part2_leaf.py

Each mutant breaks one step; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

LEAF = "src/flbook/experiments/part2_leaf.py"
DIAG = "src/flbook/experiments/part2_leaf_diagnostics.py"
LM = "src/flprivacy/attacks/learned_mapping.py"
XUL = "src/flbook/ledger/xu_neglia.py"

TESTS = pytest_command("tests/test_part2_leaf.py")

MUTANTS = [
    Mutant("epochs_read_as_steps", LEAF, 'return LocalSGD(lr=s["lr"], batch_size=s["batch_size"], epochs=steps)',
           'return LocalSGD(lr=s["lr"], batch_size=s["batch_size"], steps=steps)',
           "Algo. 2: E epochs of ⌈S_c/B⌉ steps read as E SGD steps"),
    Mutant("mapping_override_replaces", LEAF, 's[k] = {**s[k], **v} if k == "mapping" else v', 's[k] = v',
           "overrides of the mapping replace its other settings instead of merging"),
    Mutant("data_seed_ignored", LEAF, "seed=seed if data_seed is None else data_seed", "seed=seed",
           "the fixed data draw silently follows the training seed"),
    Mutant("ceiling_unregularised_start", LEAF,
           'optima = [regularised_optimum(model, data, OPTIMUM["l2"], OPTIMUM["lbfgs_iterations"]) for data in fed.clients]',
           'optima = [regularised_optimum(model, data, OPTIMUM["l2"], 1) for data in fed.clients]',
           "true local optimum: L-BFGS stopped after one iteration"),
    Mutant("ceiling_wrong_client", LEAF, '"acc_local_optimum": a.model.accuracy(a.optima[c], data.X, data.y)',
           '"acc_local_optimum": a.model.accuracy(a.optima[0], data.X, data.y)',
           "ceiling scored with client 0's optimum"),
    Mutant("decode_basis_not_added", LM, "return z0 + torch.bmm(basis, a[:, :, None])[:, :, 0] if basis is not None else a",
           "return torch.bmm(basis, a[:, :, None])[:, :, 0] if basis is not None else a",
           "span-restricted eq. (7) forgets its starting point"),
    Mutant("checkpoint_off_by_one", LM, "if i + 1 in marks:\n            snaps[i + 1]", "if i in marks:\n            snaps[i + 1]",
           "decode curve: iterate recorded one step early"),
    Mutant("follow_mapping_sign", LM, "theta = theta - alpha * G(theta)", "theta = theta + alpha * G(theta)",
           "following the learned map: G predicts θ - θ_c, so a step subtracts it"),
    Mutant("follow_mapping_checkpoint_late", LM, "if i + 1 in marks:\n            out[i + 1]",
           "if i in marks:\n            out[i + 1]", "following the learned map: iterate recorded one step early"),
    Mutant("span_threshold_absolute", LM, "bases.append(vh[sv >= rtol * sv[0]].T)", "bases.append(vh[sv >= rtol].T)",
           "update span: singular-value cut not relative to the largest"),
    Mutant("span_rows_not_columns", LM, "bases.append(vh[sv >= rtol * sv[0]].T)", "bases.append(vh[:, sv >= rtol * sv[0]])",
           "update span: left/right singular vectors confused"),
    Mutant("decode_units_unscaled", LM, "return {k: z * G.in_scale[:, None] + G.center for k, z in snaps.items()}",
           "return {k: z + G.center for k, z in snaps.items()}", "decoded models left in normalised units"),
    Mutant("true_update_sign", DIAG, "return torch.stack([theta - a.local[steps](a.model, theta, a.fed.clients[c], gen)",
           "return torch.stack([a.local[steps](a.model, theta, a.fed.clients[c], gen) - theta",
           "true update θ_c - θ instead of θ - θ_c"),
    Mutant("segment_reversed", DIAG, "th = last + lam * (star - last)", "th = star + lam * (last - star)",
           "θ_λ measured from the optimum instead of the last returned model"),
    Mutant("summary_gain_sign", DIAG, '"gain": dec - last', '"gain": last - dec', "gain of decoding with its sign flipped"),
    Mutant("summary_seeds_rows", DIAG, '"seeds": len({r["seed"] for r in rs})', '"seeds": len(rs)',
           "number of seeds counted as records"),
]
MUTANTS += [
    Mutant("variants_gain_sign", XUL,
           'gains = [t["acc"][(s, "decoded")][-1] - t["acc"][(s, "last returned")][-1] for s in t["steps"]]',
           'gains = [t["acc"][(s, "last returned")][-1] - t["acc"][(s, "decoded")][-1] for s in t["steps"]]',
           "controlled experiments: gain of decoding with its sign flipped"),
    Mutant("variants_upper_end", XUL, '"verdict": at_least(mean(gains), GAIN_RANGE[0],',
           '"verdict": at_least(mean(gains), GAIN_RANGE[1],', "§4's claim decided on the upper end (20) of its range"),
]
MUTANTS += [
    Mutant("ceiling_from_decoded", XUL, '100 * mean(r["acc_local_optimum"] for r in recs)',
           '100 * mean(r["acc_decoded"] for r in recs)', "ledger: the ceiling read from the decoded models"),
]
MUTANTS += [
    Mutant("screen_against_decoded_row", DIAG, 'zip(acc[str(k)], PAPER_TABLE1[k]["last returned"])',
           'zip(acc[str(k)], PAPER_TABLE1[k]["decoded"])',
           "draw screen: distance to the paper's decoded rows instead of its last returned rows"),
    Mutant("screen_one_row_only", DIAG, 'sq += [(a - p) ** 2', 'sq = [(a - p) ** 2',
           "draw screen: the distance keeps only the last row's cells"),
    Mutant("screen_farthest_first", DIAG, 'return sorted(out, key=lambda r: r["distance"])',
           'return sorted(out, key=lambda r: r["distance"], reverse=True)',
           "draw screen: the farthest draw ranked first"),
    Mutant("per_client_sd_of_means", DIAG, 'row[k], row["sd_" + k] = mean(xs), (stdev(xs) if len(xs) > 1 else 0.0)',
           'row[k], row["sd_" + k] = mean(xs), (stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0)',
           "per-client spread: the standard error reported as the spread over training seeds"),
    Mutant("summary_drops_draws", DIAG, 'names = [v for v in {**VARIANTS, **DRAWS} if', 'names = [v for v in VARIANTS if',
           "summary: the data-draw study's rows dropped"),
    Mutant("screened_rank_ignored", DIAG, "ds = screened[rank]", "ds = screened[0]",
           "data-draw study: every screened variant runs the closest draw"),
    Mutant("draw_seed_recorded_wrong", DIAG, '"data_seed": seed if ds is None else ds',
           '"data_seed": ds', "data-draw study: a fresh draw's data seed not recorded"),
]
MUTANTS += [
    Mutant("draws_client3_reads_gain_claim", XUL,
           'if table1_claims(table1_numbers([r for r in recs if r["variant"] == k]))[3]["verdict"].ok]',
           'if table1_claims(table1_numbers([r for r in recs if r["variant"] == k]))[1]["verdict"].ok]',
           "ledger, data-draw study: client 3's claim counted with the gain claim's verdict"),
]
