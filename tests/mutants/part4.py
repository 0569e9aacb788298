"""Plausible bugs in the Part IV library (Wilson et al. 2025 and the inversion toolbox).

Run from the repository root:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/part4.py --json /tmp/part4_mut.json

Each mutant breaks one equation's constant, sign, normalisation or step; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

INV = "src/flprivacy/attacks/inversion.py"
MET = "src/flprivacy/metrics.py"
FAC = "src/flbook/experiments/part4_factors.py"
WIL = "src/flbook/ledger/wilson.py"

TESTS = pytest_command("--nbval-lax", "tests/test_inversion.py", "tests/test_metrics.py",
                       "tests/test_part4_factors.py", "book/part4/curious_client_factors.ipynb",
                       "book/record/wilson_factors.ipynb")

MUTANTS = [
    # ---- Wilson eq. 2: the averaged update read from two global models -----------------------------
    Mutant("server_lr_multiplies", INV, "target = (theta_t - theta_next) / eta_g",
           "target = (theta_t - theta_next) * eta_g", "eq. 2: ∇avg = (W^t - W^{t+1}) / η_g, multiplied instead"),
    Mutant("target_sign_flipped", INV, "target = (theta_t - theta_next) / eta_g",
           "target = (theta_next - theta_t) / eta_g", "eq. 2: sign of the global-model difference"),
    # ---- App. F upper bound vs the super-client (eq. 3) ---------------------------------------------
    Mutant("upper_bound_replays_super_client_attack", INV,
           "client_sizes=client_sizes, scale_factor=scale_factor, seed=seed, device=device, **inversion",
           "client_sizes=None, scale_factor=scale_factor, seed=seed, device=device, **inversion",
           "App. F: curious_client_attack drops the true clients and replays the super-client"),
    Mutant("upper_bound_replays_super_client_factors", FAC,
           "labels, client_sizes = y, list(case.sizes)",
           "labels, client_sizes = y, None",
           "App. F: the factor analysis' upper bound replays the super-client instead of the true clients"),
    Mutant("fedavg_unweighted_replay", INV, "out = out + (Xk.shape[0] / N) *",
           "out = out + (1 / len(sizes)) *", "eq. 2: FedAvg weights N_k / N replaced by 1 / K"),
    # ---- bicubic low-resolution dummy (Wilson §4, Yue et al. 2023) -----------------------------------
    Mutant("dummy_bilinear", INV, 'mode="bicubic", align_corners=False', 'mode="bilinear", align_corners=False',
           "§4: bicubic upsampling replaced by bilinear"),
    Mutant("dummy_align_corners", INV, 'mode="bicubic", align_corners=False', 'mode="bicubic", align_corners=True',
           "§4: bicubic sampling grid (pixel centres) shifted to corner alignment"),
    # ---- DLG L2 matching (eq. 3) and cosine + TV (Geiping et al.) -------------------------------------
    Mutant("l2_mean_not_sum", INV, "return ((pred - target) ** 2).sum()", "return ((pred - target) ** 2).mean()",
           "eq. 3: squared L2 norm normalised by the dimension"),
    Mutant("l2_not_squared", INV, "return ((pred - target) ** 2).sum()", "return (pred - target).norm()",
           "eq. 3: L2 norm instead of its square"),
    Mutant("cosine_sign", INV, "return 1 - F.cosine_similarity(pred, target, dim=0, eps=1e-12)",
           "return 1 + F.cosine_similarity(pred, target, dim=0, eps=1e-12)", "Geiping eq. 4: 1 - cos"),
    Mutant("tv_drops_vertical", INV, "    return dx + dy\n", "    return dx + dx\n",
           "Geiping eq. 4: TV without the vertical differences"),
    Mutant("tv_sum_not_mean", INV, "dx = (images[..., :, 1:] - images[..., :, :-1]).abs().mean()",
           "dx = (images[..., :, 1:] - images[..., :, :-1]).abs().sum()", "TV: horizontal term not normalised"),
    # ---- labels: iDLG and count restoration ---------------------------------------------------------
    Mutant("idlg_argmax", INV, "return int(W.sum(1).argmin())", "return int(W.sum(1).argmax())",
           "iDLG: the true class is the row with the negative sum"),
    Mutant("counts_sign", INV, "est = n_images * (p_sum - Ub.double() / lr) / steps",
           "est = n_images * (p_sum + Ub.double() / lr) / steps", "count estimator n = N(Σp̄ - U_b/η)/τ: sign"),
    Mutant("counts_lr_dropped", INV, "est = n_images * (p_sum - Ub.double() / lr) / steps",
           "est = n_images * (p_sum - Ub.double()) / steps", "count estimator: U_b not divided by η"),
    Mutant("counts_no_interpolation", INV, "th = theta - (u / tau) * update", "th = theta",
           "count estimator: p̄ at θ only, not along the update"),
    # ---- model initialisation ---------------------------------------------------------------------------
    Mutant("dlg_init_not_centred", INV, "dtype=torch.float64) * 2 - 1) * scale)",
           "dtype=torch.float64)) * scale)", "DLG init: U[0, s] instead of U[-s, s]"),
    # ---- Lemma 1 ----------------------------------------------------------------------------------------
    Mutant("lemma1_tau_squared", INV, "return steps * (steps - 1) / 2 * lr**2", "return steps * steps / 2 * lr**2",
           "Lemma 1: τ(τ-1)/2 replaced by τ²/2"),
    Mutant("lemma1_K_not_K_minus_1", INV, "* (n_clients - 1) / n_images * cov", "* n_clients / n_images * cov",
           "Lemma 1: (K-1)/N replaced by K/N"),
    Mutant("cov_plus", INV, "return (E_Jg - H_g.double()).to(theta.dtype)", "return (E_Jg + H_g.double()).to(theta.dtype)",
           "eq. 17c: Cov = E[Jg] - E[J]E[g], sign"),
    Mutant("divergence_unweighted", INV, "w_fed += (X.shape[0] / N) * local_sgd", "w_fed += (1 / len(clients)) * local_sgd",
           "δ(τ): FedAvg model weighted by N_k / N"),
    # ---- metrics -------------------------------------------------------------------------------------------
    Mutant("psnr_range_squared_missing", MET, "vals = [peak_signal_noise_ratio(bi, ai, data_range=data_range)",
           "vals = [peak_signal_noise_ratio(bi, ai, data_range=2 * data_range)", "PSNR = 10 log10(R²/MSE): wrong R"),
    Mutant("ssim_window_3", MET, "side = min(7, h, w)", "side = min(3, h, w)",
           "SSIM: Wang et al.'s / skimage's 7x7 window shrunk"),
    Mutant("ssim_data_range", MET, "c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2",
           "c1, c2 = (0.02 * data_range) ** 2, (0.06 * data_range) ** 2", "SSIM: constants C1, C2 from L"),
    Mutant("mse_sum", MET, "return ((x.detach().double() - y.detach().double()) ** 2).flatten(1).mean(1)",
           "return ((x.detach().double() - y.detach().double()) ** 2).flatten(1).sum(1)", "MSE not normalised"),
    Mutant("matching_maximises", MET, "rows, cols = linear_sum_assignment(cost.cpu().numpy())",
           "rows, cols = linear_sum_assignment(cost.cpu().numpy(), maximize=True)", "Hungarian: min-cost assignment"),
    Mutant("quality_no_clamp", MET, "rec = reconstructions.detach().clamp(0, data_range)",
           "rec = reconstructions.detach()", "scores computed on pixels outside the data range"),
    # ---- the ledger's Wilson rows: live propositions and the rules on the factor file -----------------------
    Mutant("ledger_eq1_step_not_per_client", WIL, "w = w - eta / Xk.shape[0] * gsum", "w = w - eta * gsum",
           "eq. 1: the local step is η/N_k times the sum of per-image gradients"),
    Mutant("ledger_exact_expectation_count", WIL, "expected /= 3 ** n", "expected /= 3 ** (n - 1)",
           "Lemma 1 check: E[δ] is the mean over all 3^N equally likely draws"),
    Mutant("ledger_super_gap_replays_super_twice", WIL,
           "fed = replay_update(model, theta, X, y, lr=eta, steps=steps, client_sizes=sizes)",
           "fed = replay_update(model, theta, X, y, lr=eta, steps=steps)", "eq. 3 check: FedAvg replay (eq. 2) dropped"),
    Mutant("ledger_fig5_direction", WIL, "verdict=trend(list(fig5), list(fig5.values()), expected=-1,",
           "verdict=trend(list(fig5), list(fig5.values()), expected=1,", "Fig. 5: quality must fall with K"),
    Mutant("ledger_appD_signed_difference", WIL, "at_most(max(abs(d) for d in diffs.values()), fig5_effect,",
           "at_most(max(diffs.values()), fig5_effect,", "App. D: a difference of either sign counts"),
    Mutant("ledger_fig7_reversed", WIL, 'verdict=sign(ddrm["ssim"] - raw["ssim"], expected=1,',
           'verdict=sign(raw["ssim"] - ddrm["ssim"], expected=1,', "Fig. 7: DDRM must improve on raw"),
    Mutant("ledger_default_tau", WIL, "_DEFAULT = dict(tau=LOCAL_ITERATIONS,", "_DEFAULT = dict(tau=1,",
           "§4: the main results use 3 local iterations"),
]
