"""The book's federation as a real Flower deployment on loopback: SuperLink, SuperNodes, ``flwr run``.

:func:`deploy` writes each client's data to its own file, starts ``flower-superlink`` and one
``flower-supernode`` per client (node config ``partition-id=c data=<file of client c>``, so a
node loads only its own partition), submits the Flower App in ``deploy/`` with ``flwr run``,
waits for the ServerApp to save the :class:`~flprivacy.log.MessageLog` its
:class:`~flprivacy.flower.RecordingStrategy` recorded, and always kills every process it started
(each marked by an environment variable, so that a process re-parented when its parent died is
found too), also when this process receives SIGTERM. All on 127.0.0.1.

Secure by default (``secure=True``):

- TLS on every link (the SuperNodes' Fleet API and the Control API of ``flwr run``), with a
  private certificate authority and a server certificate for 127.0.0.1/localhost that
  :func:`make_certificates` creates in the deployment's private folder (mode 0700, keys 0600);
- SuperNode authentication: each SuperNode holds its own EC P-384 key, registered with
  ``flwr supernode register`` before it starts; the SuperLink runs with
  ``--enable-supernode-auth`` and refuses any other node;
- nothing is unpickled: the files between the processes are JSON and safetensors, at paths the
  harness chooses (the ServerApp reads its folder from its SuperLink's environment, never from
  the run config a submitter sends);
- Flower's runtime installation of app dependencies (``uv sync``) and its telemetry are off, so
  no process of the deployment reaches the network.

``secure=False`` keeps Flower's ``--insecure`` mode (plain HTTP, no node authentication) for the
demonstration of :mod:`flprivacy.wire`, and warns.

The App's ``serverapp``/``clientapp`` (``deploy/flprivacy_app/apps.py``) are
:func:`deployed_serverapp` and :func:`deployed_clientapp`, thin shells that build
:func:`flprivacy.flower.server_app` and :func:`flprivacy.flower.client_app` from those files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import random
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor

from flwr.app import Context, Message
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from .federation import ClientData, FLRun, LocalTrainer
from .flower import PARTITION, client_app, server_app
from .log import Exchange, MessageLog
from .models import FLModel
from .ports import free_port
from .relay import Relay
from .threats import Adversary, SendBack

__all__ = ["deploy", "Deployment", "DeploymentError", "deployed_serverapp", "deployed_clientapp", "APP_DIR",
           "make_certificates", "make_node_key", "Certificates", "InsecureDeploymentWarning", "save_log",
           "load_log"]

APP_DIR = Path(__file__).resolve().parents[2] / "deploy"  # the Flower App folder (its pyproject.toml)
# Polling, at 0.25 s (the interval of Flower's own runtime API): the ServerApp pulls the replies
# (_PollingGrid; Flower's Grid sleeps 3 s between pulls), and Flower's SuperExec (started by the
# SuperLink and by each SuperNode) looks for a ServerApp / ClientApp to launch every
# FLWR_SUPEREXEC_TASK_POLL_INTERVAL s (default 1 s, paid once per message). An idle SuperLink and
# its SuperExec then use ~1.5% of a core (measured: 4% at 0.1 s, 0.4% at 1 s), and so does each SuperNode.
POLL_S = 0.25
# Every Flower process (each ClientApp too: one per message) would also send a usage event to
# telemetry.flower.ai, running `file -b` on the Python binary to describe the machine, and ask PyPI
# for a newer flwr; the SuperLink's SuperExec would run `uv sync` on every submitted App (resolving
# its dependencies from the network) unless told not to (flwr 1.41:
# FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1, also passed as the SuperLink's
# --disable-runtime-dependency-installation; SuperNodes install nothing unless given
# --allow-runtime-dependency-installation). A privacy book's deployment sends nothing to anyone.
FLOWER_ENV = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
              "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
              "FLWR_SUPEREXEC_TASK_POLL_INTERVAL": str(POLL_S)}
FOLDER_ENV = "FLPRIVACY_DEPLOY_DIR"  # the SuperLink's folder: where the ServerApp reads its spec and writes its result
MARK_ENV = "FLPRIVACY_DEPLOY_PROCESS"  # "<deployment token>/<name>" on every process a deployment starts
_BIN = Path(sys.executable).parent
_INIT_LOCK = threading.Lock()
"""Held while :func:`deploy` draws θ^0: ``FLModel.init_params`` seeds torch's global generator inside
``fork_rng``, so two threads drawing at once interleave their draws (measured: 26 of 900 concurrent
draws of ``linear_regression(2).init_params(0)`` differed; a CI run's deployment started from
another θ^0 than run_fedavg's)."""


class DeploymentError(RuntimeError):
    """The deployment did not finish in time or a process failed; the message holds the logs' tails."""


class InsecureDeploymentWarning(UserWarning):
    """A deployment without TLS or node authentication (``secure=False``)."""


# ---- plain files between the processes: JSON and safetensors, never pickle --------------------------------
def _write_private(path: Path, data: bytes, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _save(base: Path, meta: dict, tensors: dict[str, Tensor]) -> None:
    """``base.safetensors`` (the tensors) then ``base.json`` (the rest), each written to a
    temporary name and renamed, so a reader that sees the JSON file sees both whole."""
    from safetensors.torch import save_file

    tensors = {k: v.detach().contiguous().clone() for k, v in tensors.items() if v.numel() > 0}
    tmp = base.with_suffix(".safetensors.tmp")
    save_file(tensors, str(tmp))
    os.chmod(tmp, 0o600)
    os.replace(tmp, base.with_suffix(".safetensors"))
    tmp = base.with_suffix(".json.tmp")
    _write_private(tmp, json.dumps(meta).encode())
    os.replace(tmp, base.with_suffix(".json"))


def _load(base: Path) -> tuple[dict, dict[str, Tensor]]:
    from safetensors.torch import load_file

    meta = json.loads(base.with_suffix(".json").read_text())
    st = base.with_suffix(".safetensors")
    return meta, (load_file(str(st)) if st.exists() else {})


def _trainer_to_json(local: LocalTrainer) -> dict:
    """A local trainer as plain data: a dataclass of ``flprivacy`` with plain fields."""
    from . import clients as _clients

    name = type(local).__name__
    if not (dataclasses.is_dataclass(local) and getattr(_clients, name, None) is type(local)):
        raise TypeError(f"deploy: local must be one of flprivacy's local trainers (LocalSGD, LeastSquaresSGD: "
                        f"carried to the nodes as plain data); got {name}.")
    return {"type": name, **dataclasses.asdict(local)}


def _trainer_from_json(d: dict) -> LocalTrainer:
    from . import clients as _clients

    d = dict(d)
    cls = getattr(_clients, str(d.pop("type")), None)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise ValueError(f"deployed_clientapp: unknown local trainer {cls!r}.")
    return cls(**d)


def _adversary_to_json(adversary: Adversary | None) -> dict | None:
    if adversary is None:
        return None
    if type(adversary) is SendBack:
        return {"type": "SendBack", "target": adversary.target, "rounds": sorted(adversary.rounds)}
    raise TypeError(f"deploy: adversary must be None or a SendBack (carried to the ServerApp as plain data); got "
                    f"{type(adversary).__name__}: run other adversaries in one process (run_fedavg, run_flower).")


def _adversary_from_json(d: dict | None) -> Adversary | None:
    if d is None:
        return None
    if d.get("type") != "SendBack":
        raise ValueError(f"deployed_serverapp: unknown adversary {d.get('type')!r}.")
    return SendBack(int(d["target"]), [int(r) for r in d["rounds"]])


def save_log(base: Path, log: MessageLog, theta: Tensor, extra: dict | None = None) -> None:
    """``log`` and the final model as ``base.json`` + ``base.safetensors`` (read by :func:`load_log`)."""
    ex = log.exchanges()
    meta = {"n_clients": log.n_clients, "n_samples": list(log.n_samples), "server_lr": log.server_lr,
            "sampled": [log.sampled(t) for t in range(log.rounds)],
            "failures": [[t, c, r] for (t, c), r in sorted(log.failures.items())],
            "exchanges": [[e.round, e.client, e.forged] for e in ex], **(extra or {})}
    tensors = {"weights": log.weights, "global": log.global_trajectory(), "theta": theta}
    if ex:
        tensors |= {"sent": torch.stack([e.sent for e in ex]), "returned": torch.stack([e.returned for e in ex])}
    _save(base, meta, tensors)


def load_log(base: Path) -> tuple[MessageLog, Tensor, dict]:
    """The :class:`~flprivacy.log.MessageLog` saved by :func:`save_log`, rebuilt through its write API (each
    round opened with its θ^t and sampled clients, its exchanges and failures recorded), the
    final model and the file's other fields."""
    meta, t = _load(base)
    log = MessageLog(meta["n_clients"], t["weights"], meta["n_samples"], meta["server_lr"])
    by_round: dict[int, list[int]] = {}
    for k, (r, _, _) in enumerate(meta["exchanges"]):
        by_round.setdefault(r, []).append(k)
    failures = {}
    for r, c, why in meta["failures"]:
        failures.setdefault(r, []).append((c, why))
    for r, sampled in enumerate(meta["sampled"]):
        log.begin_round(t["global"][r], sampled)
        for k in by_round.get(r, []):
            _, c, forged = meta["exchanges"][k]
            log.record(Exchange(r, c, t["sent"][k], t["returned"][k], bool(forged)))
        for c, why in failures.get(r, []):
            log.record_failure(c, why)
        log.close_round()
    log.finish(t["global"][-1])
    return log, t["theta"], meta


# ---- the App's two halves (loaded by flwr-serverapp / flwr-clientapp in their own processes) --------------
def deployed_serverapp() -> ServerApp:
    """A ``ServerApp`` that builds :func:`flprivacy.flower.server_app` from ``spec.json`` and
    ``spec.safetensors`` (θ^0) in the folder its SuperLink names (environment variable
    ``FLPRIVACY_DEPLOY_DIR``: the operator's choice, not the run config's) and saves the recorded
    log there as ``result.json`` + ``result.safetensors`` (or ``result.json`` with the error)."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        folder = Path(os.environ[FOLDER_ENV])
        out = folder / "result"
        try:
            spec, tensors = _load(folder / "spec")
            model = build_model(spec["model"])

            def save(log, theta):
                save_log(out, log, theta, {"round_seconds": outcome.round_seconds})

            sapp, outcome = server_app(model, spec["n_samples"], rounds=spec["rounds"], theta0=tensors["theta0"],
                                       weighting=spec["weighting"], clients_per_round=spec["clients_per_round"],
                                       adversary=_adversary_from_json(spec["adversary"]),
                                       connect_timeout=spec["connect_timeout"], min_nodes=spec["min_nodes"],
                                       round_timeout=spec["round_timeout"], on_finish=save)
            sapp(_PollingGrid(grid), context)
        except Exception:  # the harness waits for `result.json`: hand it the error instead of a silent end
            _save(out, {"error": traceback.format_exc()}, {})
            raise

    return app


class _PollingGrid:
    """``grid`` whose ``send_and_receive`` pushes the messages and pulls the replies every
    ``interval`` s until all arrived or ``timeout`` s passed: Flower's own (the ServerApp's
    ``GrpcGrid``) sleeps a fixed 3 s between pulls, which adds up to 3 s to every round and to the
    partition query. The same calls (``push_messages``, ``pull_messages``), the same contract
    (``timeout=None`` waits for every reply); everything else is ``grid``'s."""

    def __init__(self, grid: Grid, interval: float = POLL_S):
        if not interval > 0:
            raise ValueError(f"_PollingGrid: interval must be positive seconds, got {interval!r}.")
        self._grid, self.interval = grid, float(interval)

    def send_and_receive(self, messages, *, timeout: float | None = None) -> list[Message]:
        waiting = set(self._grid.push_messages(messages))
        end = None if timeout is None else time.monotonic() + timeout
        replies: list[Message] = []
        while waiting:
            got = list(self._grid.pull_messages(waiting))
            replies += got
            waiting -= {m.metadata.reply_to_message_id for m in got}
            if not waiting or (end is not None and time.monotonic() >= end):
                break
            time.sleep(self.interval if end is None else max(0.0, min(self.interval, end - time.monotonic())))
        return replies

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._grid, name)


