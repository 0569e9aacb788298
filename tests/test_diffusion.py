"""Diffusion post-processing (Wilson et al. 2025 §3.2-3.3; flprivacy.diffusion).

Fast: the algorithms are checked with a tiny untrained U-Net or an *oracle* network whose noise
prediction is exact for one known image, so that the samplers' equations have closed-form answers.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from flprivacy import diffusion as D
from flprivacy.attacks.inversion import decode_dummy

TINY = dict(sample_size=32, in_channels=1, out_channels=1, layers_per_block=1, block_out_channels=(8, 16),
            norm_num_groups=4, num_class_embeds=11, down_block_types=("DownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "UpBlock2D"))
EPS32 = torch.finfo(torch.float32).eps


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return D.build_unet(TINY).eval()


class _Out:
    def __init__(self, sample):
        self.sample = sample


class Oracle(torch.nn.Module):
    """ε_θ exact for data concentrated on one image x0 (model space): ε = (x_t - √ᾱ_t x0)/√(1-ᾱ_t)."""

    def __init__(self, x0: torch.Tensor):
        super().__init__()
        self.x0 = x0
        self.abar = D.scheduler().alphas_cumprod

    def forward(self, x, t, class_labels=None):
        a = self.abar[t].view(-1, 1, 1, 1)
        return _Out((x - a.sqrt() * self.x0[: x.shape[0]]) / (1 - a).sqrt())


def _digits(n=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    z = torch.rand(n, 1, 14, 14, generator=g)
    return decode_dummy(z, (1, 28, 28)).clamp(0, 1), z


def test_model_space_roundtrip_and_black_border():
    raw, _ = _digits()
    x = D.to_model_space(raw)
    assert x.shape == (3, 1, 32, 32)
    assert (x[..., :2, :] == -1).all() and (x[..., -2:, :] == -1).all() and (x[..., :, :2] == -1).all()
    assert torch.allclose(x[..., 2:30, 2:30], raw * 2 - 1)
    assert torch.allclose(D.from_model_space(x), raw, atol=1e-6)


# ---- the measurement operator ----------------------------------------------------------------------------
def test_bicubic_matrix_is_the_attacks_upsampler():
    _, z = _digits()
    B = D.bicubic_matrix(14, 28).float()
    up = B @ z[:, 0] @ B.T
    ref = torch.nn.functional.interpolate(z, size=(28, 28), mode="bicubic", align_corners=False)[:, 0]
    assert torch.allclose(up, ref, atol=1e-5)  # float32 sums of 4x4 taps: a few ε


def test_upsampler_operator_recovers_the_dummy():
    """H = B⁺C inverts the attack's decoder: H(2·B z Bᵀ - 1) = 2z - 1 (model scale), since B⁺B = I
    and the bicubic rows sum to one."""
    raw_unclamped = decode_dummy(_digits()[1], (1, 28, 28))
    z = _digits()[1]
    op = D.upsampler_operator()
    x = torch.nn.functional.pad(raw_unclamped * 2 - 1, (2,) * 4)[:, 0]
    assert torch.allclose(op.forward(x), 2 * z[:, 0] - 1, atol=1e-4)  # float32 product of 32x32 matrices


def test_separable_svd_reconstructs_the_operator():
    op = D.upsampler_operator()
    x = torch.randn(2, 32, 32)
    y = op.forward(x)
    # U Σ Vᵀ x, with Σ on the spectral grid
    xbar = op.Vt(x)
    s = op.singular_values()
    via_svd = op.U @ (s * xbar)[:, :14, :14] @ op.U.T
    assert torch.allclose(y, via_svd, atol=1e-4)
    # ȳ = Σ⁺ Uᵀ y gives back the measured spectral coefficients of x
    assert torch.allclose(op.y_bar(y)[:, :14, :14], xbar[:, :14, :14], atol=1e-4)
    assert (s[14:, :] == 0).all() and (s[:, 14:] == 0).all() and (s[:14, :14] > 0).all()
    assert torch.allclose(op.V_(op.Vt(x)), x, atol=1e-5)  # V orthogonal


# ---- DDIM and MDE ---------------------------------------------------------------------------------------
def test_ddim_with_an_exact_prior_returns_its_image():
    """With ε_θ exact for a single image x0, every DDIM step predicts x̂_0 = x0, so the sample is x0
    from any x_T (Song et al. 2021, eq. 12 with σ = 0)."""
    x0 = D.to_model_space(_digits()[0])
    out = D.ddim_sample(Oracle(x0), torch.randn(3, 1, 32, 32, generator=torch.Generator().manual_seed(1)), n_steps=7)
    assert torch.allclose(out, x0, atol=1e-3)  # float32 at σ_T ≈ 157: 157·ε·few ops


def test_ddim_gradient_with_constant_noise_predictions(tiny):
    """MDE holds ε_θ constant, so x_0 is affine in x_T with slope Π √(ᾱ_{t'}/ᾱ_t) = 1/√ᾱ_{T-1}."""
    x_T = torch.randn(2, 1, 32, 32, generator=torch.Generator().manual_seed(2)).requires_grad_(True)
    D.ddim_sample(tiny, x_T, n_steps=4, grad=True).sum().backward()
    slope = 1 / float(D.scheduler().alphas_cumprod[999].sqrt())
    assert torch.allclose(x_T.grad, torch.full_like(x_T, slope), rtol=1e-4)


def test_mde_decreases_its_loss(tiny):
    raw, _ = _digits(2)
    res = D.mde(tiny, raw, torch.tensor([1, 7]), iterations=6, lr=0.05, n_steps=3, seed=0, record_every=3)
    assert len(res.loss) == 7 and res.recorded == [0, 3, 6] and len(res.history) == 3
    assert res.loss[-1] < res.loss[0]
    assert res.images.shape == raw.shape and 0 <= float(res.images.min()) and float(res.images.max()) <= 1


def test_mde_with_an_exact_prior_converges_to_the_target():
    """With the oracle, x_0 = x0 + (x_T-independent offset)... exactly x0 whatever x_T, so eq. 4's loss
    is the constant ‖x0 - X̂‖²; with X̂ = x0 it is zero from the first iterate."""
    raw, _ = _digits(2)
    x0 = D.to_model_space(raw)
    res = D.mde(Oracle(x0), raw, iterations=2, n_steps=5, seed=0)
    assert max(res.loss) < 1e-3 * x0.numel()  # float32 rounding at σ_T ≈ 157


# ---- DDRM ------------------------------------------------------------------------------------------------
def test_ddrm_with_zero_noise_is_measurement_consistent(tiny):
    """σ_y = 0, η_b = 1: the last step sets every measured coefficient to ȳ (σ' = 0), so H x_0 = y."""
    raw, _ = _digits()
    res = D.ddrm_restore(tiny, raw, sigma_y=0.0, n_steps=4, seed=0)
    op = D.upsampler_operator()
    # float32: x̄ reaches |x̄| ≲ σ_T ≈ 157 in early steps; the final V and H products add n·ε·|x̄|
    assert torch.allclose(op.forward(res.x0[:, 0]), res.measurement, atol=32 * 32 * EPS32 * 10)
    # the restored images are not the raw ones (the null space comes from the prior)
    assert (res.images - raw).abs().max() > 0.05


class Recorder(torch.nn.Module):
    """Predicts zero noise and records the network inputs."""

    def __init__(self):
        super().__init__()
        self.inputs = []

    def forward(self, x, t, class_labels=None):
        self.inputs.append((int(t[0]), x.clone()))
        return _Out(torch.zeros_like(x))


def test_ddrm_feeds_the_network_ddpm_marginals():
    """DDRM runs in the variance-exploding form x_0 + σ_t ε, σ_t = √((1-ᾱ_t)/ᾱ_t); the network must see
    √ᾱ_t times it, i.e. the DDPM marginal √ᾱ_t x_0 + √(1-ᾱ_t) ε. At t = 999 (√ᾱ ≈ 0.006) that is
    nearly N(0, 1): over 3·32·32 = 3072 pixels the sample std is within 4 standard errors
    (1/√(2·3072) ≈ 1.3%) of 1, plus √ᾱ·|x_0| ≤ 0.01."""
    raw, _ = _digits()
    rec = Recorder()
    D.ddrm_restore(rec, raw, sigma_y=0.1, n_steps=3, seed=0)
    t0, x = rec.inputs[0]
    assert t0 == 999
    assert abs(float(x.std()) - 1) < 4 * 0.013 + 0.01


def test_ddrm_null_space_is_a_ddim_step():
    """Kawar et al. eq. 7 for s_i = 0 with η = 0: x̄_{t'} - x̄_θ = (σ_{t'}/σ_t)(x̄_t - x̄_θ). With the
    oracle, x̄_θ = x̄0 at every step, so the null-space deviation of the network's input from x0
    shrinks by exactly σ_{t'}/σ_t, keeping its sign."""
    raw, _ = _digits()
    x0 = D.to_model_space(raw)

    class Rec(Oracle):
        def __init__(self, x0):
            super().__init__(x0)
            self.inputs = []

        def forward(self, x, t, class_labels=None):
            self.inputs.append((int(t[0]), x.clone()))
            return super().forward(x, t, class_labels)

    m = Rec(x0)
    D.ddrm_restore(m, raw, sigma_y=0.0, n_steps=4, eta=0.0, seed=0)
    op = D.upsampler_operator()
    null = op.singular_values() == 0
    abar = D.scheduler().alphas_cumprod.double()
    sig = lambda t: float(((1 - abar[t]) / abar[t]).sqrt())  # noqa: E731
    (t1, x1), (t2, x2) = m.inputs[:2]
    e1 = op.Vt(x1[:, 0] / float(abar[t1].sqrt()) - x0[:, 0])[:, null]
    e2 = op.Vt(x2[:, 0] / float(abar[t2].sqrt()) - x0[:, 0])[:, null]
    # float32: |e1| ≈ σ_T ≈ 157, so its rounding is ~157·32·ε ≈ 6e-4, times the ratio σ_{t'}/σ_t < 1
    assert torch.allclose(e2, sig(t2) / sig(t1) * e1, atol=1e-2)


def test_ddrm_trusts_a_noisy_coefficient_in_proportion_to_its_noise():
    """Kawar et al. eq. 8, middle case with η = 0: while σ_{t'} < σ_y/s_i the observed coefficient is
    x̄_θ + σ_{t'} (ȳ_i - x̄_θ)/(σ_y/s_i). An operator with s_i s_j = 0.01 and σ_y = 0.1 puts σ_y/s at 10,
    so at t = 222 (σ ≈ 0.8) the network's input deviates from the oracle's x0 by σ_t/10 (ȳ - x̄0)."""
    raw, _ = _digits()
    x0 = D.to_model_space(raw)
    noisy = (raw + 0.3 * torch.randn(raw.shape, generator=torch.Generator().manual_seed(6))).clamp(0, 1)
    A = torch.zeros(4, 32, dtype=torch.float64)
    A[:, 14:18] = 0.1 * torch.eye(4, dtype=torch.float64)
    op = D.SeparableOperator(A)

    class Rec(Oracle):
        def __init__(self, x0):
            super().__init__(x0)
            self.inputs = {}

        def forward(self, x, t, class_labels=None):
            self.inputs[int(t[0])] = x.clone()
            return super().forward(x, t, class_labels)

    m = Rec(x0)
    D.ddrm_restore(m, noisy, sigma_y=0.1, operator=op, n_steps=10, eta=0.0, seed=0)
    abar = D.scheduler().alphas_cumprod.double()
    t = 222
    assert t in m.inputs
    sigma_t = float(((1 - abar[t]) / abar[t]).sqrt())
    s = op.singular_values()
    meas = s > 0
    level = 0.1 / s[meas]
    assert sigma_t < float(level.min())  # the middle case of eq. 8 applies
    ybar = op.y_bar(op.forward(D.to_model_space(noisy)[:, 0]))
    e = op.Vt(m.inputs[t][:, 0] / float(abar[t].sqrt()) - x0[:, 0])
    expected = sigma_t / level * (ybar - op.Vt(x0[:, 0]))[:, meas]
    assert torch.allclose(e[:, meas], expected, atol=1e-3)  # float32 rounding of O(1) values


def test_ddrm_partial_eta_b_is_not_consistent(tiny):
    """The check above can fail: with η_b < 1 the measured coefficients mix in the model's guess."""
    raw, _ = _digits()
    res = D.ddrm_restore(tiny, raw, sigma_y=0.0, n_steps=4, eta_b=0.5, seed=0)
    op = D.upsampler_operator()
    assert (op.forward(res.x0[:, 0]) - res.measurement).abs().max() > 1e-2


def test_ddrm_with_an_exact_prior_returns_the_truth():
    """Exact prior + noiseless measurement of that image: x̄_θ = x̄0 at every step, the measured
    coefficients end at ȳ = x̄0 and the null-space ones at x̄_θ, so DDRM returns x0 (any η)."""
    raw, _ = _digits()
    x0 = D.to_model_space(raw)
    res = D.ddrm_restore(Oracle(x0), raw, sigma_y=0.0, n_steps=5, eta=0.85, seed=3)
    assert torch.allclose(res.x0, x0, atol=1e-3)


def test_ddrm_noisy_measurement_trusts_the_prior_in_small_singular_values():
    """σ_y > 0 with an exact prior for x0 but a measurement of x0 + noise: DDRM keeps the
    coefficients whose noise σ_y/s_i exceeds σ' close to the prior (eq. 8, middle case), so the
    result is nearer to x0 than the measurement's own least-squares image."""
    raw, _ = _digits()
    x0 = D.to_model_space(raw)
    noisy = (raw + 0.2 * torch.randn(raw.shape, generator=torch.Generator().manual_seed(4))).clamp(0, 1)
    res = D.ddrm_restore(Oracle(x0), noisy, sigma_y=0.4, n_steps=10, eta=0.85, seed=3)
    assert (res.x0 - x0).pow(2).mean() < 0.5 * (D.to_model_space(noisy) - x0).pow(2).mean()


def test_estimate_sigma_y():
    raw, _ = _digits()
    assert D.estimate_sigma_y(raw, raw) == 0.0
    noisy = raw + 0.1
    # a constant offset 0.1 (pixel scale) is 0.2 in model scale and H keeps constants (rows of B⁺ sum to 1)
    assert math.isclose(D.estimate_sigma_y(noisy, raw), 0.2, rel_tol=1e-4)


# ---- training and safe loading -------------------------------------------------------------------------
def test_train_ddpm_loss_falls():
    """An untrained ε-predictor scores about E‖ε‖² = 1 per pixel; a few steps on 64 images lower it."""
    X = _digits(64, seed=5)[0]
    res = D.train_ddpm(X, torch.arange(64) % 10, steps=40, batch_size=16, lr=1e-2, seed=0, config=TINY, log_every=10)
    assert len(res.losses) == 4 and res.settings["steps_done"] == 40
    assert res.losses[-1] < res.losses[0]


def test_save_and_safe_load_roundtrip_and_corruption(tmp_path, tiny):
    path = tmp_path / "m.safetensors"
    rec = D.save_ddpm(tiny, path, {"command": "test", "seed": 0})
    assert json.loads(path.with_suffix(".json").read_text())["sha256"] == D.sha256_file(path) == rec["sha256"]
    # the architecture in the record must be the one saved; save_ddpm records the tiny config
    cfg = {**D.ddpm_config(), **{k: tuple(v) if isinstance(v, list) else v for k, v in rec["config"].items()}}
    assert cfg["block_out_channels"] == TINY["block_out_channels"]
    model, record = D.load_ddpm(path)
    for (k, a), (_, b) in zip(tiny.state_dict().items(), model.state_dict().items()):
        assert torch.equal(a, b), k
    # one flipped byte: the hash no longer matches
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="SHA-256"):
        D.load_ddpm(path)
    # a pickle with a matching hash is still refused: safetensors never unpickles
    torch.save(tiny.state_dict(), path)
    with pytest.raises(ValueError, match="safetensors"):
        D.load_ddpm(path, sha256=D.sha256_file(path))


def test_committed_weights_load_with_their_hash():
    path = D.weights_path()
    if not path.is_file():
        pytest.skip("the committed weights are absent")
    model, record = D.load_ddpm()
    assert record["sha256"] == D.sha256_file(path)
    assert record["seed"] == 0 and record["steps"] >= 1 and "train_ddpm" in record["command"]
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in D.build_unet().parameters())


