"""Plausible bugs in ResNet-9 (models.resnet9), the Fig. 5 / App. H experiment over three models
(experiments.part4_architectures) and its ledger rules (ledger.wilson_architectures).

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD/src:$PWD python tools/mutation.py tests/mutants/architectures.py

Each mutant breaks one piece of the architecture, the replay check, the scoring or a rule; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

MOD = "src/flprivacy/models.py"
EXP = "src/flbook/experiments/part4_architectures.py"
LED = "src/flbook/ledger/wilson_architectures.py"

TESTS = pytest_command("tests/test_architectures.py")

MUTANTS = [
    # ---- ResNet-9: He et al.'s basic blocks, one per stage (the authors' [1, 1, 1, 1]) ----------------
    Mutant("resnet9_two_blocks_per_stage", MOD, "blocks.append(_BasicBlock(cin, cout, stride, dtype, activation))",
           "blocks += [_BasicBlock(cin, cout, stride, dtype, activation), _BasicBlock(cout, cout, 1, dtype, activation)]",
           "ResNet-9 is [1, 1, 1, 1]: two blocks per stage make it ResNet-18"),
    Mutant("resnet9_last_stage_no_stride", MOD, "(512, 2)):\n            blocks.append(",
           "(512, 1)):\n            blocks.append(", "He et al.: each new stage halves the resolution (stride 2)"),
    Mutant("resnet9_batchnorm_flag_inverted", MOD, "        if not batchnorm:\n            _without_batchnorm(self)",
           "        if batchnorm:\n            _without_batchnorm(self)", "batchnorm=True must keep the BatchNorm layers"),
    Mutant("without_batchnorm_not_recursive", MOD, "        else:\n            _without_batchnorm(child)",
           "        else:\n            pass", "the BatchNorm layers inside the blocks must go too"),
    Mutant("resnet9_fc_to_layers", MOD, "        self.layers = nn.Sequential(*blocks)  # replaces",
           "        self.layers = nn.Sequential(*blocks[:3])  # replaces", "all four stages"),
    # ---- the experiment: models and initialisation ------------------------------------------------------
    Mutant("nobn_variant_keeps_batchnorm", EXP, "return resnet9(in_channels=1, n_classes=10, batchnorm=False)",
           "return resnet9(in_channels=1, n_classes=10)", "the authors' ResNet-9 has no BatchNorm"),
    Mutant("resnets_dlg_init", EXP, "dlg_init(model, seed) if arch == \"lenet5\" else model.init_params(seed)",
           "dlg_init(model, seed)", "the ResNets start from PyTorch's default initialisation (the authors' code)"),
    # ---- the replay check (eq. 2, eq. 3, the rounding bound) ---------------------------------------------
    Mutant("replay_target_sign", EXP, "target = (theta_t - theta_next) / view.server_lr",
           "target = (theta_next - theta_t) / view.server_lr", "eq. 2: ∇avg = (W^t - W^{t+1}) / η_g"),
    Mutant("fedavg_replay_is_super_client", EXP, '(("super", None), ("fedavg", sizes))',
           '(("super", None), ("fedavg", None))', "eq. 2: the true K clients, not one super-client"),
    Mutant("rounding_bound_inflated", EXP, 'out = {"rounding_bound": float(2 * eps *',
           'out = {"rounding_bound": float(2e3 * eps *', "the rounding bound: 2ε(‖θ^0‖ + ‖θ^1‖)/‖update‖"),
    Mutant("replay_wrong_tau", EXP, "errors = replay_errors(model, clients, run, lr=point.fl_lr, tau=point.tau)",
           "errors = replay_errors(model, clients, run, lr=point.fl_lr, tau=1)", "the replay runs the clients' τ"),
    # ---- scoring ------------------------------------------------------------------------------------------
    Mutant("score_unmatched", EXP, "index = match_images(images, truth)", "index = torch.arange(truth.shape[0])",
           "reconstructions come in arbitrary order: pair them first (Hungarian)"),
    Mutant("lpips_unpaired", EXP, "lp = lpips_digits(images[index], truth)",
           "lp = lpips_digits(images[: truth.shape[0]], truth)", "LPIPS of the paired reconstructions"),
    Mutant("peers_include_attacker", EXP, "peers = slice(n_k, None)", "peers = slice(None)",
           "peers' scores leave out the attacker's own images"),
    Mutant("shown_attacker_images", EXP, "shown = slice(n_k, n_k + min(SHOWN_IMAGES, n_k))",
           "shown = slice(0, min(SHOWN_IMAGES, n_k))", "App. H grids show a peer's images"),
    # ---- grids -------------------------------------------------------------------------------------------
    Mutant("quick_three_local_steps", EXP, "images_per_client=2, tau=1, iterations=budget(a)",
           "images_per_client=2, tau=3, iterations=budget(a)", "the live grid runs τ = 1 (eq. 3's exact case)"),
    Mutant("paper_points_drop_K8", EXP, "for a in archs for K in CLIENTS_MAIN]", "for a in archs for K in (2, 4)]",
           "Fig. 5: K = 2, 4, 8"),
    # ---- the ledger's rules ------------------------------------------------------------------------------
    Mutant("fig5_lpips_direction", LED, 'expected=1, what="LPIPS vs K"', 'expected=-1, what="LPIPS vs K"',
           "Fig. 5: LPIPS rises (worse) as clients are added"),
    Mutant("fig5_ssim_direction", LED, 'expected=-1, what="SSIM vs K"', 'expected=1, what="SSIM vs K"',
           "Fig. 5: SSIM falls as clients are added"),
    Mutant("app_h_all_images", LED, 'at_least(curve[K]["peer_ssim"], baseline', 'at_least(curve[K]["ssim"], baseline',
           "App. H: the peers' images, not the attacker's own"),
    Mutant("exact_loose_bound", LED, 'at_most(curve[K]["replay_error_super"], curve[K]["rounding_bound"]',
           'at_most(curve[K]["replay_error_super"], 100 * curve[K]["rounding_bound"]', "δ(1) = 0 up to rounding only"),
]
