"""FedInverse's model-inversion attack (flprivacy.attacks.model_inversion) and Fig. 9's experiment pieces."""

from __future__ import annotations

import math

import pytest
import torch

from flprivacy.attacks import model_inversion as mi
from flprivacy.models import lenet5


@pytest.fixture(scope="module")
def tiny_gan():
    """A GAN trained for a few steps on random blobs: only shapes and plumbing depend on it."""
    torch.manual_seed(0)
    X = torch.rand(64, 1, 28, 28)
    return mi.train_gan(X, steps=4, batch_size=8, n_critic=2, width=4, seed=0)


def test_gan_shapes_and_range(tiny_gan):
    z = torch.randn(3, mi.Z_DIM)
    out = tiny_gan.generator(z)
    assert out.shape == (3, 1, 32, 32)
    assert float(out.min()) >= 0 and float(out.max()) <= 1  # sigmoid output
    assert tiny_gan.critic(out).shape == (3,)
    assert tiny_gan.settings["steps_done"] == 4 and tiny_gan.settings["generator_steps"] == 2
    assert len(tiny_gan.losses) == 4


def test_train_gan_deterministic_by_seed():
    X = torch.rand(32, 1, 28, 28)
    a = mi.train_gan(X, steps=3, batch_size=4, n_critic=1, width=4, seed=3)
    b = mi.train_gan(X, steps=3, batch_size=4, n_critic=1, width=4, seed=3)
    c = mi.train_gan(X, steps=3, batch_size=4, n_critic=1, width=4, seed=4)
    sa, sb, sc = (g.generator.state_dict() for g in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_pad_and_crop_are_inverse():
    X = torch.rand(2, 1, 28, 28)
    P = mi.pad_images(X)
    assert P.shape == (2, 1, 32, 32) and float(P[..., :2, :].abs().max()) == 0
    assert torch.equal(mi.crop_images(P), X)
    with pytest.raises(ValueError, match="expected \\(n, 1, 28, 28\\)"):
        mi.pad_images(torch.rand(2, 3, 28, 28))


def test_gradient_penalty_of_a_linear_critic():
    """For D(x) = <w, x> the input gradient is w everywhere, so GP = (‖w‖ - 1)² exactly."""
    w = torch.randn(1, 1, 4, 4)

    class Linear(torch.nn.Module):
        def forward(self, x):
            return (x * w).flatten(1).sum(1)

    g = torch.Generator().manual_seed(0)
    gp = mi.gradient_penalty(Linear(), torch.rand(5, 1, 4, 4), torch.rand(5, 1, 4, 4), g)
    assert math.isclose(float(gp), (float(w.norm()) - 1) ** 2, rel_tol=1e-5)


def test_save_load_checks_sha(tiny_gan, tmp_path):
    p = tmp_path / "g.safetensors"
    rec = mi.save_gan(tiny_gan, p, {"command": "test"})
    G, D, r = mi.load_gan(p)
    z = torch.randn(2, mi.Z_DIM)
    tiny_gan.generator.eval()
    assert torch.allclose(G(z), tiny_gan.generator(z))
    assert r["sha256"] == rec["sha256"] and len(rec["sha256"]) == 64
    with pytest.raises(ValueError, match="SHA-256"):
        mi.load_gan(p, sha256="0" * 64)
    data = bytearray(p.read_bytes())
    data[-1] ^= 1
    p.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256"):
        mi.load_gan(p)
    with pytest.raises(FileNotFoundError, match="train_fedinverse_gan"):
        mi.load_gan(tmp_path / "missing.safetensors")


def test_normalized_hsic_properties():
    """nHSIC = tr(R_X R_Y) with R_X, R_Y near-projections onto the (m-1)-dim centred space: it lies in
    [0, m-1] (up to the ε ridge) and reaches m-1 when X and Y are the same samples. With a narrow
    kernel (σ = 0.3) the centred kernel's nonzero eigenvalues are O(1) ≫ ε m = 6e-5, so the ridge
    costs at most a factor (1 + 1e-4)^-2 per eigenvalue: X = Y gives 5 to within 1e-3."""
    torch.manual_seed(0)
    x, y = torch.randn(6, 10), torch.randn(6, 10)
    v = float(mi.normalized_hsic(x, y, sigma=0.3))
    same = float(mi.normalized_hsic(x, x, sigma=0.3))
    assert -1e-3 <= v <= 5 + 1e-3
    assert same == pytest.approx(5, abs=1e-3)
    assert -1e-3 <= float(mi.normalized_hsic(x, y)) <= 5 + 1e-3  # the attack's σ = 5
    assert float(mi.normalized_hsic(x, y)) == float(mi.normalized_hsic(x, y))
    with pytest.raises(ValueError, match="same number m >= 2"):
        mi.normalized_hsic(x, y[:3])


@pytest.fixture(scope="module")
def small_model():
    model = lenet5(1, 5, 28, activation=torch.nn.ReLU)
    return model, model.init_params(0)


def test_attack_shapes_and_determinism(tiny_gan, small_model):
    model, theta = small_model
    kw = dict(iterations=3, restarts=2, seed=5)
    a = mi.model_inversion_attack(model, theta, tiny_gan.generator, tiny_gan.critic, [0, 1, 2, 3, 4], **kw)
    b = mi.model_inversion_attack(model, theta, tiny_gan.generator, tiny_gan.critic, [0, 1, 2, 3, 4], **kw)
    assert a.images.shape == (10, 1, 28, 28) and a.labels.tolist() == [0, 1, 2, 3, 4] * 2
    assert torch.equal(a.images, b.images) and a.loss == b.loss
    assert len(a.loss) == 6 and a.predicted.shape == (10,) and a.confidence.shape == (10,)
    assert float(a.z.abs().max()) <= 1.0  # clipped to [-clip, clip]
    assert not torch.equal(a.z[:5], a.z[5:])  # each restart from its own z
    with torch.no_grad():
        p = torch.softmax(model.forward(theta, a.images), dim=1)
    assert torch.allclose(a.confidence, p[torch.arange(10), a.labels], atol=1e-6)  # of the target, not the argmax
    assert torch.equal(a.predicted, p.argmax(1))
    h = mi.model_inversion_attack(model, theta, tiny_gan.generator, tiny_gan.critic, [0, 1, 2, 3], hsic_weight=0.05,
                                  iterations=3, seed=5)
    assert h.images.shape == (4, 1, 28, 28)


def test_attack_bad_inputs(tiny_gan, small_model):
    model, theta = small_model
    G, D = tiny_gan.generator, tiny_gan.critic
    with pytest.raises(ValueError, match="parameters"):
        mi.model_inversion_attack(model, theta[:-1], G, D, [0])
    with pytest.raises(ValueError, match="not an output"):
        mi.model_inversion_attack(model, theta, G, D, [7])
    with pytest.raises(ValueError, match="classes is empty"):
        mi.model_inversion_attack(model, theta, G, D, [])
    with pytest.raises(ValueError, match="at least 4 classes"):
        mi.model_inversion_attack(model, theta, G, D, [0, 1], hsic_weight=0.1)
    with pytest.raises(TypeError, match="FLModel"):
        mi.model_inversion_attack(object(), theta, G, D, [0])
    with pytest.raises(TypeError, match="torch module"):
        mi.model_inversion_attack(model, theta, "G", D, [0])
    with pytest.raises(ValueError, match="iterations"):
        mi.model_inversion_attack(model, theta, G, D, [0], iterations=0)


def test_inversion_reaches_the_target_class():
    """A check with an argued bound: the identity loss (weight λ = 100) drives the attacked model's
    output to the target class. The model here is linear with logit c = mean intensity of horizontal
    strip c minus the mean of the other strips, so every class is reachable (light strip c only);
    the generator is a linear map z -> 32x32 through a sigmoid, able to draw such images. An attack
    that did nothing would hit the target with probability 1/5 per image (5 classes); the accuracy
    over n = 20 images must exceed chance + 3 binomial standard deviations, 0.2 + 3·sqrt(0.16/20)."""
    from flprivacy.models import FLModel

    torch.manual_seed(0)

    class Free(torch.nn.Module):
        z_dim = mi.Z_DIM

        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(mi.Z_DIM, 32 * 32)
            with torch.no_grad():
                self.lin.weight.normal_(0, 0.1)

        def forward(self, z):
            return torch.sigmoid(self.lin(z)).view(-1, 1, 32, 32)

    class Flat(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(x.shape[0])

    strips = torch.zeros(5, 28, 28)
    for c in range(5):
        strips[c, 5 * c:5 * c + 5] = 1 / 140
    W = strips - (strips.sum(0, keepdim=True) - strips) / 4
    lin = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 5))
    with torch.no_grad():
        lin[1].weight.copy_(10 * W.view(5, -1))
        lin[1].bias.zero_()
    model = FLModel(lin, "cross_entropy")
    theta = model.flatten()
    res = mi.model_inversion_attack(model, theta, Free(), Flat(), [0, 1, 2, 3, 4], iterations=100, restarts=4, seed=0)
    n = res.images.shape[0]
    assert res.attack_accuracy > 0.2 + 3 * math.sqrt(0.2 * 0.8 / n)


