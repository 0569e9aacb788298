"""The eavesdropper on the wire (Diana et al. §2.2, on a real deployment): a relay between client
0's SuperNode and the SuperLink records the loopback traffic. In Flower's ``--insecure`` mode
(the demonstration's only use of it) every model the node was sent and every model it returned
is rebuilt from the recorded bytes, bit for bit the server's log, and Alg. 3 runs on them with
the log's result. The same relay under TLS (the default) is tested in
tests/test_flower_deploy.py::test_the_wire_under_tls_carries_nothing_readable."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import torch

flwr = pytest.importorskip("flwr", reason="Flower is an optional extra: pip install flprivacy[flower]")
psutil = pytest.importorskip("psutil", reason="the deployment test checks for leftover processes with psutil")

from flprivacy import eavesdrop, linear_regression  # noqa: E402
from flprivacy.attacks.reconstruction import reconstruct_least_squares  # noqa: E402
from flprivacy.flower_deploy import _BIN, InsecureDeploymentWarning  # noqa: E402
from flprivacy.optimum import least_squares_optimum  # noqa: E402
from flprivacy.wire import Relay, eavesdrop_on_the_wire, http_messages, recover_models  # noqa: E402

if not (_BIN / "flower-superlink").exists():
    pytest.skip("flower-superlink is not installed next to this Python", allow_module_level=True)

ROUNDS = 4  # Alg. 3 needs d + 1 = 4 exchanges for d = 3 (2 features and the bias)


@pytest.fixture(scope="module")
def insecure():
    t0 = time.perf_counter()
    out = eavesdrop_on_the_wire(secure=False, rounds=ROUNDS, timeout=600)
    out["wall"] = time.perf_counter() - t0
    return out


def test_the_insecure_mode_says_so():
    from flprivacy.flower_deploy import deploy

    with pytest.warns(InsecureDeploymentWarning, match="no TLS"), pytest.raises(ValueError, match="relay_client"):
        deploy(("linear_regression", (2,)), [], rounds=1, local=None, secure=False, relay_client=3)


def test_models_recovered_from_the_wire_are_the_logs(insecure):
    """Every train message crossed the relay in clear: the models recovered from the bytes are
    exactly (bitwise) the server's log of client 0, the sent θ^t and the returned θ_0^t of each
    round."""
    log, found = insecure["run"].log, insecure["found"]
    assert [t for t, _ in found.down] == list(range(ROUNDS)) and [t for t, _ in found.up] == list(range(ROUNDS))
    for (t, sent), (u, back) in zip(found.down, found.up):
        e = log.exchange(t, 0)
        assert torch.equal(sent, e.sent) and torch.equal(back, e.returned)
    assert found.http_messages > 0 and found.objects > 0


def test_the_passive_attack_runs_on_the_wire(insecure):
    """Alg. 3 on the wire's exchanges gives the server's result (the same inputs, bit for bit) and
    reaches client 0's least-squares optimum to ~cond·ε (the rounding error estimate)."""
    rec, log = insecure["reconstruction"], insecure["run"].log
    assert rec is not None
    ref = reconstruct_least_squares(eavesdrop(log, 0))
    assert torch.equal(rec.theta, ref.theta)
    star = least_squares_optimum(insecure["clients"][0])
    assert float((rec.theta - star).norm() / star.norm()) <= max(50 * rec.error_estimate, 1e-12)


def test_relay_forwards_and_records_both_ways():
    """The relay is transparent (an echo server answers through it) and records each direction."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def echo():
        conn, _ = srv.accept()
        with conn:
            while data := conn.recv(1024):
                conn.sendall(data.upper())

    threading.Thread(target=echo, daemon=True).start()
    with Relay(srv.getsockname()[1]) as relay:
        with socket.create_connection(("127.0.0.1", relay.port)) as c:
            c.sendall(b"hello")
            got = b""
            while len(got) < 5:
                got += c.recv(1024)
        deadline = time.monotonic() + 5
        while relay.capture.nbytes < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
    srv.close()
    assert got == b"HELLO"
    assert [(bytes(c["up"]), bytes(c["down"])) for c in relay.capture.connections] == [(b"hello", b"HELLO")]


def test_http_parser_reads_length_and_chunked_bodies_and_stops_at_non_http():
    stream = (b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
              b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n1\r\nz\r\n0\r\n\r\n"
              b"\x16\x03\x01\x00\x05hello")
    msgs = http_messages(stream)
    assert [(m[0], m[2]) for m in msgs] == [("POST /a HTTP/1.1", b"abc"), ("HTTP/1.1 200 OK", b"xyz")]
    assert http_messages(b"\x16\x03\x01\x02\x00" + b"\x00" * 100) == []
    assert recover_models(Relay(1).capture, linear_regression(2)).down == []
