"""Flower's own defences on an audited app: SecAgg+ and central differential privacy.

Three nodes of one image each, one local step (so that the curious client's super-client
inversion is exact, Wilson et al. §3: at τ = 1 FedAvg's update is the gradient of all images).
An attack "works" when its PSNR to the true image beats uniform noise by 3 dB (half the squared
error) and beats, by 3 standard deviations, its PSNR to 37 decoy images of the same
distribution the client never held; it "fails" when it does not beat the decoys by that much.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

pytest.importorskip("flwr")

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.client import NumPyClient
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.common import ndarrays_to_parameters
from flwr.server import LegacyContext, ServerApp, ServerConfig
from flwr.server import strategy as legacy
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg
from test_flower_audit import NORM, Net, images

from flprivacy.attacks.inversion import LocalTraining, invert_update
from flprivacy.flower import InProcessGrid, audit, quiet_flower, run_server_app
from flprivacy.flower_defences import AuditGrid
from flprivacy.metrics import quality

K, LR = 3, 0.1
X, Y = images(K, 1)  # node c holds image c, label c
DECOYS = images(K + 37, 1)[0][K:]  # same distribution, never held by a client
LOCAL = LocalTraining(lr=LR, momentum=0.9, batch_size=32, epochs=1)


def train(state: list[np.ndarray], c: int) -> list[np.ndarray]:
    """One SGD step of the quickstart's training on node c's image."""
    net = Net()
    net.load_state_dict({k: torch.tensor(v) for k, v in zip(net.state_dict(), state)})
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9)
    opt.zero_grad()
    nn.functional.cross_entropy(net((X[c:c + 1] - NORM[0]) / NORM[1]), Y[c:c + 1]).backward()
    opt.step()
    return [v.detach().numpy().copy() for v in net.state_dict().values()]


def initial() -> list[np.ndarray]:
    torch.manual_seed(0)
    return [v.numpy().copy() for v in Net().state_dict().values()]


def run_legacy(secagg: SecAggPlusWorkflow | None) -> tuple[AuditGrid, InProcessGrid]:
    """Flower's secure-aggregation example: a NumPyClient with ``secaggplus_mod``, a ServerApp
    running ``DefaultWorkflow(fit_workflow=SecAggPlusWorkflow(...))``; the grid audited."""

    class Client(NumPyClient):
        def __init__(self, c: int):
            self.c = c

        def fit(self, parameters, config):
            return train(parameters, self.c), 1, {}

    client = ClientApp(client_fn=lambda ctx: Client(ctx.node_config["partition-id"]).to_client(),
                       mods=[secaggplus_mod] if secagg else [])
    server, box = ServerApp(), {}

    @server.main()
    def main(grid, context):
        strategy = legacy.FedAvg(fraction_evaluate=0.0, initial_parameters=ndarrays_to_parameters(initial()))
        ctx = LegacyContext(context=context, config=ServerConfig(num_rounds=2), strategy=strategy)
        box["grid"] = AuditGrid(grid, Net(), secagg=secagg)
        DefaultWorkflow(fit_workflow=secagg)(box["grid"], ctx) if secagg else DefaultWorkflow()(box["grid"], ctx)

    np.random.seed(0)  # SecAgg+'s stochastic quantisation draws from numpy's global generator
    inner = InProcessGrid(client, K)
    with quiet_flower():
        run_server_app(server, inner)
    return box["grid"], inner


def run_dp(noise: float, clip: float) -> tuple:
    """The quickstart-style app (Message API) with Flower's central DP wrapper, audited."""
    client = ClientApp()

    @client.train()
    def _train(msg, context):
        arrays = msg.content["arrays"]
        state = train([a.numpy() for a in arrays.values()], context.node_config["partition-id"])
        named = ArrayRecord(dict(zip(arrays.keys(), [torch.tensor(s) for s in state])))
        content = RecordDict({"arrays": named, "metrics": MetricRecord({"num-examples": 1})})
        return Message(content=content, reply_to=msg)

    server, box = ServerApp(), {}

    @server.main()
    def main(grid, context):
        dp = DifferentialPrivacyServerSideFixedClipping(FedAvg(fraction_evaluate=0.0), noise_multiplier=noise,
                                                        clipping_norm=clip, num_sampled_clients=K)
        box["strategy"] = audit(dp, Net())
        net = Net()
        net.load_state_dict({k: torch.tensor(v) for k, v in zip(net.state_dict(), initial())})
        box["strategy"].start(grid=grid, initial_arrays=ArrayRecord(net.state_dict()), num_rounds=1,
                              train_config=ConfigRecord({}))

    np.random.seed(1)  # Flower's Gaussian noise draws from numpy's global generator
    inner = InProcessGrid(client, K)
    with quiet_flower():
        run_server_app(server, inner)
    return box["strategy"], inner


