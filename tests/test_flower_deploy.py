"""The book's federation on a real loopback Flower deployment: flower-superlink, one
flower-supernode per client (each loading only its own partition), `flwr run deploy local`, with
TLS and SuperNode authentication (the default); the log recorded by the ServerApp's
RecordingStrategy equals run_fedavg's (with the same active adversary), the attacks give the same
results on it, the forgery reaches the target only; a relay between one SuperNode and the
SuperLink records only ciphertext; a SuperNode that crashes mid-round (killed from outside, with
Flower's real heartbeat expiry) and one that joins late give the outcomes the log records. Every
process started is killed by id (process group, descendants and every process carrying the
deployment's mark), and every test asserts that no process it started is left."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

flwr = pytest.importorskip("flwr", reason="Flower is an optional extra: pip install flprivacy[flower] "
                                          "(or -r requirements-flower.txt); `make install` installs it")
psutil = pytest.importorskip("psutil", reason="the deployment test checks for leftover processes with psutil")

from flprivacy import LocalSGD, eavesdrop, linear_regression, run_fedavg  # noqa: E402
from flprivacy.config import client_generator  # noqa: E402
from flprivacy.threats import SendBack  # noqa: E402
from flprivacy.attacks.model_based_aia import model_based_aia  # noqa: E402
from flprivacy.data.attributes import SensitiveAttribute  # noqa: E402
from flprivacy.attacks.reconstruction import reconstruct_least_squares  # noqa: E402
from flprivacy.flower_deploy import Deployment, DeploymentError, deploy, make_node_key  # noqa: E402
from flprivacy.wire import recover_models  # noqa: E402

from flprivacy.flower_deploy import _BIN, FLOWER_ENV  # noqa: E402

ENV_PREFIX = " ".join(f"{k}={v}" for k, v in FLOWER_ENV.items())  # shown before every command (telemetry off, polling)

if not (_BIN / "flower-superlink").exists():
    pytest.skip("flower-superlink is not installed next to this Python", allow_module_level=True)

EPS64 = torch.finfo(torch.float64).eps
ROUNDS = 4  # Alg. 3 needs d+1 = 4 rounds for d = 3 parameters (2 features + bias); each round spawns
# one flwr-clientapp process per node (Flower's subprocess isolation), ~10 s a round on 2 shared cores
TARGET, ATTACK = 1, (2, 3)  # the active server sends client 1 her own last model in rounds 2-3 (SendBack)
# The fault run keeps Flower's default round timeout (3600 s in server_app): its crashed node is
# noticed by Flower's heartbeats. A SuperNode sends one every 0.8 x 30 s (+-10%); the SuperLink
# declares it unavailable 2 x 30 s after the last one (flwr 1.41: HEARTBEAT_DEFAULT_INTERVAL,
# HEARTBEAT_PATIENCE), so between 60 - 26.4 = 33.6 s and 60 s after the crash.
HEARTBEAT_EXPIRY = (60 - 0.8 * 30 * 1.1, 60.0)
TIMEOUT = 600.0  # each deployment's bound (s): a hang guard, far above a run on a busy machine (~150 s; 400 s
# for the fault run at a load average of 30 on 2 cores)


def _ours(workdir, any_home: bool = False) -> list[int]:
    """Live processes whose FLWR_HOME is this test's (everything the deployment started), or with
    ``any_home`` any FLWR_HOME under ``workdir``."""
    home = str(workdir / "flwr_home")
    out = []
    for p in psutil.process_iter():
        try:
            h = p.environ().get("FLWR_HOME", "")
            mine = h.startswith(str(workdir)) if any_home else h == home
            if mine and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p.pid)
        except (psutil.Error, OSError):
            pass
    return out


def _alive(pids) -> list[int]:
    """The processes of ``pids`` still alive (a zombie, dead but not yet reaped, counts as dead)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.Error:
            pass
    return out


def _left(base) -> list[int]:
    """Live descendants of this test process, and processes carrying a FLWR_HOME under ``base``
    (a grandchild re-parented when its parent died)."""
    return _alive({p.pid for p in psutil.Process().children(recursive=True)} | set(_ours(base, any_home=True)))