def test_train_command_records_its_provenance(tmp_path):
    from flbook.experiments import train_ddpm

    with pytest.raises(SystemExit) as e:
        train_ddpm.main(["--steps", "-1"])
    assert e.value.code != 0
    try:
        train_ddpm.load_mnist_train_20k(4)
    except FileNotFoundError:
        pytest.skip("the 20k MNIST training subset is not in the data directory")
    out = tmp_path / "w.safetensors"
    rec = train_ddpm.main(["--steps", "2", "--n-images", "8", "--batch-size", "4", "--out", str(out)])
    saved = json.loads(out.with_suffix(".json").read_text())
    assert saved["sha256"] == D.sha256_file(out) == rec["sha256"]
    assert saved["steps"] == 2 and saved["seed"] == 0 and saved["data"]["n_images"] == 8
    assert "train_ddpm" in saved["command"] and saved["seconds"] >= 0


# ---- the controlled experiments of Fig. 7 (simulate_raw, lpips_digits, ledger.wilson's Fig. 7 rules) -------------
@pytest.mark.parametrize("low", [14, 7])
def test_simulate_raw_is_the_bicubic_image_of_the_measurement(low):
    """σ_y = 0: the raw image is B (Hx) Bᵀ, so H r = H x exactly (B⁺B = I); σ_y > 0 adds N(0, σ_y²) to the dummy."""
    x, _ = _digits(4, seed=7)
    op = D.upsampler_operator(low=low)
    y = op.forward(D.to_model_space(x)[:, 0])
    raw = D.simulate_raw(x, low=low)
    assert raw.shape == x.shape
    assert torch.allclose(raw, (decode_dummy(y.unsqueeze(1), (1, 28, 28)) + 1) / 2, atol=1e-6)
    assert (op.forward(D.to_model_space(raw)[:, 0]) - y).abs().max() < 1e-4  # float32 products of 32x32 matrices
    noisy = D.simulate_raw(x, low=low, sigma_y=0.5, seed=3)
    resid = op.forward(D.to_model_space(noisy)[:, 0]) - y
    # 4·low² independent N(0, 0.25) draws: the sample sd is 0.5 within 5 standard errors 0.5/√(2·4·low²)
    assert abs(resid.std().item() - 0.5) < 5 * 0.5 / math.sqrt(8 * low ** 2)
    assert torch.equal(noisy, D.simulate_raw(x, low=low, sigma_y=0.5, seed=3))


