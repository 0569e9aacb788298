"""Plausible bugs in Model-w-O as the authors' code finds it (flprivacy.optimum.tuned_local_models:
fedkit-learn's run_local_models_optimization.py, mini-batch Adam with weight decay, and under DP its
DPTrainer: Opacus's DP-SGD gradient before Adam) and in Table 1's and Table 3's controlled experiments
(part3_table1_controls, part3_table3_controls --dp-oracle).

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/oracle.py
"""

from tools.mutation import Mutant, pytest_command

OPT = "src/flprivacy/optimum.py"
CTL = "src/flbook/experiments/part3_table1_controls.py"
BAT = "src/flprivacy/batched.py"
DEF = "src/flprivacy/defences.py"
CT3 = "src/flbook/experiments/part3_table3_controls.py"

TESTS = pytest_command("tests/test_tuned_local_models.py", "tests/test_part3_table1_controls.py",
                       "tests/test_batched.py", "tests/test_part3_table3_oracle.py")

MUTANTS = [
    Mutant("no_weight_decay", OPT, "            g.add_(th * wd)\n", "", "torch.optim.Adam adds wd·θ to the gradient"),
    Mutant("decoupled_weight_decay", OPT, "            g.add_(th * wd)\n", "            th.mul_(1 - lr * wd)\n",
           "AdamW's decoupled decay is not torch.optim.Adam's weight_decay"),
    Mutant("no_bias_correction_m", OPT, "mk * (lr / (1 - b1 ** (k + 1)))", "mk * lr", "Adam's first-moment bias correction"),
    Mutant("bias_correction_step_k", OPT, "(vk / (1 - b2 ** (k + 1)))", "(vk / (1 - b2 ** max(k, 1)))",
           "step t = k + 1 in the bias correction"),
    Mutant("eps_inside_sqrt", OPT, ".sqrt_().add_(eps)", ".add_(eps).sqrt_()", "Adam adds eps after the square root"),
    Mutant("beta2_first_moment", OPT, "mk.mul_(b1).addcmul_(1 - b1, g)", "mk.mul_(b2).addcmul_(1 - b2, g)",
           "β1 drives the first moment"),
    Mutant("no_write_back", OPT, "                theta[sel], m[sel], v[sel] = th, mk, vk\n", "",
           "advanced indexing copies: a shorter client's steps must be written back"),
    Mutant("best_is_last_trial", OPT, "                    if val < best[c][0]:", "                    if True:",
           "the oracle keeps the trial with the lowest training loss"),
    Mutant("warm_start", OPT, "    theta0 = model.init_params(seed).to(dtype)",
           "    theta0 = torch.zeros(model.dim, dtype=dtype)", "every trial starts from a fresh initialisation"),
    Mutant("sgd_step_sign", BAT, "        theta[sel] -= local.lr * g", "        theta[sel] += local.lr * g",
           "SGD steps against the gradient"),
    Mutant("controls_one_study_is_per_client", CTL, "    variants = [(f\"active-{r}, one study\", r, False)",
           "    variants = [(f\"active-{r}, one study\", r, True)", "the one-study rows tune Adam for all clients"),
    Mutant("controls_model_wo_from_short_attack", CTL, "    starts = out[\"attack\"][f\"active-{A}, per client\"][\"thetas\"]",
           "    starts = out[\"attack\"][f\"active-{min(s.active_rounds)}, per client\"][\"thetas\"]",
           "Model-w-O starts from Alg. 4's estimate after the most rounds, as the pipeline"),
    # the DP oracle (fedkit-learn's DPTrainer: make_private_with_epsilon on torch.optim.Adam)
    Mutant("dp_oracle_never_private", OPT, "            if dp is None:\n                minibatch_steps(",
           "            if True:\n                minibatch_steps(", "with a clipping norm the authors' oracle trains with DP"),
    Mutant("dp_oracle_sigma_federation_rounds", OPT, "target_delta=dp.target_delta, total_rounds=epochs, epochs=1,",
           "target_delta=dp.target_delta, total_rounds=dp.total_rounds, epochs=dp.epochs,",
           "the DPTrainer's accountant targets ε over the oracle's own epochs (num_rounds)"),
    Mutant("dp_oracle_rate_b_over_s", OPT, "    q = [1.0 / k for k in K]\n",
           "    q = [min(1.0, dp.batch_size / c.n) for c in clients]\n",
           "Opacus's Poisson rate is 1/len(data_loader) = 1/⌈S_c/B⌉"),
    Mutant("dp_oracle_divides_by_drawn_rows", OPT, "g = (g + noise.unsqueeze(1)) / expected[live].view(L, 1, 1)",
           "g = (g + noise.unsqueeze(1)) / mb.view(L, M, -1).sum(-1, keepdim=True).clamp(min=1)",
           "Opacus divides by the expected batch size ⌊S_c q⌋, not the drawn one"),
    Mutant("dp_oracle_noise_without_clip", OPT, "* (sigmas[c] * Cn)", "* sigmas[c]",
           "the noise's standard deviation is σC"),
    Mutant("dp_oracle_no_clipping", OPT, "Xb, yb, Cn, mb).view(L, M, d)", "Xb, yb, float('inf'), mb).view(L, M, d)",
           "per-sample gradients are clipped to C"),
    Mutant("dp_oracle_noise_ignored_sigma", OPT, "sigmas = [float(noise_multiplier) if noise_multiplier is not None",
           "sigmas = [0.0 if noise_multiplier is not None", "an explicit noise multiplier is used as given"),
    Mutant("clipped_sum_mask_ignored", DEF, "        deltas = [d * mask.to(d.dtype).unsqueeze(-1) for d in deltas]\n",
           "", "padded rows of a shorter Poisson batch contribute nothing"),
    Mutant("controls_dp_oracle_without_dp", CT3, '("authors, DP", {"dp": dp})', '("authors, DP", {})',
           "the DP row trains the authors' oracle with the federation's DP"),
    Mutant("controls_dp_oracle_scripts_clip", CT3, 'TABLE3_CLIP: dict[str, float] = {"Medical": PAPER_PRIVACY["clip"]',
           'TABLE3_CLIP: dict[str, float] = {"Medical": SCRIPTS_PRIVACY["clip"]',
           "the federation's clipping norm is the one Table 3 selected"),
]
