"""Plausible bugs in LPIPS (Zhang et al. 2018, Eq. 1; the authors' ``lpips`` v0.1 forward pass).

Run from the repository root:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/lpips.py --json /tmp/lpips_mut.json

Each mutant breaks one step of Eq. 1 or of the v0.1 preprocessing; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

LP = "src/flprivacy/lpips.py"

TESTS = pytest_command("tests/test_lpips.py")

MUTANTS = [
    Mutant("no_rescale_to_pm1", LP, "fa, fb = _features(2 * a - 1, w), _features(2 * b - 1, w)",
           "fa, fb = _features(a, w), _features(b, w)", "inputs in [0, 1] not mapped to [-1, 1]"),
    Mutant("no_scaling_layer", LP, "h = (x - shift) / scale", "h = x",
           "v0.1 scaling layer dropped (the v0.0 bug)"),
    Mutant("shift_sign", LP, "h = (x - shift) / scale", "h = (x + shift) / scale", "scaling layer: shift added"),
    Mutant("pool_before_first_conv", LP, "if i in (1, 2):", "if i in (0, 1):",
           "max-pools before conv1 and conv2 instead of conv2 and conv3"),
    Mutant("no_channel_normalisation", LP,
           "u = u / (torch.sqrt((u * u).sum(dim=1, keepdim=True)) + 1e-10)", "u = u",
           "ŷ^l: channel normalisation of one input dropped"),
    Mutant("normalise_over_space", LP,
           "u = u / (torch.sqrt((u * u).sum(dim=1, keepdim=True)) + 1e-10)\n"
           "            v = v / (torch.sqrt((v * v).sum(dim=1, keepdim=True)) + 1e-10)",
           "u = u / (torch.sqrt((u * u).sum(dim=(2, 3), keepdim=True)) + 1e-10)\n"
           "            v = v / (torch.sqrt((v * v).sum(dim=(2, 3), keepdim=True)) + 1e-10)",
           "ŷ^l normalised over space instead of channels"),
    Mutant("abs_not_square", LP, "d = F.conv2d((u - v) ** 2, w", "d = F.conv2d((u - v).abs(), w",
           "Eq. 1: |Δ| instead of Δ²"),
    Mutant("unweighted_heads", LP, "d = F.conv2d((u - v) ** 2, w[f\"lin{i}.weight\"])",
           "d = (u - v).pow(2).sum(dim=1, keepdim=True)", "linear heads w_l dropped (the 'baseline' net)"),
    Mutant("sum_not_mean_space", LP, "total += d.mean(dim=(1, 2, 3)).double()",
           "total += d.sum(dim=(1, 2, 3)).double()", "Eq. 1: spatial sum instead of average 1/(H_l W_l)"),
    Mutant("last_layer_dropped", LP, "for i, (u, v) in enumerate(zip(fa, fb)):",
           "for i, (u, v) in enumerate(zip(fa[:4], fb[:4])):", "Eq. 1: Σ_l over four layers, not five"),
    Mutant("gray_not_replicated", LP, "return x.expand(-1, 3, -1, -1) if x.shape[1] == 1 else x",
           "return torch.cat([x, torch.zeros_like(x), torch.zeros_like(x)], 1) if x.shape[1] == 1 else x",
           "grayscale put in the red channel only"),
    Mutant("range_check_off", LP, "if lo < 0.0 or hi > 1.0:", "if lo < -1.0 or hi > 2.0:",
           "range check too loose"),
    Mutant("checksum_not_checked", "src/flprivacy/weights.py", "if expected != actual:", "if False:",
           "SHA-256 not verified (flprivacy.weights.load_weights)"),
]