def test_simulate_raw_rejects_bad_input():
    x, _ = _digits(2)
    with pytest.raises(ValueError, match="low must divide 28"):
        D.simulate_raw(x, low=5)
    with pytest.raises(ValueError, match="28, 28"):
        D.simulate_raw(torch.zeros(2, 1, 32, 32))
    with pytest.raises(ValueError, match="sigma_y"):
        D.simulate_raw(x, sigma_y=-0.1)


def test_lpips_digits_resizes_and_pairs():
    from flprivacy.lpips import lpips
    import torch.nn.functional as F

    x, _ = _digits(3, seed=1)
    y, _ = _digits(3, seed=2)
    assert torch.equal(D.lpips_digits(x, x), torch.zeros(3))
    up = lambda a: F.interpolate(a, size=64, mode="bilinear", align_corners=False).clamp(0, 1)  # noqa: E731
    assert torch.allclose(D.lpips_digits(x, y), lpips(up(x), up(y)).float())
    assert (D.lpips_digits(x, y) > 0).all()
    with pytest.raises(ValueError, match="paired"):
        D.lpips_digits(x, y[:2])


def test_fig7_verdict_reads_the_papers_claim():
    from flbook.ledger import wilson as W

    assert W.lpips_gain(0.4, 0.3) == pytest.approx(25.0)
    assert W.fig7_verdict(0.4, 0.3).status == "reproduced"  # 25%: inside 20-30%
    assert W.fig7_verdict(0.4, 0.32).status == "reproduced"  # 20%: the range's edge
    assert W.fig7_verdict(0.4, 0.2).status == "partly"  # 50%: the direction, not the size
    assert W.fig7_verdict(0.4, 0.268).status == "partly"  # 33%: just above the range
    assert W.fig7_verdict(0.4, 0.332).status == "partly"  # 17%: just below it
    assert W.fig7_verdict(0.4, 0.45).status == "not reproduced"  # worse


