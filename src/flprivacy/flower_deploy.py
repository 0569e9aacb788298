"""The book's federation as a real Flower deployment on loopback: SuperLink, SuperNodes, ``flwr run``.

:func:`deploy` writes each client's data to its own file, starts ``flower-superlink`` and one
``flower-supernode`` per client (node config ``partition-id=c data=<file of client c>``, so a
node loads only its own partition), submits the Flower App in ``deploy/`` with ``flwr run``,
waits for the ServerApp to save the :class:`~flprivacy.log.MessageLog` its
:class:`~flprivacy.flower.RecordingStrategy` recorded, and always kills every process it started
(each in its own process group), also when this process receives SIGTERM. All on 127.0.0.1
with ``--insecure`` transport.

The App's ``serverapp``/``clientapp`` (``deploy/flprivacy_app/apps.py``) are
:func:`deployed_serverapp` and :func:`deployed_clientapp`, thin shells that build
:func:`flprivacy.flower.server_app` and :func:`flprivacy.flower.client_app` from the run config
and the node config.
"""

from __future__ import annotations

import contextlib
import os
import random
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
from .models import FLModel
from .threats import Adversary

__all__ = ["deploy", "Deployment", "DeploymentError", "deployed_serverapp", "deployed_clientapp", "APP_DIR",
           "free_port"]

APP_DIR = Path(__file__).resolve().parents[2] / "deploy"  # the Flower App folder (its pyproject.toml)
# Polling, at 0.25 s (the interval of Flower's own runtime API): the ServerApp pulls the replies
# (_PollingGrid; Flower's Grid sleeps 3 s between pulls), and Flower's SuperExec (started by the
# SuperLink and by each SuperNode) looks for a ServerApp / ClientApp to launch every
# FLWR_SUPEREXEC_TASK_POLL_INTERVAL s (default 1 s, paid once per message). An idle SuperLink and
# its SuperExec then use ~1.5% of a core (measured: 4% at 0.1 s, 0.4% at 1 s), and so does each SuperNode.
POLL_S = 0.25
# Every Flower process (each ClientApp too: one per message) would also send a usage event to
# telemetry.flower.ai, running `file -b` on the Python binary to describe the machine, and ask PyPI
# for a newer flwr. A privacy book's deployment sends nothing to anyone: both are turned off.
FLOWER_ENV = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1",
              "FLWR_SUPEREXEC_TASK_POLL_INTERVAL": str(POLL_S)}
_BIN = Path(sys.executable).parent
_INIT_LOCK = threading.Lock()
"""Held while :func:`deploy` draws θ^0: ``FLModel.init_params`` seeds torch's global generator inside
``fork_rng``, so two threads drawing at once interleave their draws (measured: 26 of 900 concurrent
draws of ``linear_regression(2).init_params(0)`` differed; a CI run's deployment started from
another θ^0 than run_fedavg's)."""


class DeploymentError(RuntimeError):
    """The deployment did not finish in time or a process failed; the message holds the logs' tails."""