def deployed_clientapp() -> ClientApp:
    """A ``ClientApp`` whose node loads only its own partition: ``node_config["data"]`` (set by
    the SuperNode's operator) names ``client<c>.json`` (model, local trainer, seed, weighting) next
    to ``client<c>.safetensors`` (``X``, ``y``) for c = ``node_config["partition-id"]``."""
    app = ClientApp()
    cache: dict[str, ClientApp] = {}

    def _inner(context: Context) -> ClientApp:
        path = Path(str(context.node_config["data"]))
        key = str(path)
        if key not in cache:
            d, t = _load(path.with_suffix(""))
            c = int(context.node_config[PARTITION])
            if d["client"] != c:
                raise ValueError(f"deployed_clientapp: node config partition-id={c} but {path} holds client {d['client']}.")
            data = ClientData(t["X"], t["y"], t.get("X_val"), t.get("y_val"))
            # client_app indexes clients[c]; this node holds client c only, the other slots are never read.
            cache[key] = client_app(build_model(d["model"]), [data] * d["n_clients"], _trainer_from_json(d["local"]),
                                    seed=d["seed"], weighting=d["weighting"])
        return cache[key]

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        return _inner(context)(msg, context)

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        return _inner(context)(msg, context)

    return app


def build_model(ctor: Sequence) -> FLModel:
    """The model from ``(name, args)``: ``flprivacy.<name>(*args)`` for a model constructor of
    :mod:`flprivacy.models` (the files carry the constructor as plain data, not the object)."""
    import flprivacy
    from . import models

    name, args = ctor
    fn = getattr(flprivacy, str(name), None)
    if not (callable(fn) and getattr(models, str(name), None) is fn):
        raise ValueError(f"model must name a model constructor of flprivacy.models; got {name!r}.")
    return fn(*args)


