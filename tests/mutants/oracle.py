"""Plausible bugs in Model-w-O as the authors' code finds it (flprivacy.optimum.tuned_local_models:
fedkit-learn's run_local_models_optimization.py, mini-batch Adam with weight decay) and in Table 1's
controlled experiments (part3_table1_controls).

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/oracle.py
"""

import sys

from tools.mutation import Mutant

OPT = "src/flprivacy/optimum.py"
CTL = "src/flprivacy/experiments/part3_table1_controls.py"
BAT = "src/flprivacy/batched.py"

TESTS = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "tests/test_tuned_local_models.py", "tests/test_part3_table1_controls.py", "tests/test_batched.py"]

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
]
