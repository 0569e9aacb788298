"""ResNet-9 (models.resnet9), the Fig. 5 / App. H experiment over three models
(experiments.part4_architectures) and its ledger rules (ledger.wilson_architectures)."""

from __future__ import annotations

import pytest
import torch

from flbook.experiments import part4_architectures as pa
from flbook.ledger import wilson_architectures as wa
from flprivacy.models import FLModel, ResNet9, resnet9


def resnet9_params(c: int, n_classes: int, batchnorm: bool) -> int:
    """He et al.'s basic-block ResNet with one block per stage (64, 128, 256, 512 channels), 3x3
    stem, 1x1 projection shortcuts where the shape changes, BatchNorm (weight and bias) after each
    convolution, one dense layer with bias."""
    bn = (lambda ch: 2 * ch) if batchnorm else (lambda ch: 0)
    total = 9 * c * 64 + bn(64)  # stem
    cin = 64
    for cout in (64, 128, 256, 512):
        total += 9 * cin * cout + bn(cout) + 9 * cout * cout + bn(cout)
        if cin != cout:
            total += cin * cout + bn(cout)
        cin = cout
    return total + 512 * n_classes + n_classes


@pytest.mark.parametrize("c,n_classes,batchnorm", [(3, 10, True), (1, 10, True), (3, 10, False), (1, 100, False)])
def test_resnet9_parameter_count(c, n_classes, batchnorm):
    m = resnet9(c, n_classes, batchnorm=batchnorm)
    assert m.dim == resnet9_params(c, n_classes, batchnorm)
    assert sum(p.numel() for p in m.module.parameters()) == m.dim


def test_resnet9_known_total_and_structure():
    assert resnet9(3, 10).dim == 4_903_242 and resnet9(3, 10, batchnorm=False).dim == 4_897_482
    mod = resnet9().module
    assert len(mod.layers) == 4  # one block per stage (ResNet-18 has two)
    assert sum(isinstance(x, torch.nn.Conv2d) for x in mod.modules()) == 1 + 8 + 3
    bns = [x for x in mod.modules() if isinstance(x, torch.nn.BatchNorm2d)]
    assert len(bns) == 1 + 8 + 3 and all(not b.track_running_stats for b in bns)
    assert not any(isinstance(x, torch.nn.BatchNorm2d) for x in resnet9(batchnorm=False).module.modules())
    assert [b.conv1.stride for b in mod.layers] == [(1, 1), (2, 2), (2, 2), (2, 2)]  # each new stage halves
    assert [b.conv1.out_channels for b in mod.layers] == [64, 128, 256, 512]


@pytest.mark.parametrize("c,side", [(1, 28), (3, 32)])
def test_resnet9_forward_shape(c, side):
    m = resnet9(c, 10)
    out = m.forward(m.init_params(0), torch.rand(5, c, side, side))
    assert out.shape == (5, 10) and torch.isfinite(out).all()


def test_resnet9_flmodel_round_trip():
    m = resnet9(1, 10)
    theta = m.init_params(3)
    assert torch.equal(theta, m.init_params(3)) and not torch.equal(theta, m.init_params(4))
    module = m.to_module(theta)
    assert torch.equal(m.flatten(module), theta)
    X = torch.rand(4, 1, 28, 28)
    module.train()  # no running statistics: train and eval both use the batch's
    assert torch.allclose(module(X), m.forward(theta, X), atol=1e-6)
    parts = m.unflatten(theta)
    assert list(parts) == [n for n, _ in module.named_parameters()]


def test_resnet9_batchnorm_uses_batch_statistics():
    torch.manual_seed(0)
    X = torch.rand(6, 1, 28, 28)
    with_bn, without = resnet9(1, 10), resnet9(1, 10, batchnorm=False)
    for m, coupled in ((with_bn, True), (without, False)):
        th = m.init_params(0)
        alone, in_batch = m.forward(th, X[:2]), m.forward(th, X)[:2]
        assert (not torch.allclose(alone, in_batch, atol=1e-5)) == coupled


