"""Plausible bugs in the diffusion post-processing (Wilson et al. 2025 §3.2-3.3; DDRM, Kawar et al.
2022; DDIM, Song et al. 2021).

Run from the repository root:

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/diffusion.py --json /tmp/diffusion_mut.json

Each mutant breaks one equation's constant, sign, normalisation or step; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

DIF = "src/flprivacy/diffusion.py"
WIL = "src/flbook/ledger/wilson.py"

TESTS = pytest_command("tests/test_ddrm_closed_form.py", "tests/test_diffusion.py")

MUTANTS = [
    # ---- the measurement operator H = (B⁺C) ⊗ (B⁺C) ------------------------------------------------
    Mutant("operator_transpose_not_pinv", DIF, "SeparableOperator(torch.linalg.pinv(B) @ crop)",
           "SeparableOperator(B.T @ crop)", "H: the adjoint of the upsampler instead of its pseudo-inverse"),
    Mutant("operator_crop_offset", DIF, "crop[:, pad: pad + high] = torch.eye", "crop[:, 0: high] = torch.eye",
           "H: the model's 2-pixel border not removed symmetrically"),
    Mutant("bicubic_align_corners", DIF, 'mode="bicubic", align_corners=False)\n    return cols',
           'mode="bicubic", align_corners=True)\n    return cols', "B: not the attack's upsampler grid"),
    Mutant("svd_V_not_transposed", DIF, "s.float(), Vh.T.contiguous().float()",
           "s.float(), Vh.contiguous().float()", "SVD: V taken as Vᵀ"),
    Mutant("ybar_multiplies_sigma", DIF, "out[..., : self.m, : self.m] = uy / (self.s[:, None] * self.s[None, :])",
           "out[..., : self.m, : self.m] = uy * (self.s[:, None] * self.s[None, :])", "ȳ = Σ⁺Uᵀy: Σ instead of Σ⁺"),
    # ---- DDRM (Kawar et al. eq. 7-8) ----------------------------------------------------------------
    Mutant("ddrm_vp_sigma", DIF, "sig = lambda t: float(((1 - abar[t]) / abar[t]).sqrt()) if t >= 0 else 0.0",
           "sig = lambda t: float((1 - abar[t]).sqrt()) if t >= 0 else 0.0",
           "σ_t of the variance-exploding form replaced by the DDPM's √(1-ᾱ_t)"),
    Mutant("ddrm_x0_prediction_unscaled", DIF, "x0 = x_ve - st * eps", "x0 = x_ve - eps",
           "x_θ,t = x_t - σ_t ε_θ: noise prediction not scaled by σ_t"),
    Mutant("ddrm_no_vp_conversion", DIF, "x_vp = (abar[t].sqrt().float().to(dev) * x_ve).unsqueeze(1)",
           "x_vp = (x_ve).unsqueeze(1)", "the network is fed x_t^VE instead of √ᾱ_t x_t^VE"),
    Mutant("ddrm_null_direction_sign", DIF, "(xbar - x0bar) / st + eta * sn * z",
           "(x0bar - xbar) / st + eta * sn * z", "eq. 7 (s_i = 0): direction toward x_t flipped"),
    Mutant("ddrm_above_uses_prior", DIF, "above = (1 - eta_b) * x0bar + eta_b * ybar",
           "above = (1 - eta_b) * x0bar + eta_b * x0bar", "eq. 8 (σ' ≥ σ_y/s_i): the measurement ȳ dropped"),
    Mutant("ddrm_regime_flipped", DIF, "torch.where(sn < noise_level, below, above)",
           "torch.where(sn > noise_level, below, above)", "eq. 8: the two observed regimes swapped"),
    Mutant("ddrm_noise_level_times_s", DIF, "noise_level = torch.where(pos, sigma_y / s_safe,",
           "noise_level = torch.where(pos, sigma_y * s_safe,", "σ_y / s_i: multiplied by the singular value"),
    Mutant("ddrm_last_step_noisy", DIF, "t_next = ts[i + 1] if i + 1 < len(ts) else -1",
           "t_next = ts[i + 1] if i + 1 < len(ts) else 0", "the last step must reach σ = 0, not σ_0"),
    Mutant("ddrm_above_noise_without_eta_b", DIF, "(sn ** 2 - noise_level ** 2 * eta_b ** 2).clamp(min=0)",
           "(sn ** 2 - noise_level ** 2).clamp(min=0)", "eq. 8 (σ' ≥ σ_y/s_i): variance σ'² - σ_y²/s_i², η_b² dropped"),
    Mutant("ddrm_init_null_unit_noise", DIF, "sT * randn(ybar.shape))",
           "randn(ybar.shape))", "§3.3 init: null space drawn N(0, 1) instead of N(0, σ_T²)"),
    Mutant("ddrm_init_measured_ignores_sigma_y", DIF, "ybar + (sT ** 2 - noise_level ** 2).clamp(min=0).sqrt()",
           "ybar + (sT ** 2).sqrt()", "§3.3 init: variance σ_T² instead of σ_T² - σ_y²/s_i²"),
    Mutant("ddrm_null_coefficient_one_minus_eta", DIF, "null = x0bar + math.sqrt(1 - eta ** 2) * sn",
           "null = x0bar + (1 - eta) * sn", "eq. 7: √(1-η²) replaced by 1-η"),
    Mutant("ddrm_below_noise_without_eta", DIF, "/ noise_level.clamp(min=1e-12) + eta * sn * z",
           "/ noise_level.clamp(min=1e-12) + sn * z", "eq. 8 (σ' < σ_y/s_i): noise σ' instead of ησ'"),
    Mutant("ddrm_below_toward_xbar", DIF, "* sn * (ybar - x0bar) / noise_level", "* sn * (xbar - x0bar) / noise_level",
           "eq. 8 (σ' < σ_y/s_i): direction toward x̄_t instead of ȳ"),
    Mutant("ddrm_next_level_is_current", DIF, "st, sn = sig(t), sig(t_next)", "st, sn = sig(t), sig(t)",
           "the step's target level σ' = σ_t: no denoising"),
    Mutant("ddrm_drops_labels", DIF, "eps = _eps(model, x_vp, t, c)[:, 0]",
           "eps = _eps(model, x_vp, t, torch.full_like(c, NULL_CLASS))[:, 0]", "DDRM ignores the attack's class labels"),
    # ---- DDIM sampler and MDE (eq. 4) ----------------------------------------------------------------
    Mutant("ddim_renoise_with_current_level", DIF, "x = a_next.sqrt() * x0 + (1 - a_next).sqrt() * eps",
           "x = a_next.sqrt() * x0 + (1 - a).sqrt() * eps", "DDIM: re-noised with the current level"),
    Mutant("ddim_x0_divides_by_abar", DIF, "x0 = (x - (1 - a).sqrt() * eps) / a.sqrt()",
           "x0 = (x - (1 - a).sqrt() * eps) / a", "DDIM: x̂_0 divided by ᾱ_t instead of √ᾱ_t"),
    Mutant("ddim_no_gradient", DIF, "return x if grad else x.detach()", "return x.detach()",
           "MDE: the sampler's output detached from X_T"),
    Mutant("mde_drops_labels", DIF, 'c = _labels(labels, raw.shape[0], "mde", dev)', 'c = _labels(None, raw.shape[0], "mde", dev)',
           "MDE samples unconditionally: not 'a random image from the target class' (Wilson §3.3)"),
    Mutant("ddim_drops_labels", DIF, "eps = _eps(model, x.detach(), t, c)",
           "eps = _eps(model, x.detach(), t, torch.full_like(c, NULL_CLASS))", "the DDIM sampler ignores its labels"),
    Mutant("eps_labels_not_passed", DIF, "class_labels=labels[i:i + batch]).sample", "class_labels=None).sample",
           "the network is never given the class"),
    Mutant("default_label_not_null", DIF, "return torch.full((n,), NULL_CLASS, dtype=torch.long, device=device)",
           "return torch.full((n,), 0, dtype=torch.long, device=device)", "no labels: class 0 instead of the unconditional class"),
    Mutant("mde_loss_sign", DIF, "loss = (out - target).pow(2).flatten(1).sum(1).mean()",
           "loss = (out + target).pow(2).flatten(1).sum(1).mean()", "eq. 4: ‖μ - X̂‖² with X̂'s sign flipped"),
    Mutant("mde_ascends", DIF, "        loss.backward()\n        opt.step()\n    return MDEResult",
           "        (-loss).backward()\n        opt.step()\n    return MDEResult", "eq. 4: gradient ascent"),
    # ---- model space and σ_y -------------------------------------------------------------------------
    Mutant("model_space_unpadded_left", DIF, "images = F.pad(images, (PAD,) * 4)",
           "images = F.pad(images, (0, 2 * PAD, 0, 2 * PAD))", "28x28 → 32x32: padded on one side"),
    Mutant("from_model_space_scale", DIF, "out = ((x + 1) / 2).clamp(0, 1)", "out = (x + 1).clamp(0, 1)",
           "[-1, 1] → [0, 1] without the factor 1/2"),
    Mutant("sigma_y_variance", DIF, "return float(r.pow(2).mean().sqrt())", "return float(r.pow(2).mean())",
           "σ_y: the variance instead of the standard deviation"),
    Mutant("safe_load_skips_hash", "src/flprivacy/weights.py", "    if expected != actual:\n        raise ValueError",
           "    if False:\n        raise ValueError", "safe loading (flprivacy.weights): the SHA-256 check skipped"),
    # ---- Fig. 7's controlled experiments: simulated measurements, LPIPS, the ledger's rules -----------------
    Mutant("simulate_raw_no_noise", DIF, "y = y + sigma_y * torch.randn(y.shape, generator=make_generator(seed))",
           "y = y + 0 * torch.randn(y.shape, generator=make_generator(seed))", "simulate_raw: σ_y ignored"),
    Mutant("simulate_raw_default_operator", DIF, "y = upsampler_operator(low=low).forward(", "y = upsampler_operator().forward(",
           "simulate_raw: the x2 measurement whatever the dummy size"),
    Mutant("simulate_raw_bilinear", DIF, 'size=(IMAGE_SIZE - 2 * PAD,) * 2, mode="bicubic"',
           'size=(IMAGE_SIZE - 2 * PAD,) * 2, mode="bilinear"', "simulate_raw: not the attack's bicubic upsampler"),
    Mutant("simulate_raw_model_scale", DIF, "    return (raw + 1) / 2\n", "    return raw\n",
           "simulate_raw: returns [-1, 1] model-scale images"),
    Mutant("lpips_digits_32", DIF, 'F.interpolate(x.clamp(0, 1), size=64, mode="bilinear"',
           'F.interpolate(x.clamp(0, 1), size=32, mode="bilinear"', "LPIPS of digits at 32x32, not the heads' 64x64"),
    Mutant("lpips_gain_over_post", WIL, "return (raw - post) / raw * 100", "return (raw - post) / post * 100",
           "Fig. 7's gain relative to the post-processed LPIPS"),
    Mutant("fig7_tolerance_doubled", WIL, "tol=(hi - lo) / 2, what=", "tol=hi - lo, what=",
           "Fig. 7's 20-30% read as 15-35%"),
    Mutant("fig7_centre_low", WIL, "number((lo + hi) / 2, gain,", "number(lo, gain,", "Fig. 7's range centred on 20%"),
    Mutant("fig7_direction_flipped", WIL, "sign(raw_lpips - post_lpips, what=", "sign(post_lpips - raw_lpips, what=",
           "Fig. 7: higher LPIPS counted as better"),
    Mutant("investigation_best_is_worst", WIL, "best = max(v[\"sweep\"], key=", "best = min(v[\"sweep\"], key=",
           "the σ_y sweep's best for SSIM taken as its worst"),
    Mutant("investigation_all_images", WIL, 'v["raw"], v["sweep"][best], "_peers")', 'v["raw"], v["sweep"][best])',
           "the sweep's row scored on all images, not the peers'"),
    Mutant("diagnostics_prior_one_seed", WIL, "groups.setdefault((p[\"factor\"], p[\"sigma_y\"]), []).append(p)",
           "groups[(p[\"factor\"], p[\"sigma_y\"])] = [p]", "the prior rows keep the last seed only"),

]