def test_nearest_same_class():
    torch.manual_seed(0)
    truth = torch.rand(6, 1, 28, 28)
    tl = torch.tensor([0, 0, 1, 1, 2, 2])
    imgs = torch.stack([truth[1], truth[2], truth[5]]) + 0.01 * torch.randn(3, 1, 28, 28)
    idx = mi.nearest_same_class(imgs, torch.tensor([0, 1, 2]), truth, tl)
    assert idx.tolist() == [1, 2, 5]
    # a label forbids a closer image of another class
    idx = mi.nearest_same_class(truth[:1], torch.tensor([1]), truth, tl)
    assert int(tl[idx[0]]) == 1
    with pytest.raises(ValueError, match="no ground-truth image of class 3"):
        mi.nearest_same_class(imgs, torch.tensor([0, 1, 3]), truth, tl)
    with pytest.raises(ValueError, match="one label per image"):
        mi.nearest_same_class(imgs, torch.tensor([0, 1]), truth, tl)


def test_committed_gan_loads():
    """The committed weights load with their checksum and generate images in [0, 1]."""
    path = mi.weights_path()
    if not path.is_file():
        pytest.skip("committed GAN weights not present")
    G, D, rec = mi.load_gan()
    assert rec["data"]["classes"] == list(mi.PUBLIC_CLASSES)
    x = G(torch.randn(4, G.z_dim))
    assert x.shape == (4, 1, 32, 32) and 0 <= float(x.min()) and float(x.max()) <= 1


