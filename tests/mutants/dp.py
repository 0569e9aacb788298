"""Plausible bugs in the wiring of Opacus into the local update (flprivacy.defences; Diana et al.
App. C.4; Abadi et al. 2016).

Run from the repository root:

    .venv/bin/python tools/mutation.py tests/mutants/dp.py --json /tmp/dp_mut.json

Each mutant breaks one step of DP-SGD's wiring: the loss's normalisation, the learning rate, the
local epochs, the parameters returned, the budget's horizon, the engine reused across rounds, the
noise of later rounds, or the δ at which ε is reported; ``why`` names it.
"""

import sys

from tools.mutation import Mutant

DEF = "src/flprivacy/defences.py"

TESTS = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "tests/test_dp_wiring.py", "tests/test_part3_dp.py", "-k", "not pipeline and not fig3 and not tables_share"]

MUTANTS = [
    Mutant("loss_summed", DEF, "model._loss(module(xb), model._as_targets(yb, xb)).mean().backward()",
           "model._loss(module(xb), model._as_targets(yb, xb)).sum().backward()",
           "Alg. 2: the gradient of the summed loss, B times the mean's"),
    Mutant("lr_not_used", DEF, "opt = torch.optim.SGD(module.parameters(), lr=self.lr)",
           "opt = torch.optim.SGD(module.parameters(), lr=self.lr / 2)", "Alg. 2: step size η/2"),
    Mutant("one_epoch", DEF, "for _ in range(self.epochs):", "for _ in range(1):", "Alg. 2: E local epochs run once"),
    Mutant("returns_start", DEF, "out = torch.cat([p.detach().reshape(-1) for p in module._module.parameters()])",
           "out = theta.detach().clone()\n        _ = torch.cat([p.detach().reshape(-1) for p in module._module.parameters()])",
           "the message is θ^t instead of the trained θ_c"),
    Mutant("budget_for_one_round", DEF, "epochs=self.total_rounds * self.epochs,", "epochs=self.epochs,",
           "σ chosen for one round's epochs: the whole training overspends (ε, δ)"),
    Mutant("new_engine_every_round", DEF, "        st = self._clients.get(key)\n",
           "        st = None\n", "a fresh accountant each round: ε forgets earlier rounds"),
    Mutant("later_rounds_noise_free", DEF, "noise_multiplier=st.noise_multiplier,", "noise_multiplier=0.0,",
           "rounds after the first add no noise"),
    Mutant("later_rounds_clip_unset", DEF, "noise_multiplier=st.noise_multiplier,\n                    max_grad_norm=self.max_grad_norm,",
           "noise_multiplier=st.noise_multiplier,\n                    max_grad_norm=1e30,", "rounds after the first do not clip"),
    Mutant("epsilon_default_delta", DEF, "float(st.engine.get_epsilon(self.target_delta))", "float(st.engine.get_epsilon(1e-5))",
           "ε reported at a fixed δ, not the client's target δ"),
    Mutant("stored_sigma_wrong", DEF, "_ClientDP(engine, dataset, float(opt.noise_multiplier), float(loader.sample_rate))",
           "_ClientDP(engine, dataset, 0.5 * float(opt.noise_multiplier), float(loader.sample_rate))",
           "later rounds use half the σ the budget needs"),
    Mutant("batch_is_whole_data", DEF, "loader = DataLoader(dataset, batch_size=min(self.batch_size, data.n), generator=generator)",
           "loader = DataLoader(dataset, batch_size=data.n, generator=generator)", "q = 1 instead of B/S_c"),
]
