"""Plausible bugs in the authors' relaxation of the gradient-based AIA (Diana et al. 2025 eq. 2,
App. B.5; fedkit-learn writes the Gumbel-softmax sample into the input, drawn with one logit and a
sigmoid for a binary attribute): ``gradient_aia(relaxation="input", sampler="sigmoid")`` and
:class:`InputRelaxationObjective`.

Run from the repository root:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/gradient_relaxation.py --json /tmp/relax_mut.json

Each mutant breaks one step; ``why`` names it.
"""

import sys

from tools.mutation import Mutant

GRA = "src/flprivacy/attacks/gradient_aia.py"

TESTS = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "tests/test_gradient_aia_relaxation.py"]

MUTANTS = [
    Mutant("input_sample_not_rescaled", GRA, "Z = (self.n * leaf[r]).view(-1, self.C, self.n)",
           "Z = leaf[r].view(-1, self.C, self.n)",
           "W = Z/n: the attribute written into x̃ is Z/n instead of the sample Z"),
    Mutant("input_layout_sample_major", GRA, "Z = (self.n * leaf[r]).view(-1, self.C, self.n)",
           "Z = (self.n * leaf[r]).view(-1, self.n, self.C).transpose(1, 2)",
           "W is candidate-major (row c·n + i); read sample-major, sample i gets another sample's value"),
    Mutant("input_cosine_against_sent_model", GRA, "pt = self.pseudo[p]", "pt = self.sent[p]",
           "eq. 2: the cosine is with the pseudo-gradient θ^t - θ_c^t, not with θ^t"),
    Mutant("input_relaxation_never_used", GRA, '    if relaxation == "input":\n',
           '    if relaxation == "the authors\'":\n',
           "gradient_aia(relaxation='input') silently runs the mixture"),
    Mutant("merge_forgets_relaxation", GRA, "            relaxation=results[0].relaxation,\n", "",
           "a merged result claims the default relaxation"),
    # ---- the authors' binary sampler (one logit, one Gumbel draw, sigmoid) -----------------------------------
    Mutant("sigmoid_both_logits_move", GRA, "            g[..., 0] = 0\n", "            pass\n",
           "the held logit 0 also steps: twice the authors' step on ℓ"),
    Mutant("sigmoid_gumbel_sign", GRA, "logits[idx, :, 1:] - torch.log(-torch.log(u))",
           "logits[idx, :, 1:] + torch.log(-torch.log(u))", "G = -log(E), E ~ Exp(1): sign flipped"),
]