# ---- certificates and node keys ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Certificates:
    """PEM files: the private CA's certificate, and the server's certificate and private key."""

    ca: Path
    cert: Path
    key: Path


def make_certificates(folder: str | Path, *, days: int = 2) -> Certificates:
    """A private certificate authority and a server certificate it signs, for 127.0.0.1, ::1 and
    ``localhost``, valid ``days`` days, written to ``folder`` (created with mode 0700; the
    private key 0600, the CA's key never written). The SuperLink serves with ``cert``/``key``;
    SuperNodes and ``flwr`` trust ``ca`` only."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP384R1()), ec.generate_private_key(ec.SECP384R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "flprivacy loopback CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA384()))
    san = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                       x509.IPAddress(ipaddress.ip_address("::1"))])
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(san, critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA384()))
    out = Certificates(folder / "ca.crt", folder / "server.crt", folder / "server.key")
    _write_private(out.ca, ca.public_bytes(serialization.Encoding.PEM), 0o644)
    _write_private(out.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write_private(out.key, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
    return out


def make_node_key(folder: str | Path, name: str) -> tuple[Path, Path]:
    """A SuperNode's authentication key pair (EC P-384, OpenSSH format, as Flower 1.41 reads it):
    ``folder/<name>`` (private, 0600) and ``folder/<name>.pub`` (what ``flwr supernode register``
    sends the SuperLink)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    folder = Path(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP384R1())
    private, public = folder / name, folder / f"{name}.pub"
    _write_private(private, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                              serialization.NoEncryption()))
    _write_private(public, key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                         serialization.PublicFormat.OpenSSH) + b"\n", 0o644)
    return private, public


