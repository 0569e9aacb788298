"""Threat models as code: what each adversary observes, and what it may change.

The book's attacks never reach into the simulator; they take one of these views of the
:class:`~flprivacy.log.MessageLog`:

=====================================  ======================================================
adversary                              sees / does
=====================================  ======================================================
passive eavesdropper, or honest-but-   :func:`eavesdrop`: the pairs (θ^t, θ_c^t) exchanged with
curious server (Diana §2.2; Xu §2)     one target client c in the rounds it observes;
                                       :func:`last_returned`: the latest θ_c^t among them
active (malicious) server              an :class:`Adversary` that replaces the model sent to a
(Diana §2.2, Alg. 4)                   target client in chosen rounds, and observes the replies
curious client (Wilson et al. §3.1)    :func:`curious_client`: only the global models it receives
                                       as a participant, e.g. two consecutive ones
=====================================  ======================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .log import ClientMessages, MessageLog
from .validation import check_int


# ---- passive ----------------------------------------------------------------------------------
def eavesdrop(log: MessageLog, client: int, rounds: Sequence[int] | None = None) -> ClientMessages:
    """The passive adversary's observation M_c = {(θ^t, θ_c^t), t ∈ T_c} (Diana §2.2).

    Args:
        log: the run's message log.
        client: the target client c.
        rounds: the eavesdropped rounds T_c (default: every round c took part in).
    """
    return log.client_messages(client, rounds)


def last_returned(log: MessageLog, client: int, before: int | None = None) -> Tensor:
    """The latest model θ_c^t the passive adversary saw ``client`` return (in a round before
    ``before`` if given): the model the model-based AIA attacks in Diana et al.'s passive setting
    (§5.2, "the last model the client sent"), and the warm start of Model-w-O.

    Raises:
        ValueError: if the client returned no model in those rounds.
    """
    check_int("client", client, "last_returned", minimum=0)
    if client >= log.n_clients:
        raise ValueError(f"last_returned: client must be in 0..{log.n_clients - 1}, got {client}.")
    if before is not None:
        check_int("before", before, "last_returned", minimum=0)
    theta = log.last_returned(client, before=before)
    if theta is None:
        raise ValueError(f"last_returned: client {client} returned no model{'' if before is None else f' before round {before}'}; "
                         "the adversary has nothing to attack yet (run more rounds, or pick a later `before`).")
    return theta


# ---- curious client ---------------------------------------------------------------------------
@dataclass
class GlobalModels:
    """The global models a curious client received: ``models[i]`` is θ^{rounds[i]}.

    ``server_lr`` is the global learning rate η_g, which Wilson et al. assume the attacker knows
    (their App. B drops the assumption). ``n_samples_total`` is N = Σ_k N_k, which they assume the
    attacker can guess.
    """

    rounds: Tensor
    models: Tensor
    server_lr: float
    n_samples_total: int

    def consecutive(self, t: int) -> tuple[Tensor, Tensor]:
        """(θ^t, θ^{t+1}), raising if the client did not receive both."""
        pos = {int(r): i for i, r in enumerate(self.rounds.tolist())}
        if t not in pos or t + 1 not in pos:
            raise KeyError(
                f"the curious client did not receive both θ^{t} and θ^{t + 1}; it received rounds "
                f"{self.rounds.tolist()}. Pick t with both present (the attack needs two consecutive models)."
            )
        return self.models[pos[t]], self.models[pos[t + 1]]

    def averaged_update(self, t: int) -> Tensor:
        """(θ^t - θ^{t+1}) / η_g: the weighted average of all clients' local updates in round t
        (Wilson et al. eq. 2), the target of the curious-client attack."""
        a, b = self.consecutive(t)
        return (a - b) / self.server_lr


def curious_client(log: MessageLog, attacker: int) -> GlobalModels:
    """What a curious client ``attacker`` observes: the global model of every round it was
    sampled in, plus the following round's model when it is sampled again (Wilson §3.1)."""
    if not 0 <= attacker < log.n_clients:
        raise ValueError(f"attacker must be a client index in 0..{log.n_clients - 1}, got {attacker}.")
    rounds = [t for t, part in enumerate(log.participants) if attacker in part]
    if not rounds:
        raise ValueError(f"client {attacker} never took part, so it observed no global model.")
    return GlobalModels(
        rounds=torch.tensor(rounds, dtype=torch.long),
        models=torch.stack([log.global_models[t] for t in rounds]),
        server_lr=log.server_lr,
        n_samples_total=int(sum(log.n_samples)),
    )


# ---- active -------------------------------------------------------------------------------------
class Adversary:
    """An active (malicious) server: may replace the model sent to a client (Diana §2.2).

    :func:`~flprivacy.federation.run_fedavg` calls :meth:`forge` before every exchange. Return
    ``None`` to send the honest global model, or a parameter vector to send instead. The reply
    to a forged message is recorded in the log (``forged=True``) and, unless
    ``aggregate_forged``, left out of the aggregate. State across rounds (e.g. Adam moments)
    lives on the object; the log holds every earlier reply.
    """

    aggregate_forged: bool = False

    def forge(self, round: int, client: int, global_model: Tensor, log: MessageLog) -> Tensor | None:
        """The model to send ``client`` in ``round`` instead of ``global_model``, or ``None``."""
        return None


class SendBack(Adversary):
    """The simplest active attack (Diana §4.2; Chen et al. 2022): in each attack round, send the
    target client her own latest returned model instead of θ^t, so that she keeps training on
    her local objective.

    Args:
        target: client c.
        rounds: the attack rounds T_c^a.
    """

    def __init__(self, target: int, rounds: Iterable[int]):
        check_int("target", target, "SendBack")
        self.target = int(target)
        self.rounds = set(int(r) for r in rounds)

    def forge(self, round: int, client: int, global_model: Tensor, log: MessageLog) -> Tensor | None:
        if client != self.target or round not in self.rounds:
            return None
        last = log.last_returned(client, before=round)
        if last is None:
            raise RuntimeError(
                f"SendBack: client {client} has returned no model before round {round}; start the attack "
                "after at least one honest exchange with the target (or record that client's exchanges)."
            )
        return last