def test_verdict_rule():
    from flbook.experiments.wilson_fedinverse import verdict

    def case(o, m, h):
        s = lambda v: dict(ssim=[v[0]], psnr=[v[1]], lpips=[v[2]])  # noqa: E731
        return dict(ours=dict(same_class=s(o), raw=dict(same_class=s(o))), fedinverse=dict(mi=dict(same_class=s(m)), mi_hsic=dict(same_class=s(h))))

    assert verdict([case((0.5, 12, 0.2), (0.2, 8, 0.5), (0.3, 9, 0.4))])["status"] == "reproduced"
    assert verdict([case((0.5, 12, 0.2), (0.6, 8, 0.5), (0.3, 9, 0.4))])["status"] == "partly"
    assert verdict([case((0.5, 12, 0.2), (0.2, 8, 0.5), (0.6, 9, 0.4))])["status"] == "partly"  # MI-HSIC counts too
    assert verdict([case((0.1, 12, 0.6), (0.2, 8, 0.5), (0.3, 9, 0.4))])["status"] == "not reproduced"


def test_generator_steps_every_n_critic():
    """The generator moves only at every n_critic-th critic step: after one critic step with
    n_critic = 2 its weights are still the seeded initial ones, after two they have moved."""
    X = torch.rand(16, 1, 28, 28)
    torch.manual_seed(0)
    init = {k: v.clone() for k, v in mi.MnistGenerator(width=4).named_parameters()}
    one = dict(mi.train_gan(X, steps=1, batch_size=4, n_critic=2, width=4, seed=0).generator.named_parameters())
    two = dict(mi.train_gan(X, steps=2, batch_size=4, n_critic=2, width=4, seed=0).generator.named_parameters())
    assert all(torch.equal(one[k], init[k]) for k in init)
    assert not all(torch.equal(two[k], init[k]) for k in init)


def test_normalized_hsic_closed_form_two_samples():
    """For m = 2, K = [[1, k], [k, 1]] with k = exp(-‖x₁ - x₂‖² / (2σ²d)), so K H = (1 - k) H (H the
    centring projection, trace 1) and R = a H with a = (1 - k) / (1 - k + 2ε): nHSIC(x, y) = a_x a_y.
    Chosen so that 1 - k is of the order of the ridge 2ε, where a depends strongly on the kernel's
    width (σ = 2, d = 1: variance 2σ²d = 8)."""
    eps, sigma = 1e-5, 2.0
    x = torch.tensor([[0.0], [0.012649]], dtype=torch.float64)
    y = torch.tensor([[0.0], [0.02]], dtype=torch.float64)

    def a(v):
        k = math.exp(-float((v[0] - v[1]).pow(2).sum()) / (2 * sigma ** 2 * 1))
        return (1 - k) / (1 - k + 2 * eps)

    got = float(mi.normalized_hsic(x, y, sigma=sigma, eps=eps))
    assert got == pytest.approx(a(x) * a(y), rel=1e-6)


def test_first_loss_is_the_gmi_objective_at_z0(tiny_gan, small_model):
    """The first recorded loss is GMI's objective at the seeded initial latents, computed by hand:
    -mean D(G(z₀)) + λ CE(f_θ(crop(G(z₀))), c), λ = 100 (the model reads the cropped image the
    attack returns)."""
    import torch.nn.functional as F

    from flprivacy.config import generator as make_generator

    model, theta = small_model
    G, D = tiny_gan.generator, tiny_gan.critic
    res = mi.model_inversion_attack(model, theta, G, D, [0, 1, 2], iterations=1, seed=7)
    z0 = torch.randn(3, mi.Z_DIM, generator=make_generator(7))
    with torch.no_grad():
        fake = G(z0)
        want = -D(fake).mean() + 100 * F.cross_entropy(model.forward(theta, mi.crop_images(fake)), torch.tensor([0, 1, 2]))
    assert res.loss[0] == pytest.approx(float(want), rel=1e-6)  # same float32 operations: agreement to rounding
