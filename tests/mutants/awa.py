"""Plausible bugs in the AWA library (Song, Wang & Zuazua 2025) and the BatchNorm models.

Run from the repository root:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/awa.py --json awa_mut.json

Each mutant breaks one equation's constant, sign, normalisation or step; ``why`` names it.
Not listed (equivalent): AGIC's step size η E B; a single step's direction does not depend on
its size and AGIC's loss is a cosine per layer, so any step size gives the same attack.
"""

from tools.mutation import Mutant, pytest_command

AWA = "src/flprivacy/attacks/awa.py"
AWS = "src/flprivacy/attacks/awa_search.py"
MOD = "src/flprivacy/models.py"
SONG = "src/flbook/papers/song.py"
DIAG = "src/flbook/experiments/awa_diagnostics.py"
INV = "src/flprivacy/attacks/inversion.py"

TESTS = pytest_command("tests/test_awa.py", "tests/test_ledger_song.py")  # the latter runs the live checks of §3, eq. 19-30 and eq. 39

MUTANTS = [
    # ---- §3 scenarios -------------------------------------------------------------------------------
    Mutant("replayable_or", AWA, "return self.epochs == 1 or self.batches == 1",
           "return self.epochs == 1 and self.batches == 1", "§3: Scenarios 2 and 3 are replayable too"),
    Mutant("case_numbering", AWA, "return 1 + (self.epochs > 1) + 2 * (self.batches > 1)",
           "return 1 + 2 * (self.epochs > 1) + (self.batches > 1)", "§3: case 2 is (E>1, 1), case 3 is (1, B>1)"),
    Mutant("client_no_reshuffle", AWA,
           "order = torch.randperm(X.shape[0], generator=gen) if batches > 1 else torch.arange(X.shape[0])",
           "order = torch.randperm(X.shape[0], generator=make_generator(seed)) if batches > 1 else torch.arange(X.shape[0])",
           "Alg. 1 line 4: a fresh shuffle every epoch (the same one each epoch makes case 4 replayable)"),
    Mutant("replay_batch_size_is_B", AWA, "    return n // batches\n", "    return batches\n",
           "eq. 3: B is the number of mini-batches; their size is N/B"),
    Mutant("replay_ignores_orders", AWA, "Xe, ye = (X, y) if orders is None else (X[orders[e]], y[orders[e]])",
           "Xe, ye = X, y", "eq. 18: each epoch uses its own order"),
    # ---- eq. 19-20 interpolation --------------------------------------------------------------------
    Mutant("interp_e_minus_one", AWA, "models = (theta_next - theta) / epochs * e + theta",
           "models = (theta_next - theta) / epochs * (e - 1) + theta", "eq. 19: θ̃_{t,e} = θ_t + (e/E)(θ_{t+1} - θ_t)"),
    Mutant("interp_not_divided_by_E", AWA, "models = (theta_next - theta) / epochs * e + theta",
           "models = (theta_next - theta) * e + theta", "eq. 19: divided by E"),
    Mutant("interp_update_sign", AWA, "return models, models[:-1] - models[1:]",
           "return models, models[1:] - models[:-1]", "eq. 20: update sign (library convention θ - θ')"),
    Mutant("case4_starts_at_theta_next", AWA, "return _Problem(models[epoch - 1], updates[epoch - 1]",
           "return _Problem(models[epoch], updates[epoch - 1]", "eq. 21: epoch e starts from θ̃_{t,e-1}"),
    Mutant("case4_full_update_target", AWA, "return _Problem(models[epoch - 1], updates[epoch - 1]",
           "return _Problem(models[epoch - 1], theta - theta_next", "eq. 20: the target is one epoch's Δθ̃, not the round's"),
    # ---- eq. 24 linear weights ----------------------------------------------------------------------
    Mutant("lin_weights_no_plus_one", AWA, "out[i] = qk if Lk == 1 else (qk - 1) / (Lk - 1) * (l - 1) + 1",
           "out[i] = qk if Lk == 1 else (qk - 1) / (Lk - 1) * (l - 1)", "eq. 24: + 1 (first layer weight 1)"),
    Mutant("lin_weights_over_L", AWA, "out[i] = qk if Lk == 1 else (qk - 1) / (Lk - 1) * (l - 1) + 1",
           "out[i] = qk if Lk == 1 else (qk - 1) / Lk * (l - 1) + 1", "eq. 24: slope (q - 1)/(L_k - 1)"),
    Mutant("lin_weights_single_is_one", AWA, "out[i] = qk if Lk == 1 else", "out[i] = 1.0 if Lk == 1 else",
           "eq. 24: a single layer of a kind gets q_k"),
    Mutant("lin_weights_l_from_zero", AWA, "for l, i in enumerate(idx, start=1):", "for l, i in enumerate(idx, start=0):",
           "eq. 24: l counts from 1"),
    # ---- eq. 25-30 enhanced weights -----------------------------------------------------------------
    Mutant("emean_not_relative", AWA, "e_mean = (m_hat - m).abs() / m.abs().clamp_min(tiny)",
           "e_mean = (m_hat - m).abs()", "eq. 25: relative error"),
    Mutant("evar_uses_std", AWA, "var = torch.stack([u[l.start:l.stop].var(unbiased=False) for l in layers])",
           "var = torch.stack([u[l.start:l.stop].std(unbiased=False) for l in layers])", "eq. 26: variance σ², not σ"),
    Mutant("n_mean_floor", AWA, "n_mean, n_var = math.ceil(p_mean * L), math.ceil(p_var * L)",
           "n_mean, n_var = math.floor(p_mean * L), math.floor(p_var * L)", "eq. 28-29: ⌈p · L⌉"),
    Mutant("top_ascending", AWA, "top_mean[torch.argsort(e_mean, descending=True, stable=True)[:n_mean]] = True",
           "top_mean[torch.argsort(e_mean, descending=False, stable=True)[:n_mean]] = True",
           "eq. 28: the layers with the LARGEST relative mean error"),
    Mutant("union_not_intersection", AWA, "return top_mean & top_var", "return top_mean | top_var",
           "eq. 30: 𝒫 = 𝒫_mean ∩ 𝒫_var"),
    Mutant("enhanced_multiplies", AWA, "w[mask] = float(Q.q_en)", "w[mask] = w[mask] * float(Q.q_en)",
           "eq. 27: q^(l) is SET to q_en"),
    # ---- eq. 23 and eq. 33 --------------------------------------------------------------------------
    Mutant("weighted_not_squared", AWA, "    return (w * diff * diff).sum()", "    return (w * diff.abs()).sum()",
           "eq. 23: squared differences"),
    Mutant("weights_sqrt", AWA, "    return (w * diff * diff).sum()", "    return (w.sqrt() * diff * diff).sum()",
           "eq. 23: q^(l) multiplies the squared norm"),
    Mutant("per_parameter_shifted", AWA, "        out[l.start:l.stop] = w", "        out[l.start + 1:l.stop] = w",
           "eq. 23: each layer's weight covers exactly its own parameters"),
    Mutant("fused_no_enhancement", AWA, "        if bool(mask.any()):", "        if False:",
           "eq. 27: the attack's loss sets q_en on the enhanced layers"),
    Mutant("fused_enhances_wrong_layer", AWA,
           "                w[self.layers[i].start:self.layers[i].stop] = float(self.Q.q_en)",
           "                w[self.layers[i - 1].start:self.layers[i - 1].stop] = float(self.Q.q_en)",
           "eq. 27: q_en on the layers of 𝒫"),
    Mutant("fused_stats_of_pred_for_target", AWA,
           "        self.target_stats = _layer_stats(target.detach().double(), layers)",
           "        self.target_stats = _layer_stats(target.detach().double() * 2, layers)",
           "eq. 25-26: errors relative to the target's own statistics"),
    Mutant("fused_linear_weights_swapped", AWA,
           "        self.base = _per_parameter(linear_weights(layers, Q.q_cv, Q.q_bn, Q.q_fc)",
           "        self.base = _per_parameter(linear_weights(layers, Q.q_bn, Q.q_cv, Q.q_fc)",
           "eq. 24: q_cv for convolutions, q_bn for BatchNorm"),
    Mutant("objective_weighted", AWA, "return float(update_distance(pred, target, \"l2\"))",
           "return float(update_distance(pred, target, \"cosine\"))", "eq. 33: squared Euclidean norm"),
    # ---- baselines ----------------------------------------------------------------------------------
    Mutant("agic_unweighted", AWA, "return torch.arange(1, len(layers) + 1, dtype=torch.float64)",
           "return torch.ones(len(layers), dtype=torch.float64)", "AGIC: linearly increasing layer weights"),
    Mutant("agic_cos_sign", AWA, "return (w * (1 - cos)).sum() / w.sum()", "return (w * (1 + cos)).sum() / w.sum()",
           "AGIC: 1 - cos"),
    Mutant("dlg_runs_case4", AWA, "approximate=False, where=where)\n    rec, done = _run(",
           "approximate=None, where=where)\n    rec, done = _run(", "§5.2: DLG has no approximation for case 4"),
    # ---- BO -----------------------------------------------------------------------------------------
    Mutant("table2_p_range", SONG, '"p_mean": (0.0, 0.5), "p_var": (0.0, 0.5)}', '"p_mean": (0.0, 1.0), "p_var": (0.0, 1.0)}',
           "Table II: p in [0, 0.5]"),
    Mutant("final_attack_trial_length", AWS,
           "rec, _ = _awa_run(model, pb, image_shape, best, attack_lr=attack_lr, iterations=iterations, seed=seed,",
           "rec, _ = _awa_run(model, pb, image_shape, best, attack_lr=attack_lr, iterations=trial_iterations, seed=seed,",
           "Alg. 2 line 16: the final attack runs the full number of iterations"),
    # ---- the enqueued Q = 1 trial (DLG's loss) and the resumable study ------------------------------
    Mutant("no_unweighted_trial", AWS, "                study.enqueue_trial(dict(UNWEIGHTED))\n",
           "                pass\n", "trial 0 must be Q = 1, DLG's eq. 10"),
    Mutant("unweighted_enhances", AWA, '"q_en": 1.0, "p_mean": 0.0, "p_var": 0.0}',
           '"q_en": 1.0, "p_mean": 0.1, "p_var": 0.1}', "Q = 1 has no enhanced layer (⌈0·L⌉ = 0)"),
    Mutant("unweighted_value_wrong_trial", AWS, "unweighted = [t.value for t in trials if t.params == UNWEIGHTED]",
           "unweighted = [t.value for t in trials if t.params != UNWEIGHTED]", "f(1) is the Q = 1 trial's value"),
    Mutant("enqueue_on_resume", AWS, "if enqueue_unweighted and not study.trials:", "if enqueue_unweighted:",
           "a resumed study does not evaluate Q = 1 again"),
    Mutant("resume_reruns_all", AWS, "remaining = n_trials - len(study.get_trials(deepcopy=False, states=(complete,)))",
           "remaining = n_trials", "a resumed study runs only the missing trials"),
    Mutant("dlg_objective_halved", AWA,
           'method="DLG", lr=lr, epochs=epochs, batches=batches, attack_lr=attack_lr,\n                        iterations=iterations, iterations_run=done, seed=seed,\n                        objective=_objective(model, pb.start, pb.target, rec.images,',
           'method="DLG", lr=lr, epochs=epochs, batches=batches, attack_lr=attack_lr,\n                        iterations=iterations, iterations_run=done, seed=seed,\n                        objective=_objective(model, pb.start, pb.target, rec.images * 0.5,',
           "DLG's eq. 33 is scored on its own reconstruction"),
    # ---- the diagnostics (experiments.awa_diagnostics) ----------------------------------------------
    Mutant("global_ssim_std_not_var", DIAG, "va, vb = a.var(-1, unbiased=False), b.var(-1, unbiased=False)",
           "va, vb = a.std(-1, unbiased=False), b.std(-1, unbiased=False)", "Song §5.1 SSIM: variances σ²"),
    Mutant("global_ssim_c2", DIAG, "c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2",
           "c1, c2 = (0.01 * data_range) ** 2, (0.3 * data_range) ** 2", "SSIM: c2 = (k2 H)², k2 = 0.03"),
    Mutant("eval_bn_batch_stats", DIAG, "training=False, eps=self.eps)", "training=True, eps=self.eps)",
           "the BatchNorm ablation uses fixed statistics"),
    Mutant("diag_wrong_dummy_seed", DIAG, "    gen = generator(child_seed(seed, 3))", "    gen = generator(child_seed(seed, 4))",
           "the baseline rows start from the library attack's dummy"),
    Mutant("diag_no_clamp", DIAG, "            if v.clamp:", "            if False:",
           "the baseline clamps to [0, 1] as the library does"),
    Mutant("diag_tv_never_added", DIAG, "        if v.tv > 0:\n            loss = loss + v.tv * total_variation(x)",
           "        if v.tv > 0:\n            loss = loss + 0 * total_variation(x)", "the TV rows add weight × TV(x)"),
    Mutant("step_schedule_gamma", INV, "                                                gamma=0.1)",
           "                                                gamma=0.5)", "inversefed's lr_decay divides the step by 10"),
    Mutant("step_schedule_milestones", INV, "milestones=[int(iterations * f) for f in (3 / 8, 5 / 8, 7 / 8)],",
           "milestones=[int(iterations * f) for f in (1 / 2, 5 / 8, 7 / 8)],", "lr_decay at 3/8, 5/8 and 7/8 of the budget"),
    Mutant("diag_schedule_never_stepped", DIAG, "            if sched is not None:\n                sched.step()",
           "            if sched is None:\n                sched.step()", "the schedule steps once per evaluation"),
    Mutant("diag_ig_start_in_pixels", DIAG,
           "        x = torch.tensor(CIFAR_MEAN).view(3, 1, 1) + torch.tensor(CIFAR_STD).view(3, 1, 1) * x",
           "        x = x", "inversefed draws its N(0, 1) start in the normalised space"),
    Mutant("diag_cosine_is_l2", DIAG, 'else lambda pred, target: update_distance(pred, target, "cosine"))',
           'else lambda pred, target: update_distance(pred, target, "l2"))', "the cosine rows minimise 1 - cos"),
    # ---- the η² option (awa_attack, tune_weights) and the BO at ResNet-18 ----------------------------
    Mutant("grad_scale_eta_not_eta2", AWA, "weighted, factor = loss_fn, 1.0 / pb.lr ** 2",
           "weighted, factor = loss_fn, 1.0 / pb.lr", "gradient_scale divides eq. 23 by η²"),
    Mutant("grad_scale_not_in_trials", AWS,
           "seed=seed,\n                             gradient_scale=gradient_scale, report=report",
           "seed=seed,\n                             gradient_scale=False, report=report",
           "tune_weights: every trial uses the scaled loss"),
    Mutant("grad_scale_not_in_final", AWS,
           "    rec, _ = _awa_run(model, pb, image_shape, best, attack_lr=attack_lr, iterations=iterations, seed=seed,\n"
           "                      gradient_scale=gradient_scale, callback=callback)",
           "    rec, _ = _awa_run(model, pb, image_shape, best, attack_lr=attack_lr, iterations=iterations, seed=seed,\n"
           "                      gradient_scale=False, callback=callback)",
           "tune_weights: the final attack uses the scaled loss"),
    # ---- BatchNorm ----------------------------------------------------------------------------------
    Mutant("bn_running_stats", MOD, "return nn.BatchNorm2d(channels, track_running_stats=False, dtype=dtype)",
           "return nn.BatchNorm2d(channels, dtype=dtype)", "FLModel: BatchNorm with batch statistics only"),
]
