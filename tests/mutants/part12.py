"""Plausible bugs in the Parts I-II library (FedAvg, Alg. 3, Theorem 1, Prop. 3, Xu & Neglia).

Run from the repository root:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/part12.py --json /tmp/part12_mut.json

Each mutant breaks one equation's constant, sign, normalisation or step; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

FED = "src/flprivacy/federation.py"
CLI = "src/flprivacy/clients.py"
LOG = "src/flprivacy/log.py"
REC = "src/flprivacy/attacks/reconstruction.py"
BND = "src/flprivacy/bounds.py"
SYN = "src/flprivacy/data/synthetic.py"
XUL = "src/flbook/ledger/xu_neglia.py"

TESTS = pytest_command("tests/test_federation.py", "tests/test_reconstruction.py", "tests/test_part2_common.py",
                       "tests/test_metrics.py", "tests/test_data.py", "tests/test_part12_checks.py")

MUTANTS = [
    # ---- Alg. 1 (server): θ^{t+1} = θ^t + η_g Σ p̃_c (θ_c - θ^t), p̃_c = p_c / Σ_{sampled} p ------------------
    Mutant("aggregation_not_renormalised", LOG, 'theta = theta + self.server_lr * rnd["update"] / rnd["total"]',
           'theta = theta + self.server_lr * rnd["update"]', "Alg. 1: weights p_c not renormalised over the sampled clients"),
    Mutant("server_lr_dropped", LOG, 'theta = theta + self.server_lr * rnd["update"] / rnd["total"]',
           'theta = theta + rnd["update"] / rnd["total"]', "Alg. 1: global learning rate η_g ignored"),
    Mutant("size_weights_uniform", FED, "w = torch.tensor([c.n for c in clients], dtype=torch.float64)",
           "w = torch.ones(len(clients), dtype=torch.float64)", "eq. 1: p_c ∝ S_c replaced by 1/|C|"),
    # ---- Alg. 2 (client): K = E⌈S_c/B⌉ steps of mini-batch SGD, reshuffled every epoch ------------------------
    Mutant("no_reshuffle", CLI,
           "order = torch.randperm(n_samples, generator=generator) if shuffle else torch.arange(n_samples)",
           "order = torch.arange(n_samples)", "Alg. 2: mini-batches never reshuffled"),
    Mutant("sgd_lr_halved", CLI, "theta = theta.detach() - lr * g", "theta = theta.detach() - 0.5 * lr * g",
           "Alg. 2: step θ ← θ - η g with half the learning rate"),
    Mutant("local_steps_floor", BND, "return E * -(-S_c // min(B, S_c))", "return E * (S_c // min(B, S_c))",
           "K = E⌈S_c/B⌉: floor instead of ceiling"),
    # ---- Alg. 3 / Prop. 2: Θ_in = Θ_out [W^{-T}; θ*ᵀ], θ̂ the last row ----------------------------------------
    Mutant("alg3_wrong_row", REC, "theta=sol[-1].clone()", "theta=sol[0].clone()",
           "Alg. 3: θ̂_c^* is the last row of the solution, not the first"),
    Mutant("alg3_ones_column_scaled", REC, "theta_out = torch.cat([sent - returned, torch.ones(sent.shape[0], 1, dtype=dtype)], dim=1)",
           "theta_out = torch.cat([sent - returned, 2 * torch.ones(sent.shape[0], 1, dtype=dtype)], dim=1)",
           "Alg. 3 line 2: Θ_out's column of ones doubled (θ̂ off by a factor 2)"),
    Mutant("error_estimate_normal_kappa", REC, "(cond * cond if method == \"normal\" else cond) * eps64",
           "(cond if method == \"normal\" else cond) * eps64", "normal equations lose κ², not κ"),
    Mutant("least_squares_sgd_factor", CLI, "(2.0 / Xb.shape[0])", "(1.0 / Xb.shape[0])",
           "∇L_c = (2/S_c) Xᵀ(Xθ - y): factor 2 dropped"),
    # ---- Prop. 1 and Theorem 1 --------------------------------------------------------------------------------
    Mutant("prop1_twice_too_strong", BND, "return 1.0 - 4.0 * mse / theta_s**2", "return 1.0 - 2.0 * mse / theta_s**2",
           "Prop. 1: accuracy ≥ 1 - 4E_c/θ[s]², bound twice too strong"),
    Mutant("thm1_no_d", BND, "return d * eta * sigma / lambda_min_W * math.sqrt(",
           "return eta * sigma / lambda_min_W * math.sqrt(", "eq. 18: factor d dropped"),
    Mutant("thm1_log_term", BND, "math.log(2 * d / delta)", "math.log(d / delta)", "eq. 18: ln(2d/δ) → ln(d/δ)"),
    Mutant("thm1_no_sqrt", BND, "return d * eta * sigma / lambda_min_W * math.sqrt(K * (d + 1 + math.log(2 * d / delta)) / (n_c * lam))",
           "return d * eta * sigma / lambda_min_W * (K * (d + 1 + math.log(2 * d / delta)) / (n_c * lam))",
           "eq. 18: square root dropped"),
    Mutant("lambda_min_W_factor", BND, "(1.0 - 2.0 * eta * lambda_min_H / S_c) ** K", "(1.0 - eta * lambda_min_H / S_c) ** K",
           "λ_min(W) = 1 - (1 - 2ηλ_min(H)/S_c)^K: factor 2 dropped"),
    # ---- Prop. 3: Nesterov's hard instance ---------------------------------------------------------------------
    Mutant("hard_optimum_denominator", SYN, "star = 1.0 - torch.arange(1, d + 1, dtype=dtype) / (d + 1)",
           "star = 1.0 - torch.arange(1, d + 1, dtype=dtype) / d", "θ_c^* = (1 - i/(d+1))_i"),
    Mutant("hard_alternative_column", SYN, "X_alt[:, -1] = 0.0", "X_alt[:, 0] = 0.0",
           "Prop. 3: the alternative zeroes the last column, not the first"),
    Mutant("hard_difference_sign", SYN, "X[idx + 1, idx] = -1.0", "X[idx + 1, idx] = 1.0",
           "difference matrix D[i+1,i] = -1"),
    # ---- LEAF generator (Caldas et al. App. A) -----------------------------------------------------------------
    Mutant("leaf_label_noise_scale", SYN, "rng.normal(0, 0.1, (n, n_classes))", "rng.normal(0, 1.0, (n, n_classes))",
           "LEAF: label noise ξ ~ N(0, 0.1²)"),
    # ---- the ledger's Table 1 rules (Xu & Neglia §4) -----------------------------------------------------------
    Mutant("table1_gain_sign", XUL, "gain = [b - a for a, b in zip(last, dec)]", "gain = [a - b for a, b in zip(last, dec)]",
           "§4: the gain of decoding is decoded minus last returned"),
    Mutant("table1_trend_sign", XUL, 'verdict=trend(steps, last, expected=1, what="mean accuracy of the last returned model",',
           'verdict=trend(steps, last, expected=-1, what="mean accuracy of the last returned model",',
           "§4: the last returned model fits better with more local steps (rising)"),
    Mutant("table1_mean_column", XUL, "acc[(s, m)] = per + [mean(per)]", "acc[(s, m)] = per + [max(per)]",
           "Table 1's last column is the mean over the five clients"),
    Mutant("table1_percent", XUL, "per = [100 * mean(", "per = [mean(", "Table 1 is in percent"),
]
