"""What the server of a Flower app records when the app switches on Flower's own defences.

Flower ships secure aggregation as SecAgg+ (Bell et al. 2020): the ServerApp runs
``flwr.server.workflow.SecAggPlusWorkflow`` inside Flower's ``DefaultWorkflow`` and every
ClientApp adds ``flwr.client.mod.secaggplus_mod``. Each client then replies with its weighted,
quantised model plus pairwise and private masks (integers modulo ``modulus_range``), and the
server learns only the sum, once at least ``reconstruction_threshold`` clients have revealed
their shares. These workflows run Flower's legacy strategies (``flwr.server.strategy``), which
never see a client's reply, so :func:`flprivacy.flower.audit` cannot record them.
:class:`AuditGrid` records at the one place where every message passes, the ServerApp's
``Grid``: exactly what the SuperLink relays and the server's operator holds.

The record is an :class:`~flprivacy.flower.AuditLog` like :func:`~flprivacy.flower.audit`'s,
so every attack of the book reads it unchanged: per round the global model sent (the
``fitins.parameters`` of Flower's legacy messages), and per client the model it returned.
Under SecAgg+ the returned model is the masked vector read the way the server reads an
unmasked sum (the weight from the reply's clear ``num_examples``, the vector dequantised with
the workflow's own ranges): the reading that would give the client's model were it not masked.
Which clients' models are masked is in the grid's ``masked`` set.

Wilson et al. (2025)'s curious client reads only the global models, which secure aggregation
delivers as FedAvg's up to its quantisation. Flower's central differential-privacy wrapper
(``flwr.serverapp.strategy.DifferentialPrivacyServerSideFixedClipping``) is a Message-API
strategy: it composes with :func:`~flprivacy.flower.audit` directly and needs nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch

try:
    import flwr.server.workflow
    from flwr.app import ArrayRecord, Message, MessageType, RecordDict
    from flwr.common import bytes_to_ndarray
    from flwr.common.secure_aggregation.quantization import dequantize
    from flwr.common.secure_aggregation.secaggplus_constants import (
        RECORD_KEY_CONFIGS,
        Key,
    )
    from flwr.serverapp import Grid
    from flwr.supercore.run import Run
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "flprivacy.flower_defences needs Flower: install the optional extra with "
        "`pip install flprivacy[flower]`."
    ) from e

from .flower import AuditLog

__all__ = ["AuditGrid"]

FIT_IN = "fitins.parameters"  # where Flower's legacy messages carry the model
FIT_RES = "fitres.parameters"
FIT_N = "fitres.num_examples"


class AuditGrid(Grid):
    """A Flower ``Grid`` that relays every message unchanged and records the training rounds.

    Wrap the Grid a ServerApp is given (``grid = AuditGrid(grid, Net(), secagg=workflow)``
    inside ``main``, or around an :class:`~flprivacy.flower.InProcessGrid`) and run the app's
    workflow on it. ``record`` is an :class:`~flprivacy.flower.AuditLog`: round t is Flower's
    round t + 1 (the messages' ``group_id``), the global model is the one sent in that round's
    training messages, and each client's returned model is its reply's
    ``fitres.parameters``, or with SecAgg+ the masked vector as the server reads it (see the
    module's documentation; ``masked`` holds those (round, client) pairs). ``secagg`` is the
    app's ``SecAggPlusWorkflow`` (its ranges are needed to read the masked vectors); ``None``
    when the app does not use it. The legacy messages hold the module's ``state_dict`` values
    as an ordered list, which is matched to ``module``'s entries in order. A Grid sees a global
    model only when it is sent, so the record holds no final model: θ^t is known for the rounds
    that were run, and θ^{t+1} once round t + 1 starts.
    """

    def __init__(self, grid: Grid, module: torch.nn.Module, *, loss: str = "cross_entropy",
                 secagg: flwr.server.workflow.SecAggPlusWorkflow | None = None):
        if not isinstance(grid, Grid):
            raise TypeError(f"AuditGrid: grid must be a flwr Grid (the one the ServerApp is given, or an "
                            f"InProcessGrid); got {type(grid).__name__}.")
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"AuditGrid: module must be the app's torch.nn.Module; got {type(module).__name__}.")
        if secagg is not None and not isinstance(secagg, flwr.server.workflow.SecAggPlusWorkflow):
            raise TypeError(f"AuditGrid: secagg must be the app's flwr.server.workflow.SecAggPlusWorkflow or None; "
                            f"got {type(secagg).__name__}.")
        self.grid, self.secagg = grid, secagg
        self.record = AuditLog(module, loss)
        self.masked: set[tuple[int, int]] = set()
        self._names = list(module.state_dict())

    # -- Grid, delegated ---------------------------------------------------------------------------------
    def set_run(self, run: Run) -> None:
        self.grid.set_run(run)

    @property
    def run(self) -> Run:
        return self.grid.run

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str,
                       ttl: float | None = None) -> Message:
        return self.grid.create_message(content, message_type, dst_node_id, group_id, ttl)

    def get_node_ids(self) -> Iterable[int]:
        return self.grid.get_node_ids()

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        messages = list(messages)
        for m in messages:
            self._sent(m)
        return self.grid.push_messages(messages)

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        replies = list(self.grid.pull_messages(message_ids))
        for r in replies:
            self._received(r)
        return replies

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        messages = list(messages)
        for m in messages:
            self._sent(m)
        replies = list(self.grid.send_and_receive(messages, timeout=timeout))
        for r in replies:
            self._received(r)
        return replies

    # -- recording ------------------------------------------------------------------------------------------
    def _round(self, msg: Message) -> int | None:
        group = msg.metadata.group_id
        return int(group) - 1 if str(group).isdigit() and int(group) >= 1 else None

    def _state(self, arrays: ArrayRecord, where: str) -> ArrayRecord:
        """A legacy ordered list of arrays as the module's named ``state_dict``."""
        values = list(arrays.values())
        if len(values) != len(self._names):
            raise ValueError(f"AuditGrid: {where} holds {len(values)} arrays; the module's state_dict has "
                             f"{len(self._names)} ({self._names}); pass the module the app sends.")
        return ArrayRecord({k: torch.from_numpy(v.numpy().copy()) for k, v in zip(self._names, values)})

    def _sent(self, msg: Message) -> None:
        t = self._round(msg)
        if msg.metadata.message_type != MessageType.TRAIN or t is None or FIT_IN not in msg.content.array_records:
            return
        rec = self.record
        c = rec.client_of(msg.metadata.dst_node_id)
        if t == rec.rounds:  # the round's first training message
            theta, bufs = rec.split(self._state(msg.content.array_records[FIT_IN], f"round {t}'s model"),
                                    "AuditGrid")
            rec.globals.append(theta)
            rec.global_buffers.append(bufs)
            rec.sampled.append([])
        if t == rec.rounds - 1 and c not in rec.sampled[t]:
            rec.sampled[t] = sorted(rec.sampled[t] + [c])

    def _received(self, reply: Message) -> None:
        t, rec = self._round(reply), self.record
        if t is None or t >= rec.rounds or reply.metadata.message_type != MessageType.TRAIN:
            return
        c = rec.client_of(reply.metadata.src_node_id)
        if c not in rec.sampled[t]:
            return  # not a training reply of a sampled client
        if reply.has_error():
            rec.failures[(t, c)] = f"Flower error {reply.error.code}: {reply.error.reason}"
            return
        content = reply.content
        n = content.metric_records[FIT_N]["num_examples"] if FIT_N in content.metric_records else None
        configs = content.config_records.get(RECORD_KEY_CONFIGS)
        if configs is not None and Key.MASKED_PARAMETERS in configs and self.secagg is not None:
            state = self._masked_reading(configs[Key.MASKED_PARAMETERS], n, f"round {t}, client {c}")
            self.masked.add((t, c))
        elif FIT_RES in content.array_records and len(content.array_records[FIT_RES]) > 0:
            state = self._state(content.array_records[FIT_RES], f"round {t}, client {c}'s reply")
        else:
            return  # a SecAgg+ stage without a model
        rec.returned[(t, c)], rec.returned_buffers[(t, c)] = rec.split(state, "AuditGrid")
        if n is not None:
            rec.metrics[(t, c)] = {"num-examples": float(n)}
        rec.failures.pop((t, c), None)

    def _masked_reading(self, blobs: list[bytes], n: float | None, where: str) -> ArrayRecord:
        """SecAgg+'s masked vector read as Flower's unmask stage reads a sum, for one client:
        weight q = round(n / max_weight * Q), values dequantised to [-clip, clip] and divided
        by q / Q. Without the masks this returns the client's model to quantisation."""
        wf = self.secagg
        assert wf is not None
        arrays = [bytes_to_ndarray(b) for b in blobs]
        if n is None:
            raise ValueError(f"AuditGrid: {where}: the SecAgg+ reply holds no num_examples.")
        q_ratio = round(float(n) / wf.max_weight * wf.quantization_range) / wf.quantization_range
        values = dequantize([a.astype(np.int64) for a in arrays[1:]], wf.clipping_range, wf.quantization_range)
        return self._state(ArrayRecord([(v / q_ratio).astype(np.float32) for v in values]), where)