# ---- the harness ------------------------------------------------------------------------------------------------
@dataclass
class Deployment:
    """The processes of a loopback deployment, started by ``start_superlink`` and
    ``start_supernode``, killed by ``kill``/``stop``. Every process it starts carries
    ``FLPRIVACY_DEPLOY_PROCESS=<token>/<name>`` in its environment, and so does everything that
    process starts, so ``kill(name)`` finds a SuperNode's SuperExec and ClientApps even after the
    SuperNode itself died and they were re-parented. With ``secure`` (the default) it runs TLS
    with ``certs`` and authenticates the SuperNodes by their keys (:meth:`Deployment.register`)."""

    workdir: Path
    secure: bool = True
    superlink_port: int = field(default_factory=free_port)
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    out: Path | None = None  # the ServerApp's result (base name), once deploy() has submitted the run
    certs: Certificates | None = None
    node_keys: dict[int, Path] = field(default_factory=dict)  # client -> its SuperNode's private key (registered)
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    _cleaned: set[str] = field(default_factory=set)

    @property
    def secrets_dir(self) -> Path:
        return self.workdir / "secrets"

    def shown(self, argv: Sequence[str]) -> str:
        """``argv`` as a reader types it in the repository's root: the program's name, the App
        folder as ``deploy``, this deployment's folder as ``work`` and shell quoting."""
        args = [Path(argv[0]).name, *argv[1:]]
        args = [a.replace(str(APP_DIR), "deploy").replace(str(self.workdir), "work") for a in args]
        return shlex.join(args)

    def _env(self, name: str) -> dict[str, str]:
        env = dict(os.environ, FLWR_HOME=str(self.workdir / "flwr_home"), PYTHONUNBUFFERED="1",
                   OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), **FLOWER_ENV)
        env[FOLDER_ENV] = str(self.workdir)
        env[MARK_ENV] = f"{self.token}/{name}"
        env["PATH"] = f"{_BIN}{os.pathsep}{env.get('PATH', '')}"  # flwr-serverapp / flwr-clientapp
        return env

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        self.commands.append(" ".join(f"{k}={v}" for k, v in FLOWER_ENV.items()) + " " + self.shown(argv))
        log = open(self.workdir / f"{name}.log", "wb")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self._env(name), cwd=self.workdir,
                             start_new_session=True)
        log.close()
        self.procs[name] = p
        self._cleaned.discard(name)
        return p

    def make_certificates(self) -> Certificates:
        """The deployment's CA and server certificate (:func:`make_certificates`) in ``secrets/``."""
        self.certs = make_certificates(self.secrets_dir)
        return self.certs

    def _tls(self) -> Certificates:
        if self.certs is None:
            self.make_certificates()
        return self.certs

    def start_superlink(self) -> subprocess.Popen:
        if self.secure:
            c = self._tls()
            security = ["--ssl-certfile", str(c.cert), "--ssl-keyfile", str(c.key), "--ssl-ca-certfile", str(c.ca),
                        "--enable-supernode-auth"]
        else:
            security = ["--insecure"]
        return self._start("superlink", [str(_BIN / "flower-superlink"), *security, "--disable-runtime-dependency-installation",
                                         "--host", "127.0.0.1", "--port", str(self.superlink_port)])

    def wait_listening(self, timeout: float = 30.0) -> None:
        """Wait until the SuperLink accepts TCP connections on its port."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.procs["superlink"].poll() is not None:
                raise DeploymentError(f"the SuperLink exited ({self.procs['superlink'].returncode})\n{self.tail()}")
            with socket.socket() as s, contextlib.suppress(OSError):
                s.settimeout(0.5)
                s.connect(("127.0.0.1", self.superlink_port))
                return
            time.sleep(0.2)
        raise DeploymentError(f"the SuperLink is not listening on port {self.superlink_port} after {timeout} s\n{self.tail()}")

    def register(self, clients: Sequence[int], timeout: float = 120.0) -> None:
        """Create a key pair for each client's SuperNode (:func:`make_node_key`) and register its
        public key with the SuperLink (``flwr supernode register``, all at once): with
        ``--enable-supernode-auth`` the SuperLink accepts only registered nodes."""
        todo = [int(c) for c in clients if int(c) not in self.node_keys]
        runs = []
        for c in todo:
            private, public = make_node_key(self.secrets_dir, f"node{c}")
            argv = [str(_BIN / "flwr"), "supernode", "register", str(public), "local"]
            self.commands.append(f"FLWR_HOME=work/flwr_home {self.shown(argv)}")
            runs.append((c, private, subprocess.Popen(argv, env=self._env(f"register{c}"), cwd=self.workdir,
                                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                                      start_new_session=True)))
        failed = []
        for c, private, p in runs:
            try:
                text, _ = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                text, _ = p.communicate()
            if p.returncode != 0:
                failed.append(f"node {c} ({p.returncode}): {text[-800:]}")
            else:
                self.node_keys[c] = private
        if failed:
            raise DeploymentError("flwr supernode register failed: " + "; ".join(failed) + f"\n{self.tail()}")

    def start_supernode(self, c: int, data: Path, port: int | None = None) -> subprocess.Popen:
        """Client ``c``'s SuperNode, connecting to the SuperLink (or to ``port`` on 127.0.0.1, e.g.
        a relay's); in a secure deployment its key is registered first if it is not yet."""
        if self.secure:
            if c not in self.node_keys:
                self.register([c])
            security = ["--root-certificates", str(self._tls().ca), "--auth-supernode-private-key", str(self.node_keys[c])]
        else:
            security = ["--insecure"]
        return self._start(f"supernode{c}", [
            str(_BIN / "flower-supernode"), *security, "--superlink", f"127.0.0.1:{port or self.superlink_port}",
            "--host", "127.0.0.1", "--port", str(free_port()), "--max-retries", "3", "--max-wait-time", "10",
            "--node-config", f'{PARTITION}={c} data="{data}"'])

    def write_connection(self) -> None:
        """``flwr``'s connection file (``FLWR_HOME/config.toml``): the SuperLink ``local``, with
        the CA to trust (secure) or ``insecure = true``."""
        home = self.workdir / "flwr_home"
        home.mkdir(exist_ok=True)
        trust = f'root-certificates = "{self._tls().ca}"\n' if self.secure else "insecure = true\n"
        (home / "config.toml").write_text(
            f'[superlink]\ndefault = "local"\n\n[superlink.local]\naddress = "127.0.0.1:{self.superlink_port}"\n{trust}')

    def flwr_run(self, timeout: float = 60.0) -> subprocess.CompletedProcess:
        argv = [str(_BIN / "flwr"), "run", str(APP_DIR), "local"]
        self.commands.append(f"FLWR_HOME=work/flwr_home {self.shown(argv)}")  # the connection file's folder
        return subprocess.run(argv, env=self._env("flwr-run"), cwd=self.workdir, capture_output=True, text=True,
                              timeout=timeout)

    def marked(self, name: str | None = None) -> list[int]:
        """Live processes carrying this deployment's mark (of process ``name`` only, if given)."""
        import psutil

        want, out = f"{self.token}/{name}" if name is not None else None, []
        for q in psutil.process_iter():
            with contextlib.suppress(psutil.Error, OSError):
                mark = q.environ().get(MARK_ENV, "")
                if (mark == want if want else mark.startswith(f"{self.token}/")) and q.status() != psutil.STATUS_ZOMBIE:
                    out.append(q.pid)
        return out

    def kill(self, name: str) -> None:
        """SIGKILL process ``name``, its process group and every process that carries its mark
        (the SuperLink and SuperNodes spawn a SuperExec and ``flwr-serverapp``/``flwr-clientapp``
        children, which outlive a SuperNode that died), by process id; return once all are gone."""
        import psutil

        p = self.procs[name]
        pids = set(self.marked(name))
        if p.poll() is None:
            pids.add(p.pid)
            with contextlib.suppress(psutil.Error):
                pids |= {c.pid for c in psutil.Process(p.pid).children(recursive=True)}
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        p.wait(timeout=10)
        # SIGKILL is delivered asynchronously: on a loaded machine a process can still be running
        # for a moment after the signal; return only once every one is gone (or a zombie).
        procs = []
        for pid in pids - {p.pid}:
            with contextlib.suppress(psutil.Error):
                procs.append(psutil.Process(pid))
        deadline = time.monotonic() + 10
        while procs and time.monotonic() < deadline:
            live = []
            for q in procs:
                with contextlib.suppress(psutil.Error):
                    if q.status() != psutil.STATUS_ZOMBIE:
                        live.append(q)
            procs = live
            if procs:
                time.sleep(0.02)
        self._cleaned.add(name)

    def reap(self) -> list[str]:
        """End what is left of every process that died on its own (e.g. a SuperNode killed from
        outside: its SuperExec and ClientApp would run on); returns their names."""
        dead = [n for n, p in self.procs.items() if n not in self._cleaned and p.poll() is not None]
        for n in dead:
            self.kill(n)
        return dead

    def alive(self) -> list[int]:
        """Process ids started by this deployment (or their descendants) still running."""
        return self.marked()

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill(name)
        for pid in self.marked():  # anything else it started (a register command cut short)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def result(self) -> dict | None:
        """The ServerApp's ``result.json`` (its error, or the log's description), or None if not yet written."""
        if self.out is None or not self.out.with_suffix(".json").exists():
            return None
        return json.loads(self.out.with_suffix(".json").read_text())

    def trains_received(self, name: str) -> int:
        """How many train messages the SuperNode ``name`` has received so far (from its log)."""
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace").count("Receiving: train message") if path.exists() else 0

    def wait_trains(self, name: str, count: int, timeout: float) -> None:
        """Wait until SuperNode ``name`` has received its ``count``-th train message (round
        ``count - 1`` has reached it); raise :class:`DeploymentError` after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while self.trains_received(name) < count:
            if time.monotonic() > deadline:
                raise DeploymentError(f"{name} received {self.trains_received(name)} train messages after {timeout} s, "
                                      f"expected {count}\n{self.tail()}")
            if self.procs["superlink"].poll() is not None:
                raise DeploymentError(f"the SuperLink exited ({self.procs['superlink'].returncode})\n{self.tail()}")
            if (res := self.result()) is not None:  # the ServerApp ended (or failed) first: no use waiting
                raise DeploymentError(f"the ServerApp ended before {name} received train message {count}: "
                                      f"{res.get('error', 'it finished its rounds')[-3000:]}\n{self.tail()}")
            time.sleep(0.1)

    def tail(self, n: int = 1500) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-n:]}" for f in sorted(self.workdir.glob("*.log")))


def write_federation(workdir: Path, model: tuple[str, tuple], clients: Sequence[ClientData], *, rounds: int, local: LocalTrainer,
                     seed: int, theta0: Tensor, weighting: str = "size", clients_per_round: int | None = None,
                     adversary: Adversary | None = None, connect_timeout: float = 30.0, min_nodes: int | None = None,
                     round_timeout: float = 3600.0) -> tuple[Path, list[Path]]:
    """The ServerApp's spec (public: model, sizes, θ^0, rounds, timeouts; ``spec.json`` +
    ``spec.safetensors``) and one pair of files per client (``client<c>.json`` +
    ``client<c>.safetensors``: that client's data only). Returns the spec's base name and the
    clients' JSON files (what each SuperNode's node config names)."""
    name, args = model
    ctor = [str(name), list(args)]
    json.dumps(ctor)  # plain data only
    spec = workdir / "spec"
    _save(spec, dict(model=ctor, n_samples=[c.n for c in clients], rounds=rounds, weighting=weighting,
                     clients_per_round=clients_per_round, adversary=_adversary_to_json(adversary),
                     connect_timeout=connect_timeout, min_nodes=min_nodes, round_timeout=round_timeout),
          {"theta0": theta0})
    local_json, files = _trainer_to_json(local), []
    for c, cd in enumerate(clients):
        base = workdir / f"client{c}"
        tensors = {"X": cd.X, "y": cd.y} | ({"X_val": cd.X_val, "y_val": cd.y_val} if cd.X_val is not None else {})
        _save(base, dict(client=c, n_clients=len(clients), model=ctor, local=local_json, seed=seed, weighting=weighting),
              tensors)
        files.append(base.with_suffix(".json"))
    return spec, files


def wait_for(dep: Deployment, timeout: float) -> dict:
    """Wait until the ServerApp's ``result.json`` exists and return it, ending what is left of
    any process that died meanwhile (:meth:`Deployment.reap`); raise :class:`DeploymentError`
    with the logs after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while (res := dep.result()) is None:
        if time.monotonic() > deadline:
            raise DeploymentError(f"no log after {timeout:.0f} s\n{dep.tail()}")
        if dep.procs["superlink"].poll() is not None:
            raise DeploymentError(f"the SuperLink exited ({dep.procs['superlink'].returncode})\n{dep.tail()}")
        dep.reap()
        time.sleep(0.2)
    return res


