"""DDRM (Kawar et al. 2022, eq. 7-8) and the class conditioning of DDRM and MDE (Wilson et al. 2025
§3.2-3.3) against hand computations.

The closed-form case: H = A ⊗ A with A = [diag(a) | 0], so H is diagonal in pixels (singular value
a_i a_j on the top-left m x m block, zero elsewhere) and V = I, U = I; a fake ε-network that is exact
for one known image x★ makes every x_θ,t = x★. Then each DDRM step is the paper's update written
per pixel, with the same Gaussian draws (the generator seeded as the library seeds it), and the test
recomputes the whole chain in float64 from eq. 7-8 alone.
"""

from __future__ import annotations

import math

import pytest
import torch

from flprivacy import diffusion as D
from flprivacy.config import generator as make_generator

TINY = dict(sample_size=32, in_channels=1, out_channels=1, layers_per_block=1, block_out_channels=(8, 16),
            norm_num_groups=4, num_class_embeds=11, down_block_types=("DownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "UpBlock2D"))


class _Out:
    def __init__(self, sample):
        self.sample = sample


class ExactFor(torch.nn.Module):
    """ε_θ(x, t) = (x - √ᾱ_t x★)/√(1-ᾱ_t): exact for data concentrated on x★; records its calls."""

    def __init__(self, x_star: torch.Tensor):
        super().__init__()
        self.x_star = x_star
        self.abar = D.scheduler().alphas_cumprod
        self.calls, self.inputs = [], []

    def forward(self, x, t, class_labels=None):
        self.calls.append((t.clone(), None if class_labels is None else class_labels.clone()))
        self.inputs.append(x.clone())
        a = self.abar[t].view(-1, 1, 1, 1)
        return _Out((x - a.sqrt() * self.x_star[: x.shape[0]]) / (1 - a).sqrt())


def _setup(n=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    raw = torch.rand(n, 1, 28, 28, generator=g)
    x_star = 0.8 * (2 * torch.rand(n, 1, 32, 32, generator=g) - 1)  # inside [-1, 1]: clipping is inactive
    return raw, x_star


def _hand_ddrm(raw, x_star, a, sigma_y, eta, eta_b, n_steps, seed):
    """Kawar et al. eq. 7-8 per pixel for H = diag(a_i a_j) on the m x m block, V = U = I, x_θ,t = x★."""
    m = len(a)
    abar = D.scheduler().alphas_cumprod.double()
    ts = torch.linspace(999, 0, n_steps).round().long().tolist()  # skip-step schedule T-1 → 0
    sig = [math.sqrt((1 - abar[t]) / abar[t]) for t in ts] + [0.0]  # σ_t (variance-exploding), last σ' = 0
    xr = D.to_model_space(raw)[:, 0].double()
    xs = x_star[:, 0].double()
    s = torch.zeros(32, 32, dtype=torch.float64)
    s[:m, :m] = torch.outer(torch.tensor(a, dtype=torch.float64), torch.tensor(a, dtype=torch.float64))
    meas = s > 0
    ybar = torch.where(meas, xr, torch.zeros_like(xr))  # ȳ = Σ⁻¹Uᵀ H x_raw = x_raw on the block
    lvl = torch.where(meas, sigma_y / torch.where(meas, s, torch.ones_like(s)), torch.zeros_like(s))  # σ_y/s_i
    g = make_generator(seed)
    z_m, z_n = (torch.randn(xr.shape, generator=g).double() for _ in range(2))
    # §3.3 initialisation: x̄_T ~ N(ȳ, σ_T² - σ_y²/s_i²) (measured), N(0, σ_T²) (null space)
    x = torch.where(meas, ybar + (sig[0] ** 2 - lvl ** 2).clamp(min=0).sqrt() * z_m, sig[0] * z_n)
    c = math.sqrt(1 - eta ** 2)
    states = []
    for k in range(n_steps):
        states.append(x.unsqueeze(1))
        st, sn = sig[k], sig[k + 1]
        z = torch.randn(xr.shape, generator=g).double()
        null = xs + c * sn * (x - xs) / st + eta * sn * z  # eq. 7 (s_i = 0)
        below = xs + c * sn * (ybar - xs) / lvl.clamp(min=1e-300) + eta * sn * z  # eq. 8, σ' < σ_y/s_i
        above = (1 - eta_b) * xs + eta_b * ybar + (sn ** 2 - lvl ** 2 * eta_b ** 2).clamp(min=0).sqrt() * z  # σ' ≥ σ_y/s_i
        x = torch.where(~meas, null, torch.where(sn < lvl, below, above))
    return states + [x.unsqueeze(1)], ts, (lvl[meas].min(), lvl[meas].max()), sig


@pytest.mark.parametrize("sigma_y,eta,eta_b,n_steps", [(0.2, 0.85, 0.7, 5), (0.0, 0.5, 1.0, 3)])
def test_ddrm_chain_is_eq_7_8_by_hand(sigma_y, eta, eta_b, n_steps):
    """Every coefficient follows eq. 7 (null space), eq. 8 below and above σ_y/s_i; both observed
    regimes occur (σ_y/s_i spans 0.05..20 against σ' = 17.2, 3.44, 0.96, 0.01). Tolerance: float32
    rounding of |x̄| ≲ σ_T ≈ 157 is ~157·2⁻²³·(a few ops) ≈ 1e-4, shrunk by σ'/σ_t at each step."""
    raw, x_star = _setup()
    a = [2.0, 1.0, 0.5, 0.1]
    A = torch.zeros(len(a), 32, dtype=torch.float64)
    A[:, : len(a)] = torch.diag(torch.tensor(a, dtype=torch.float64))
    op = D.SeparableOperator(A)
    assert torch.equal(op.V, torch.eye(32)) and torch.equal(op.U, torch.eye(len(a)))  # the closed form's premise
    net = ExactFor(x_star)
    labels = torch.tensor([3, 8])
    res = D.ddrm_restore(net, raw, sigma_y=sigma_y, operator=op, labels=labels, n_steps=n_steps, eta=eta,
                         eta_b=eta_b, seed=5)
    states, ts, (lo, hi), sig = _hand_ddrm(raw, x_star, a, sigma_y, eta, eta_b, n_steps, seed=5)
    if sigma_y > 0:
        assert lo < sig[1] < hi  # at the first step both regimes of eq. 8 are exercised
    assert [int(t[0]) for t, _ in net.calls] == ts
    assert all(torch.equal(lab, labels) for _, lab in net.calls)  # conditioned on the given classes
    # x̄_t at every step, read from the network's input √ᾱ_t x_t (the DDPM marginal), then the output
    abar = D.scheduler().alphas_cumprod.double()
    seen = [x.double() / abar[t].sqrt() for x, t in zip(net.inputs, ts)] + [res.x0.double()]
    assert len(seen) == len(states) == n_steps + 1
    for k, (got, want) in enumerate(zip(seen, states)):
        if 0 < k < n_steps:
            assert (want - x_star.double()).abs().max() > 0.01  # not the prior alone: 10x the tolerance
        assert torch.allclose(got, want, atol=1e-3), (k, float((got - want).abs().max()))


# ---- class conditioning (Wilson §3.3: "a random image from the target class") ---------------------------
@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    net = D.build_unet(TINY).eval()
    with torch.no_grad():  # a fresh embedding table is small next to the time embedding: make labels matter
        net.class_embedding.weight.mul_(50.0)
    return net


def test_mde_and_ddim_pass_the_labels_and_depend_on_them(tiny):
    """Each ε_θ call gets the caller's labels (None → the null class 10); with a conditional network,
    changing image 0's label changes image 0's MDE result and leaves image 1's (per-sample network)."""
    raw, x_star = _setup()
    net = ExactFor(x_star)
    D.mde(net, raw, torch.tensor([4, 9]), iterations=1, n_steps=3, seed=0)
    assert net.calls and all(torch.equal(lab, torch.tensor([4, 9])) for _, lab in net.calls)
    net.calls.clear()
    D.ddim_sample(net, torch.randn(2, 1, 32, 32), None, n_steps=2)
    assert all(torch.equal(lab, torch.full((2,), D.NULL_CLASS)) for _, lab in net.calls)
    r1 = D.mde(tiny, raw, torch.tensor([1, 7]), iterations=2, n_steps=2, seed=0)
    r2 = D.mde(tiny, raw, torch.tensor([2, 7]), iterations=2, n_steps=2, seed=0)
    assert (r1.images[0] - r2.images[0]).abs().max() > 1e-2
    assert torch.allclose(r1.images[1], r2.images[1], atol=1e-5)


def test_ddrm_depends_on_the_label(tiny):
    raw, _ = _setup()
    r1 = D.ddrm_restore(tiny, raw, sigma_y=0.1, labels=torch.tensor([1, 7]), n_steps=3, seed=0)
    r2 = D.ddrm_restore(tiny, raw, sigma_y=0.1, labels=torch.tensor([2, 7]), n_steps=3, seed=0)
    assert (r1.images[0] - r2.images[0]).abs().max() > 1e-2
    assert torch.allclose(r1.images[1], r2.images[1], atol=1e-5)
