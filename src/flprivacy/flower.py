"""The book's federation on Flower, recorded as a :class:`~flprivacy.log.MessageLog`.

Flower (``flwr``, Beutel et al. 2020) runs federated learning as a *ServerApp* that talks to
*ClientApps* through Messages. This module runs the book's FedAvg (Diana et al. 2025, Alg. 1
with the local update of Alg. 2) on Flower and records, from the server's side, exactly what
:func:`flprivacy.federation.run_fedavg` records: the global model θ^t of every round and, per
client and round, the model sent and the model returned. The attacks of the book read that log
(through :mod:`flprivacy.threats`) and nothing else, so they run on a Flower federation
unchanged.

Everything is a thin layer on Flower's own extension points, not a fork:

- :class:`RecordingStrategy` is a Flower ``Strategy`` that wraps another one (Flower's
  ``FedAvg`` by default) and records the messages passing through ``configure_train`` and
  ``aggregate_train``. With an :class:`~flprivacy.threats.Adversary` (e.g.
  :class:`flprivacy.attacks.active.AdamActive`, Alg. 4) it is the active, malicious server: it
  replaces the model sent to the target clients and keeps their replies out of the aggregate.
- :func:`client_app` is a Flower ``ClientApp`` whose ``train`` handler runs the book's local
  update (:class:`~flprivacy.clients.LocalSGD`, or any
  :class:`~flprivacy.clients.LocalTrainer`) on the client's partition.
- :func:`server_app` is a Flower ``ServerApp`` that learns which node holds which partition and
  runs the strategy.
- :class:`InProcessGrid` is a Flower ``Grid`` (the ServerApp's transport) that hands each
  Message to the ClientApp in this process, after a round trip through Flower's wire format
  (protobuf). :func:`run_flower` uses it by default; ``backend="ray"`` runs the same apps on
  Flower's Simulation Engine (``flwr.simulation.run_simulation``, which needs Ray).

Any other Flower app is audited by wrapping its own strategy: :func:`audit` returns an
:class:`AuditStrategy` that runs the app's strategy unchanged and records every model
exchanged (parameters and buffers, e.g. BatchNorm running statistics) and every reply's
metrics in an :class:`AuditLog` (stored with :meth:`AuditLog.save` as safetensors), which
gives the book's ``MessageLog``; :func:`attack_model` is the model the attacks run on, with
BatchNorm read as in training or with the recorded running statistics.
:func:`run_server_app` runs a ServerApp in this process on an :class:`InProcessGrid`, and
:func:`save_log` / :func:`load_log` store any ``MessageLog`` compactly.

Install the optional dependency with ``pip install flprivacy[flower]`` (or
``pip install -r requirements.txt -r requirements-flower.txt``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

import torch
from torch import Tensor

try:
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MessageType, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
    from flwr.common.serde import message_from_proto, message_to_proto
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import FedAvg, Strategy
    from flwr.supercore.run import Run
    from flwr.supercore.task_identity import TaskIdentity
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "flprivacy.flower needs Flower: install the optional extra with `pip install flprivacy[flower]` "
        "or `pip install -r requirements.txt -r requirements-flower.txt`."
    ) from e

from .config import client_generator
from .federation import ClientData, FLRun, LocalTrainer, check_clients, client_weights
from .log import MessageLog
from .models import FLModel
from .threats import Adversary
from .validation import NonFiniteError, as_tensor, check_choice, check_finite, check_int, check_seed

__all__ = ["RecordingStrategy", "InProcessGrid", "client_app", "server_app", "run_flower", "to_arrays", "from_arrays",
           "quiet_flower", "audit", "AuditStrategy", "AuditLog", "attack_model", "run_server_app", "save_log", "load_log"]

ARRAYS = "arrays"  # Flower's FedAvg puts the model under this key (its ``arrayrecord_key``)
PARTITION = "partition-id"  # the node config key naming a node's data partition (Flower's convention)


# ---- models <-> Flower records ----------------------------------------------------------------------------
def to_arrays(model: FLModel, theta: Tensor) -> ArrayRecord:
    """θ as a Flower ``ArrayRecord`` holding the model's PyTorch ``state_dict`` (what a Flower
    user sends: one array per named parameter)."""
    if not isinstance(model, FLModel):
        raise TypeError(f"to_arrays: model must be an FLModel; got {type(model).__name__}.")
    theta = model._as_theta(theta)
    check_finite("theta", theta, "to_arrays")
    return ArrayRecord({k: v.detach().clone() for k, v in model.unflatten(theta).items()})


def from_arrays(model: FLModel, arrays: ArrayRecord) -> Tensor:
    """The flat parameter vector θ held in a Flower ``ArrayRecord`` (the inverse of
    :func:`to_arrays`); raises if a parameter is missing or has the wrong shape."""
    if not isinstance(model, FLModel):
        raise TypeError(f"from_arrays: model must be an FLModel; got {type(model).__name__}.")
    if not isinstance(arrays, ArrayRecord):
        raise TypeError(f"from_arrays: arrays must be a flwr ArrayRecord; got {type(arrays).__name__}.")
    expected = dict(zip(model._names, model._shapes))
    if set(arrays.keys()) != set(expected):
        raise ValueError(f"from_arrays: the ArrayRecord holds parameters {sorted(arrays.keys())} but the model has "
                         f"{sorted(expected)}; send the model's state_dict (to_arrays).")
    parts = []
    for k, shape in expected.items():
        v = torch.from_numpy(arrays[k].numpy().copy())
        if tuple(v.shape) != tuple(shape):
            raise ValueError(f"from_arrays: parameter {k!r} has shape {tuple(v.shape)}; the model expects {tuple(shape)}.")
        parts.append(v.reshape(-1).to(model.dtype))
    return torch.cat(parts)


@contextlib.contextmanager
def quiet_flower(level: int = logging.ERROR) -> Iterator[None]:
    """Silence Flower's logger (it logs every round at INFO) below ``level`` inside the ``with`` block."""
    logger = logging.getLogger("flwr")
    old = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(old)


