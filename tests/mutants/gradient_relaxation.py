"""Plausible bugs in the authors' relaxation of the gradient-based AIA (Diana et al. 2025 eq. 2,
App. B.5; fedkit-learn writes the Gumbel-softmax sample into the input, drawn with one logit and a
sigmoid for a binary attribute): ``gradient_aia(relaxation="input", sampler="sigmoid")`` and
:class:`InputRelaxationObjective`.

Run from the repository root:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/gradient_relaxation.py --json /tmp/relax_mut.json

Each mutant breaks one step; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

GRA = "src/flprivacy/attacks/gradient_aia.py"

TESTS = pytest_command("tests/test_gradient_aia_relaxation.py")

MUTANTS = [
    Mutant("input_sample_not_rescaled", GRA, "Z = (self.n * leaf[r]).view(-1, self.C, self.n)",
           "Z = leaf[r].view(-1, self.C, self.n)",
           "W = Z/n: the attribute written into x̃ is Z/n instead of the sample Z"),
    Mutant("input_layout_sample_major", GRA, "Z = (self.n * leaf[r]).view(-1, self.C, self.n)",
           "Z = (self.n * leaf[r]).view(-1, self.n, self.C).transpose(1, 2)",
           "W is candidate-major (row c·n + i); read sample-major, sample i gets another sample's value"),
    Mutant("input_cosine_against_sent_model", GRA, "pt = self.pseudo[p]", "pt = self.sent[p]",
           "eq. 2: the cosine is with the pseudo-gradient θ^t - θ_c^t, not with θ^t"),
    Mutant("input_relaxation_never_used", GRA, '    elif relaxation == "input":\n',
           '    elif relaxation == "the authors\'":\n',
           "gradient_aia(relaxation='input') on a model other than the MLP silently runs the mixture"),
    # (making an MLP run the autograd objective instead of the hand-written one is an equivalent mutant: the
    # same numbers, 4x slower; test_analytic_input_derivative_is_autograd compares the two objectives)
    # ---- the hand-written input derivative (AnalyticInputObjective) ------------------------------------------
    Mutant("analytic_no_curvature_term", GRA, "            U = ins[\"klin\"][c] @ -alpha\n",
           "            U = torch.zeros(N, K, dtype=self.dtype)\n",
           "the ℓ'' ȯ (e·W1 d) term loses its -α (eᵀP1x + p2·h1) part"),
    Mutant("analytic_mse_curvature_one", GRA, "lp, lpp = 2 * (o - yc), torch.full_like(o, 2.0)",
           "lp, lpp = 2 * (o - yc), torch.full_like(o, 1.0)", "ℓ = (o - y)²: ℓ'' = 2, not 1"),
    Mutant("analytic_beta_sign", GRA, "BG0 = (G0 * beta.view(R, 1, K, 1)).reshape(R * H, K * F1)",
           "BG0 = (G0 * -beta.view(R, 1, K, 1)).reshape(R * H, K * F1)", "v = -(α p - β G): the G term's sign"),
    Mutant("analytic_no_second_layer_direction", GRA,
           "Q = v2.transpose(1, 2) * ins[\"W1d\"][:, c].unsqueeze(-1) + ins[\"w2\"].unsqueeze(-1) * V1d",
           "Q = ins[\"w2\"].unsqueeze(-1) * V1d", "drops v_w2 ⊙ 1[a > 0] · W1 d (the output layer's part of v)"),
    Mutant("analytic_v1d_uses_bias_column", GRA, "beta.unsqueeze(1) * (G0[..., :-1] @ self.d[c]))",
           "beta.unsqueeze(1) * (G0[..., 1:] @ self.d[c]))", "G1 d: the weight columns, not shifted onto the bias"),
    Mutant("analytic_reads_wrong_row", GRA, "Jrow = one_hot.argmax(1) * n + torch.arange(n)",
           "Jrow = (1 - one_hot.argmax(1)) * n + torch.arange(n)",
           "the derivative is read at the sample's other candidate row, not the sampled one"),
    Mutant("analytic_direction_sign", GRA,
           "self.d = (self.Xc.view(self.C, self.n, self.F)[1:, 0] - self.Xc[0]).contiguous()",
           "self.d = (self.Xc[0] - self.Xc.view(self.C, self.n, self.F)[1:, 0]).contiguous()",
           "d_c = x(c) - x(0), not x(0) - x(c)"),
    Mutant("analytic_bce_curvature", GRA, "lp, lpp = sg - yc, sg * (1 - sg)", "lp, lpp = sg - yc, sg",
           "logistic loss: ℓ'' = σ(1 - σ)"),
    Mutant("merge_forgets_relaxation", GRA, "            relaxation=results[0].relaxation,\n", "",
           "a merged result claims the default relaxation"),
    # ---- the authors' binary sampler (one logit, one Gumbel draw, sigmoid) -----------------------------------
    Mutant("sigmoid_both_logits_move", GRA, "            g[..., 0] = 0\n", "            pass\n",
           "the held logit 0 also steps: twice the authors' step on ℓ"),
    Mutant("sigmoid_gumbel_sign", GRA, "logits[idx, :, 1:] - torch.log(-torch.log(u))",
           "logits[idx, :, 1:] + torch.log(-torch.log(u))", "G = -log(E), E ~ Exp(1): sign flipped"),
]