# ---- the App's two halves (loaded by flwr-serverapp / flwr-clientapp in their own processes) --------------
def deployed_serverapp() -> ServerApp:
    """A ``ServerApp`` that builds :func:`flprivacy.flower.server_app` from ``run_config["spec"]``
    (a ``torch.save``'d dict) and ``torch.save``'s ``{"log", "theta"}`` to ``run_config["out"]``."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        spec = torch.load(str(context.run_config["spec"]), weights_only=False)
        spec["model"] = build_model(spec["model"])
        out_path = str(context.run_config["out"])

        def save(log, theta):
            tmp = out_path + ".tmp"
            torch.save({"log": log, "theta": theta, "round_seconds": outcome.round_seconds}, tmp)
            os.replace(tmp, out_path)  # atomic: the harness never reads half a file

        sapp, outcome = server_app(spec["model"], spec["n_samples"], rounds=spec["rounds"], theta0=spec["theta0"],
                             weighting=spec["weighting"], clients_per_round=spec["clients_per_round"],
                             adversary=spec["adversary"], connect_timeout=spec["connect_timeout"],
                             min_nodes=spec.get("min_nodes"), round_timeout=spec.get("round_timeout", 3600.0),
                             on_finish=save)
        try:
            sapp(_PollingGrid(grid), context)
        except Exception:  # the harness waits for `out`: hand it the error instead of a silent end of the run
            tmp = out_path + ".tmp"
            torch.save({"error": traceback.format_exc()}, tmp)
            os.replace(tmp, out_path)
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
    """A ``ClientApp`` whose node loads only its own partition: ``node_config["data"]`` is a file
    holding ``{"client": c, "data": ClientData, "n_clients": n, "model", "local", "seed", "weighting"}``
    for c = ``node_config["partition-id"]``."""
    app = ClientApp()
    cache: dict[str, ClientApp] = {}

    def _inner(context: Context) -> ClientApp:
        path = str(context.node_config["data"])
        if path not in cache:
            d = torch.load(path, weights_only=False)
            d["model"] = build_model(d["model"])
            c = int(context.node_config[PARTITION])
            if d["client"] != c:
                raise ValueError(f"deployed_clientapp: node config partition-id={c} but {path} holds client {d['client']}.")
            # client_app indexes clients[c]; this node holds client c only, the other slots are never read.
            clients = [d["data"]] * d["n_clients"]
            cache[path] = client_app(d["model"], clients, d["local"], seed=d["seed"], weighting=d["weighting"])
        return cache[path]

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        return _inner(context)(msg, context)

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        return _inner(context)(msg, context)

    return app


def build_model(ctor: tuple[str, tuple]) -> FLModel:
    """The model from ``(name, args)``: ``flprivacy.<name>(*args)`` (models hold closures, so the
    files carry the constructor, not the object)."""
    import flprivacy

    name, args = ctor
    return getattr(flprivacy, name)(*args)


# ---- the harness ------------------------------------------------------------------------------------------------
_ISSUED: set[int] = set()  # ports free_port has handed out in this process


def _ephemeral_low() -> int:
    """The lowest port the OS gives outgoing connections (Linux: ip_local_port_range; else 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, below the OS's ephemeral range, not handed out before.

    Between this call and the process that binds the port, nothing holds it. A port the OS picks
    (bind to 0) comes from the ephemeral range, where every outgoing connection of the machine
    (the deployment's own HTTP clients, a deployment running beside it) takes its local port: one
    did take a SuperNode's port in a test run ("address already in use"). Ports below that range
    are only ever bound on purpose, and a random draw (the OS's randomness: a seeded ``random``
    would give two processes the same sequence) makes two deployments unlikely to meet.
    """
    high = min(_ephemeral_low(), 32768)
    low, pick = max(1024, high - 12000), random.SystemRandom()
    for _ in range(200):
        port = pick.randrange(low, high)
        if port in _ISSUED:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ISSUED.add(port)
        return port
    raise DeploymentError(f"free_port: no free TCP port found in [{low}, {high}) after 200 "
                          "tries; free some ports or raise the ephemeral range's lower bound.")


@dataclass
class Deployment:
    """The processes of a loopback deployment, started by ``start_superlink`` and
    ``start_supernode``,
    killed (process group, by id) by ``stop``."""

    workdir: Path
    superlink_port: int = field(default_factory=free_port)
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    out: Path | None = None  # where the ServerApp saves the log (or its error), once deploy() has submitted it

    def shown(self, argv: Sequence[str]) -> str:
        """``argv`` as a reader types it in the repository's root: the program's name, the App
        folder as ``deploy``, this deployment's folder as ``work`` and shell quoting."""
        args = [Path(argv[0]).name, *argv[1:]]
        args = [a.replace(str(APP_DIR), "deploy").replace(str(self.workdir), "work") for a in args]
        return shlex.join(args)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ, FLWR_HOME=str(self.workdir / "flwr_home"), PYTHONUNBUFFERED="1",
                   OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), **FLOWER_ENV)
        env["PATH"] = f"{_BIN}{os.pathsep}{env.get('PATH', '')}"  # flwr-serverapp / flwr-clientapp
        return env

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        self.commands.append(" ".join(f"{k}={v}" for k, v in FLOWER_ENV.items()) + " " + self.shown(argv))
        log = open(self.workdir / f"{name}.log", "wb")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self._env(), cwd=self.workdir,
                             start_new_session=True)
        log.close()
        self.procs[name] = p
        return p

    def start_superlink(self) -> subprocess.Popen:
        return self._start("superlink", [str(_BIN / "flower-superlink"), "--insecure", "--host", "127.0.0.1",
                                         "--port", str(self.superlink_port)])

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

    def start_supernode(self, c: int, data: Path, port: int | None = None) -> subprocess.Popen:
        return self._start(f"supernode{c}", [
            str(_BIN / "flower-supernode"), "--insecure", "--superlink", f"127.0.0.1:{port or self.superlink_port}",
            "--host", "127.0.0.1", "--port", str(free_port()), "--max-retries", "3", "--max-wait-time", "10",
            "--node-config", f'{PARTITION}={c} data="{data}"'])

    def write_connection(self) -> None:
        home = self.workdir / "flwr_home"
        home.mkdir(exist_ok=True)
        (home / "config.toml").write_text(
            f'[superlink]\ndefault = "local"\n\n[superlink.local]\naddress = "127.0.0.1:{self.superlink_port}"\n'
            f"insecure = true\n")

    def flwr_run(self, spec: Path, out: Path, timeout: float = 60.0) -> subprocess.CompletedProcess:
        argv = [str(_BIN / "flwr"), "run", str(APP_DIR), "local", "--run-config", f'spec="{spec}" out="{out}"']
        self.commands.append(f"FLWR_HOME=work/flwr_home {self.shown(argv)}")  # the connection file's folder
        return subprocess.run(argv, env=self._env(), cwd=self.workdir, capture_output=True, text=True,
                              timeout=timeout)

    def kill(self, name: str) -> None:
        """SIGKILL process ``name``, its process group and every descendant (the SuperLink and
        SuperNodes spawn ``flwr-serverapp``/``flwr-clientapp`` children), by process id."""
        p = self.procs[name]
        pids = [p.pid]
        with contextlib.suppress(Exception):
            import psutil

            pids += [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
        for pid in pids[1:]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        p.wait(timeout=10)
        # SIGKILL is delivered asynchronously: on a loaded machine a descendant can still be
        # running for a moment after the signal; return only once every one is gone (or a zombie).
        with contextlib.suppress(Exception):
            import psutil

            procs = []
            for pid in pids[1:]:
                with contextlib.suppress(psutil.Error):
                    procs.append(psutil.Process(pid))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                live = []
                for q in procs:
                    with contextlib.suppress(psutil.Error):
                        if q.status() != psutil.STATUS_ZOMBIE:
                            live.append(q)
                if not live:
                    break
                procs = live
                time.sleep(0.02)

    def alive(self) -> list[int]:
        """Process ids started by this deployment (or their descendants) still running."""
        import psutil

        out = []
        for p in self.procs.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                proc = psutil.Process(p.pid)
                out += [q.pid for q in [proc, *proc.children(recursive=True)] if q.status() != psutil.STATUS_ZOMBIE]
        return out

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill(name)

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
            if self.out is not None and self.out.exists():  # the ServerApp ended (or failed) first: no use waiting
                res = torch.load(self.out, weights_only=False)
                raise DeploymentError(f"the ServerApp ended before {name} received train message {count}: "
                                      f"{res.get('error', 'it finished its rounds')[-3000:]}\n{self.tail()}")
            time.sleep(0.1)

    def tail(self, n: int = 1500) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-n:]}" for f in sorted(self.workdir.glob("*.log")))