def test_resnet9_bad_inputs():
    with pytest.raises(ValueError, match="in_channels"):
        resnet9(0)
    with pytest.raises(ValueError, match="n_classes"):
        resnet9(1, 1)
    with pytest.raises(TypeError, match="batchnorm"):
        resnet9(1, 10, batchnorm="yes")
    assert isinstance(ResNet9(), torch.nn.Module) and isinstance(resnet9(), FLModel)


# ---- the experiment ----------------------------------------------------------------------------------
def test_point_validation_and_grids():
    with pytest.raises(ValueError, match="arch"):
        pa.Point("vgg", 2)
    with pytest.raises(ValueError, match="K"):
        pa.Point("lenet5", 1)
    with pytest.raises(ValueError, match="iterations"):
        pa.Point("lenet5", 2, iterations=0)
    with pytest.raises(ValueError, match="fl_lr"):
        pa.Point("lenet5", 2, fl_lr=0.0)
    q = pa.quick_points()
    assert [(p.arch, p.K) for p in q] == [(a, K) for a in pa.LIVE_ARCHITECTURES for K in (2, 4)]
    assert all(p.tau == 1 and p.images_per_client == 2 for p in q)
    paper = pa.paper_points()
    assert {(p.arch, p.K) for p in paper} == {(a, K) for a in pa.ARCHITECTURES for K in (2, 4, 8)}
    assert all(p.tau == 3 and p.images_per_client == 16 and p.fl_lr == 0.03 and p.iterations == 100 for p in paper)
    assert pa.Point("resnet9", 4).file_name() == "part4_architectures/resnet9_K4"
    with pytest.raises(ValueError, match="archs"):
        pa.main(["vgg"])
    with pytest.raises(ValueError, match="iterations"):
        pa.main(["lenet5"], iterations=0)


def test_attacked_models():
    dims = {a: pa.attacked_model(a).dim for a in pa.ARCHITECTURES}
    assert dims["resnet9"] == resnet9_params(1, 10, True) and dims["resnet9-nobn"] == resnet9_params(1, 10, False)
    assert dims["resnet18"] - dims["resnet18-nobn"] == 2 * (64 + 4 * 64 + 4 * 128 + 4 * 256 + 4 * 512 + 128 + 256 + 512)
    with pytest.raises(ValueError, match="arch"):
        pa.attacked_model("resnet50")


def test_score_pairs_and_scores():
    torch.manual_seed(0)
    truth = torch.rand(4, 1, 28, 28)
    perm = torch.tensor([2, 0, 3, 1])
    s = pa.score(truth[perm], truth)
    assert s["ssim"] == pytest.approx(1.0, abs=1e-6) and s["lpips"] == pytest.approx(0.0, abs=1e-6)
    assert torch.equal(truth[perm][s["index"]], truth)
    noisy = pa.score((truth + 0.3 * torch.rand(4, 1, 28, 28)).clamp(0, 1), truth)
    assert noisy["ssim"] < 1 and noisy["lpips"] > 0 and len(noisy["lpips_per_image"]) == 4
    with pytest.raises(ValueError, match="reconstructions"):
        pa.score(truth[:3], truth)


@pytest.mark.parametrize("arch,coupled", [("lenet5", False), ("resnet9", True), ("resnet9-nobn", False)])
def test_replay_errors_at_one_local_iteration(arch, coupled):
    # eq. 2 (the true K clients) is FedAvg itself: rounding only, for every model. The super-client
    # (eq. 3) is exact at τ = 1 unless BatchNorm's batch statistics couple a client's images.
    p = pa.Point(arch, 2, images_per_client=2, tau=1, iterations=1)
    model, clients, run = pa.federation(p)
    e = pa.replay_errors(model, clients, run, lr=p.fl_lr, tau=1)
    assert e["replay_error_fedavg"] <= e["rounding_bound"]
    if coupled:
        assert e["replay_error_super"] > 100 * e["rounding_bound"]
    else:
        assert e["replay_error_super"] <= e["rounding_bound"]


