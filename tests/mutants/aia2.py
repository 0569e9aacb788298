"""Plausible bugs in the Part III second half (Diana et al. 2025 App. C.1-C.4, Fig. 3): the
DP-SGD defence through Opacus, Table 2's least-squares pieces, Table 3's targets and Fig. 3's
settings.

Run from the repository root (Opacus must be importable):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/aia2.py --json /tmp/aia2_mut.json

Each mutant breaks one constant, sign, normalisation or step; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

DEF = "src/flprivacy/defences.py"
PIPE = "src/flbook/experiments/part3_pipeline.py"
T2 = "src/flbook/experiments/part3_table2.py"
T3 = "src/flbook/experiments/part3_table3.py"
F3 = "src/flbook/experiments/part3_fig3.py"
CEN = "src/flprivacy/data/census.py"

TESTS = pytest_command("tests/test_part3_dp.py", "tests/test_part3_dp_replay.py")

MUTANTS = [
    # ---- DP-SGD through Opacus (App. C.4) ------------------------------------------------------------
    Mutant("budget_ignores_local_epochs", DEF, "epochs=self.total_rounds * self.epochs,", "epochs=self.total_rounds,",
           "σ planned for T rounds of one epoch although each round runs E epochs: ε overspent"),
    Mutant("budget_for_one_round", DEF, "epochs=self.total_rounds * self.epochs,", "epochs=self.epochs,",
           "σ planned for a single round: the whole training overspends the budget"),
    Mutant("fresh_accountant_each_round", DEF, "        st = self._clients.get(key)\n", "        st = None\n",
           "a new PrivacyEngine every round: the accountant forgets earlier rounds"),
    Mutant("no_clipping", DEF, "target_delta=self.target_delta, epochs=self.total_rounds * self.epochs,\n"
           "                    max_grad_norm=self.max_grad_norm,",
           "target_delta=self.target_delta, epochs=self.total_rounds * self.epochs,\n"
           "                    max_grad_norm=1e30,", "per-sample clipping norm C ignored"),
    Mutant("later_rounds_half_noise", DEF, "float(opt.noise_multiplier), float(loader.sample_rate)",
           "float(opt.noise_multiplier) / 2, float(loader.sample_rate)", "σ halved after the first round"),
    Mutant("epsilon_at_wrong_delta", DEF, "st.engine.get_epsilon(self.target_delta)",
           "st.engine.get_epsilon(10 * self.target_delta)", "ε reported at 10δ (looks smaller than it is)"),
    Mutant("delta_upper_check", DEF, "0 < self.target_delta < 1", "0 < self.target_delta <= 1",
           "δ = 1 accepted (a vacuous guarantee)"),
    # ---- Table 3 targets ------------------------------------------------------------------------------
    Mutant("income_a_delta", T3, '"Income-A": 1e-6}', '"Income-A": 1e-5}', "App. C.4: δ = 1e-6 on Income-A"),
    Mutant("budget_without_active_rounds", T3, "total_rounds=s.rounds + max(s.active_rounds),",
           "total_rounds=s.rounds,", "the active rounds are not in the budget: ε overspent by the attack"),
    # ---- Table 2: features, reference coding, Alg. 3 in the pipeline --------------------------------
    Mutant("race_not_white", CEN, 'binary={"SEX": 2, "RAC1P": 1, "MAR": 1}', 'binary={"SEX": 2, "RAC1P": 2, "MAR": 1}',
           "App. C.1: race binarised as White / others"),
    Mutant("cow_group_swapped", CEN, '3: "public", 4: "public"', '3: "private", 4: "public"',
           "App. C.1: local government employees are public"),
    Mutant("drop_shifts_nothing", T2, "sens = tuple(k - (k > j) for k in task.sensitive_columns)",
           "sens = tuple(k for k in task.sensitive_columns)", "the sensitive column index after dropping a feature"),
    Mutant("passive_row_ignores_alg3", PIPE, 'ours("passive/Ours", passive_models)',
           'ours("passive/Ours", last)', "Table 2: the passive row must use Alg. 3's estimate"),
    Mutant("table2_lr", T2, "lr=5e-3, rounds=300", "lr=5e-4, rounds=300", "App. C.1: learning rate 5e-3"),
    Mutant("table2_not_iid", T2, "rounds=300, heterogeneity=0.0", "rounds=300, heterogeneity=0.4",
           "App. C.1: Income-L is i.i.d. in Table 2"),
    # ---- Fig. 3 settings (App. B.5) -------------------------------------------------------------------
    Mutant("b5_lr_1024", F3, "512: 2e-6, 1024: 3e-6}", "512: 2e-6, 1024: 2e-6}", "App. B.5: lr 3e-6 for B = 1024"),
    Mutant("epochs_rounds_floor", F3, "rounds=math.ceil(b.rounds / E)", "rounds=b.rounds // E",
           "T = ⌈100/E⌉ (ceiling)"),
    Mutant("batch_lr_not_rescaled", F3, "lr=B5_LEARNING_RATES[int(value)] * lr_scale", "lr=b.lr",
           "App. B.5: each batch size has its own learning rate"),
    # ---- Table 3: Adam tuned per client with the DP trainer in the loop (App. B.5) --------------------
    Mutant("pipeline_replays_sgd_always", PIPE, 'replay = sgd if s.adam_replay == "sgd" else local', "replay = sgd",
           "adam_replay='local' must replay the clients' own (DP) update"),
    Mutant("pipeline_ignores_per_client", PIPE, "    if per_client:\n", "    if False:\n",
           "adam_per_client: one Optuna study per client"),
    Mutant("pipeline_returned_is_iterate", PIPE, "returned = [last_returned(arun.log, c) for c in range(C)]",
           "returned = estimates[r]", "returned_acc scores the clients' replies, not Alg. 4's iterate"),
    Mutant("table3_default_sgd_replay", T3, 'return replace(settings(task), adam_replay="local", adam_per_client=True)',
           'return replace(settings(task), adam_replay="sgd", adam_per_client=True)', "Table 3 tunes with the DP trainer"),
    Mutant("controls_scripts_delta", "src/flbook/experiments/part3_table3_controls.py",
           'SCRIPTS_PRIVACY = {"delta": 1e-6, "clip": 5e5}', 'SCRIPTS_PRIVACY = {"delta": 1e-5, "clip": 5e5}',
           "the authors' Medical scripts use δ = 1e-6"),
]