# ---- the ClientApp -----------------------------------------------------------------------------------------
def client_app(model: FLModel, clients: Sequence[ClientData], local: LocalTrainer, *, seed: int = 0,
               weighting: Literal["size", "uniform"] = "size") -> ClientApp:
    """A Flower ``ClientApp`` running the book's local update (Diana Alg. 2) on node data.

    The node whose ``node_config["partition-id"]`` is c trains on ``clients[c]``: its ``train``
    handler reads θ from the message, runs ``local(model, θ, clients[c], gen)`` and replies with
    the returned model and ``num-examples`` (FedAvg's weight: S_c, or 1 with
    ``weighting="uniform"``, as p_c of eq. 1). ``gen`` is client c's random stream, seeded as in
    :func:`~flprivacy.federation.run_fedavg` (:func:`flprivacy.config.client_generator`) and kept across rounds
    in the node's ``Context.state``, so a Flower run and an in-process run shuffle identically.
    Its ``query`` handler answers the server's question "which partition do you hold?".
    """
    where = "client_app"
    if not isinstance(model, FLModel):
        raise TypeError(f"{where}: model must be an FLModel (e.g. flprivacy.linear_regression(...)); "
                        f"got {type(model).__name__}.")
    check_clients(clients, where)
    if not callable(local):
        raise TypeError(f"{where}: local must be a local trainer such as LocalSGD(lr=...); got {type(local).__name__}.")
    check_seed("seed", seed, where)
    weights = client_weights(clients, weighting)  # validates weighting
    del weights
    app = ClientApp()

    def _partition(context: Context) -> int:
        c = int(context.node_config[PARTITION])
        if not 0 <= c < len(clients):
            raise ValueError(f"{where}: node {context.node_id} has partition-id {c}; there are {len(clients)} clients.")
        return c

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        return Message(RecordDict({"node": ConfigRecord({PARTITION: _partition(context)})}), reply_to=msg)

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        c = _partition(context)
        gen = client_generator(seed, c)
        if "rng" in context.state.array_records:
            gen.set_state(torch.from_numpy(context.state.array_records["rng"]["state"].numpy().copy()))
        theta = from_arrays(model, msg.content.array_records[ARRAYS])
        returned = local(model, theta.clone(), clients[c], gen).detach()
        context.state.array_records["rng"] = ArrayRecord({"state": gen.get_state()})
        n = clients[c].n if weighting == "size" else 1
        content = RecordDict({ARRAYS: to_arrays(model, returned), "metrics": MetricRecord({"num-examples": n})})
        return Message(content, reply_to=msg)

    return app


# ---- node identities ------------------------------------------------------------------------------------
_APP_ERRORS = (ErrorCode.LOAD_CLIENT_APP_EXCEPTION, ErrorCode.CLIENT_APP_RAISED_EXCEPTION, ErrorCode.INVALID_FAB)


def _query_partitions(grid: Grid, node_ids: Sequence[int], *, timeout: float) -> dict[int, int]:
    """Ask the nodes ``node_ids`` which partition they hold (a ``query`` message answered by
    :func:`client_app`); ``{node id: client}`` for those that answered within ``timeout`` s."""
    msgs = [Message(RecordDict(), dst_node_id=int(i), message_type=MessageType.QUERY) for i in node_ids]
    replies = grid.send_and_receive(msgs, timeout=timeout)
    out = {}
    for r in replies:
        if r.has_error():
            if r.error.code in _APP_ERRORS:
                raise RuntimeError(f"node {r.metadata.src_node_id}: the ClientApp failed: {r.error.reason}")
            continue
        out[int(r.metadata.src_node_id)] = int(r.content.config_records["node"][PARTITION])
    return out


class _LiveGrid:
    """The grid as the wrapped strategy sees it: only the live nodes (see
    :meth:`RecordingStrategy.live_nodes`); everything else is the grid's."""

    def __init__(self, grid: Grid, nodes: list[int]):
        self._grid, self._nodes = grid, list(nodes)

    def get_node_ids(self) -> list[int]:
        return list(self._nodes)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._grid, name)