def test_initial_models():
    for arch in ("resnet9", "resnet18-nobn"):  # PyTorch's default initialisation, as the authors' code
        m = pa.attacked_model(arch)
        assert torch.equal(pa.initial_model(m, arch, 5), m.init_params(5))
    from flprivacy.attacks.inversion import dlg_init
    m = pa.attacked_model("lenet5")
    assert torch.equal(pa.initial_model(m, "lenet5", 5), dlg_init(m, 5))


def test_run_point_records_and_images():
    r = pa.run_point(pa.Point("lenet5", 2, images_per_client=2, tau=2, iterations=3), return_images=True)
    assert r["replay_error_fedavg"] <= r["rounding_bound"]  # eq. 2 replayed with the clients' τ = 2
    assert r["N"] == 4 and len(r["ssim_per_image"]) == 4 and len(r["lpips_per_image"]) == 4
    truth, rec = pa.shown_images(r)
    assert truth.shape == rec.shape == (2, 1, 28, 28)
    assert torch.allclose(truth, r["truth"][2:4], atol=1 / 255)
    assert r["peer_ssim"] == pytest.approx(sum(r["ssim_per_image"][2:]) / 2, abs=1e-3)
    df = pa.frame([r])
    assert df.loc[0, "model"] == "LeNet-5" and df.loc[0, "iterations"] == 3


# ---- the ledger rules ---------------------------------------------------------------------------------
def curve(lpips, ssim, peer=None, err=None, bound=1e-3):
    Ks = (2, 4, 8)[:len(lpips)]
    return {K: dict(lpips=lp, ssim=s, peer_ssim=(peer or ssim)[i], replay_error_super=(err or [0.0] * 3)[i],
                    rounding_bound=bound) for i, (K, lp, s) in enumerate(zip(Ks, lpips, ssim))}


def test_fig5_verdict():
    assert wa.fig5_verdict(curve([0.2, 0.3, 0.4], [0.5, 0.4, 0.3])).status == "reproduced"
    assert wa.fig5_verdict(curve([0.4, 0.3, 0.2], [0.3, 0.4, 0.5])).status == "not reproduced"
    assert wa.fig5_verdict(curve([0.2, 0.3], [0.3, 0.4])).status == "partly"  # LPIPS agrees, SSIM does not
    assert wa.fig5_verdict(curve([0.2, 0.35, 0.3], [0.5, 0.4, 0.3])).status == "partly"  # one step against


def test_app_h_and_exact_verdicts():
    c = curve([0.2, 0.3], [0.5, 0.4], peer=[0.5, 0.3])
    assert wa.app_h_verdict(c, 0.25).status == "reproduced"
    assert wa.app_h_verdict(c, 0.35).status == "partly"
    assert wa.exact_verdict(curve([0.2, 0.3], [0.5, 0.4], err=[1e-4, 5e-4])).status == "reproduced"
    assert wa.exact_verdict(curve([0.2, 0.3], [0.5, 0.4], err=[1e-4, 2e-3])).status == "partly"


def test_curves_groups_points():
    rec = {"data": {"points": [{"arch": "lenet5", "K": 4, "x": 1}, {"arch": "lenet5", "K": 2, "x": 2},
                               {"arch": "resnet9", "K": 2, "x": 3}]}}
    c = wa.curves(rec)
    assert list(c["lenet5"]) == [2, 4] and c["resnet9"][2]["x"] == 3


def test_rows_have_unique_ids_and_statuses():
    out = wa.rows()
    ids = [r.result_id for r in out]
    assert len(ids) == len(set(ids)) == 6
    assert set(ids) == {*wa.FIG5_IDS.values(), wa.LENET_ID, wa.CONSISTENT_ID, wa.APP_H_ID, wa.EXACT_ID}
    for r in out:
        assert r.chapter == wa.CHAPTER and (r.status == "reproduced" or r.reason)
