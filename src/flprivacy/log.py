"""The message log: everything a federated run exchanged, and the rules of one round.

Every attack of the book reads this log (through the views of :mod:`flprivacy.threats`): the
global model θ^t of every round and, for every (round, client), the model sent and the model
returned (Diana et al. 2025 §2.1-2.2; the message index of the authors' code). Writers (the
in-process FedAvg :func:`flprivacy.federation.run_fedavg` and the Flower strategy
:class:`flprivacy.flower.RecordingStrategy`) go through one write API that owns the round's
rules, so that both produce the same log:

``begin_round(θ^t, C_s^t, adversary)``
    records θ^t and the sampled clients;
``sent_model(c)``
    θ^t, or what an active adversary forges for c (cast to θ^t's dtype);
``record_reply(c, sent, returned, forged)``
    refuses a non-finite reply, records the exchange, adds it to the aggregate unless it
    answers a forged model (and the adversary does not aggregate those);
``record_failure(c, reason)``
    a sampled client that did not reply (its node failed or timed out, e.g. on a Flower
    deployment): no exchange is recorded, the client leaves the round's ``participants``
    (the clients that answered) and is listed in :meth:`MessageLog.dropped`; the aggregate
    renormalises the weights over the replies that arrived;
``close_round()``
    θ^{t+1} = θ^t + η_g Σ p̃_c (θ_c^t − θ^t), refusing a non-finite result;
``finish(θ^T)``
    records the final model.

Storage: every model is stored once, in memory or in a file (``directory``), and the reading
API is the same in both modes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import torch
from torch import Tensor

from .validation import NonFiniteError

if TYPE_CHECKING:  # pragma: no cover
    from .threats import Adversary


class Exchange(NamedTuple):
    """One round-trip between the server and a client."""

    round: int
    client: int
    sent: Tensor  # θ_c^t(0): the model the client received
    returned: Tensor  # θ_c^t(K): the model the client sent back
    forged: bool  # True if an active adversary replaced the sent model


@dataclass
class ClientMessages:
    """The messages M_c = {(θ^t, θ_c^t), t ∈ T_c} exchanged with one client, stacked.

    ``sent[i]`` and ``returned[i]`` are the models of round ``rounds[i]``.
    """

    client: int
    rounds: Tensor  # (n,) long
    sent: Tensor  # (n, d)
    returned: Tensor  # (n, d)
    forged: Tensor  # (n,) bool

    def __len__(self) -> int:
        return int(self.rounds.numel())

    def select(self, index: Tensor | Sequence[int] | slice) -> ClientMessages:
        """The messages at positions ``index`` (not round numbers; see :meth:`at_rounds`)."""
        if not isinstance(index, slice):
            index = torch.as_tensor(index, dtype=torch.long)
        return ClientMessages(self.client, self.rounds[index], self.sent[index], self.returned[index], self.forged[index])

    def at_rounds(self, rounds: Sequence[int]) -> ClientMessages:
        """The messages of the given rounds; raises if one was not observed."""
        pos = {int(r): i for i, r in enumerate(self.rounds.tolist())}
        missing = [r for r in rounds if int(r) not in pos]
        if missing:
            raise KeyError(
                f"client {self.client} has no recorded messages in rounds {missing}; observed rounds are "
                f"{self.rounds.tolist()[:10]}{'...' if len(self) > 10 else ''}."
            )
        return self.select([pos[int(r)] for r in rounds])

    @property
    def pseudo_gradients(self) -> Tensor:
        """θ^t - θ_c^t for every observed round (Diana eq. 2), shape (n, d)."""
        return self.sent - self.returned


class _ModelStore:
    """Append-only storage of equal-length model vectors, in memory or on disk.

    In memory, vectors are copied into preallocated chunks of ``chunk`` rows (no per-tensor
    allocation, so no heap fragmentation), and :meth:`get` returns views. On disk
    (``directory`` given), every vector is appended to one binary file (``<dir>/*.models``,
    removed when the store is garbage-collected) and :meth:`get` reads it back with one
    ``pread``; nothing is memory-mapped, so the process's resident memory stays flat.
    """

    def __init__(self, directory: str | Path | None = None, chunk: int = 256):
        self.directory = None if directory is None else Path(directory)
        self.chunk = int(chunk)
        self.n = 0
        self.d: int | None = None
        self.dtype: torch.dtype | None = None
        self._chunks: list[Tensor] = []
        self._fd: int | None = None
        self.path: Path | None = None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=self.directory, prefix="messagelog-", suffix=".models")
            self._fd, self.path = fd, Path(name)

    def __del__(self) -> None:  # pragma: no cover - best effort clean-up
        if getattr(self, "_fd", None) is not None:
            try:
                os.close(self._fd)
                os.remove(self.path)
            except OSError:
                pass
            self._fd = None

    def append(self, v: Tensor) -> int:
        v = v.detach().reshape(-1)
        if self.d is None:
            self.d, self.dtype = v.numel(), v.dtype
        elif v.numel() != self.d:
            raise ValueError(f"MessageLog: every model must have {self.d} parameters; got a vector of {v.numel()}.")
        v = v.to(self.dtype)
        i = self.n
        if self._fd is not None:
            data = v.contiguous().cpu().numpy().tobytes()
            os.pwrite(self._fd, data, i * len(data))
        else:
            if i % self.chunk == 0:
                self._chunks.append(torch.empty(self.chunk, self.d, dtype=self.dtype))
            self._chunks[i // self.chunk][i % self.chunk].copy_(v)
        self.n += 1
        return i

    def get(self, i: int) -> Tensor:
        if self._fd is not None:
            size = self.d * self.dtype.itemsize
            raw = os.pread(self._fd, size, i * size)
            return torch.frombuffer(bytearray(raw), dtype=self.dtype)
        return self._chunks[i // self.chunk][i % self.chunk]

    @property
    def nbytes(self) -> int:
        return 0 if self.d is None else self.n * self.d * self.dtype.itemsize


class GlobalModels(Sequence):
    """``MessageLog.global_models``: θ^0, θ^1, ... as a read-only sequence of tensors, the same
    type whether the log keeps its models in memory or on disk (:meth:`MessageLog.begin_round`
    and :meth:`MessageLog.finish` append to it). ``log.global_trajectory()`` stacks them."""

    def __init__(self, log: MessageLog):
        self._log = log
        self._last: Tensor | None = None  # the newest θ^t, for the log's "sent = θ^t" test

    def __len__(self) -> int:
        return len(self._log._global_idx)

    def __getitem__(self, t):  # noqa: ANN001
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(len(self)))]
        if isinstance(t, bool) or not isinstance(t, int):
            raise TypeError(f"global_models[{t!r}]: expected an integer round or a slice")
        return self._log._store.get(self._log._global_idx[t])

    def __repr__(self) -> str:
        return f"GlobalModels({len(self)} models)"

    def _append(self, theta: Tensor) -> None:
        self._log._global_idx.append(self._log._store.append(theta))
        self._last = theta.detach().clone()


class MessageLog:
    """Everything exchanged during a federated run.

    Attributes:
        global_models: θ^0, ..., θ^T: the global model at the start of each round and the
            final one (``len == rounds + 1``); a list-like sequence of tensors.
        participants: the clients of each round that answered: the sampled clients C_s^t less
            those recorded by :meth:`record_failure` (every sampled client in a run without
            failures, e.g. :func:`~flprivacy.federation.run_fedavg`).
        failures: ``{(t, c): reason}`` for every sampled client c that did not reply in round t;
            :meth:`dropped` and :meth:`sampled` read it.
        weights: the aggregation weights p_c (summing to 1).
        n_samples: S_c of every client.
        server_lr: the global learning rate η_g of the aggregation.

    Storage: every model is stored once. A sent model equal to the round's global model (every
    honest exchange) is not stored again but refers to it, so the log holds (T+1) global
    models plus one returned model per recorded exchange (plus the forged sent models). With
    ``directory`` the models live in a file there instead of in memory (for long runs); the
    reading API (:meth:`exchange`, :meth:`client_messages`, ``global_models[t]``) is the same;
    on disk ``global_models`` is a sequence rather than a list (``torch.stack`` needs
    :meth:`global_trajectory`). Memory is measured by ``python -m flbook.experiments.bench_memory``
    (``book/results/bench_memory.json``: 10 clients, a 69k-parameter float32 MLP, 1,000 rounds).
    """

    def __init__(self, n_clients: int, weights: Tensor, n_samples: list[int], server_lr: float,
                 directory: str | Path | None = None):
        self.n_clients = n_clients
        self.weights = weights
        self.n_samples = n_samples
        self.server_lr = server_lr
        self._store = _ModelStore(directory)
        self._global_idx: list[int] = []
        self.global_models = GlobalModels(self)
        self.participants: list[list[int]] = []
        self.failures: dict[tuple[int, int], str] = {}
        self._exchanges: dict[tuple[int, int], tuple[int, int, bool]] = {}
        self._open: dict | None = None

    def __repr__(self) -> str:
        return (f"MessageLog(rounds={self.rounds}, clients={self.n_clients}, "
                f"recorded exchanges={len(self._exchanges)})")

    @property
    def rounds(self) -> int:
        """Number of completed rounds T."""
        return len(self.participants)

    @property
    def stored_models(self) -> int:
        """How many model vectors the log holds (global, returned and forged sent models)."""
        return self._store.n

    @property
    def nbytes(self) -> int:
        """Bytes of model vectors held (in memory, or on disk with ``directory``)."""
        return self._store.nbytes

    def _global_equal(self, t: int, v: Tensor) -> bool:
        if not 0 <= t < len(self._global_idx):
            return False
        last = self.global_models._last
        g = last if (last is not None and t == len(self._global_idx) - 1) else self.global_models[t]
        return g.shape == v.shape and g.dtype == v.dtype and bool(torch.equal(g, v))

    # ---- writing: one round at a time ---------------------------------------------------------------
    def begin_round(self, global_model: Tensor, participants: Sequence[int],
                    adversary: Adversary | None = None) -> int:
        """Open round t = :attr:`rounds`: record θ^t and the sampled clients C_s^t (sorted), and
        the active adversary of the round, if any. Returns t.

        Raises:
            RuntimeError: if the previous round is still open (call :meth:`close_round` first).
        """
        if self._open is not None:
            raise RuntimeError(f"MessageLog.begin_round: round {self._open['t']} is still open; close it with "
                               "close_round() before beginning the next.")
        theta = global_model.detach()
        if not bool(torch.isfinite(theta).all()):
            raise NonFiniteError(f"round {self.rounds}: the global model is non-finite (NaN/inf).")
        t = self.rounds
        self.global_models._append(theta)
        self.participants.append(sorted(int(c) for c in participants))
        self._open = {"t": t, "theta": theta, "adversary": adversary, "update": torch.zeros_like(theta),
                      "total": 0.0}
        return t

    def sent_model(self, client: int) -> tuple[Tensor, bool]:
        """The model the server sends ``client`` in the open round: θ^t, or what the round's
        adversary forges (cast to θ^t's dtype), and whether it was forged (Diana §2.2)."""
        rnd = self._require_open("sent_model")
        adv = rnd["adversary"]
        forged = adv.forge(rnd["t"], int(client), rnd["theta"], self) if adv is not None else None
        if forged is None:
            return rnd["theta"], False
        forged = torch.as_tensor(forged).detach().to(rnd["theta"].dtype).reshape(rnd["theta"].shape)
        return forged, True

    def record_reply(self, client: int, sent: Tensor, returned: Tensor, forged: bool, *, keep: bool = True) -> bool:
        """Record ``client``'s reply in the open round (if ``keep``: see run_fedavg's
        ``record_clients``/``record_rounds``) and add it to the round's aggregate, unless the sent
        model was forged and the adversary does not aggregate forged replies
        (``Adversary.aggregate_forged``). Returns whether the reply is aggregated.

        Raises:
            NonFiniteError: the reply is non-finite, naming the round and the client.
        """
        rnd = self._require_open("record_reply")
        t, c = rnd["t"], int(client)
        if (t, c) in self.failures:
            raise ValueError(f"MessageLog.record_reply: client {c} was recorded as failed in round {t}.")
        returned = returned.detach()
        if not bool(torch.isfinite(returned).all()):
            raise NonFiniteError(
                f"round {t}, client {c}: the returned model is non-finite (NaN/inf); the local trainer diverged "
                f"(learning rate too large?){' on a forged model' if forged else ''}.")
        if keep:
            self.record(Exchange(t, c, sent, returned, bool(forged)))
        if not forged or (rnd["adversary"] is not None and rnd["adversary"].aggregate_forged):
            p = float(self.weights[c])
            rnd["update"] += p * (returned.to(rnd["theta"].dtype) - rnd["theta"])
            rnd["total"] += p
            return True
        return False

    def record_failure(self, client: int, reason: str) -> None:
        """Record that sampled ``client`` did not reply in the open round (its node crashed, left
        or missed the round's timeout): it is removed from the round's ``participants`` (which
        then lists the clients that answered), ``reason`` is kept in :attr:`failures`, and
        nothing of it enters the aggregate (:meth:`close_round` renormalises over the replies).
        The client did receive the sent model (:meth:`sampled` still lists it).

        Raises:
            ValueError: ``client`` was not sampled this round, or already replied or failed.
        """
        rnd = self._require_open("record_failure")
        t, c = rnd["t"], int(client)
        if c not in self.participants[t]:
            why = "already recorded as failed" if (t, c) in self.failures else "not sampled"
            raise ValueError(f"MessageLog.record_failure: client {c} was {why} in round {t}; sampled clients are "
                             f"{self.sampled(t)}.")
        if (t, c) in self._exchanges:
            raise ValueError(f"MessageLog.record_failure: client {c} already replied in round {t}.")
        self.participants[t].remove(c)
        self.failures[(t, c)] = str(reason)

    def dropped(self, round: int) -> list[int]:
        """The clients sampled in ``round`` that did not reply (see :meth:`record_failure`)."""
        return sorted(c for (t, c) in self.failures if t == round)

    def sampled(self, round: int) -> list[int]:
        """C_s^t: the clients sampled in ``round``, whether they answered or not."""
        return sorted(self.participants[round] + self.dropped(round))

    def close_round(self) -> Tensor:
        """Close the open round: θ^{t+1} = θ^t + η_g Σ_c p̃_c (θ_c^t − θ^t), with p̃_c the weights p_c
        renormalised over the aggregated replies (θ^t itself when none was aggregated).

        Raises:
            NonFiniteError: the aggregate is non-finite (server learning rate too large).
        """
        rnd = self._require_open("close_round")
        theta = rnd["theta"]
        if rnd["total"] > 0:
            theta = theta + self.server_lr * rnd["update"] / rnd["total"]
        if not bool(torch.isfinite(theta).all()):
            raise NonFiniteError(f"round {rnd['t']}: the aggregated global model is non-finite (NaN/inf) although every "
                                 f"client returned a finite one; server_lr={self.server_lr} is likely too large.")
        self._open = None
        return theta

    def finish(self, theta: Tensor) -> None:
        """Record the final global model θ^T (``global_models[-1]``)."""
        self._require_closed("finish")
        self.global_models._append(theta.detach())

    def _require_open(self, where: str) -> dict:
        if self._open is None:
            raise RuntimeError(f"MessageLog.{where}: no round is open; call begin_round() first.")
        return self._open

    def _require_closed(self, where: str) -> None:
        if self._open is not None:
            raise RuntimeError(f"MessageLog.{where}: round {self._open['t']} is still open; call close_round() first.")

    def record(self, exchange: Exchange) -> None:
        """Store one exchange (low level: :meth:`record_reply` applies the round's rules)."""
        t, c = int(exchange.round), int(exchange.client)
        if not exchange.forged and self._global_equal(t, exchange.sent):
            sent = self._global_idx[t]
        else:
            sent = self._store.append(exchange.sent)
        self._exchanges[(t, c)] = (sent, self._store.append(exchange.returned), bool(exchange.forged))

    def _make(self, key: tuple[int, int]) -> Exchange:
        sent, returned, forged = self._exchanges[key]
        return Exchange(key[0], key[1], self._store.get(sent), self._store.get(returned), forged)

    def exchange(self, round: int, client: int) -> Exchange:
        """The exchange with ``client`` in ``round``."""
        try:
            return self._make((round, client))
        except KeyError:
            raise KeyError(
                f"no recorded exchange for client {client} in round {round}: the client was not sampled "
                "that round, or the run did not record it (see run_fedavg's record_clients/record_rounds)."
            ) from None

    def exchanges(self, client: int | None = None) -> list[Exchange]:
        """All recorded exchanges (of one client if given), in round order."""
        keys = sorted(k for k in self._exchanges if client is None or k[1] == client)
        return [self._make(k) for k in keys]

    def client_messages(self, client: int, rounds: Sequence[int] | None = None) -> ClientMessages:
        """Stacked messages of one client (all its recorded rounds, or the given ones)."""
        if isinstance(client, bool) or not isinstance(client, int) or not 0 <= client < self.n_clients:
            raise ValueError(f"client must be in 0..{self.n_clients - 1}, got {client!r}.")
        keys = sorted(k for k in self._exchanges if k[1] == client)
        if rounds is not None:
            wanted = set(int(r) for r in rounds)
            keys = [k for k in keys if k[0] in wanted]
        if not keys:
            raise ValueError(f"client {client} has no recorded exchanges{'' if rounds is None else ' in those rounds'}.")
        ex = [self._make(k) for k in keys]
        return ClientMessages(
            client=client,
            rounds=torch.tensor([e.round for e in ex], dtype=torch.long),
            sent=torch.stack([e.sent for e in ex]),
            returned=torch.stack([e.returned for e in ex]),
            forged=torch.tensor([e.forged for e in ex], dtype=torch.bool),
        )

    def last_returned(self, client: int, before: int | None = None) -> Tensor | None:
        """The latest model ``client`` returned (before round ``before`` if given), or None."""
        best = None
        for (t, c) in self._exchanges:
            if c == client and (before is None or t < before) and (best is None or t > best):
                best = t
        return None if best is None else self._store.get(self._exchanges[(best, client)][1])

    def global_trajectory(self) -> Tensor:
        """θ^0..θ^T stacked, shape (T+1, d)."""
        return torch.stack(list(self.global_models))