def _diag_record():
    def sc(s, l, own=None):
        return dict(ssim=s, psnr=10.0, lpips=l, ssim_peers=s - 0.01, psnr_peers=10.0, lpips_peers=l + 0.01)

    prior = [dict(seed=sd, factor=f, sigma_y=sy, bicubic=dict(ssim=0.5, psnr=15.0, lpips=0.4),
                  ddrm=dict(ssim=0.7 + sd / 10, psnr=17.0, lpips=0.1)) for sd in (0, 1) for f in (2, 4) for sy in (0.0, 0.05)]
    attack = [dict(factor=f, K=K, raw=sc(0.4, 0.4), ddrm_estimated=sc(0.38, 0.2), ddrm_picked=sc(0.39, 0.25),
                   sigma_estimated=0.5, sweep=[dict(sigma_y=0.0, **sc(0.395, 0.3)), dict(sigma_y=0.4, **sc(0.37, 0.2))])
              for f in (2, 4) for K in (2, 4)]
    return dict(name="diffusion_diagnostics", scale="quick", data=dict(prior=prior, attack=attack))


def test_diagnostics_numbers_average_over_seeds_and_cases():
    from flbook.ledger import wilson as W

    d = W.diagnostics_numbers(_diag_record())
    assert d["prior"][(2, 0.0)]["ddrm"]["ssim"] == pytest.approx(0.75) and d["prior"][(2, 0.0)]["n"] == 2
    a = d["attack"][4]
    assert a["n_cases"] == 2 and a["Ks"] == [2, 4]
    assert a["raw"]["lpips_peers"] == pytest.approx(0.41) and a["sweep"][0.4]["ssim_peers"] == pytest.approx(0.36)


def test_fig7_investigation_rows_and_verdicts():
    from flbook.ledger import wilson as W

    raw = dict(ssim=0.4, psnr=12.0, lpips=0.4, ssim_peers=0.39, lpips_peers=0.41)
    case = dict(K=2, raw=raw, ddrm=dict(raw, ssim=0.38, lpips=0.3), mde_picked=raw, mde_last=raw,
                mde_curve=dict(scores=[dict(ssim_peers=0.1), dict(ssim_peers=0.3)]))
    rows = W.fig7_investigation(dict(data=dict(cases=[case])), _diag_record())
    assert len(rows) == 1 + 4 + 2 * 3
    first = rows[0]
    assert first["Fig. 7 in LPIPS"].status == "reproduced" and first["SSIM"].status == "not reproduced"
    best = [r for r in rows if "the best for SSIM" in r["what we changed"]][0]
    assert best["after"] == "DDRM, σ_y = 0" and best["SSIM after"] == pytest.approx(0.385)  # peers' SSIM of σ_y = 0
    prior = [r for r in rows if "prior alone" in r["what we changed"]]
    assert all(r["SSIM"].status == "reproduced" for r in prior)
