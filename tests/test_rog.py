"""ROG's GAN post-processor (Yue et al. 2023; flprivacy.rog), the baseline of Wilson et al.'s Fig. 8 / Fig. 15.

Fast: shapes and ranges, determinism by seed, the weights' checksum, bad inputs, and one check that
the committed generator restores held-out digits better than their degraded inputs.
"""

from __future__ import annotations

import json

import pytest
import torch

from flprivacy import rog as R
from flprivacy.config import generator
from flprivacy.metrics import quality


def _digits(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Stroke-like images in [0, 1]: a bright random bar on black, labels 0..9."""
    g = generator(seed)
    x = torch.zeros(n, 1, 28, 28)
    for i in range(n):
        r, c = torch.randint(4, 20, (2,), generator=g).tolist()
        x[i, 0, r:r + 6, c:c + 3] = 1.0
    return x, torch.arange(n) % 10


def test_generator_and_discriminator_shapes():
    G, Dn = R.RogGenerator(**R.rog_config()).eval(), R.PatchDiscriminator(**R.rog_config()).eval()
    x = torch.rand(3, 1, 32, 32)
    out = G(x, torch.tensor([0, 5, 9]))
    assert out.shape == (3, 1, 32, 32)
    assert out.min() >= 0 and out.max() <= 1  # (tanh + 1) / 2
    p = Dn(x)
    assert p.shape == (3, 1, 8, 8) and p.min() >= 0 and p.max() <= 1  # sigmoid per patch of an 8x8 grid


def test_last_convolution_sees_the_input_image():
    """ROG's ``Ccgenerator`` ends with its outermost skip: the last convolution reads the decoder's
    features concatenated with the input image itself, ``conv9(cat(d, x))``, so that the network
    only has to learn a correction of its input. The input's channels enter it unchanged."""
    G = R.RogGenerator(**R.rog_config()).eval()
    seen = []
    G.conv9.register_forward_pre_hook(lambda module, args: seen.append(args[0].detach().clone()))
    x = torch.rand(2, 1, 32, 32)
    G(x, torch.tensor([1, 7]))
    (inp,) = seen
    assert inp.shape == (2, G.conv9.in_channels, 32, 32)
    assert torch.equal(inp[:, -x.shape[1]:], x)


def test_class_conditional_norm_uses_the_label():
    G = R.RogGenerator(**R.rog_config()).eval()
    with torch.no_grad():
        G.conv5.norm.gain.weight[3] += 1.0  # only class 3 changes
    x = torch.rand(1, 1, 32, 32)
    a, b, c = G(x, torch.tensor([2])), G(x, torch.tensor([3])), G(x, torch.tensor([4]))
    assert torch.equal(a, c) and not torch.allclose(a, b)


def test_degrade_shapes_range_and_noise_free_limit():
    x, _ = _digits(4)
    r = R.degrade(x, sigma_max=0.5, seed=1)
    assert r.shape == (4, 1, 28, 28) and r.min() >= 0 and r.max() <= 1
    assert torch.equal(r, R.degrade(x, sigma_max=0.5, seed=1))  # same seed, same noise
    assert not torch.equal(r, R.degrade(x, sigma_max=0.5, seed=2))
    # sigma_max = 0: the bicubic image of the least-squares 14x14 dummy, which keeps a 6x3 bar blurred
    # but close: its error is below the error of an all-black guess
    r0 = R.degrade(x, sigma_max=0.0, seed=1)
    assert (r0 - x).pow(2).mean() < x.pow(2).mean()


def test_degrade_draws_one_noise_level_per_image():
    """σ ~ U(0, σ_max) per image: on 64 copies of one digit the per-image RMS of the noise (the
    difference to the noise-free image) varies like σ, whose coefficient of variation is
    1/√3 ≈ 0.58 for a uniform law; with one σ for all it would vary only by sampling (196 dummy
    pixels: about 1/√(2·196) ≈ 0.05). Clipping to [0, 1] shrinks both; 0.3 separates them."""
    x, _ = _digits(1)
    x = x.repeat(64, 1, 1, 1)
    rms = (R.degrade(x, sigma_max=0.6, seed=3) - R.degrade(x, sigma_max=0.0, seed=3)).flatten(1).pow(2).mean(1).sqrt()
    assert rms.std() / rms.mean() > 0.3


def test_training_lowers_the_l1_term():
    """30 steps at a large rate on 64 bars: the generator's L1 distance to the clean images (mean
    of the last 10 steps) falls below its first 10 steps' (it starts near 0.5: tanh of small
    outputs gives grey 0.5 on black images)."""
    x, y = _digits(64)
    t = R.train_rog(x, y, steps=30, batch_size=8, lr=2e-3, seed=0, log_every=10)
    assert t.losses["g_l1"][-1] < t.losses["g_l1"][0]


def test_initialisation_follows_the_seed():
    # at a negligible rate the weights stay at their initialisation, which must differ by seed
    x, y = _digits(8)
    a = R.train_rog(x, y, steps=1, batch_size=4, lr=1e-30, seed=5).generator
    b = R.train_rog(x, y, steps=1, batch_size=4, lr=1e-30, seed=6).generator
    assert not torch.equal(a.conv1.conv.weight, b.conv1.conv.weight)


def test_training_is_deterministic_by_seed():
    x, y = _digits(16)
    a = R.train_rog(x, y, steps=3, batch_size=4, seed=5, log_every=1)
    b = R.train_rog(x, y, steps=3, batch_size=4, seed=5, log_every=1)
    c = R.train_rog(x, y, steps=3, batch_size=4, seed=6, log_every=1)
    sa, sb, sc = (t.generator.state_dict() for t in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert any(not torch.equal(sa[k], sc[k]) for k in sa)
    assert a.settings["steps_done"] == 3 and len(a.losses["g_l1"]) == 3
    assert not a.generator.training


def test_postprocess_shape_order_and_range():
    G = R.RogGenerator(**R.rog_config())
    raw = torch.rand(5, 1, 28, 28) * 1.4 - 0.2  # raw reconstructions are not clipped
    labels = torch.tensor([1, 2, 3, 4, 5])
    out = R.rog_postprocess(G, raw, labels, batch=2)
    assert out.shape == (5, 1, 28, 28) and torch.isfinite(out).all() and out.min() >= 0 and out.max() <= 1
    # batching and order: image i's output does not depend on the others (eval mode, running statistics)
    one = R.rog_postprocess(G, raw[3:4], labels[3:4])
    assert torch.allclose(out[3:4], one, atol=1e-6)


def test_save_load_roundtrip_and_checksum(tmp_path):
    x, y = _digits(8)
    t = R.train_rog(x, y, steps=2, batch_size=4, seed=0)
    path = tmp_path / "g.safetensors"
    rec = R.save_rog(t.generator, path, {"command": "test", "settings": t.settings})
    G, record = R.load_rog(path)
    assert record["sha256"] == rec["sha256"] == R.sha256_file(path)
    raw = torch.rand(2, 1, 28, 28)
    assert torch.equal(R.rog_postprocess(G, raw, torch.tensor([0, 1])),
                       R.rog_postprocess(t.generator, raw, torch.tensor([0, 1])))
    with pytest.raises(ValueError, match="SHA-256"):
        R.load_rog(path, sha256="0" * 64)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1  # one flipped bit in the stored tensors
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256.*corrupt"):
        R.load_rog(path)
    with pytest.raises(FileNotFoundError, match="train_rog"):
        R.load_rog(tmp_path / "missing.safetensors")
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["command"] == "test"


def test_bad_inputs_name_the_argument():
    G = R.RogGenerator(**R.rog_config())
    with pytest.raises(ValueError, match="labels"):
        R.rog_postprocess(G, torch.rand(2, 1, 28, 28), torch.tensor([0, 10]))
    with pytest.raises(ValueError, match="raw"):
        R.rog_postprocess(G, torch.rand(2, 1, 32, 32), torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="generator"):
        R.rog_postprocess(torch.nn.Identity(), torch.rand(2, 1, 28, 28), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="low"):
        R.degrade(torch.rand(2, 1, 28, 28), low=5)
    with pytest.raises(ValueError, match="steps"):
        R.train_rog(*_digits(4), steps=0)
    with pytest.raises(ValueError, match="images"):
        R.train_rog(torch.full((4, 1, 28, 28), float("nan")), torch.zeros(4, dtype=torch.long), steps=1)


def test_committed_generator_restores_held_out_digits():
    """The committed weights (trained on MNIST *training* digits) on 128 MNIST *test* digits,
    degraded as in training (σ up to 0.6 on the 14x14 dummy): the per-image squared error to the
    truth falls. Bound: if the generator did not help, the mean paired difference would be 0 and
    the test statistic mean / standard error of 128 paired differences would be about N(0, 1), so
    requiring it above 4 passes by chance with probability below 4e-5."""
    pytest.importorskip("safetensors")
    if not R.weights_path().is_file():
        pytest.skip("committed ROG weights not present")
    from flprivacy.data import load_mnist

    G, record = R.load_rog()
    X, y = load_mnist("test")
    pick = torch.randperm(X.shape[0], generator=generator(11))[:128]
    truth, labels = X[pick], y[pick]
    raw = R.degrade(truth, sigma_max=record["settings"]["sigma_max"], seed=12)
    out = R.rog_postprocess(G, raw, labels)
    d = (raw - truth).pow(2).flatten(1).mean(1) - (out - truth).pow(2).flatten(1).mean(1)
    assert d.mean() > 4 * d.std() / len(d) ** 0.5
    gain = quality(out, truth, match=False).ssim - quality(raw, truth, match=False).ssim
    assert gain.mean() > 4 * gain.std() / len(gain) ** 0.5  # same argument in SSIM


def test_committed_weights_record():
    if not R.weights_path().is_file():
        pytest.skip("committed ROG weights not present")
    G, record = R.load_rog()
    assert record["sha256"] == R.sha256_file(R.weights_path())
    assert record["seed"] == 0 and record["steps"] >= 1 and "train_rog" in record["command"]
    assert record["data"]["name"].startswith("MNIST training")  # disjoint from the attacked MNIST test digits


def test_train_command_records_its_provenance(tmp_path):
    from flbook.experiments import train_ddpm, train_rog

    with pytest.raises(SystemExit) as e:
        train_rog.main(["--steps", "-1"])
    assert e.value.code != 0
    try:
        train_ddpm.load_mnist_train_20k(4)
    except FileNotFoundError:
        pytest.skip("the 20k MNIST training subset is not in the data directory")
    out = tmp_path / "g.safetensors"
    rec = train_rog.main(["--steps", "2", "--n-images", "8", "--batch-size", "4", "--out", str(out)])
    saved = json.loads(out.with_suffix(".json").read_text())
    assert saved["sha256"] == R.sha256_file(out) == rec["sha256"]
    assert saved["steps"] == 2 and saved["seed"] == 0 and saved["data"]["n_images"] == 8
    assert "train_rog" in saved["command"]


# ---- the ledger's rules for Fig. 8 and Fig. 15 (flbook.ledger.wilson_rog) ----------------------------------
def _record(ddrm: dict, rog: dict, Ks=(2, 4), jitter=(0.0, 0.002)) -> dict:
    """Two seeds per K; the second seed's DDRM scores shifted by ``jitter[1]`` (case-to-case noise)."""
    raw = dict(ssim=0.4, psnr=12.0, lpips=0.3, recognised=0.7)
    return {"data": {"cases": [dict(K=K, raw=raw, ddrm={k: v + j for k, v in ddrm.items()}, rog=rog)
                               for K in Ks for j in jitter]}}


def test_ledger_rules_read_the_claims_as_stated():
    from flbook.ledger import wilson_rog as WR

    paper_like = _record(dict(ssim=0.40, psnr=13.0, lpips=0.20, recognised=0.9),
                         dict(ssim=0.42, psnr=13.5, lpips=0.15, recognised=0.8))
    assert WR.fig8_verdict(paper_like).ok
    assert WR.app_g_verdict(paper_like).ok
    # DDRM better in LPIPS (the opposite of the paper), SSIM gap 0.1 > COMPARABLE_SSIM
    opposite = _record(dict(ssim=0.30, psnr=13.0, lpips=0.10, recognised=0.9),
                       dict(ssim=0.40, psnr=13.5, lpips=0.25, recognised=0.8))
    v8, vg = WR.fig8_verdict(opposite), WR.app_g_verdict(opposite)
    assert v8.status == "partly" and "LPIPS" in v8.reason
    assert vg.status == "not reproduced" and "K = 2" in vg.reason and "SSIM" in vg.reason
    assert WR.per_k(paper_like)[4]["rog"]["lpips"] == 0.15
    # a difference inside the seed noise does not count: LPIPS gap 0.01 with seeds 0.1 apart
    noisy = _record(dict(ssim=0.40, psnr=13.0, lpips=0.16, recognised=0.9),
                    dict(ssim=0.42, psnr=13.5, lpips=0.15, recognised=0.8), jitter=(-0.05, 0.05))
    v = WR.fig8_verdict(noisy)
    assert v.status == "partly" and "LPIPS" in v.reason
    assert WR.noise_margin([0.1]) == 0.0 and abs(WR.noise_margin([0.0, 0.2]) - 0.2) < 1e-12