# ---- the recording strategy ----------------------------------------------------------------------------------
class RecordingStrategy(Strategy):
    """A Flower strategy that records the book's :class:`~flprivacy.log.MessageLog`.

    Wraps ``inner`` (Flower's ``FedAvg`` unless given) and delegates sampling, message
    construction and aggregation to it. Server round r (Flower counts from 1) is the book's
    round t = r - 1. In ``configure_train`` it records θ^t (the ``arrays`` Flower is about to
    send) and, when an ``adversary`` forges a model for a sampled client, puts the forgery in
    that client's message instead (Diana §2.2, the malicious server). In ``aggregate_train`` it
    records every reply as an :class:`~flprivacy.log.Exchange` and passes on only the
    honest ones (plus the forged ones if ``adversary.aggregate_forged``), as
    :func:`~flprivacy.federation.run_fedavg` does. :meth:`finish` records the final model θ^T.

    Nodes that fail and nodes that join (a real deployment):

    - a sampled node whose reply is missing when Flower's round timeout expires, or whose reply
      is a transport error (node unavailable, ClientApp crashed), is recorded with
      :meth:`MessageLog.record_failure <flprivacy.log.MessageLog.record_failure>`: the round
      closes with the replies that arrived (weights renormalised over them, as Flower's FedAvg
      does) and the log's ``participants`` lists the clients that answered. Such a node is not
      sampled again (Flower itself would drop it only after its heartbeat expires, 2 × 30 s);
      a restarted SuperNode registers under a new node id and is treated as a new node. A reply
      carrying an exception raised by the ClientApp (a bug, not a fault) raises.
    - a node that connects after the start (not in ``node_to_client``) is asked which partition
      it holds (a ``query`` message) before it is first sampled, and takes part from that round.
    - a round waits at most ``wait_timeout`` s for the nodes Flower's strategy requires
      (``min_available_nodes``, ``min_train_nodes``) and raises instead of waiting forever.

    Args:
        model: the architecture (to read θ out of Flower's ArrayRecords).
        log: the :class:`~flprivacy.log.MessageLog` to fill.
        node_to_client: the client index c of each Flower node id known at the start (the
            clients 0..n-1 at most once each; nodes that join later are queried).
        inner: the strategy to wrap; its ``arrayrecord_key`` must be ``"arrays"``.
        adversary: an active adversary (see :mod:`flprivacy.threats`), or None for an honest
            server.
        wait_timeout: the longest wait for enough connected nodes, and for a new node's answer.
    """

    def __init__(self, model: FLModel, log: MessageLog, node_to_client: dict[int, int], inner: Strategy | None = None,
                 adversary: Adversary | None = None, *, wait_timeout: float = 60.0):
        where = "RecordingStrategy"
        if not isinstance(model, FLModel):
            raise TypeError(f"{where}: model must be an FLModel; got {type(model).__name__}.")
        if not isinstance(log, MessageLog):
            raise TypeError(f"{where}: log must be a MessageLog; got {type(log).__name__}.")
        clients = list(node_to_client.values())
        if len(set(clients)) != len(clients) or not all(0 <= int(c) < log.n_clients for c in clients):
            raise ValueError(f"{where}: node_to_client must map node ids to distinct clients in 0..{log.n_clients - 1}"
                             f" (each client held by one node); got {dict(node_to_client)}.")
        if adversary is not None and not isinstance(adversary, Adversary):
            raise TypeError(f"{where}: adversary must be a flprivacy.threats.Adversary; got {type(adversary).__name__}.")
        if not wait_timeout > 0:
            raise ValueError(f"{where}: wait_timeout must be positive (seconds), got {wait_timeout!r}.")
        if inner is None:
            with quiet_flower():  # FedAvg warns that fraction_evaluate=0 skips federated evaluation
                inner = FedAvg(fraction_evaluate=0.0)
        self.inner = inner
        if getattr(self.inner, "arrayrecord_key", ARRAYS) != ARRAYS:
            raise ValueError(f"{where}: the wrapped strategy must send the model under the key {ARRAYS!r}.")
        self.model, self.log, self.adversary = model, log, adversary
        self.wait_timeout = float(wait_timeout)
        self.node_to_client = {int(k): int(v) for k, v in node_to_client.items()}
        self.failed_nodes: set[int] = set()  # nodes that missed a reply: never sampled again
        self._sent: dict[int, tuple[Tensor, bool]] = {}
        self._theta: Tensor | None = None
        self.clock: list[float] = []  # time.perf_counter() at the start of each round and at finish()

    def summary(self) -> None:
        self.inner.summary()

    # -- the nodes the wrapped strategy may sample: connected, not failed, partition known --------------------
    def live_nodes(self, grid: Grid) -> list[int]:
        """The connected node ids that have not failed, after querying new nodes for their
        partition (they join the federation here)."""
        ids = [int(i) for i in grid.get_node_ids() if int(i) not in self.failed_nodes]
        new = [i for i in ids if i not in self.node_to_client]
        if new:
            found = _query_partitions(grid, new, timeout=self.wait_timeout)
            holder = {c: i for i, c in self.node_to_client.items()}
            for i, c in found.items():
                if not 0 <= c < self.log.n_clients:
                    raise ValueError(f"RecordingStrategy: node {i} holds partition {c}; the federation has clients "
                                     f"0..{self.log.n_clients - 1}.")
                old = holder.get(c)
                if old is not None and old in ids and old not in self.failed_nodes:
                    raise ValueError(f"RecordingStrategy: nodes {old} and {i} both hold partition {c}; start one SuperNode "
                                     "per client.")
                if old is not None:  # a restarted node: its old id is gone
                    del self.node_to_client[old]
                    self.failed_nodes.add(old)
                self.node_to_client[i] = c
            self.failed_nodes.update(i for i in new if i not in found)  # did not answer the query
        return [i for i in ids if i in self.node_to_client and i not in self.failed_nodes]

    def _wait_for_nodes(self, grid: Grid, server_round: int) -> _LiveGrid:
        need = max(int(getattr(self.inner, "min_available_nodes", 1)), int(getattr(self.inner, "min_train_nodes", 1)))
        deadline = time.monotonic() + self.wait_timeout
        while len(nodes := self.live_nodes(grid)) < need:
            if time.monotonic() > deadline:
                raise RuntimeError(f"RecordingStrategy: round {server_round - 1} needs {need} live nodes but {len(nodes)} are "
                                   f"connected after {self.wait_timeout} s ({len(self.failed_nodes)} failed); start more "
                                   "SuperNodes or lower the strategy's min_available_nodes/min_train_nodes.")
            time.sleep(0.2)
        return _LiveGrid(grid, nodes)

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        self.clock.append(time.perf_counter())
        t = server_round - 1
        theta = from_arrays(self.model, arrays)
        self._theta = theta
        messages = list(self.inner.configure_train(server_round, arrays, config, self._wait_for_nodes(grid, server_round)))
        sampled = [self.node_to_client[msg.metadata.dst_node_id] for msg in messages]
        if self.log.begin_round(theta, sampled, self.adversary) != t:  # the log's write API owns the round's rules
            raise RuntimeError(f"RecordingStrategy: Flower's round {server_round} is not the log's round {self.log.rounds - 1}.")
        out, self._sent = [], {}
        for msg, c in zip(messages, sampled):
            sent, forged = self.log.sent_model(c)
            self._sent[c] = (sent, forged)
            if not forged:
                out.append(msg)
                continue
            content = RecordDict({k: v for k, v in msg.content.items()})  # shallow copy: same config
            content[ARRAYS] = to_arrays(self.model, sent)
            out.append(Message(content, dst_node_id=msg.metadata.dst_node_id, message_type=msg.metadata.message_type,
                               group_id=msg.metadata.group_id))
        self._out = list(zip(out, sampled))  # the grid gives each its message id when it pushes it
        return out

    def aggregate_train(self, server_round: int, replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        t = server_round - 1
        client_node = {c: i for i, c in self.node_to_client.items()}
        answered: dict[int, Message] = {}
        failed: dict[int, str] = {}
        # Flower's own error replies (a node that missed its heartbeats) come from the SuperLink
        # (node id 1): they name the message they answer, not the node
        sent_to = {m.metadata.message_id: c for m, c in getattr(self, "_out", []) if m.metadata.message_id}
        for reply in replies:
            src = int(reply.metadata.src_node_id)
            c = self.node_to_client[src] if src in self.node_to_client else sent_to.get(reply.metadata.reply_to_message_id)
            if c is None:
                raise RuntimeError(f"round {t}: a reply from node {src} answers no message of the round "
                                   f"({reply.error.reason if reply.has_error() else 'no error'}).")
            if not reply.has_error():
                answered[c] = reply
            elif reply.error.code in _APP_ERRORS:
                raise RuntimeError(f"round {t}, client {c}: the ClientApp failed: {reply.error.reason}")
            else:
                failed[c] = f"Flower error {reply.error.code}: {reply.error.reason}"
        kept = []
        for c in sorted(self._sent):
            if c not in answered:  # the round closes without it (Flower's round timeout or a transport error)
                self.log.record_failure(c, failed.get(c, "no reply within the round's timeout"))
                self.failed_nodes.add(client_node[c])
                continue
            sent, forged = self._sent[c]
            returned = from_arrays(self.model, answered[c].content.array_records[ARRAYS])
            if self.log.record_reply(c, sent, returned, forged):  # records; False: a forged reply kept out
                kept.append(answered[c])
        self.log.close_round()  # the aggregate itself is the wrapped strategy's (Flower's FedAvg)
        if not kept:  # every reply was a forged one, or none arrived: θ stays (as in run_fedavg)
            return None, None
        arrays, metrics = self.inner.aggregate_train(server_round, kept)
        if arrays is not None:
            self._theta = from_arrays(self.model, arrays)
            if not bool(torch.isfinite(self._theta).all()):
                raise NonFiniteError(f"round {t}: the aggregated global model is non-finite (NaN/inf).")
        return arrays, metrics

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        return self.inner.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        return self.inner.aggregate_evaluate(server_round, replies)

    def finish(self) -> Tensor:
        """Record the final global model θ^T (``global_models[-1]``) and return it."""
        if self._theta is None:
            raise RuntimeError("RecordingStrategy.finish: no round was run.")
        self.clock.append(time.perf_counter())
        self.log.finish(self._theta)
        return self._theta


# ---- the ServerApp --------------------------------------------------------------------------------------------
class _Outcome:
    """Where the ServerApp leaves its results (it runs in a thread under run_simulation)."""

    def __init__(self) -> None:
        self.log: MessageLog | None = None
        self.theta: Tensor | None = None
        self.round_seconds: list[float] = []  # wall time of each round, measured by the strategy


def server_app(model: FLModel, n_samples: Sequence[int], *, rounds: int, theta0: Tensor,
               weighting: Literal["size", "uniform"] = "size", clients_per_round: int | None = None,
               adversary: Adversary | None = None, connect_timeout: float = 60.0, min_nodes: int | None = None,
               round_timeout: float = 3600.0,
               on_finish: Callable[[MessageLog, Tensor], None] | None = None) -> tuple[ServerApp, _Outcome]:
    """A Flower ``ServerApp`` running FedAvg (Flower's strategy in a :class:`RecordingStrategy`)
    for ``rounds`` rounds from ``theta0``.

    It first asks every node which partition it holds (a ``query`` message; a real server knows
    its registered clients), then runs the strategy. Returns the app and an object whose
    ``log`` and ``theta`` are filled when the app has run. In a deployment (``flwr run``) the
    ServerApp runs in the SuperLink's own process: pass ``on_finish(log, theta)`` to save the log
    there (e.g. with ``torch.save``).

    Faults (see :class:`RecordingStrategy`): the app starts once ``min_nodes`` nodes (all n by
    default) are connected, waiting at most ``connect_timeout`` s; a round closes with the replies
    that arrived within ``round_timeout`` s (Flower's ``Strategy.start(timeout=...)``), the
    others recorded as failures; full participation samples every live node, so a node that
    joins late takes part from the next round it is connected at.
    """
    where = "server_app"
    n = len(n_samples)
    check_int("rounds", rounds, where, minimum=1)
    if n < 1:
        raise ValueError(f"{where}: n_samples is empty; give S_c for at least one client.")
    m = n if clients_per_round is None else check_int("clients_per_round", clients_per_round, where, minimum=1)
    if m > n:
        raise ValueError(f"{where}: clients_per_round must be in 1..{n}, got {clients_per_round}.")
    k = n if min_nodes is None else check_int("min_nodes", min_nodes, where, minimum=1)
    if k > n:
        raise ValueError(f"{where}: min_nodes must be in 1..{n} (the federation's clients), got {min_nodes}.")
    if not (connect_timeout > 0 and round_timeout > 0):
        raise ValueError(f"{where}: connect_timeout and round_timeout must be positive seconds; got {connect_timeout!r}, "
                         f"{round_timeout!r}.")
    theta0 = model._as_theta(theta0, "theta0").detach().clone()
    check_finite("theta0", theta0, where)
    check_choice("weighting", weighting, ("size", "uniform"), where)
    w = torch.tensor([float(s) for s in n_samples], dtype=torch.float64) if weighting == "size" else torch.ones(n, dtype=torch.float64)
    out = _Outcome()
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        deadline = time.monotonic() + connect_timeout  # nodes connect asynchronously (SuperNodes, Ray)
        while len(nodes := sorted(grid.get_node_ids())) < k and time.monotonic() < deadline:
            time.sleep(0.1)
        if len(nodes) < k:
            raise RuntimeError(f"{where}: {len(nodes)} nodes are connected after {connect_timeout} s but {k} are needed "
                               f"(the federation has {n} clients); start one SuperNode per client (or wait longer: "
                               "connect_timeout).")
        node_to_client = _query_partitions(grid, nodes, timeout=connect_timeout)
        log = MessageLog(n, w / w.sum(), [int(s) for s in n_samples], 1.0)
        inner = FedAvg(fraction_train=m / n, fraction_evaluate=0.0, min_train_nodes=min(m, k), min_evaluate_nodes=0,
                       min_available_nodes=k)
        strategy = RecordingStrategy(model, log, node_to_client, inner=inner, adversary=adversary,
                                     wait_timeout=connect_timeout)
        strategy.start(grid, initial_arrays=to_arrays(model, theta0), num_rounds=rounds, timeout=round_timeout)
        out.theta, out.log = strategy.finish(), log
        out.round_seconds = [b - a for a, b in zip(strategy.clock, strategy.clock[1:])]
        if on_finish is not None:
            on_finish(log, out.theta)

    return app, out


# ---- an in-process transport --------------------------------------------------------------------------------
class InProcessGrid(Grid):
    """A Flower ``Grid`` that delivers each Message to a ``ClientApp`` in this process.

    One node per client, with a random 63-bit node id (as Flower assigns; from ``seed``) and a
    ``Context`` whose ``node_config`` names its partition (``partition-id``, ``num-partitions``)
    and whose ``state`` persists across rounds, as on a SuperNode. Every message and reply is
    serialised to Flower's protobuf wire format and parsed back, so the server reads what a
    remote client would have sent. Calls are sequential: this is a transport for testing and
    teaching, not for speed. ``run_config`` is every node's ``context.run_config`` (what
    ``flwr run`` passes from the app's ``pyproject.toml``), and :func:`run_server_app` gives it
    to the ServerApp too.
    """

    def __init__(self, app: ClientApp, n_nodes: int, *, seed: int = 0, wire: bool = True,
                 run_config: dict | None = None):
        check_int("n_nodes", n_nodes, "InProcessGrid", minimum=1)
        check_seed("seed", seed, "InProcessGrid")
        if not isinstance(app, ClientApp):
            raise TypeError(f"InProcessGrid: app must be a flwr ClientApp; got {type(app).__name__}.")
        if run_config is not None and not isinstance(run_config, dict):
            raise TypeError(f"InProcessGrid: run_config must be a dict; got {type(run_config).__name__}.")
        self.run_config = dict(run_config or {})
        rng = random.Random(seed)
        ids: list[int] = []
        while len(ids) < n_nodes:
            i = rng.getrandbits(63)
            if i > 1 and i not in ids:
                ids.append(i)
        self.app, self.wire = app, bool(wire)
        self.contexts = {i: Context(run_id=1, node_id=i, node_config={PARTITION: c, "num-partitions": n_nodes},
                                    state=RecordDict(), run_config=dict(self.run_config))
                         for c, i in enumerate(ids)}
        self._run: Run | None = None
        self._replies: dict[str, Message] = {}
        self._counter = 0

    def set_run(self, run: Run) -> None:
        self._run = run

    @property
    def run(self) -> Run:
        return self._run if self._run is not None else Run.create_empty(1)

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str,
                       ttl: float | None = None) -> Message:
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> list[int]:
        return list(self.contexts)

    def _over_the_wire(self, msg: Message) -> Message:
        if not self.wire:
            return msg
        msg_id = msg.metadata.message_id
        copy = message_from_proto(message_to_proto(msg))
        copy.metadata.__dict__["_message_id"] = msg_id  # the id is not serialised (the link sets it)
        return copy

    def push_messages(self, messages: Iterable[Message]) -> list[str]:
        ids = []
        for msg in messages:
            if msg.metadata.dst_node_id not in self.contexts:
                raise ValueError(f"InProcessGrid: no node with id {msg.metadata.dst_node_id}.")
            self._counter += 1
            msg.metadata.__dict__["_message_id"] = f"m{self._counter}"  # as Flower's InMemoryGrid does
            reply = self.app(self._over_the_wire(msg), self.contexts[msg.metadata.dst_node_id])
            reply.metadata.__dict__["_message_id"] = f"r{self._counter}"
            self._replies[msg.metadata.message_id] = self._over_the_wire(reply)
            ids.append(msg.metadata.message_id)
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> list[Message]:
        return [self._replies.pop(i) for i in message_ids if i in self._replies]

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> list[Message]:
        return self.pull_messages(self.push_messages(messages))


