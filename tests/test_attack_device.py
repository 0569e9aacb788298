"""The image attacks' ``device`` argument: on the CPU, the default results unchanged."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from flprivacy import lenet5
from flprivacy.attacks.inversion import LocalTraining, dlg_init, invert_update, replay_local, replay_update
from flprivacy.metrics import quality


def _setup():
    model = lenet5(1, 4, image_size=16)
    theta = dlg_init(model, seed=0)
    X = torch.rand(2, 1, 16, 16, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([1, 3])
    return model, theta, X, y


def test_invert_update_device_cpu_is_the_default():
    model, theta, X, y = _setup()
    target = model.grad(theta, X, y)
    a = invert_update(model, theta, target, image_shape=(1, 16, 16), labels=y, iterations=5)
    b = invert_update(model, theta, target, image_shape=(1, 16, 16), labels=y, iterations=5, device="cpu")
    assert torch.equal(a.images, b.images) and a.loss == b.loss


def test_local_training_default_is_plain_full_batch_sgd():
    model, theta, X, y = _setup()
    plain = replay_update(model, theta, X, y, lr=0.1, steps=3)
    local = replay_local(model, theta, X, y, LocalTraining(lr=0.1, steps=3))
    assert torch.allclose(plain, local, atol=1e-7, rtol=1e-6)


def test_local_training_replays_torch_sgd_momentum_minibatches():
    model, theta, X, y = _setup()
    X, y = torch.cat([X, X.flip(-1)]), torch.cat([y, y.flip(0)])
    net = model.to_module(theta).train()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    for _ in range(2):  # two epochs of two batches, no reshuffling
        for i in (0, 2):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(X[i:i + 2]), y[i:i + 2]).backward()
            opt.step()
    truth = theta - model.flatten(net)
    replay = replay_local(model, theta, X, y, LocalTraining(lr=0.05, momentum=0.9, batch_size=2, epochs=2))
    assert (replay - truth).abs().max() <= 1e-5 * truth.abs().max()


def test_quality_frame_from_any_device():
    q = quality(torch.rand(2, 1, 8, 8), torch.rand(2, 1, 8, 8))
    assert len(q.frame()) == 2


def test_separable_operator_moves():
    from flprivacy.diffusion import upsampler_operator

    op = upsampler_operator().to("meta")
    assert {t.device.type for t in (op.A, op.U, op.s, op.V)} == {"meta"}
    assert op.singular_values().device.type == "meta"


def test_gpu_check_skips_or_runs():
    spec = importlib.util.spec_from_file_location("gpu_check", Path(__file__).parents[1] / "tools" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not torch.cuda.is_available():
        assert mod.main() == 0
    diffs = {**mod.check_inversion("cpu"), **mod.check_model_inversion("cpu")}
    assert all(v == 0.0 for v in diffs.values()), diffs  # the same device: identical