def write_federation(workdir: Path, model: tuple[str, tuple], clients: Sequence[ClientData], *, rounds: int, local: LocalTrainer,
                     seed: int, theta0: Tensor, weighting: str = "size", clients_per_round: int | None = None,
                     adversary: Adversary | None = None, connect_timeout: float = 30.0, min_nodes: int | None = None,
                     round_timeout: float = 3600.0) -> tuple[Path, list[Path]]:
    """The ServerApp's spec file (public: model, sizes, θ^0, rounds, timeouts) and one data file per client."""
    spec = workdir / "spec.pt"
    torch.save(dict(model=model, n_samples=[c.n for c in clients], rounds=rounds, theta0=theta0, weighting=weighting,
                    clients_per_round=clients_per_round, adversary=adversary, connect_timeout=connect_timeout,
                    min_nodes=min_nodes, round_timeout=round_timeout), spec)
    files = []
    for c, cd in enumerate(clients):
        f = workdir / f"client{c}.pt"
        torch.save(dict(client=c, data=cd, n_clients=len(clients), model=model, local=local, seed=seed,
                        weighting=weighting), f)
        files.append(f)
    return spec, files


def wait_for(path: Path, dep: Deployment, timeout: float) -> None:
    """Wait until ``path`` exists; raise :class:`DeploymentError` with the logs after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise DeploymentError(f"no log after {timeout:.0f} s\n{dep.tail()}")
        if dep.procs["superlink"].poll() is not None:
            raise DeploymentError(f"the SuperLink exited ({dep.procs['superlink'].returncode})\n{dep.tail()}")
        time.sleep(0.2)


@contextlib.contextmanager
def loopback(workdir: str | Path | None = None) -> Iterator[Deployment]:
    """A :class:`Deployment` in ``workdir`` (a fresh temporary folder if None) whose processes are
    always killed on exit."""
    tmp = Path(tempfile.mkdtemp(prefix="flprivacy-deploy-")) if workdir is None else Path(workdir)
    tmp.mkdir(parents=True, exist_ok=True)
    dep = Deployment(tmp)
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
           connect_timeout: float = 120.0, during: Callable[[Deployment, list[Path]], None] | None = None) -> FLRun:
    """FedAvg on a loopback Flower deployment (SuperLink + one SuperNode per client + ``flwr run``):
    :func:`~flprivacy.federation.run_fedavg`'s contract, like :func:`flprivacy.flower.run_flower`;
    ``model`` is its constructor ``(name, args)``, e.g. ``("linear_regression", (4,))``.

    Faults: ``start`` lists the clients whose SuperNodes start before ``flwr run`` (all by
    default); ``min_nodes`` (default: as many) are needed to begin; ``round_timeout`` s close a
    round with the replies that arrived (:func:`flprivacy.flower.server_app`); the ServerApp waits
    at most ``connect_timeout`` s for the nodes to connect and to answer its partition query (a
    loaded machine starts ten SuperNodes and their first ClientApps slowly); ``during(dep,
    files)`` runs while the rounds run, e.g. to kill a SuperNode (``dep.kill("supernode2")``) or
    start one late (``dep.start_supernode(c, files[c])``).

    ``settings["commands"]`` lists the commands run, as a reader would type them in the
    repository's root with the deployment's folder as ``work`` (:meth:`Deployment.shown`), and
    ``settings["wall_s"]`` the wall time from the SuperLink's start to the saved log.
    Raises :class:`DeploymentError` (with the processes' log tails) after ``timeout`` s, or as soon
    as the ServerApp fails (with its traceback).
    """
    ctor, model = model, build_model(model)
    if theta0 is None:
        with _INIT_LOCK:  # deployments run in threads (tests/test_flower_deploy.py): see _INIT_LOCK
            theta0 = model.init_params(seed)
    t0 = time.perf_counter()
    with loopback(workdir) as dep:
        spec, files = write_federation(dep.workdir, ctor, clients, rounds=rounds, local=local, seed=seed,
                                       theta0=theta0, weighting=weighting, clients_per_round=clients_per_round,
                                       adversary=adversary, min_nodes=min_nodes if start is None else min_nodes or len(start),
                                       round_timeout=round_timeout, connect_timeout=connect_timeout)
        out = dep.out = dep.workdir / "log.pt"
        dep.write_connection()
        dep.start_superlink()
        dep.wait_listening()
        for c in range(len(clients)) if start is None else start:
            dep.start_supernode(c, files[c])
        r = dep.flwr_run(spec, out, timeout=timeout)
        if r.returncode != 0:
            raise DeploymentError(f"flwr run failed ({r.returncode}): {r.stdout[-1500:]}{r.stderr[-1500:]}\n{dep.tail()}")
        if during is not None:
            during(dep, files)
        wait_for(out, dep, timeout - (time.perf_counter() - t0))
        res = torch.load(out, weights_only=False)
        if "error" in res:
            raise DeploymentError(f"the ServerApp failed:\n{res['error'][-3000:]}\n{dep.tail()}")
        commands = list(dep.commands)
    settings = dict(rounds=rounds, local=local, server_lr=1.0, clients_per_round=clients_per_round, weighting=weighting,
                    backend="deployment", commands=commands, wall_s=time.perf_counter() - t0,
                    round_seconds=res["round_seconds"])
    return FLRun(theta=res["theta"], log=res["log"], model=model, seed=seed, settings=settings)


def demo(rounds: int = 4, seed: int = 0) -> FLRun:
    """``make deploy-demo``: 3 least-squares clients on a loopback deployment; prints the commands
    run, the log's agreement with :func:`~flprivacy.federation.run_fedavg` and Alg. 3's error."""
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
