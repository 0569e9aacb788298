"""Plausible bugs in ROG's GAN post-processor (Yue et al. 2023; flprivacy.rog).

Run from the repository root of a clone:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/rog.py --json /tmp/rog_mut.json

Each mutant breaks one piece of the architecture, the degradation, the training step, the
post-processing or the weights' check; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

ROG = "src/flprivacy/rog.py"

TESTS = pytest_command("tests/test_rog.py")

MUTANTS = [
    Mutant("ccbn_gain_not_plus_one", ROG, "g = (1 + self.gain(y))[:, :, None, None]",
           "g = self.gain(y)[:, :, None, None]", "ccbn: the gain is 1 + E_g[y], not E_g[y] (zero-initialised: kills the signal)"),
    Mutant("ccbn_ignores_label", ROG, "x = self.norm(x) if y is None or isinstance(self.norm, nn.InstanceNorm2d) else self.norm(x, y)",
           "x = self.norm(x) if isinstance(self.norm, nn.InstanceNorm2d) else self.norm(x, torch.zeros_like(y))",
           "the decoder's normalisation uses class 0 for every image"),
    Mutant("output_tanh_not_shifted", ROG, "return (torch.tanh(d) + 1) / 2", "return torch.tanh(d)",
           "output in [-1, 1], not [0, 1]"),
    Mutant("skip_from_input_dropped", ROG, "d = self.conv9(torch.cat((d, x), 1))",
           "d = self.conv9(torch.cat((d, torch.zeros_like(x)), 1))", "the last skip connection (from the input) lost"),
    Mutant("discriminator_no_sigmoid", ROG, "return torch.sigmoid(self.net(x))", "return self.net(x)",
           "the discriminator's output is not a probability (BCE needs [0, 1])"),
    Mutant("degrade_noise_not_per_image", ROG, "sigma = sigma_max * torch.rand(y.shape[0], 1, 1, generator=g)",
           "sigma = sigma_max * torch.ones(y.shape[0], 1, 1)", "one noise level for every image instead of σ ~ U(0, σ_max)"),
    Mutant("degrade_not_clipped", ROG, "return ((raw + 1) / 2).clamp(0, 1)", "return (raw + 1) / 2",
           "synthetic raw images outside [0, 1]"),
    Mutant("degrade_wrong_scale", ROG, "forward(_pad(truth)[:, 0] * 2 - 1)", "forward(_pad(truth)[:, 0])",
           "the dummy computed in [0, 1] but decoded as if in [-1, 1]"),
    Mutant("training_l1_sign", ROG, "loss_g = adv + l1_weight * l1", "loss_g = adv - l1_weight * l1",
           "the generator pushed away from the clean image"),
    Mutant("training_fixed_seed", ROG, "torch.manual_seed(seed)\n        G, Dn", "torch.manual_seed(0)\n        G, Dn",
           "the initialisation ignores the seed"),
    Mutant("postprocess_wrong_crop", ROG, "return out[..., PAD:-PAD, PAD:-PAD].contiguous()",
           "return out[..., :SIDE, :SIDE].contiguous()", "output cropped off-centre (not the padded border)"),
    Mutant("postprocess_train_mode", ROG, "    generator.eval()\n    with torch.no_grad():",
           "    generator.train()\n    with torch.no_grad():", "batch statistics at use: images depend on their batch"),
    Mutant("load_skips_checksum", "src/flprivacy/weights.py", "    if expected != actual:\n        raise ValueError",
           "    if False:\n        raise ValueError", "a corrupt weights file is loaded silently (flprivacy.weights)"),
]
