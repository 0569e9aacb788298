"""Plausible bugs in the Part III library (Diana et al. 2025: eqs. 2-4, Prop. 1, Alg. 4, Alg. 5).

Run from the repository root:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/part3.py --json /tmp/part3_mut.json

Each mutant breaks one equation's constant, sign, normalisation or step; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

MBA = "src/flprivacy/attacks/model_based_aia.py"
GRA = "src/flprivacy/attacks/gradient_aia.py"
OPT = "src/flprivacy/optimum.py"
ACT = "src/flprivacy/attacks/active.py"
BND = "src/flprivacy/bounds.py"
CEN = "src/flprivacy/data/census.py"
THR = "src/flprivacy/threats.py"

TESTS = pytest_command("tests/test_inference.py", "tests/test_part3_active.py", "tests/test_part3_data.py",
                       "tests/test_part3_experiments.py", "tests/test_part3_checks.py")

MUTANTS = [
    # ---- eq. 3: model-based AIA, argmin of the loss over candidates ----------------------------------------
    Mutant("aia_argmax", MBA, "return candidate_losses(model, theta, X, y, attribute).argmin(-2)",
           "return candidate_losses(model, theta, X, y, attribute).argmax(-2)", "eq. 3: argmin ℓ replaced by argmax"),
    # ---- eq. 4: two-step decoder -------------------------------------------------------------------------------
    Mutant("decoder_no_division", MBA, "s_tilde = (y.to(torch.float64) - P @ w - b) / w[column]",
           "s_tilde = (y.to(torch.float64) - P @ w - b)", "eq. 4: s̃ not divided by θ[s]"),
    Mutant("decoder_bias_sign", MBA, "s_tilde = (y.to(torch.float64) - P @ w - b) / w[column]",
           "s_tilde = (y.to(torch.float64) - P @ w + b) / w[column]", "eq. 4: intercept sign"),
    # ---- Prop. 1 --------------------------------------------------------------------------------------------------
    Mutant("prop1_twice_too_strong", BND, "return 1.0 - 4.0 * mse / theta_s**2", "return 1.0 - 2.0 * mse / theta_s**2",
           "Prop. 1: 1 - 4E_c/θ[s]² replaced by a bound twice too strong"),
    # ---- eq. 2 and the Gumbel-softmax relaxation ----------------------------------------------------------------
    Mutant("gumbel_temperature_10x", GRA, "    temperature: float = 1.0,\n", "    temperature: float = 10.0,\n",
           "App. B.5: Gumbel-softmax temperature 1 (default 10× too high)"),
    Mutant("gumbel_noise_sign", GRA, "torch.softmax((logits[idx] - torch.log(-torch.log(u))) / temperature, -1)",
           "torch.softmax((logits[idx] + torch.log(-torch.log(u))) / temperature, -1)",
           "Gumbel noise g = -log(-log u), sign flipped"),
    Mutant("gumbel_backward_no_temperature", GRA, "g = soft * (dZ - (soft * dZ).sum(-1, keepdim=True)) / temperature",
           "g = soft * (dZ - (soft * dZ).sum(-1, keepdim=True))", "softmax backward: 1/τ factor dropped"),
    Mutant("gumbel_straight_through_scale", GRA, "dZ = (dW / n).view(-1, C, n).permute(0, 2, 1)",
           "dZ = dW.view(-1, C, n).permute(0, 2, 1)", "∂/∂Z = ∂/∂W / n: normalisation dropped"),
    Mutant("grad_select_min_cosine", GRA, "k = int(torch.nan_to_num(self.cosine, nan=-2.0).argmax())",
           "k = int(torch.nan_to_num(self.cosine, nan=-2.0).argmin())", "Grad keeps the highest cosine, not the lowest"),
    Mutant("sample_cosine_at_argmax", GRA, "        _, sample_cos[idx], dW = obj.evaluate(W, idx, set_of_config)\n",
           "        _, _, dW = obj.evaluate(W, idx, set_of_config)\n        sample_cos[idx] = obj.evaluate(\n"
           "            torch.nn.functional.one_hot(logits[idx].argmax(-1), C).to(dtype).permute(0, 2, 1)"
           ".reshape(idx.numel(), C * n) / n, idx, set_of_config, want_grad=False)[1]\n",
           "the authors' statistic measured at the argmax (before the step) instead of the Gumbel sample"),
    Mutant("sample_cosine_not_per_round", GRA, "        sample_cosine=(sample_cos / set_size).view(S, L),",
           "        sample_cosine=sample_cos.view(S, L),", "the last loss not divided by |T| (favours one-round sets)"),
    Mutant("sample_select_min", GRA, "k = int(torch.nan_to_num(self.sample_cosine, nan=-2.0).argmax())",
           "k = int(torch.nan_to_num(self.sample_cosine, nan=-2.0).argmin())", "the authors' statistic maximised as a loss"),
    Mutant("round_sets_ceil", GRA, "sizes = sorted({max(1, math.floor(f * len(rounds))) for f in fractions})",
           "sizes = sorted({max(1, math.ceil(f * len(rounds))) for f in fractions})",
           "App. B.5: first max(1, ⌊f|T|⌋) rounds"),
    # ---- Alg. 4: Adam on the pseudo-gradient ------------------------------------------------------------------
    Mutant("adam_no_bias_correction_m", ACT, "mhat = st.m / (1 - b1**st.step)", "mhat = st.m",
           "Alg. 4 / Kingma & Ba Alg. 1: first-moment bias correction dropped"),
    Mutant("adam_no_bias_correction_v", ACT, "vhat = st.v / (1 - b2**st.step)", "vhat = st.v",
           "Alg. 4 / Kingma & Ba Alg. 1: second-moment bias correction dropped"),
    Mutant("adam_no_sqrt", ACT, "st.theta.sub_(lr * mhat / (vhat.sqrt() + eps))", "st.theta.sub_(lr * mhat / (vhat + eps))",
           "Adam divides by sqrt(v̂)"),
    Mutant("adam_pseudo_gradient_sign", ACT, "adam_step(st, st.theta - reply.to(st.theta.dtype), lr, betas, self.eps)",
           "adam_step(st, reply.to(st.theta.dtype) - st.theta, lr, betas, self.eps)",
           "Alg. 4: the gradient is θ_c^a - θ_c"),
    Mutant("model_wo_adam_no_bias_correction", OPT, "theta -= lr * (m / (1 - b1**step)) / ((v / (1 - b2**step)).sqrt_() + eps)",
           "theta -= lr * m / (v.sqrt() + eps)", "Model-w-O's Adam: bias corrections dropped"),
    # ---- Alg. 5: heterogeneity split -----------------------------------------------------------------------------
    Mutant("alg5_h_sign", CEN, "m = int(round((0.5 - h) * k))", "m = int(round(h * k))",
           "Alg. 5: (0.5 - h) of each cluster swapped"),
    Mutant("alg5_median_split", CEN, "in_h = (man & (y.double() > med)) | (~man & (y.double() <= med))",
           "in_h = (man & (y.double() > med)) | (~man & (y.double() > med))", "Alg. 5: D_h = rich men and poor women"),
    # ---- SendBack (active server) ---------------------------------------------------------------------------------
    Mutant("sendback_sends_global", THR, "        return last\n", "        return None\n",
           "send-back attack: returns the target's own model, not the global one"),
    # ---- eq. 2: the first layer's Gram identity ‖Σ_j W_j δ_j x_jᵀ‖² = Σ_jj' W_j W_j' (δ_j·δ_j')(x_j·x_j') -----------
    Mutant("gram_no_input_gram", GRA, "torch.bmm(d, d.transpose(1, 2)).mul_(self.XX)", "torch.bmm(d, d.transpose(1, 2))",
           "Gram identity: the inputs' Gram factor (x_j·x_j') dropped"),
    Mutant("gram_no_cross_terms", GRA, "torch.bmm(d, d.transpose(1, 2)).mul_(self.XX)",
           "torch.diag_embed((torch.bmm(d, d.transpose(1, 2)) * self.XX).diagonal(dim1=1, dim2=2))",
           "Gram identity: the cross terms j ≠ j' of the squared norm dropped"),
    Mutant("gram_norm_one_sided", GRA, "nrm += (G * W.T.unsqueeze(0)).sum(1)", "nrm += G.sum(1)",
           "Gram identity: Wᵀ Q W with the left W dropped"),
    Mutant("gram_backward_factor_2", GRA, "grad -= (G * b.unsqueeze(1)).sum(0)", "grad -= 2 * (G * b.unsqueeze(1)).sum(0)",
           "∂‖G‖/∂W_j = (QW)_j/‖G‖: the 2 of ∂‖G‖² cancels with the square root's 1/2"),
    Mutant("numerator_transposed_phi", GRA, "dot = (W @ phi).T", "dot = (W @ phi.flip(1)).T",
           "numerator Σ_j W_j φ_j^t: rounds of φ misaligned with the rounds of p"),
]