@contextlib.contextmanager
def loopback(workdir: str | Path | None = None, *, secure: bool = True) -> Iterator[Deployment]:
    """A :class:`Deployment` in ``workdir`` (a fresh private temporary folder if None) whose
    processes are always killed on exit."""
    tmp = Path(tempfile.mkdtemp(prefix="flprivacy-deploy-")) if workdir is None else Path(workdir)
    tmp.mkdir(parents=True, exist_ok=True)
    dep = Deployment(tmp, secure=secure)
    # SIGTERM (e.g. `kill` or a CI job's cancellation) would end this process without running the
    # clean-up below and orphan the deployment: turn it into SystemExit while the processes live
    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield dep
    finally:
        dep.stop()
        if old is not None:
            signal.signal(signal.SIGTERM, old)
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def deploy(model: tuple[str, tuple], clients: Sequence[ClientData], *, rounds: int, local: LocalTrainer, seed: int = 0,
           theta0: Tensor | None = None, weighting: str = "size", clients_per_round: int | None = None,
           adversary: Adversary | None = None, timeout: float = 90.0, workdir: str | Path | None = None,
           start: Sequence[int] | None = None, min_nodes: int | None = None, round_timeout: float = 3600.0,
           connect_timeout: float = 120.0, during: Callable[[Deployment, list[Path]], None] | None = None,
           secure: bool = True, relay_client: int | None = None) -> FLRun:
    """FedAvg on a loopback Flower deployment (SuperLink + one SuperNode per client + ``flwr run``):
    :func:`~flprivacy.federation.run_fedavg`'s contract, like :func:`flprivacy.flower.run_flower`;
    ``model`` is its constructor ``(name, args)``, e.g. ``("linear_regression", (4,))``; ``local``
    a trainer of :mod:`flprivacy.clients` and ``adversary`` None or a
    :class:`~flprivacy.threats.SendBack` (carried to the processes as plain data).

    Security: ``secure=True`` (the default) runs TLS with certificates made for this deployment
    and SuperNode authentication (see the module's description); ``secure=False`` runs Flower's
    ``--insecure`` mode (plain HTTP, any node accepted) and warns with
    :class:`InsecureDeploymentWarning`: it exists for the eavesdropper's demonstration
    (:mod:`flprivacy.wire`). ``relay_client=c`` puts a :class:`flprivacy.relay.Relay` between
    client c's SuperNode and the SuperLink; what it recorded is ``settings["wire"]``.

    Faults: ``start`` lists the clients whose SuperNodes start before ``flwr run`` (all by
    default); ``min_nodes`` (default: as many) are needed to begin; ``round_timeout`` s close a
    round with the replies that arrived (:func:`flprivacy.flower.server_app`; a node that died is
    reported unavailable by Flower once it missed its heartbeats, ~60 s, and the round closes
    then); the ServerApp waits at most ``connect_timeout`` s for the nodes to connect and to
    answer its partition query (a loaded machine starts ten SuperNodes and their first
    ClientApps slowly); ``during(dep, files)`` runs while the rounds run, e.g. to kill a SuperNode
    (``dep.kill("supernode2")``) or start one late (``dep.start_supernode(c, files[c])``). What
    is left of a process that died (its SuperExec, its ClientApp) is ended as soon as the
    harness sees it dead, and everything at the end.

    ``settings["commands"]`` lists the commands run, as a reader would type them in the
    repository's root with the deployment's folder as ``work`` (:meth:`Deployment.shown`), and
    ``settings["wall_s"]`` the wall time from the SuperLink's start to the saved log.
    Raises :class:`DeploymentError` (with the processes' log tails) after ``timeout`` s, or as soon
    as the ServerApp fails (with its traceback).
    """
    if not secure:
        warnings.warn("deploy(secure=False): no TLS and no SuperNode authentication; every model crosses the "
                      "loopback interface in clear (the eavesdropper's demonstration only).",
                      InsecureDeploymentWarning, stacklevel=2)
    if relay_client is not None and not 0 <= int(relay_client) < len(clients):
        raise ValueError(f"deploy: relay_client must be a client in 0..{len(clients) - 1}, got {relay_client!r}.")
    ctor, model = model, build_model(model)
    _trainer_to_json(local), _adversary_to_json(adversary)  # fail before starting anything
    if theta0 is None:
        with _INIT_LOCK:  # deployments run in threads (tests/test_flower_deploy.py): see _INIT_LOCK
            theta0 = model.init_params(seed)
    t0 = time.perf_counter()
    relay = None
    with loopback(workdir, secure=secure) as dep:
        try:
            spec, files = write_federation(dep.workdir, ctor, clients, rounds=rounds, local=local, seed=seed,
                                           theta0=theta0, weighting=weighting, clients_per_round=clients_per_round,
                                           adversary=adversary,
                                           min_nodes=min_nodes if start is None else min_nodes or len(start),
                                           round_timeout=round_timeout, connect_timeout=connect_timeout)
            dep.out = dep.workdir / "result"
            dep.write_connection()
            dep.start_superlink()
            dep.wait_listening()
            if secure:
                dep.register(range(len(clients)))
            if relay_client is not None:
                relay = Relay(dep.superlink_port).start()
            for c in range(len(clients)) if start is None else start:
                dep.start_supernode(c, files[c], port=relay.port if relay is not None and c == relay_client else None)
            r = dep.flwr_run(timeout=timeout)
            if r.returncode != 0:
                raise DeploymentError(f"flwr run failed ({r.returncode}): {r.stdout[-1500:]}{r.stderr[-1500:]}\n{dep.tail()}")
            if during is not None:
                during(dep, files)
            res = wait_for(dep, timeout - (time.perf_counter() - t0))
            if "error" in res:
                raise DeploymentError(f"the ServerApp failed:\n{res['error'][-3000:]}\n{dep.tail()}")
            log, theta, meta = load_log(dep.out)
            commands = list(dep.commands)
        finally:
            if relay is not None:
                relay.stop()
    settings = dict(rounds=rounds, local=local, server_lr=1.0, clients_per_round=clients_per_round, weighting=weighting,
                    backend="deployment", commands=commands, wall_s=time.perf_counter() - t0,
                    round_seconds=meta["round_seconds"], secure=secure)
    if relay is not None:
        settings["wire"] = relay.capture
    return FLRun(theta=theta, log=log, model=model, seed=seed, settings=settings)