# ---- one call ---------------------------------------------------------------------------------------------------
def run_flower(
    model: FLModel,
    clients: Sequence[ClientData],
    *,
    rounds: int,
    local: LocalTrainer,
    clients_per_round: int | None = None,
    weighting: Literal["size", "uniform"] = "size",
    seed: int = 0,
    theta0: Tensor | None = None,
    adversary: Adversary | None = None,
    backend: Literal["inprocess", "ray"] = "inprocess",
    backend_config: dict | None = None,
    quiet: bool = True,
) -> FLRun:
    """FedAvg (Diana Alg. 1, local update Alg. 2) on Flower: :func:`~flprivacy.federation.run_fedavg`'s contract.

    Builds :func:`server_app` and :func:`client_app` and runs them, with ``backend="inprocess"``
    on an :class:`InProcessGrid`, or with ``backend="ray"`` on Flower's Simulation Engine
    (``flwr.simulation.run_simulation``; needs ``pip install flwr[simulation]``) with
    ``backend_config`` (e.g. ``{"client_resources": {"num_cpus": 1, "num_gpus": 0.0}}``).
    ``run_simulation`` sends a usage event to Flower's servers unless ``FLWR_TELEMETRY_ENABLED=0``
    is in the environment before flwr is first imported (the in-process backend sends nothing;
    :func:`flprivacy.flower_deploy.deploy` turns it off for every process it starts).
    With full participation (``clients_per_round=None``), the same ``seed`` and the same
    deterministic ``local``, the returned log equals :func:`~flprivacy.federation.run_fedavg`'s to float precision
    (the two aggregate in a different order). With partial participation Flower samples the
    clients (with Python's ``random``), so the rounds a client takes part in differ.

    ``server_lr`` is 1 (Flower's FedAvg averages); ``quiet`` silences Flower's INFO logging.
    ``settings["round_seconds"]`` holds the wall time of each round as the strategy saw it
    (without the backend's start-up).

    Returns:
        :class:`~flprivacy.federation.FLRun` with the final model and the recorded log.
    """
    where = "run_flower"
    if not isinstance(model, FLModel):
        raise TypeError(f"{where}: model must be an FLModel (e.g. flprivacy.mlp(...)); got {type(model).__name__}.")
    check_int("rounds", rounds, where, minimum=1)
    check_seed("seed", seed, where)
    check_clients(clients, where)
    if backend not in ("inprocess", "ray"):
        raise ValueError(f"{where}: backend must be 'inprocess' or 'ray', got {backend!r}.")
    if theta0 is None:
        theta0 = model.init_params(seed)
    theta0 = model._as_theta(theta0, "theta0").detach().clone()
    try:
        model.forward(theta0, clients[0].X[:1])
    except ValueError as e:
        raise ValueError(f"{where}: clients[0].X does not fit the model: {e}") from None
    capp = client_app(model, clients, local, seed=seed, weighting=weighting)
    sapp, out = server_app(model, [c.n for c in clients], rounds=rounds, theta0=theta0, weighting=weighting,
                           clients_per_round=clients_per_round, adversary=adversary)
    with quiet_flower() if quiet else contextlib.nullcontext():
        if backend == "inprocess":
            grid = InProcessGrid(capp, len(clients), seed=seed)
            with _server_identity(run_id=1):
                sapp(grid, Context(run_id=1, node_id=SUPERLINK_NODE_ID, node_config={}, state=RecordDict(),
                                   run_config={}))
        else:
            from flwr.simulation import run_simulation

            run_simulation(server_app=sapp, client_app=capp, num_supernodes=len(clients),
                           backend_config=backend_config or {"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    if out.log is None:
        raise RuntimeError(f"{where}: the Flower ServerApp did not finish (see Flower's log above; run with quiet=False).")
    settings = dict(rounds=rounds, local=local, server_lr=1.0, clients_per_round=clients_per_round,
                    weighting=weighting, backend=backend, round_seconds=out.round_seconds)
    return FLRun(theta=out.theta, log=out.log, model=model, seed=seed, settings=settings)


@contextlib.contextmanager
def _server_identity(run_id: int) -> Iterator[None]:
    """The process-wide task identity that Flower's ``Message`` reads for the server (set as
    ``flwr.simulation.run_simulation`` does), restored afterwards."""
    old = (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id)
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, run_id, SUPERLINK_NODE_ID
    try:
        yield
    finally:
        TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = old


# ---- auditing any Flower app ------------------------------------------------------------------------------
def run_server_app(app: ServerApp, grid: Grid, *, run_config: dict | None = None, run_id: int = 1) -> None:
    """Run a Flower ``ServerApp`` in this process on ``grid`` (e.g. an :class:`InProcessGrid`).

    The public way to call a ServerApp outside Flower's runtime: it gives the app the server's
    ``Context`` (``run_config`` as ``context.run_config``, as ``flwr run`` reads it from the
    app's ``pyproject.toml``) and sets the task identity Flower's ``Message`` expects on the
    server side, as ``flwr.simulation.run_simulation`` does, restoring it afterwards.
    """
    if not isinstance(app, ServerApp):
        raise TypeError(f"run_server_app: app must be a flwr ServerApp; got {type(app).__name__}.")
    if not isinstance(grid, Grid):
        raise TypeError(f"run_server_app: grid must be a flwr Grid (e.g. InProcessGrid); got {type(grid).__name__}.")
    if run_config is not None and not isinstance(run_config, dict):
        raise TypeError(f"run_server_app: run_config must be a dict (the app's run config) or None; got "
                        f"{type(run_config).__name__}.")
    run_id = check_int("run_id", run_id, "run_server_app", minimum=0)
    config = dict(run_config or {})
    if isinstance(grid, InProcessGrid) and not run_config:
        config = dict(grid.run_config)
    with _server_identity(run_id=run_id):
        app(grid, Context(run_id=run_id, node_id=SUPERLINK_NODE_ID, node_config={}, state=RecordDict(),
                          run_config=config))


Reading = Literal["train", "running"]


class _FixedNorm(torch.nn.Module):
    """A BatchNorm layer evaluated with fixed statistics (the recorded running mean and
    variance), held as plain tensors so that θ stays the parameters only."""

    def __init__(self, bn: torch.nn.Module, mean: Tensor, var: Tensor):
        super().__init__()
        self.weight, self.bias = bn.weight, bn.bias
        self.eps = float(bn.eps)
        object.__setattr__(self, "mean", mean.detach().clone())
        object.__setattr__(self, "var", var.detach().clone())

    def forward(self, x: Tensor) -> Tensor:
        return torch.nn.functional.batch_norm(x, self.mean.to(x.device), self.var.to(x.device), self.weight, self.bias,
                                              training=False, eps=self.eps)


_BATCHNORMS = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)


def attack_model(module: torch.nn.Module, loss: str = "cross_entropy", *, reading: Reading = "train",
                 buffers: dict[str, Tensor] | None = None) -> FLModel:
    """The :class:`~flprivacy.models.FLModel` an attack runs on, for an app's own ``nn.Module``.

    θ is the module's parameters (``named_parameters`` order); its buffers are not in θ.
    BatchNorm layers are read one of two ways, and the attack must say which it faces:

    - ``reading="train"``: batch statistics, as a client computes them during local training
      (``module.train()``). A training update (what gradient inversion replays) was produced
      this way, whatever the recorded running statistics are.
    - ``reading="running"``: the running mean and variance in ``buffers`` (recorded with the
      model, see :meth:`AuditLog.buffers`), as the model evaluates in ``module.eval()`` (what
      an attack on the deployed model faces: model inversion, attribute inference).

    Other buffers are kept as constants.
    """
    where = "attack_model"
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"{where}: module must be a torch.nn.Module; got {type(module).__name__}.")
    check_choice("reading", reading, ("train", "running"), where)
    if buffers is not None and not isinstance(buffers, Mapping):
        raise TypeError(f"{where}: buffers must be a dict of the module's buffers by name (AuditLog.buffers(...)); "
                        f"got {type(buffers).__name__}.")
    m = copy_module(module)
    named = dict(m.named_modules())
    for name, sub in list(named.items()):
        if isinstance(sub, _BATCHNORMS) and sub.track_running_stats:
            if reading == "running":
                if buffers is None:
                    raise ValueError(f"{where}: reading='running' needs the recorded buffers (AuditLog.buffers(...)).")
                key = f"{name}." if name else ""
                mean, var = (_running_statistic(buffers, f"{key}running_{s}", sub, where) for s in ("mean", "var"))
                if bool((var < 0).any()):
                    raise ValueError(f"{where}: buffers[{key + 'running_var'!r}] holds negative variances; pass the "
                                     "module's recorded state (AuditLog.buffers(...)).")
                fixed = _FixedNorm(sub, mean, var)
                parent, _, child = name.rpartition(".")
                setattr(named[parent] if parent else m, child, fixed)
            else:
                sub.track_running_stats = False
                sub.running_mean = sub.running_var = sub.num_batches_tracked = None
    for sub in m.modules():  # remaining buffers (not training state): constants
        for bname, buf in list(sub._buffers.items()):
            if buf is not None:
                del sub._buffers[bname]
                object.__setattr__(sub, bname, buf)
    return FLModel(m, loss)  # type: ignore[arg-type]


