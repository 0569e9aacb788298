"""Plausible bugs in FedInverse's model-inversion attack (Wu et al. 2024; GMI, Zhang et al. 2020;
WGAN-GP, Gulrajani et al. 2017) and in Fig. 9's comparison rule (Wilson et al. 2025).

Run from the repository root:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/model_inversion.py --json /tmp/mi_mut.json

Each mutant breaks one constant, sign, normalisation or step; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

MI = "src/flprivacy/attacks/model_inversion.py"
LED = "src/flbook/ledger/wilson_fedinverse.py"

TESTS = pytest_command("tests/test_model_inversion.py")

MUTANTS = [
    # ---- the GAN prior ------------------------------------------------------------------------------
    Mutant("gp_no_square", MI, "((g.flatten(1).norm(dim=1) - 1) ** 2).mean()", "(g.flatten(1).norm(dim=1) - 1).mean()",
           "WGAN-GP: the penalty is not squared"),
    Mutant("gp_wrong_target", MI, "((g.flatten(1).norm(dim=1) - 1) ** 2).mean()", "(g.flatten(1).norm(dim=1) ** 2).mean()",
           "WGAN-GP: gradient norm pushed to 0 instead of 1"),
    Mutant("gen_step_every_step", MI, "if step % n_critic == 0:", "if True:",
           "one generator step per critic step whatever n_critic says"),
    Mutant("pad_wrong_side", MI, "F.pad(images, (PAD,) * 4)", "F.pad(images, (0, 2 * PAD, 0, 2 * PAD))",
           "the 28x28 digit not centred in the 32x32 frame (crop no longer inverts it)"),
    Mutant("crop_offset", MI, "images[..., PAD:IMAGE_SIZE - PAD, PAD:IMAGE_SIZE - PAD]", "images[..., :IMAGE_SIZE - 2 * PAD, :IMAGE_SIZE - 2 * PAD]",
           "the attacked model reads a shifted window of the generated image"),
    Mutant("load_skips_sha", "src/flprivacy/weights.py", "    if expected != actual:\n        raise ValueError",
           "    if False:\n        raise ValueError", "a corrupt weights file loads silently (flprivacy.weights)"),
    # ---- the HSIC regulariser -----------------------------------------------------------------------
    Mutant("hsic_no_centring", MI, "Kc = K @ H", "Kc = K", "nHSIC: the kernel matrix is not centred"),
    Mutant("hsic_no_transpose", MI, "(centred(x) * centred(y).T).sum()", "(centred(x) * centred(y)).sum()",
           "nHSIC: Σ R_X ∘ R_Y instead of tr(R_X R_Y)"),
    Mutant("hsic_kernel_width", MI, "(2 * sigma ** 2 * a.shape[1])", "(2 * sigma * a.shape[1])",
           "nHSIC: kernel variance 2σd instead of 2σ²d"),
    # ---- the inversion -----------------------------------------------------------------------------
    Mutant("identity_loss_sign", MI, "loss = prior + identity_weight * identity", "loss = prior - identity_weight * identity",
           "the identity loss maximised: images pushed away from the target class"),
    Mutant("no_clip", MI, ").clamp(-clip, clip)", ")", "z not clipped to [-clip, clip] after each step"),
    Mutant("momentum_sign", MI, "v = momentum * v - lr * grad", "v = momentum * v + lr * grad",
           "gradient ascent on the loss"),
    Mutant("no_crop_before_model", MI, "model.forward(theta, crop_images(fake).to(model.dtype))",
           "model.forward(theta, F.interpolate(fake, size=28).to(model.dtype))",
           "the model reads a resized, not cropped, image (not the image the attack returns)"),
    Mutant("same_z_every_restart", MI, "generator=make_generator(seed + r))", "generator=make_generator(seed))",
           "all restarts start from the same z"),
    Mutant("confidence_of_argmax", MI, "p[torch.arange(X.shape[0], device=dev), all_labels].float()", "p.max(1).values.float()",
           "confidence of the predicted class, not of the target"),
    # ---- scoring and the rule ---------------------------------------------------------------------------
    Mutant("nearest_any_class", MI, "cand = torch.nonzero(truth_labels == labels[i]).flatten()",
           "cand = torch.arange(truth_labels.shape[0])", "the pairing ignores the target class"),
    Mutant("nearest_argmin", MI, "index[i] = cand[int(s.argmax())]", "index[i] = cand[int(s.argmin())]",
           "the least similar image of the class is picked"),
    Mutant("rule_lpips_direction", LED, 'at_most(mean["ours"]["lpips"]', 'at_least(mean["ours"]["lpips"]',
           "LPIPS read as a similarity (higher better)"),
    Mutant("rule_one_method", LED, 'for m in METHODS:\n        parts', 'for m in METHODS[:1]:\n        parts',
           "ours need only beat MI, not MI-HSIC"),
]