def demo(rounds: int = 4, seed: int = 0) -> FLRun:
    """``make deploy-demo``: 3 least-squares clients on a secure loopback deployment; prints the
    commands run, the log's agreement with :func:`~flprivacy.federation.run_fedavg` and Alg. 3's error."""
    from . import LocalSGD, eavesdrop, linear_regression, run_fedavg
    from .attacks.reconstruction import reconstruct_least_squares
    from .optimum import least_squares_optimum

    g = torch.Generator().manual_seed(seed)
    clients = []
    for n in (40, 35, 50):
        X = torch.randn(n, 2, generator=g, dtype=torch.float64)
        clients.append(ClientData(X, X @ torch.randn(2, generator=g, dtype=torch.float64) + 0.5
                                  + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)))
    local = LocalSGD(lr=0.05, epochs=2)
    fl = deploy(("linear_regression", (2,)), clients, rounds=rounds, local=local, seed=seed, timeout=180)
    for c in fl.settings["commands"]:
        print("$", c)
    ref = run_fedavg(linear_regression(2), clients, rounds=rounds, local=local, seed=seed)
    rs = sorted(fl.settings["round_seconds"])
    print(f"deployment: {fl.settings['wall_s']:.1f} s, median round {rs[len(rs) // 2]:.2f} s; max |θ_deploy - θ_run_fedavg| over the log: "
          f"{float((fl.log.global_trajectory() - ref.log.global_trajectory()).abs().max()):.2e}")
    rec, star = reconstruct_least_squares(eavesdrop(fl.log, 0)), least_squares_optimum(clients[0])
    print(f"Alg. 3 on the deployment's log, client 0: relative error {float((rec.theta - star).norm() / star.norm()):.2e}")
    return fl


if __name__ == "__main__":
    demo()