def _running_statistic(buffers: Mapping[str, Tensor], name: str, bn: torch.nn.Module, where: str) -> Tensor:
    """``buffers[name]``, a BatchNorm layer's recorded running mean or variance, checked against the layer."""
    arg = f"buffers[{name!r}]"
    if name not in buffers:
        raise ValueError(f"{where}: buffers lack {name}; pass the module's recorded state (AuditLog.buffers(...)).")
    dtype = (bn.weight if bn.weight is not None else bn.running_mean).dtype
    x = as_tensor(arg, buffers[name], where=where, dtype=dtype, ndim=1)
    if x.numel() != bn.num_features:
        raise ValueError(f"{where}: {arg} must hold the layer's {bn.num_features} features; got {x.numel()}. Pass "
                         "the buffers recorded with this module (AuditLog.buffers(...)).")
    return check_finite(arg, x, where, "the recorded BatchNorm statistics are corrupt")


def copy_module(module: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of ``module`` (its parameters are the template; the original is untouched)."""
    import copy

    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"copy_module: module must be a torch.nn.Module; got {type(module).__name__}.")
    return copy.deepcopy(module)


class AuditLog:
    """What :func:`audit` recorded from a Flower app, stored once and compactly.

    Per round t (Flower's round t + 1): the global model sent (θ^t: the parameters as a flat
    vector, plus the module's buffers, e.g. BatchNorm running statistics), the clients sampled
    and, per client that answered, the model it returned (parameters and buffers) and the
    metrics of its reply (``num-examples``, ``train_loss``, ...); per client that did not, the
    reason. Clients are numbered 0, 1, ... in the order their Flower node first appears
    (``node_ids[c]`` is client c's node id); nodes that join late simply get the next number.

    :meth:`message_log` gives the book's :class:`~flprivacy.log.MessageLog` (every attack reads
    it, through :mod:`flprivacy.threats`); :meth:`save` and :meth:`load` store it as one
    safetensors file (float arrays, no pickle), every model once.
    """

    def __init__(self, module: torch.nn.Module, loss: str = "cross_entropy"):
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"AuditLog: module must be the app's torch.nn.Module; got {type(module).__name__}.")
        self.module = module
        self.loss = str(loss)
        self.model = attack_model(module, loss, reading="train")
        self.param_names = [n for n, _ in module.named_parameters()]
        self.buffer_names = [n for n, b in module.named_buffers() if b is not None]
        self.node_ids: list[int] = []
        self.globals: list[Tensor] = []  # θ^t, and θ^T once finished
        self.global_buffers: list[dict[str, Tensor]] = []
        self.sampled: list[list[int]] = []
        self.returned: dict[tuple[int, int], Tensor] = {}
        self.returned_buffers: dict[tuple[int, int], dict[str, Tensor]] = {}
        self.metrics: dict[tuple[int, int], dict[str, float]] = {}
        self.failures: dict[tuple[int, int], str] = {}

    def __repr__(self) -> str:
        return (f"AuditLog(rounds={self.rounds}, clients={self.n_clients}, replies={len(self.returned)}, "
                f"failures={len(self.failures)})")

    @property
    def rounds(self) -> int:
        return len(self.sampled)

    @property
    def n_clients(self) -> int:
        return len(self.node_ids)

    def client_of(self, node_id: int) -> int:
        """Client index of a node id, numbering a node seen for the first time."""
        node_id = int(node_id)
        if node_id not in self.node_ids:
            self.node_ids.append(node_id)
        return self.node_ids.index(node_id)

    def split(self, arrays: ArrayRecord, where: str) -> tuple[Tensor, dict[str, Tensor]]:
        """An ArrayRecord holding the module's ``state_dict`` as (θ, buffers)."""
        names = set(arrays.keys())
        unknown = names - set(self.param_names) - set(self.buffer_names)
        missing = set(self.param_names) - names
        if unknown or missing:
            raise ValueError(f"{where}: the ArrayRecord holds {sorted(names)}, the audited module's state_dict has "
                             f"parameters {self.param_names} and buffers {self.buffer_names}; pass audit() the "
                             "module the app sends (its state_dict).")
        shapes = dict(self.module.named_parameters())
        parts = []
        for k in self.param_names:
            v = torch.from_numpy(arrays[k].numpy().copy())
            if tuple(v.shape) != tuple(shapes[k].shape):
                raise ValueError(f"{where}: {k!r} has shape {tuple(v.shape)}; the module's is {tuple(shapes[k].shape)}.")
            parts.append(v.reshape(-1).to(self.model.dtype))
        bufs = {k: torch.from_numpy(arrays[k].numpy().copy()) for k in self.buffer_names if k in names}
        return torch.cat(parts), bufs

    def n_samples(self, client: int) -> int:
        """The client's last reported ``num-examples`` (1 if it never reported one)."""
        seen = [m["num-examples"] for (t, c), m in sorted(self.metrics.items()) if c == client and "num-examples" in m]
        return int(seen[-1]) if seen else 1

    def buffers(self, round: int, client: int | None = None) -> dict[str, Tensor]:
        """The buffers (e.g. BatchNorm running statistics) of the global model of ``round``
        (``client=None``; ``round = rounds`` is the final model) or of the model ``client``
        returned in it."""
        return self._buffers(round, client, "AuditLog.buffers")

    def _buffers(self, round: int, client: int | None, where: str) -> dict[str, Tensor]:
        round = check_int("round", round, where)
        if client is None:
            if round >= len(self.global_buffers):
                raise ValueError(f"{where}: round must be in 0..{len(self.global_buffers) - 1} (a recorded global "
                                 f"model); got {round}.")
            return dict(self.global_buffers[round])
        client = check_int("client", client, where)
        if (round, client) not in self.returned_buffers:
            replies = sorted(c for t, c in self.returned_buffers if t == round)
            raise ValueError(f"{where}: no reply of client {client} in round {round} was recorded (round {round}'s "
                             f"replies: clients {replies}); pass a recorded round and client, or client=None for the "
                             "global model.")
        return dict(self.returned_buffers[(round, client)])

    def attack_model(self, reading: Reading = "train", round: int = 0, client: int | None = None) -> FLModel:
        """:func:`attack_model` for this app: ``reading="train"`` (batch statistics, what local
        training used) or ``"running"`` (the running statistics recorded with the global model
        of ``round``, or with ``client``'s reply)."""
        check_choice("reading", reading, ("train", "running"), "AuditLog.attack_model")
        if reading == "train":
            return self.model
        return attack_model(self.module, self.loss, reading="running",
                            buffers=self._buffers(round, client, "AuditLog.attack_model"))

    def message_log(self) -> MessageLog:
        """The recorded run as the book's :class:`~flprivacy.log.MessageLog`: weights p_c ∝ the
        clients' ``num-examples``, server learning rate 1 (FedAvg), failures recorded as such."""
        n = self.n_clients
        if n == 0 or not self.sampled:
            raise RuntimeError("AuditLog.message_log: nothing was recorded (did the strategy run?).")
        sizes = [self.n_samples(c) for c in range(n)]
        w = torch.tensor(sizes, dtype=torch.float64)
        log = MessageLog(n, w / w.sum(), sizes, 1.0)
        for t, sampled in enumerate(self.sampled):
            log.begin_round(self.globals[t], sampled)
            for c in sampled:
                if (t, c) in self.returned:
                    log.record_reply(c, self.globals[t], self.returned[(t, c)], False)
                else:
                    log.record_failure(c, self.failures.get((t, c), "no reply"))
            log.close_round()
        if len(self.globals) > self.rounds:
            log.finish(self.globals[self.rounds])
        return log

    # -- storage: one safetensors file ---------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the record to ``path`` (safetensors: every array once, float arrays in their
        own dtype, the rest as JSON metadata)."""
        from safetensors.torch import save_file

        path = _path_to_write(path, "AuditLog.save")

        tensors: dict[str, Tensor] = {}
        for t, g in enumerate(self.globals):
            tensors[f"global/{t}"] = g.contiguous()
            for k, b in self.global_buffers[t].items():
                tensors[f"global_buffer/{t}/{k}"] = b.contiguous()
        for (t, c), v in self.returned.items():
            tensors[f"returned/{t}/{c}"] = v.contiguous()
            for k, b in self.returned_buffers.get((t, c), {}).items():
                tensors[f"returned_buffer/{t}/{c}/{k}"] = b.contiguous()
        meta = {"node_ids": [str(i) for i in self.node_ids], "sampled": self.sampled, "loss": self.loss,
                "metrics": [[t, c, m] for (t, c), m in self.metrics.items()],
                "failures": [[t, c, r] for (t, c), r in self.failures.items()]}
        save_file(tensors, str(path), metadata={"flprivacy.audit": json.dumps(meta)})
        return path

    @classmethod
    def load(cls, path: str | Path, module: torch.nn.Module) -> AuditLog:
        """Read a record written by :meth:`save`; ``module`` is the app's architecture."""
        where = "AuditLog.load"
        meta, tensors = _read_safetensors(path, "flprivacy.audit", where, "AuditLog.save")
        out = cls(module, meta["loss"])
        if "global/0" in tensors and tensors["global/0"].numel() != out.model.dim:
            raise ValueError(f"{where}: the record's models have {tensors['global/0'].numel()} parameters, module has "
                             f"{out.model.dim}; pass the architecture of the audited app.")
        out.node_ids = [int(i) for i in meta["node_ids"]]
        out.sampled = [list(s) for s in meta["sampled"]]
        n_globals = sum(1 for k in tensors if k.startswith("global/"))
        out.globals = [tensors[f"global/{t}"] for t in range(n_globals)]
        out.global_buffers = [{} for _ in range(n_globals)]
        for k, v in tensors.items():
            kind, *rest = k.split("/", 3)
            if kind == "global_buffer":
                out.global_buffers[int(rest[0])]["/".join(rest[1:])] = v
            elif kind == "returned":
                out.returned[(int(rest[0]), int(rest[1]))] = v
            elif kind == "returned_buffer":
                out.returned_buffers.setdefault((int(rest[0]), int(rest[1])), {})[rest[2]] = v
        out.metrics = {(int(t), int(c)): m for t, c, m in meta["metrics"]}
        out.failures = {(int(t), int(c)): r for t, c, r in meta["failures"]}
        return out


class AuditStrategy(Strategy):
    """A Flower strategy that runs an app's own strategy unchanged and records every message.

    Made by :func:`audit`. ``configure_train`` records the global model of the round and the
    sampled nodes; ``aggregate_train`` records every reply (the returned model and its
    metrics) in ``record`` (an :class:`AuditLog`) and hands the valid replies to the wrapped
    strategy, which aggregates as it would without the audit. Nothing is sent that the app
    would not send: nodes are never queried, a node that joins late is numbered when it is
    first sampled. A sampled node whose reply is an error, or missing at the round's timeout,
    is recorded as a failure and not sampled again. Evaluation passes through.
    """

    def __init__(self, inner: Strategy, record: AuditLog):
        if not isinstance(inner, Strategy):
            raise TypeError(f"AuditStrategy: inner must be the app's Flower Strategy (e.g. FedAvg()); got "
                            f"{type(inner).__name__}. audit(strategy, module) builds both.")
        if not isinstance(record, AuditLog):
            raise TypeError(f"AuditStrategy: record must be an AuditLog (AuditLog(module)); got "
                            f"{type(record).__name__}.")
        self.inner, self.record = inner, record
        self.key = getattr(inner, "arrayrecord_key", ARRAYS)
        self.failed_nodes: set[int] = set()
        self._messages: list[tuple[Message, int]] = []

    def __getattr__(self, name: str):
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def summary(self) -> None:
        self.inner.summary()

    @property
    def log(self) -> MessageLog:
        """The record as the book's :class:`~flprivacy.log.MessageLog` (:meth:`AuditLog.message_log`)."""
        return self.record.message_log()

    def _grid(self, grid: Grid) -> Grid:
        if not self.failed_nodes:
            return grid
        return _LiveGrid(grid, [int(i) for i in grid.get_node_ids() if int(i) not in self.failed_nodes])  # type: ignore[return-value]

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        rec = self.record
        if server_round - 1 != rec.rounds:
            raise RuntimeError(f"AuditStrategy: Flower's round {server_round} is not the record's round {rec.rounds + 1}.")
        theta, bufs = rec.split(arrays, "AuditStrategy")
        messages = list(self.inner.configure_train(server_round, arrays, config, self._grid(grid)))
        clients = [rec.client_of(m.metadata.dst_node_id) for m in messages]
        rec.globals.append(theta)
        rec.global_buffers.append(bufs)
        rec.sampled.append(sorted(clients))
        self._messages = list(zip(messages, clients))
        return messages

    def aggregate_train(self, server_round: int, replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        rec, t = self.record, server_round - 1
        by_id = {m.metadata.message_id: c for m, c in self._messages}
        by_node = {int(m.metadata.dst_node_id): c for m, c in self._messages}
        kept = []
        for reply in replies:
            c = by_id.get(reply.metadata.reply_to_message_id, by_node.get(int(reply.metadata.src_node_id)))
            if c is None:
                continue  # not a reply to this round's messages
            if reply.has_error():
                rec.failures[(t, c)] = f"Flower error {reply.error.code}: {reply.error.reason}"
                continue
            if self.key not in reply.content.array_records:
                rec.failures[(t, c)] = f"the reply holds no ArrayRecord {self.key!r}"
                continue
            returned, bufs = rec.split(reply.content.array_records[self.key], f"round {t}, client {c}")
            rec.returned[(t, c)], rec.returned_buffers[(t, c)] = returned, bufs
            rec.metrics[(t, c)] = {k: float(v) for mr in reply.content.metric_records.values() for k, v in mr.items()
                                   if isinstance(v, (int, float))}
            kept.append(reply)
        for m, c in self._messages:
            if (t, c) not in rec.returned:
                rec.failures.setdefault((t, c), "no reply within the round's timeout")
                self.failed_nodes.add(int(m.metadata.dst_node_id))
        return self.inner.aggregate_train(server_round, kept)

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        return self.inner.configure_evaluate(server_round, arrays, config, self._grid(grid))

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        return self.inner.aggregate_evaluate(server_round, replies)

    def start(self, grid: Grid, initial_arrays: ArrayRecord, *args, **kwargs):
        """Flower's ``Strategy.start``; records the final global model when it returns."""
        result = super().start(grid, initial_arrays, *args, **kwargs)
        final = result.arrays if result.arrays is not None else initial_arrays
        theta, bufs = self.record.split(final, "AuditStrategy")
        if len(self.record.globals) == self.record.rounds:
            self.record.globals.append(theta)
            self.record.global_buffers.append(bufs)
        return result


def audit(strategy: Strategy, module: torch.nn.Module, *, loss: str = "cross_entropy") -> AuditStrategy:
    """Wrap a Flower app's strategy so that every model it exchanges is recorded.

    The one change an app needs: in its ServerApp, ``strategy = audit(FedAvg(...), Net())``
    instead of ``strategy = FedAvg(...)``; the app then runs as before (``strategy.start(...)``)
    and ``strategy.record`` (an :class:`AuditLog`) holds the messages, ``strategy.log`` the
    book's :class:`~flprivacy.log.MessageLog` that every attack reads. ``module`` is the
    architecture whose ``state_dict`` the app sends (parameters and buffers are told apart by
    it); ``loss`` is the clients' training loss, for the attacks.
    """
    if not isinstance(strategy, Strategy):
        raise TypeError(f"audit: strategy must be a Flower Strategy (e.g. flwr.serverapp.strategy.FedAvg()); "
                        f"got {type(strategy).__name__}.")
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"audit: module must be the app's torch.nn.Module; got {type(module).__name__}.")
    return AuditStrategy(strategy, AuditLog(module, loss))


# ---- a MessageLog on disk ------------------------------------------------------------------------------------
def save_log(log: MessageLog, path: str | Path) -> Path:
    """Write a :class:`~flprivacy.log.MessageLog` to ``path`` as one safetensors file: every
    global model once, one returned model per recorded exchange, a sent model only where it
    was forged, all in the log's own dtype (no pickle; the rest is JSON metadata).
    :func:`load_log` reads it back."""
    from safetensors.torch import save_file

    if not isinstance(log, MessageLog):
        raise TypeError(f"save_log: log must be a MessageLog; got {type(log).__name__}.")
    path = _path_to_write(path, "save_log")
    tensors = {f"global/{t}": log.global_models[t].contiguous() for t in range(len(log.global_models))}
    exchanges = []
    for e in log.exchanges():
        tensors[f"returned/{e.round}/{e.client}"] = e.returned.contiguous()
        if e.forged:
            tensors[f"sent/{e.round}/{e.client}"] = e.sent.contiguous()
        exchanges.append([e.round, e.client, bool(e.forged)])
    meta = {"n_clients": log.n_clients, "weights": [float(w) for w in log.weights], "n_samples": list(log.n_samples),
            "server_lr": float(log.server_lr), "participants": log.participants, "exchanges": exchanges,
            "failures": [[t, c, r] for (t, c), r in log.failures.items()]}
    save_file(tensors, str(path), metadata={"flprivacy.message_log": json.dumps(meta)})
    return path


def load_log(path: str | Path) -> MessageLog:
    """Read a :class:`~flprivacy.log.MessageLog` written by :func:`save_log`, through the log's
    own write API (so its rules are checked again)."""
    meta, tensors = _read_safetensors(path, "flprivacy.message_log", "load_log", "save_log")
    log = MessageLog(meta["n_clients"], torch.tensor(meta["weights"], dtype=torch.float64), meta["n_samples"],
                     meta["server_lr"])
    forged = {(t, c): fg for t, c, fg in meta["exchanges"]}
    failures = {(int(t), int(c)): r for t, c, r in meta["failures"]}
    for t, answered in enumerate(meta["participants"]):
        theta = tensors[f"global/{t}"]
        sampled = sorted(set(answered) | {c for (r, c) in failures if r == t})
        log.begin_round(theta, sampled)
        for c in sampled:
            if (t, c) in failures:
                log.record_failure(c, failures[(t, c)])
            elif (t, c) in forged:
                sent = tensors[f"sent/{t}/{c}"] if forged[(t, c)] else theta
                log.record_reply(c, sent, tensors[f"returned/{t}/{c}"], forged[(t, c)])
            else:  # a participant whose exchange was not kept (run_fedavg's record_clients)
                log.record_reply(c, theta, theta, False, keep=False)
        log.close_round()
    if len(meta["participants"]) + 1 == sum(1 for k in tensors if k.startswith("global/")):
        log.finish(tensors[f"global/{len(meta['participants'])}"])
    return log


def _path_to_write(path: str | os.PathLike, where: str) -> Path:
    """``path`` as a :class:`~pathlib.Path` in a folder that exists."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where}: path must be a str or pathlib.Path; got {type(path).__name__}.")
    path = Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{where}: path {str(path)!r} is in a folder that does not exist; create "
                                f"{str(path.parent)!r} first or pass a path in an existing folder.")
    return path


def _read_safetensors(path: str | os.PathLike, key: str, where: str, writer: str) -> tuple[dict, dict[str, Tensor]]:
    """The JSON metadata under ``key`` and the tensors of a safetensors file written by ``writer``."""
    from safetensors import SafetensorError, safe_open

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where}: path must be a str or pathlib.Path; got {type(path).__name__}.")
    if not Path(path).is_file():
        raise FileNotFoundError(f"{where}: path {str(path)!r} is not a file; pass the file {writer} wrote.")
    try:
        with safe_open(str(path), framework="pt") as f:
            raw = (f.metadata() or {}).get(key, "null")
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - safe_open has no __iter__
        meta = json.loads(raw)
    except (SafetensorError, OSError, ValueError) as e:
        raise ValueError(f"{where}: path {str(path)!r} is not a readable safetensors file ({e}); pass the file "
                         f"{writer} wrote.") from None
    if not meta or type(meta) is not dict:
        raise ValueError(f"{where}: path {str(path)!r} holds no {key!r} record: it was not written by {writer}. "
                         f"Pass the file {writer} wrote.")
    return meta, tensors
