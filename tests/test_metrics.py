"""Image quality metrics and the Hungarian matching of reconstructions to ground truth."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from flprivacy.metrics import match_images, mse, psnr, quality, ssim


def images(n=5, c=1, h=8, w=8, seed=0):
    return torch.rand(n, c, h, w, generator=torch.Generator().manual_seed(seed))


def test_mse_and_psnr_closed_form():
    x = torch.zeros(3, 1, 8, 8)
    y = torch.full((3, 1, 8, 8), 0.1)
    torch.testing.assert_close(mse(x, y), torch.full((3,), 0.01, dtype=torch.float64))
    # PSNR = 10 log10(1 / MSE) = 20 dB for MSE = 0.01 and data range 1
    torch.testing.assert_close(psnr(x, y), torch.full((3,), 20.0, dtype=torch.float64))
    assert torch.isinf(psnr(x, x)).all()


def test_ssim_identity_and_range():
    x = images(4, 3, 32, 32)
    torch.testing.assert_close(ssim(x, x), torch.ones(4, dtype=torch.float64))
    noisy = (x + 0.3 * torch.randn(x.shape, generator=torch.Generator().manual_seed(1))).clamp(0, 1)
    s = ssim(noisy, x)
    assert ((s < 0.9) & (s > -1)).all()
    # more noise, lower SSIM
    noisier = (x + 0.6 * torch.randn(x.shape, generator=torch.Generator().manual_seed(2))).clamp(0, 1)
    assert (ssim(noisier, x) < s).all()


def test_ssim_works_on_tiny_images():
    x = images(2, 1, 5, 5)
    torch.testing.assert_close(ssim(x, x), torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="at least 3x3"):
        ssim(images(1, 1, 2, 2), images(1, 1, 2, 2))


def test_ssim_matches_skimage_on_grayscale():
    from skimage.metrics import structural_similarity

    x, y = images(1, 1, 16, 16, 0), images(1, 1, 16, 16, 1)
    ref = structural_similarity(x[0, 0].double().numpy(), y[0, 0].double().numpy(), data_range=1.0)
    assert math.isclose(ssim(x, y).item(), ref, rel_tol=1e-9)


@pytest.mark.parametrize("shape", [(4, 1, 28, 28), (3, 3, 32, 32), (2, 1, 5, 5), (2, 3, 6, 9)])
def test_ssim_is_skimage_per_pair_and_channel_bit_for_bit(shape):
    """The batched SSIM runs scikit-image's operations in its order: the same float64 numbers."""
    from skimage.metrics import structural_similarity

    n, _, h, w = shape
    x, y = images(*shape, 2), images(*shape, 3)
    win = min(7, h, w) - (1 - min(7, h, w) % 2)
    for data_range in (1.0, 2.0):
        ref = torch.tensor([structural_similarity(b.double().numpy(), a.double().numpy(), data_range=data_range,
                                                  channel_axis=0, win_size=win) for a, b in zip(x, y)],
                           dtype=torch.float64)
        assert torch.equal(ssim(x, y, data_range), ref)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=7), st.integers(min_value=0, max_value=10_000))
def test_matching_recovers_any_permutation(n, seed):
    truth = images(n, 1, 6, 6, seed)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    rec = truth[perm] + 0.01 * torch.randn(truth.shape, generator=torch.Generator().manual_seed(seed + 1))
    index = match_images(rec, truth)
    # rec[index[i]] must be truth[i]: index is the inverse permutation
    assert torch.equal(perm[index], torch.arange(n))


def test_matching_is_optimal_against_brute_force():
    truth, rec = images(5, 1, 4, 4, 3), images(5, 1, 4, 4, 4)
    cost = torch.stack([mse(rec[j].expand_as(truth), truth) for j in range(5)], 1)  # (truth, rec)
    best = min(sum(cost[i, p[i]].item() for i in range(5)) for p in itertools.permutations(range(5)))
    index = match_images(rec, truth)
    got = sum(cost[i, index[i]].item() for i in range(5))
    assert math.isclose(got, best, rel_tol=1e-12)


def test_matching_with_more_reconstructions_than_truth():
    truth = images(3, 1, 6, 6, 0)
    rec = torch.cat([images(4, 1, 6, 6, 9), truth.flip(0)])
    index = match_images(rec, truth)
    assert index.tolist() == [6, 5, 4]
    with pytest.raises(ValueError, match="only 3 reconstructions"):
        match_images(truth, rec)


def test_quality_summary_and_errors():
    truth = images(4, 3, 16, 16)
    q = quality(truth.flip(0), truth)
    s = q.summary()
    assert s["mse"] == 0 and s["ssim"] == pytest.approx(1.0) and math.isinf(s["psnr"])
    assert list(q.frame().columns) == ["matched_reconstruction", "mse", "psnr", "ssim"]
    unmatched = quality(truth.flip(0), truth, match=False)
    assert unmatched.summary()["mse"] > 0
    with pytest.raises(ValueError, match="same shape"):
        mse(truth, truth[:, :1])
    with pytest.raises(ValueError, match="4-d"):
        ssim(truth[0], truth[0])


def _ssim_reference(a, b, L=1.0, win=7):
    """SSIM of Wang et al. (2004) written from the paper, as scikit-image's default applies it:
    uniform win x win window, sample (co)variances (÷ (n-1)), C1 = (0.01 L)², C2 = (0.03 L)²,
    averaged over every window position fully inside the image. numpy loops."""
    import numpy as np

    C1, C2 = (0.01 * L) ** 2, (0.03 * L) ** 2
    vals = []
    for i in range(a.shape[0] - win + 1):
        for j in range(a.shape[1] - win + 1):
            x, y = a[i:i + win, j:j + win].ravel(), b[i:i + win, j:j + win].ravel()
            mx, my = x.mean(), y.mean()
            vx, vy = x.var(ddof=1), y.var(ddof=1)
            cxy = ((x - mx) * (y - my)).sum() / (x.size - 1)
            vals.append((2 * mx * my + C1) * (2 * cxy + C2) / ((mx**2 + my**2 + C1) * (vx + vy + C2)))
    return float(np.mean(vals))


def test_ssim_against_wang_et_al_written_out():
    """Grey and colour (mean over channels), data range 1 and 255."""
    x, y = images(1, 3, 12, 12, 5), images(1, 3, 12, 12, 6)
    y = 0.5 * x + 0.5 * y  # correlated, so that every term matters
    ref = sum(_ssim_reference(x[0, c].double().numpy(), y[0, c].double().numpy()) for c in range(3)) / 3
    assert math.isclose(ssim(x, y).item(), ref, rel_tol=1e-9)
    x255, y255 = 255 * x[:, :1].double(), 255 * y[:, :1].double()
    ref255 = _ssim_reference(x255[0, 0].numpy(), y255[0, 0].numpy(), L=255)
    assert math.isclose(ssim(x255, y255, data_range=255).item(), ref255, rel_tol=1e-9)


def test_psnr_with_another_data_range():
    x = torch.zeros(1, 1, 4, 4)
    y = torch.full((1, 1, 4, 4), 25.5)
    # 10 log10(255² / 25.5²) = 20 dB
    torch.testing.assert_close(psnr(x, y, data_range=255.0), torch.tensor([20.0], dtype=torch.float64))


def test_quality_clips_reconstructions_to_the_data_range():
    truth = images(2, 1, 8, 8)
    q = quality(torch.full_like(truth, 3.0), truth, match=False)
    torch.testing.assert_close(q.mse, ((1 - truth.double()) ** 2).flatten(1).mean(1))
