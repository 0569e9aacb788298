"""The eavesdropper on the wire: a relay that records a SuperNode's traffic, and the models in it.

Diana et al.'s eavesdropper (§2.2) reads the messages a client exchanges with the server. On a
real Flower deployment those messages cross a network: :class:`~flprivacy.relay.Relay` sits between one SuperNode
and the SuperLink (the SuperNode connects to the relay, the relay to the SuperLink; a process
with no other access, as a router or a compromised switch would be), forwards every byte both
ways and records them. :func:`recover_models` reads the recording as Flower 1.41 sends it
(protobuf messages over HTTP/1.1: the Fleet API) and rebuilds every model it carried: the
messages pulled by the node (the global models it was sent) and those it pushed (its updates).
Over TLS the recording is ciphertext and nothing is recovered.

:func:`eavesdrop_on_the_wire` runs the whole demonstration on a small least-squares federation.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import zlib
from dataclasses import dataclass

import torch
from torch import Tensor

from .log import ClientMessages
from .models import FLModel
from .relay import DOWN, UP, Capture, Relay
from .validation import check_int, check_positive, check_seed

__all__ = ["WireModels", "http_messages", "recover_models", "eavesdrop_on_the_wire"]  # Relay, Capture: flprivacy.relay

# ---- reading the recording -----------------------------------------------------------------------------------
def http_messages(data: bytes) -> list[tuple[str, dict[str, str], bytes]]:
    """The HTTP/1.1 messages (start line, headers, decoded body) at the start of ``data``, in
    order; parsing stops at the first bytes that are not HTTP (e.g. a TLS record) or at a
    message cut short (or malformed: a length or chunk size that is not a number, a body that
    does not decompress as its header says)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"http_messages: data must be the recorded bytes (bytes or bytearray, e.g. "
                        f"capture.connections[0]['up']); got {type(data).__name__}.")
    data = bytes(data)
    out, i = [], 0
    while i < len(data):
        j = data.find(b"\r\n\r\n", i)
        if j < 0:
            break
        lines = data[i:j].decode("latin-1").split("\r\n")
        start = lines[0]
        if not (start.startswith("HTTP/1.") or start.endswith((" HTTP/1.1", " HTTP/1.0"))):
            break
        headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
        i = j + 4
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = bytearray()
            while True:
                k = data.find(b"\r\n", i)
                if k < 0:
                    return out
                try:
                    size = int(data[i:k].split(b";")[0], 16)
                except ValueError:  # not a chunk size: not HTTP
                    return out
                i = k + 2
                if size == 0:
                    i = data.find(b"\r\n\r\n", i - 2) + 4 if data.find(b"\r\n\r\n", i - 2) >= 0 else len(data)
                    break
                body += data[i:i + size]
                i += size + 2
            body = bytes(body)
        else:
            try:
                n = int(headers.get("content-length", "0"))
            except ValueError:  # not a length: not HTTP
                break
            if n < 0 or i + n > len(data):
                break
            body, i = data[i:i + n], i + n
        enc = headers.get("content-encoding", "").lower()
        try:
            if enc == "gzip":
                body = gzip.decompress(body)
            elif enc == "deflate":
                body = zlib.decompress(body)
        except (OSError, EOFError, zlib.error):  # a body that is not what its header says: not HTTP
            break
        out.append((start, headers, body))
    return out


@dataclass
class WireModels:
    """What :func:`recover_models` found: the models the node was sent (``down``) and those it
    sent back (``up``), each with its round (the ``server-round`` of FedAvg's train message, and
    for a reply that of the message it answers), in the order they crossed the wire; ``http_messages`` counts the HTTP messages parsed and
    ``objects`` the Flower objects whose content matched their id."""

    down: list[tuple[int, Tensor]]
    up: list[tuple[int, Tensor]]
    http_messages: int
    objects: int

    def client_messages(self, client: int) -> ClientMessages:
        """The eavesdropped exchanges of the node's client: each round's sent model with the
        reply to it (the rounds where both crossed the wire)."""
        client = check_int("client", client, "WireModels.client_messages")
        sent, back = dict(self.down), dict(self.up)
        rounds = sorted(set(sent) & set(back))
        if not rounds:
            raise ValueError("recover_models found no complete exchange (a model sent and the reply to it).")
        return ClientMessages(client=client, rounds=torch.tensor(rounds, dtype=torch.long),
                              sent=torch.stack([sent[t] for t in rounds]),
                              returned=torch.stack([back[t] for t in rounds]),
                              forged=torch.zeros(len(rounds), dtype=torch.bool))