@pytest.fixture(autouse=True)
def no_process_left(tmp_path_factory):
    """After each test (and the module fixtures' deployments it set up): no process it started is alive."""
    yield
    base = tmp_path_factory.getbasetemp()
    deadline = time.monotonic() + 5  # SIGKILL'd processes vanish within a scheduler tick; 5 s bounds it
    while _left(base) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _left(base) == []


def _fault_run(work, clients, local):
    """4 clients; SuperNodes 0-2 start, the run needs 3. When round 1's message reaches client 2,
    her SuperNode crashes: SIGKILL to the flower-supernode process alone, from outside the
    harness (its SuperExec and ClientApp are left running, as after a real crash), and client
    3's SuperNode starts. A watcher times how long the crashed node's other processes live on."""
    events = {}

    def watch(pids, t_kill):
        deadline = t_kill + 60
        while _alive(pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        events["orphans_left_after_s"] = time.monotonic() - t_kill
        events["orphans_alive"] = _alive(pids)

    def script(dep, files):
        dep.wait_trains("supernode2", 2, timeout=TIMEOUT)  # round 1 has reached client 2
        node = psutil.Process(dep.procs["supernode2"].pid)
        pids = [q.pid for q in node.children(recursive=True)]
        os.kill(node.pid, 9)  # the crash: not through the harness
        events["orphans"] = _alive(pids)
        watcher = threading.Thread(target=watch, args=(pids, time.monotonic()))
        watcher.start()
        events["watcher"] = watcher
        dep.start_supernode(3, files[3])

    t0 = time.perf_counter()
    fl = deploy(("linear_regression", (2,)), clients, rounds=3, local=local, seed=0, timeout=TIMEOUT, workdir=work,
                start=[0, 1, 2], min_nodes=3, during=script)
    events["watcher"].join()
    return fl, clients, local, work, events, time.perf_counter() - t0


def _failing_run(work, clients, local):
    """2 clients, only SuperNode 0 started, the ServerApp needs both within 3 s: it raises, and the
    harness must report its error at once instead of waiting for a log until its timeout."""
    t0 = time.perf_counter()
    with pytest.raises(DeploymentError) as err:
        deploy(("linear_regression", (2,)), clients, rounds=2, local=local, seed=0, timeout=2 * TIMEOUT, workdir=work,
               start=[0], min_nodes=2, connect_timeout=3)
    return str(err.value), time.perf_counter() - t0


def _main_run(work, clients, local):
    """2 clients, 4 rounds, secure (the default), client 0's SuperNode behind a recording relay;
    an active server (SendBack) on client 1 in rounds 2 and 3. Two clients
    suffice for every check below (one forged, one honest) and each message costs a ClientApp
    process (seconds of CPU: Python, torch and flwr imported anew), so a third would add 5 processes."""
    t0 = time.perf_counter()
    fl = deploy(("linear_regression", (2,)), clients, rounds=ROUNDS, local=local, seed=0, timeout=TIMEOUT, workdir=work,
                adversary=SendBack(TARGET, ATTACK), relay_client=0)
    return fl, clients, local, work, time.perf_counter() - t0


@pytest.fixture(scope="module")
def runs(tmp_path_factory, attr_clients):
    """The deployments at once, each on its own free ports: the fault run (which spends a round
    waiting for Flower's heartbeat expiry) and the failing run in threads, the main run in this
    one; returns after all finished (each deploy() kills its processes before it returns or
    raises)."""
    fault_clients, fault_local = attr_clients(7, sizes=(40, 35, 50, 30), d=2), LocalSGD(lr=0.05, epochs=2, shuffle=False)
    main_clients, main_local = attr_clients(4, sizes=(40, 35), d=2), LocalSGD(lr=0.05, epochs=2)
    fault_work, main_work = tmp_path_factory.mktemp("faults"), tmp_path_factory.mktemp("deploy")
    with ThreadPoolExecutor(2) as pool:
        fault = pool.submit(_fault_run, fault_work, fault_clients, fault_local)
        failing = pool.submit(_failing_run, tmp_path_factory.mktemp("failing"), main_clients[:2], main_local)
        try:
            main = _main_run(main_work, main_clients, main_local)
        finally:
            fault_result = fault.result()  # waits for it (and its clean-up) even when the main run failed
            failing_result = failing.result()
    print(f"\ndeployments (in parallel): main {main[4]:.1f} s, faults {fault_result[5]:.1f} s; load average "
          f"{os.getloadavg()[0]:.1f}")  # shown with pytest -s
    return {"deployed": main[:4], "faulty": fault_result, "failing": failing_result, "main_wall": main[4],
            "fault_wall": fault_result[5]}


@pytest.fixture(scope="module")
def deployed(runs):
    return runs["deployed"]


@pytest.fixture(scope="module")
def faulty(runs):
    return runs["faulty"]


def _reference(clients, local):
    return run_fedavg(linear_regression(2), clients, rounds=ROUNDS, local=local, seed=0,
                      adversary=SendBack(TARGET, ATTACK)).log


def test_kill_takes_the_whole_process_tree_at_once(tmp_path):
    """``Deployment.kill`` SIGKILLs a process, its process group and every descendant, including
    one that left the group (its own session, as a daemon would): here a leader whose two children
    would sleep for 5 minutes, so nothing but the kill can end them within the 2 s allowed (the
    deployments' children exit by themselves when their parent dies, so the runs above cannot tell
    a kill of the leader alone from this one)."""
    import sys

    dep = Deployment(tmp_path)
    code = ("import subprocess, time\n"
            "subprocess.Popen(['sleep', '300'])\n"
            "subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
            "time.sleep(300)\n")
    leader = psutil.Process(dep._start("tree", [sys.executable, "-c", code]).pid)
    deadline = time.monotonic() + 30
    while len(leader.children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [leader.pid] + [c.pid for c in leader.children(recursive=True)]
    assert len(pids) == 3, "the leader did not start its two children within 30 s"
    dep.kill("tree")
    deadline = time.monotonic() + 2  # a SIGKILL'd process is gone within a scheduler tick
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = _alive(pids)
    for pid in left:  # a failing kill must not leave 5-minute sleepers behind
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    dep.procs["tree"].wait(timeout=5)  # reap the leader
    assert left == [], "kill() left part of the process tree alive"


def test_deployment_leaves_no_process(deployed):
    fl, _, _, work = deployed
    assert _ours(work) == []
    assert fl.settings["commands"][0].startswith(f"{ENV_PREFIX} flower-superlink --ssl-certfile")
    assert sum(c.startswith(f"{ENV_PREFIX} flower-supernode") for c in fl.settings["commands"]) == len(fl.log.n_samples)


def test_secure_by_default(deployed):
    """TLS with the deployment's own CA on every link, SuperNode authentication (each node's key
    registered before it starts), runtime dependency installation and telemetry off; keys
    readable by their owner only; the files between the processes are JSON and safetensors."""
    fl, clients, _, work = deployed
    commands = fl.settings["commands"]
    assert fl.settings["secure"] and not any("--insecure" in c for c in commands)
    link = commands[0]
    for flag in ("--ssl-certfile", "--ssl-keyfile", "--ssl-ca-certfile", "--enable-supernode-auth",
                 "--disable-runtime-dependency-installation"):
        assert flag in link
    assert "FLWR_TELEMETRY_ENABLED=0" in link and "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1" in link
    nodes = [c for c in commands if " flower-supernode " in c]
    assert all("--root-certificates" in c and "--auth-supernode-private-key" in c for c in nodes)
    assert sum(" flwr supernode register " in c for c in commands) == len(clients)
    assert "insecure" not in (work / "flwr_home" / "config.toml").read_text()
    secret = work / "secrets"
    assert secret.stat().st_mode & 0o777 == 0o700
    for key in [secret / "server.key", *(secret / f"node{c}" for c in range(len(clients)))]:
        assert key.stat().st_mode & 0o777 == 0o600
    assert sorted(p.suffix for p in work.glob("result.*")) == [".json", ".safetensors"]
    assert not list(work.glob("*.pt")) and not list(work.glob("*.pkl"))


def test_no_pickle_and_no_network_in_the_deployment_path():
    """No file of the deployment path unpickles (no torch.load, no pickle), and none reaches the
    network (no URL, no HTTP client of its own)."""
    from pathlib import Path

    import flprivacy.flower_deploy as fd
    import flprivacy.wire as wire

    files = [Path(fd.__file__), Path(wire.__file__), *sorted(fd.APP_DIR.rglob("*.py")), fd.APP_DIR / "pyproject.toml"]
    for f in files:
        text = f.read_text()
        for bad in ("torch.load", "weights_only", "import pickle", "pickle.load", "http://", "https://",
                    "import requests", "urllib", "import httpx"):
            assert bad not in text, f"{f.name} contains {bad!r}"


def test_the_wire_under_tls_carries_nothing_readable(deployed):
    """Client 0's SuperNode talked to the SuperLink through a relay that recorded every byte: the
    node took part in every round, yet the recording holds no HTTP message, no model, and none
    of the bytes Flower serialises the models it carried into (NumPy's .npy of each parameter)."""
    import io

    import numpy as np

    fl, _, _, _ = deployed
    capture = fl.settings["wire"]
    assert all(0 in part for part in fl.log.participants)
    assert capture.nbytes > 10_000  # the traffic of 4 rounds did cross the relay
    found = recover_models(capture, linear_regression(2))
    assert found.http_messages == 0 and found.objects == 0 and found.down == [] and found.up == []
    for e in fl.log.exchanges(0):
        for v in linear_regression(2).unflatten(e.returned).values():
            buf = io.BytesIO()
            np.save(buf, v.detach().numpy(), allow_pickle=False)
            assert buf.getvalue() not in capture and buf.getvalue()[-16:] not in capture


def test_an_unregistered_supernode_is_refused(tmp_path):
    """With SuperNode authentication, a node whose key was never registered is refused: the
    SuperLink never lists it (it logs the refused activation) and the node gives up."""
    dep = Deployment(tmp_path)
    try:
        dep.write_connection()
        dep.start_superlink()
        dep.wait_listening()
        key, _ = make_node_key(dep.secrets_dir, "stranger")
        dep.node_keys[0] = key  # held, never registered
        node = dep.start_supernode(0, tmp_path / "client0.json")
        deadline = time.monotonic() + 120
        while node.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        text = (tmp_path / "supernode0.log").read_text(errors="replace")
        assert node.poll() is not None, f"the unregistered SuperNode still runs after 120 s:\n{text[-2000:]}"
        assert "Activated node_id" not in (tmp_path / "superlink.log").read_text(errors="replace")
    finally:
        dep.stop()


def test_deployment_log_equals_run_fedavg_log(deployed):
    """Full participation, same seed, same adversary: Flower's node ids are mapped to clients by
    the partition-id each SuperNode reports (a `query` message), so the log is run_fedavg's up to
    the order of the aggregation's sums: ~(T+1)(n+2)ε max|θ| (see tests/test_flower.py::_tol)."""
    fl, clients, local, _ = deployed
    ref = _reference(clients, local)
    a, b = fl.log, ref
    tol = 4 * (ROUNDS + 1) * (len(clients) + 2) * EPS64 * max(1.0, float(b.global_trajectory().abs().max()))
    assert a.participants == b.participants and a.n_samples == b.n_samples and torch.equal(a.weights, b.weights)
    assert (a.global_trajectory() - b.global_trajectory()).abs().max() <= tol
    ea, eb = a.exchanges(), b.exchanges()
    assert [(e.round, e.client, e.forged) for e in ea] == [(e.round, e.client, e.forged) for e in eb]
    for x, y in zip(ea, eb):
        assert (x.sent - y.sent).abs().max() <= tol and (x.returned - y.returned).abs().max() <= tol


def test_attacks_on_the_deployment_log_match_the_in_process_log(deployed):
    """Alg. 3 (least squares on the eavesdropped exchanges) and the model-based AIA (eq. 3) give
    the same answers on the deployment's log as on run_fedavg's."""
    fl, clients, local, _ = deployed
    model = linear_regression(2)
    ref = _reference(clients, local)
    attr = SensitiveAttribute.binary(1)
    for c in range(len(clients)):
        rec, rec0 = reconstruct_least_squares(eavesdrop(fl.log, c)), reconstruct_least_squares(eavesdrop(ref, c))
        scale = float(rec0.theta.norm())
        # least squares amplifies the logs' rounding difference by at most cond(Θ_out) (rec.error_estimate ~ cond·ε)
        assert (rec.theta - rec0.theta).norm() / scale <= max(50 * (rec.error_estimate + rec0.error_estimate), 1e-12)
        X, y = clients[c].X, clients[c].y
        assert torch.equal(model_based_aia(model, rec.theta, X, y, attr.columns, attr.candidates),
                           model_based_aia(model, rec0.theta, X, y, attr.columns, attr.candidates))


def test_the_active_server_forges_the_targets_messages_only(deployed):
    """SendBack through the recording strategy: in rounds 2-3 client 1 receives her own round-1
    (then round-2) reply instead of θ^t; every other message is θ^t; the forged replies stay out
    of the aggregate: θ^{t+1} is the other clients' average, p renormalised (eq. 1)."""
    fl, clients, _, _ = deployed
    log = fl.log
    forged = {(e.round, e.client) for e in log.exchanges() if e.forged}
    assert forged == {(t, TARGET) for t in ATTACK}
    for e in log.exchanges():
        if e.forged:
            assert torch.equal(e.sent, log.exchange(e.round - 1, TARGET).returned)  # her previous reply
            assert not torch.equal(e.sent, log.global_models[e.round])
        else:
            assert torch.equal(e.sent, log.global_models[e.round])
    tol = 4 * (ROUNDS + 1) * (len(clients) + 2) * EPS64 * max(1.0, float(log.global_trajectory().abs().max()))
    p = log.weights
    for t in range(ROUNDS):
        kept = [c for c in range(len(clients)) if (t, c) not in forged]
        avg = sum(p[c] * log.exchange(t, c).returned for c in kept) / sum(p[c] for c in kept)
        assert (log.global_models[t + 1] - avg).abs().max() <= tol


def test_a_supernode_killed_mid_round(faulty):
    """Round 1 closes once Flower declares the crashed node unavailable (its heartbeats stopped;
    the round timeout is Flower's default, never reached): the log keeps client 2 as sampled but
    dropped (no exchange) with Flower's reason, the aggregate is the others' (eq. 1, p
    renormalised), the dead node is not sampled again, the run ends in bounded time, and the
    crashed node's SuperExec and ClientApp, left running by the crash, are ended at once."""
    fl, clients, local, _, events, wall = faulty
    log = fl.log
    assert log.sampled(1) == [0, 1, 2] and log.participants[1] == [0, 1] and log.dropped(1) == [2]
    assert "Node Unavailable" in log.failures[(1, 2)]
    assert [log.dropped(t) for t in (0, 2)] == [[], []] and 2 not in log.participants[2]
    assert {(e.round, e.client) for e in log.exchanges()} == {(0, 0), (0, 1), (0, 2), (1, 0), (1, 1),
                                                              (2, 0), (2, 1), (2, 3)}
    tol = 4 * 4 * 6 * EPS64 * max(1.0, float(log.global_trajectory().abs().max()))
    p = log.weights
    for t in range(3):
        avg = sum(p[c] * log.exchange(t, c).returned for c in log.participants[t]) / sum(p[c] for c in log.participants[t])
        assert (log.global_models[t + 1] - avg).abs().max() <= tol
    # round 1 lasted until the heartbeat expiry, not for ever (it began before the crash; +45 s: the
    # training before the crash and the polling on a loaded machine)
    assert HEARTBEAT_EXPIRY[0] <= fl.settings["round_seconds"][1] <= HEARTBEAT_EXPIRY[1] + 45
    assert events["orphans"] != []  # the crash did leave processes behind (the SuperExec at least)
    assert events["orphans_alive"] == [] and events["orphans_left_after_s"] < 15 and wall < TIMEOUT


def test_a_supernode_that_joins_late(faulty):
    """Client 3's SuperNode starts during round 1: it is queried for its partition and takes
    part from round 2; its reply is its own local update of θ^2 (recomputed here, in-process)."""
    fl, clients, local, _, _, _ = faulty
    log = fl.log
    assert [3 in part for part in log.participants] == [False, False, True]
    assert log.client_messages(3).rounds.tolist() == [2]
    model = linear_regression(2)
    for e in log.exchanges():  # every reply is the local update of what the client was sent (Alg. 2; full batch,
        # no shuffling: the same operations in the node's process and here, up to the sums' order: 4(n+2)ε max|θ|)
        mine = local(model, e.sent.clone(), clients[e.client], client_generator(0, e.client))
        n = clients[e.client].n
        assert (mine - e.returned).abs().max() <= 4 * (n + 2) * EPS64 * max(1.0, float(e.returned.abs().max()))
    assert torch.equal(log.exchange(2, 3).sent, log.global_models[2])


def test_missing_superlink_is_a_clear_error_not_a_hang(tmp_path):
    """`flwr run` against a port where no SuperLink listens fails within seconds with Flower's
    'Connection to the SuperLink is unavailable'."""
    dep = Deployment(tmp_path)
    dep.write_connection()
    t0 = time.monotonic()
    r = dep.flwr_run(timeout=60)
    assert r.returncode != 0 and "unavailable" in (r.stdout + r.stderr)
    assert time.monotonic() - t0 < 60


def test_a_failing_serverapp_is_a_clear_error_not_a_hang(runs):
    """The ServerApp raises (too few nodes after its connect timeout): deploy() raises
    DeploymentError with the ServerApp's own message, not after its timeout (2 TIMEOUT)."""
    message, wall = runs["failing"]
    assert message.startswith("the ServerApp failed") and "nodes are connected after 3 s but 2 are needed" in message
    assert wall < TIMEOUT


def test_free_port_avoids_the_ephemeral_range_and_never_repeats():
    """Ports for the deployment's listeners come from below the range the OS gives outgoing
    connections (where one took a SuperNode's port in a test run), are bindable, and are not
    handed out twice by one process."""
    import socket

    from flprivacy.ports import _ephemeral_low, free_port

    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    assert all(1024 <= p < min(_ephemeral_low(), 32768) for p in ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[-1]))


def test_flowers_node_unavailable_reply_is_mapped_to_its_client(attr_clients):
    """In process, the reply Flower's SuperLink makes for a node that missed its heartbeats: an
    error from node 1 (the SuperLink itself, not the node) that names the message it answers.
    The recorder maps it to the client that message went to and records the failure; the round
    closes over the other replies (eq. 1 renormalised)."""
    from flwr.app import Context, Error, Message, MessageType, RecordDict
    from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode

    from flprivacy.flower import InProcessGrid, _server_identity, client_app, server_app

    class SuperLinkGrid(InProcessGrid):
        train_rounds = 0
        victim = None

        def send_and_receive(self, messages, *, timeout=None):
            messages = list(messages)
            replies = super().send_and_receive(messages, timeout=timeout)
            if any(m.metadata.message_type == MessageType.TRAIN for m in messages):
                if self.train_rounds == 1:
                    lost = messages[-1]
                    self.victim = int(self.contexts[lost.metadata.dst_node_id].node_config["partition-id"])
                    replies = [r for r in replies if r.metadata.reply_to_message_id != lost.metadata.message_id]
                    err = Message(Error(code=ErrorCode.NODE_UNAVAILABLE, reason="Error: Node Unavailable"), reply_to=lost)
                    err.metadata.__dict__["_src_node_id"] = SUPERLINK_NODE_ID
                    replies.append(err)
                self.train_rounds += 1
            return replies

    clients, model = attr_clients(8, sizes=(40, 35, 50), d=2), linear_regression(2)
    grid = SuperLinkGrid(client_app(model, clients, LocalSGD(lr=0.05)), 3)
    app, out = server_app(model, [c.n for c in clients], rounds=3, theta0=model.init_params(0), min_nodes=2)
    with _server_identity(run_id=1):
        app(grid, Context(run_id=1, node_id=SUPERLINK_NODE_ID, node_config={}, state=RecordDict(), run_config={}))
    log = out.log
    assert log.dropped(1) == [grid.victim] and "Node Unavailable" in log.failures[(1, grid.victim)]
    assert grid.victim not in log.participants[2]
    p, part = log.weights, log.participants[1]
    avg = sum(p[c] * log.exchange(1, c).returned for c in part) / sum(p[c] for c in part)
    assert (log.global_models[2] - avg).abs().max() <= 4 * 4 * 5 * EPS64 * max(1.0, float(log.global_trajectory().abs().max()))