def psnr_vs(images: torch.Tensor, truth: torch.Tensor) -> tuple[float, float, float, float]:
    """Mean PSNR to the truth, to uniform noise's, and the decoys' mean and std."""
    q = float(quality(images, truth).psnr.mean())
    noise = float(quality(torch.rand(truth.shape, generator=torch.Generator().manual_seed(1)), truth).psnr.mean())
    dec = torch.stack([quality(im.expand(len(DECOYS), -1, -1, -1), DECOYS).psnr for im in images]).mean(0)
    return q, noise, float(dec.mean()), float(dec.std())


def works(r: tuple[float, float, float, float]) -> bool:
    q, noise, dec, sd = r
    return q > noise + 3 and q > dec + 3 * sd


def fails(r: tuple[float, float, float, float]) -> bool:
    q, _, dec, sd = r
    return q <= dec + 3 * sd


def server_attack(grid: AuditGrid, inner: InProcessGrid, client: int = 0):
    """The honest-but-curious server inverts one client's round-0 reply."""
    log = grid.record.message_log()
    e = log.exchange(0, client)
    part = inner.contexts[grid.record.node_ids[client]].node_config["partition-id"]  # the truth
    r = invert_update(grid.record.model, e.sent, e.sent - e.returned, image_shape=(1, 16, 16),
                      labels=Y[part:part + 1], local=LOCAL, transform=lambda x: (x - NORM[0]) / NORM[1],
                      distance="cosine", iterations=300, attack_lr=0.1)
    return psnr_vs(r.images, X[part:part + 1])


def curious_attack(log) -> tuple[float, float, float, float]:
    """Wilson et al.'s curious client: the two global models it receives, inverted as one
    super-client holding all K images (labels known, in order)."""
    update = K * (log.global_models[0] - log.global_models[1])  # FedAvg's mean, times K
    model = Net()
    from flprivacy.flower import attack_model

    r = invert_update(attack_model(model), log.global_models[0], update, image_shape=(1, 16, 16), labels=Y,
                      local=LOCAL, transform=lambda x: (x - NORM[0]) / NORM[1], distance="cosine",
                      iterations=300, attack_lr=0.1)
    return psnr_vs(r.images, X)


def test_secaggplus_masks_replies_not_the_global_model():
    wf = SecAggPlusWorkflow(num_shares=K, reconstruction_threshold=2, max_weight=1)
    plain, plain_grid = run_legacy(None)
    sec, sec_grid = run_legacy(wf)
    assert plain.masked == set() and sec.masked == {(t, c) for t in range(2) for c in range(K)}
    lp, ls = plain.record.message_log(), sec.record.message_log()
    # the aggregate is FedAvg's to SecAgg+'s quantisation: each client's weighted model is
    # stochastically rounded to a step 2·clip/Q (error < 1 step), the sum divided by Σ weights
    w = sum(round(1 / wf.max_weight * wf.quantization_range) / wf.quantization_range for _ in range(K))
    step = 2 * wf.clipping_range / wf.quantization_range
    bound = K * step / w + 4 * torch.finfo(torch.float32).eps * float(lp.global_models[1].abs().max())
    assert float((ls.global_models[1] - lp.global_models[1]).abs().max()) <= bound
    assert float(lp.global_models[1].abs().max()) < wf.clipping_range  # nothing clipped
    # the server's attack on one client's reply: works in the clear, fails on the masked reading
    assert works(server_attack(plain, plain_grid))
    assert fails(server_attack(sec, sec_grid))
    # the curious client reads only global models, which SecAgg+ delivers: the attack still works
    assert works(curious_attack(ls))


def test_central_dp_noise_hides_the_global_model_not_the_replies():
    clip = 0.5  # above every update's norm: the noise alone is measured
    base, _ = run_dp(0.0, clip)
    noisy, _ = run_dp(1.0, clip)
    lb, ln = base.log, noisy.log
    norms = [float((lb.exchange(0, c).sent - lb.exchange(0, c).returned).norm()) for c in range(K)]
    assert max(norms) < clip  # nothing clipped
    # server-side DP changes nothing the server receives: the replies are the same models
    for c, node in enumerate(base.record.node_ids):  # clients are numbered as sampled
        assert torch.equal(lb.exchange(0, c).returned, ln.exchange(0, noisy.record.node_ids.index(node)).returned)
    # the noise is Flower's Gaussian mechanism: std z·clip/K per coordinate
    d = lb.global_models[0].numel()
    gap = float((ln.global_models[1] - lb.global_models[1]).norm())
    assert abs(gap / (1.0 * clip / K * d ** 0.5) - 1) < 0.05  # chi_d: relative sd 1/sqrt(2d) < 1%
    assert works(curious_attack(lb))
    assert fails(curious_attack(ln))


def test_audit_grid_rejects_bad_arguments_by_name():
    grid = InProcessGrid(ClientApp(), 2)
    for kwargs, name in (({"grid": "grid", "module": Net()}, "grid"), ({"grid": grid, "module": "Net"}, "module"),
                         ({"grid": grid, "module": Net(), "secagg": "on"}, "secagg")):
        with pytest.raises(TypeError, match=name):
            AuditGrid(**kwargs)