def recover_models(capture: Capture, model: FLModel, key: str = "arrays") -> WireModels:
    """The models carried by the train messages in a :class:`~flprivacy.relay.Relay`'s recording of a SuperNode.

    The requests a node sends up and the responses coming down are paired in order on each
    connection (HTTP/1.1). Flower 1.41 sends a message's content as separate objects, each named
    by the SHA-256 of its bytes: ``push-object`` requests (up) and ``pull-object`` responses
    (down) carry them, ``push-messages`` requests and ``pull-messages`` responses carry each
    message's metadata and name its root object. Every object whose bytes hash to its name is kept; each train message
    is rebuilt from them with Flower's own ``inflate_object_from_contents``, and its
    ``ArrayRecord`` under ``key`` read as θ (:func:`flprivacy.flower.from_arrays`). Bytes that
    are not HTTP (TLS) yield nothing.
    """
    where = "recover_models"
    if not isinstance(capture, Capture):
        raise TypeError(f"{where}: capture must be a Capture (a Relay's .capture); got {type(capture).__name__}.")
    if not isinstance(model, FLModel):
        raise TypeError(f"{where}: model must be the FLModel the federation trains (e.g. linear_regression(d)); got "
                        f"{type(model).__name__}.")
    if not isinstance(key, str):
        raise TypeError(f"{where}: key must be the ArrayRecord's key in the messages (a str, 'arrays' for FedAvg); "
                        f"got {type(key).__name__}.")
    from flwr.proto.fleet_pb2 import PullMessagesResponse, PushMessagesRequest
    from flwr.proto.message_pb2 import PullObjectResponse, PushObjectRequest
    from flwr.supercore.inflatable.inflatable_utils import inflate_object_from_contents

    from .flower import from_arrays

    objects: dict[str, bytes] = {}
    roots: list[tuple[str, str, object]] = []  # (direction, root object id, message metadata), in order
    n_http = 0

    def keep(content: bytes) -> None:
        objects[hashlib.sha256(content).hexdigest()] = bytes(content)

    for conn in capture.connections:
        requests, responses = http_messages(bytes(conn[UP])), http_messages(bytes(conn[DOWN]))
        n_http += len(requests) + len(responses)
        for (start, _, body), resp in zip(requests, responses + [None] * (len(requests) - len(responses))):
            path = start.split(" ")[1] if " " in start else ""
            with contextlib.suppress(Exception):  # a message that does not parse is skipped, not guessed
                if path.endswith("/push-object"):
                    keep(PushObjectRequest.FromString(body).object_content)
                elif path.endswith("/push-messages"):
                    req = PushMessagesRequest.FromString(body)
                    roots += [(UP, t.object_id, m.metadata) for t, m in zip(req.message_object_trees, req.messages_list)]
                elif resp is not None and path.endswith("/pull-object"):
                    keep(PullObjectResponse.FromString(resp[2]).object_content)
                elif resp is not None and path.endswith("/pull-messages"):
                    res = PullMessagesResponse.FromString(resp[2])
                    roots += [(DOWN, t.object_id, m.metadata) for t, m in zip(res.message_object_trees, res.messages_list)]
    found: dict[str, list[tuple[int, Tensor]]] = {UP: [], DOWN: []}
    round_of: dict[str, int] = {}  # a train message's id -> its round (FedAvg's config "server-round" - 1)
    for direction, root, meta in roots:
        with contextlib.suppress(Exception):  # a message whose objects did not all cross this wire
            if meta.message_type != "train":
                continue
            msg = inflate_object_from_contents(root, objects, keep_object_contents=True)
            if msg.has_error() or key not in msg.content.array_records:
                continue
            if direction == DOWN:
                t = round_of[meta.message_id] = int(msg.content.config_records["config"]["server-round"]) - 1
            else:
                t = round_of[meta.reply_to_message_id]
            found[direction].append((t, from_arrays(model, msg.content.array_records[key])))
    return WireModels(down=found[DOWN], up=found[UP], http_messages=n_http, objects=len(objects))


def eavesdrop_on_the_wire(*, secure: bool, rounds: int = 4, seed: int = 0, timeout: float = 600.0) -> dict:
    """Two least-squares clients on a loopback deployment, client 0's SuperNode behind a
    :class:`~flprivacy.relay.Relay`; returns the deployment (``"run"``), the recording, what
    :func:`recover_models` found in it and, when it found at least d+1 exchanges, Alg. 3's
    reconstruction from them (``"reconstruction"``, else None). ``secure=False`` is Flower's
    ``--insecure`` mode, used here only to show what it exposes."""
    import warnings

    where = "eavesdrop_on_the_wire"
    if not isinstance(secure, bool):
        raise TypeError(f"{where}: secure must be True (TLS) or False (Flower's --insecure mode); got {secure!r}.")
    check_int("rounds", rounds, where, minimum=1)
    check_seed("seed", seed, where)
    check_positive("timeout", timeout, where)

    from . import LocalSGD, linear_regression
    from .attacks.reconstruction import reconstruct_least_squares
    from .clients import ClientData
    from .flower_deploy import InsecureDeploymentWarning, deploy

    g = torch.Generator().manual_seed(seed)
    clients = []
    for n in (40, 35):
        X = torch.randn(n, 2, generator=g, dtype=torch.float64)
        clients.append(ClientData(X, X @ torch.randn(2, generator=g, dtype=torch.float64) + 0.5
                                  + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureDeploymentWarning)  # the demonstration names its insecure mode
        run = deploy(("linear_regression", (2,)), clients, rounds=rounds, local=LocalSGD(lr=0.05, epochs=2),
                     seed=seed, timeout=timeout, secure=secure, relay_client=0)
    capture = run.settings["wire"]
    found = recover_models(capture, linear_regression(2))
    rec = None
    if len({t for t, _ in found.down} & {t for t, _ in found.up}) >= 3:
        rec = reconstruct_least_squares(found.client_messages(0))
    return {"run": run, "clients": clients, "capture": capture, "found": found, "reconstruction": rec}
