"""A Flower app written as Flower's quickstart-pytorch example, audited and attacked."""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytest.importorskip("flwr")

from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    Context,
    Message,
    MetricRecord,
    RecordDict,
)
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from flprivacy.attacks.inversion import (
    LocalTraining,
    invert_update,
    labels_from_counts,
    restore_label_counts,
)
from flprivacy.flower import (
    AuditLog,
    InProcessGrid,
    attack_model,
    audit,
    quiet_flower,
    run_server_app,
)
from flprivacy.metrics import quality


class Net(nn.Module):
    """The quickstart's CNN (LeNet-style), on 16x16 images."""

    def __init__(self, side: int = 16, batchnorm: bool = False):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.bn = nn.BatchNorm2d(6) if batchnorm else nn.Identity()
        self.fc1 = nn.Linear(6 * (side // 2) ** 2, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        x = torch.sigmoid(nn.functional.avg_pool2d(self.bn(self.conv1(x)), 2))
        return self.fc2(torch.sigmoid(self.fc1(x.flatten(1))))


def images(n_nodes: int, per_node: int):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(n_nodes * per_node, 1, 16, 16, generator=g)
    X = nn.functional.avg_pool2d(X, 3, 1, 1)  # smoother than noise
    y = (torch.arange(n_nodes * per_node) // per_node) % 4  # one class per node
    return X, y


NORM = (0.5, 0.25)


def make_apps(n_nodes: int, per_node: int, batchnorm: bool = False):
    X, y = images(n_nodes, per_node)
    client = ClientApp()

    @client.train()
    def train(msg: Message, context: Context) -> Message:
        net = Net(batchnorm=batchnorm)
        net.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        c = context.node_config["partition-id"]
        Xc, yc = X[c * per_node:(c + 1) * per_node], y[c * per_node:(c + 1) * per_node]
        opt = torch.optim.SGD(net.parameters(), lr=context.run_config["lr"], momentum=0.9)
        net.train()
        loss = torch.tensor(0.0)
        for _ in range(context.run_config["local-epochs"]):
            for i in range(0, per_node, 32):
                opt.zero_grad()
                loss = nn.functional.cross_entropy(net((Xc[i:i + 32] - NORM[0]) / NORM[1]), yc[i:i + 32])
                loss.backward()
                opt.step()
        content = RecordDict({"arrays": ArrayRecord(net.state_dict()),
                              "metrics": MetricRecord({"train_loss": float(loss.detach()), "num-examples": per_node})})
        return Message(content=content, reply_to=msg)

    server = ServerApp()
    box = {}

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        torch.manual_seed(0)
        strategy = audit(FedAvg(fraction_evaluate=0.0), Net(batchnorm=batchnorm))
        box["strategy"] = strategy
        strategy.start(grid=grid, initial_arrays=ArrayRecord(Net(batchnorm=batchnorm).state_dict()),
                       num_rounds=context.run_config["num-server-rounds"],
                       train_config=ConfigRecord({"lr": context.run_config["lr"]}))

    return client, server, box, (X, y)


CONFIG = {"num-server-rounds": 2, "lr": 0.1, "local-epochs": 2}


def test_audit_records_and_attack_recovers(tmp_path):
    client, server, box, (X, y) = make_apps(3, 2)
    grid = InProcessGrid(client, 3, run_config=CONFIG)
    with quiet_flower():
        run_server_app(server, grid)
    rec = box["strategy"].record
    assert rec.rounds == 2 and rec.n_clients == 3
    assert all(m["num-examples"] == 2 and "train_loss" in m for m in rec.metrics.values())
    log = box["strategy"].log
    assert log.n_samples == [2, 2, 2]
    # stored compactly: safetensors, every model once (params are float32)
    path = rec.save(tmp_path / "audit.safetensors")
    d = rec.model.dim
    models = rec.rounds + 1 + len(rec.returned)
    assert path.stat().st_size < 4 * d * models + 20_000
    back = AuditLog.load(path, Net())
    assert torch.equal(back.message_log().global_trajectory(), log.global_trajectory())
    # attack: client 0's round-0 update, with the training known (momentum 0.9, 2 epochs)
    c = 0
    e = log.exchange(0, c)
    part = grid.contexts[rec.node_ids[c]].node_config["partition-id"]  # the truth, unknown to the server
    X, y = X[2 * part:2 * part + 2], y[2 * part:2 * part + 2]
    local = LocalTraining(lr=0.1, momentum=0.9, batch_size=32, epochs=2)
    norm = lambda x: (x - NORM[0]) / NORM[1]
    counts = restore_label_counts(rec.model, e.sent, e.sent - e.returned, 2, lr=0.1, local=local,
                                  image_shape=(1, 16, 16), transform=norm,
                                  generator=torch.Generator().manual_seed(0))
    assert torch.equal(counts, torch.bincount(y, minlength=4))
    r = invert_update(rec.model, e.sent, e.sent - e.returned, image_shape=(1, 16, 16),
                      labels=labels_from_counts(counts), local=local, transform=norm, distance="cosine",
                      iterations=300, attack_lr=0.1)
    q = quality(r.images, X)
    noise = quality(torch.rand(2, 1, 16, 16, generator=torch.Generator().manual_seed(1)), X)
    assert q.psnr.mean() > noise.psnr.mean() + 3


def test_batchnorm_buffers_recorded_and_both_readings():
    client, server, box, _ = make_apps(2, 2, batchnorm=True)
    with quiet_flower():
        run_server_app(server, InProcessGrid(client, 2, run_config=CONFIG))
    rec = box["strategy"].record
    assert set(rec.buffers(0)) == {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}
    assert rec.buffers(0, 0)["bn.num_batches_tracked"].item() == 2  # two local steps
    assert not torch.equal(rec.buffers(1)["bn.running_mean"], rec.buffers(0)["bn.running_mean"])
    x = torch.rand(5, 1, 16, 16)
    theta = rec.globals[1]
    train = rec.attack_model("train")
    running = rec.attack_model("running", round=1)
    net = Net(batchnorm=True)
    net.load_state_dict({**dict(zip(rec.param_names, train.unflatten(theta).values())), **rec.buffers(1)})
    with torch.no_grad():
        assert torch.allclose(running.forward(theta, x), net.eval()(x), atol=1e-6)
        assert torch.allclose(train.forward(theta, x), net.train()(x), atol=1e-6)
    with pytest.raises(ValueError, match="running"):
        attack_model(Net(batchnorm=True), reading="running")


def test_late_node_numbered_without_query():
    client, server, box, _ = make_apps(3, 2)
    grid = InProcessGrid(client, 3, run_config=CONFIG)
    late = list(grid.contexts)[2]
    ctx = grid.contexts.pop(late)
    calls = {"n": 0}
    orig = grid.push_messages

    def push(messages):
        calls["n"] += 1
        if calls["n"] == 2:  # joins before round 2
            grid.contexts[late] = ctx
        return orig(messages)

    grid.push_messages = push
    with quiet_flower():
        run_server_app(server, grid)
    rec = box["strategy"].record
    assert rec.sampled == [[0, 1], [0, 1, 2]] and rec.node_ids[2] == late


def test_message_log_saved_compactly(tmp_path):
    from flprivacy import ClientData, LocalSGD, linear_regression
    from flprivacy.flower import load_log, run_flower, save_log
    from flprivacy.threats import SendBack

    g = torch.Generator().manual_seed(0)
    clients = [ClientData(torch.randn(6, 3, generator=g, dtype=torch.float64),
                          torch.randn(6, generator=g, dtype=torch.float64)) for _ in range(3)]
    model = linear_regression(3)
    run = run_flower(model, clients, rounds=4, local=LocalSGD(lr=0.1), adversary=SendBack(target=1, rounds=[2, 3]))
    path = save_log(run.log, tmp_path / "log.safetensors")
    back = load_log(path)
    assert back.participants == run.log.participants
    assert torch.equal(back.global_trajectory(), run.log.global_trajectory())
    for a, b in zip(run.log.exchanges(), back.exchanges()):
        assert a.forged == b.forged and torch.equal(a.sent, b.sent) and torch.equal(a.returned, b.returned)
    # every model once: 5 globals, 12 returned, 2 forged sent, 8 bytes each of d = 4 values
    assert path.stat().st_size < 8 * model.dim * (5 + 12 + 2) + 4_000
