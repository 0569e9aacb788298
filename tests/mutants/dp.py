"""Plausible bugs in the wiring of Opacus into the local update (flprivacy.defences; Diana et al.
App. C.4; Abadi et al. 2016).

Run from the repository root:

    .venv/bin/python tools/mutation.py tests/mutants/dp.py --json /tmp/dp_mut.json

Each mutant breaks one step of DP-SGD's wiring: the loss's normalisation, the learning rate, the
local epochs, the parameters returned, the budget's horizon, the engine reused across rounds, the
noise of later rounds, or the δ at which ε is reported; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

DEF = "src/flprivacy/defences.py"
ACT = "src/flprivacy/attacks/active.py"

TESTS = pytest_command("tests/test_dp_wiring.py", "tests/test_part3_dp.py", "tests/test_part3_dp_replay.py", "-k",
                       "not pipeline and not fig3 and not tables_share and not controls")

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
    # ---- the adversary's DP-SGD replay (dp_sgd_many) and Adam tuned with it ---------------------------
    Mutant("replay_divides_by_rows", DEF, "q, batch = 1.0 / K, int(n * (1.0 / K))", "q, batch = 1.0 / K, n",
           "Opacus divides the noisy sum by the expected batch size ⌊S_c q⌋, not by S_c"),
    Mutant("replay_no_clipping", DEF, "factor = (C / (sq.sqrt() + 1e-6)).clamp(max=1.0).unsqueeze(-1)",
           "factor = torch.ones_like(sq).unsqueeze(-1)", "per-sample gradients not clipped to C"),
    Mutant("replay_norm_without_bias", DEF, "((a * a).sum(-1) + (1.0 if layer.b is not None else 0.0))",
           "((a * a).sum(-1) + 0.0)", "the flat per-sample norm forgets the biases' gradients"),
    Mutant("replay_noise_without_C", DEF, "* (sigma * C)", "* sigma", "the noise's standard deviation is σC"),
    Mutant("replay_one_epoch", DEF, "for _ in range(dp.epochs * K):", "for _ in range(K):", "E local epochs replayed once"),
    Mutant("planned_sigma_one_round", DEF, "epochs=self.epochs * self.total_rounds, accountant=self.accountant))",
           "epochs=self.epochs, accountant=self.accountant))", "σ planned for one round, not the whole training"),
    Mutant("planned_sigma_rate", DEF, "sample_rate=1 / self.steps_per_epoch(data),", "sample_rate=self.batch_size / data.n,",
           "Opacus's rate is 1/⌈S_c/B⌉, not B/S_c"),
    Mutant("adam_same_for_all_clients", ACT, "lr, betas = self.per_client.get(client, (self.lr, self.betas))",
           "lr, betas = self.lr, self.betas", "App. B.5: each client's own Adam hyper-parameters"),
    Mutant("per_client_study_same_seed", ACT, "                                seed=child_seed(seed, c)) for c in range(len(clients))}",
           "                                seed=seed) for c in range(len(clients))}", "each client's study has its own seed stream"),
    Mutant("simulation_ignores_dp", ACT, "        if isinstance(local, DPLocalSGD):", "        if False:",
           "the replay of DP clients runs plain SGD"),
    Mutant("simulation_replies_are_iterates", ACT, "return (list(st.theta), list(returned)) if replies else list(st.theta)",
           "return (list(st.theta), list(st.theta)) if replies else list(st.theta)", "the replies are the clients' models"),
]
