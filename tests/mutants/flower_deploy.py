"""Plausible bugs in the loopback Flower deployment: the App's two halves, the files each
node reads, the server's polling of replies and the harness that must kill every process it started.

Run in a clone, with that clone's sources first on the path (the SuperLink's and SuperNodes'
processes import flprivacy too, and inherit PYTHONPATH):

    PYTHONPATH=$PWD:$PWD/src .venv/bin/python tools/mutation.py tests/mutants/flower_deploy.py --json /tmp/deploy_mut.json

Each mutant breaks one step of Alg. 1 as deployed (the rounds, θ^0, eq. 1's weights, the forgery
of Alg. 4), a node's data, the round's closing on a timeout, or the no-process-left promise; ``why``
names it. A mutant is caught when tests/test_flower_deploy.py fails (a wrong log, an error, a
timeout of the deployment, or a process left behind).

The mutants that break the clean-up (``kill_leader_only``, ``stop_superlink_only`` and the like)
are caught because they leave processes behind, and those processes outlive the run: after it,
kill whatever the clone's Flower executables still run, e.g.

    pkill -f "$PWD/.venv/bin/flower-"

(the 2026-11-29 run of the whole catalogue left 12 ``flower-supernode`` and several
``flower-superexec`` processes).
"""

from tools.mutation import Mutant, pytest_command

FD = "src/flprivacy/flower_deploy.py"

TESTS = pytest_command("tests/test_flower_deploy.py")

MUTANTS = [
    # ---- the federation the App runs: Alg. 1's inputs ---------------------------------------------------
    Mutant("rounds_off_by_one", FD, 'rounds=spec["rounds"], theta0=', 'rounds=spec["rounds"] - 1, theta0=',
           "Alg. 1: the ServerApp runs T rounds, not T - 1"),
    Mutant("adversary_dropped", FD, 'adversary=_adversary_from_json(spec["adversary"]),', "adversary=None,",
           "Alg. 4: the deployed server must forge the target's messages (the spec's adversary is ignored)"),
    Mutant("uniform_sizes", FD, "n_samples=[c.n for c in clients]", "n_samples=[1 for c in clients]",
           "eq. 1: p_c ∝ S_c; the ServerApp is told every client holds one sample"),
    Mutant("theta0_reseeded", FD, "theta0 = model.init_params(seed)", "theta0 = model.init_params(seed + 1)",
           "Alg. 1: θ^0 must be run_fedavg's for the same seed"),
    Mutant("every_node_gets_client0", FD, "tensors = {\"X\": cd.X, \"y\": cd.y}",
           "tensors = {\"X\": clients[0].X, \"y\": clients[0].y}",
           "each SuperNode must load its own partition, not client 0's"),
    Mutant("round_timeout_ignored", FD, 'round_timeout=spec["round_timeout"], on_finish', "round_timeout=3600.0, on_finish",
           "a round with a dead node must close after the round timeout, not wait for ever"),
    # ---- the server's polling (_PollingGrid) -------------------------------------------------------------
    Mutant("replies_overwritten", FD, "            replies += got\n", "            replies = got\n",
           "the replies of every pull are kept; keeping only the last pull's drops clients that answered"),
    Mutant("poll_ignores_timeout", FD, "if not waiting or (end is not None and time.monotonic() >= end):",
           "if not waiting:", "send_and_receive must return at the timeout with the replies that arrived"),
    Mutant("replies_matched_by_own_id", FD, "waiting -= {m.metadata.reply_to_message_id for m in got}",
           "waiting -= {m.metadata.message_id for m in got}",
           "a reply answers the message named by its reply_to_message_id, not by its own id"),
    # ---- the harness: every process it started is killed ---------------------------------------------------
    Mutant("kill_leader_only", FD, "                os.killpg(p.pid, signal.SIGKILL)\n        for pid in pids:",
           "                os.kill(p.pid, signal.SIGKILL)\n        for pid in []:",
           "SuperLink/SuperNode children (flower-superexec, flwr-serverapp/clientapp) must die with them"),
    Mutant("stop_superlink_only", FD, "        for name in list(self.procs):\n            self.kill(name)",
           "        for name in list(self.procs)[:1]:\n            self.kill(name)",
           "stop() must kill every SuperNode, not only the SuperLink"),
    Mutant("no_cleanup", FD, "    finally:\n        dep.stop()\n", "    finally:\n        pass\n",
           "the deployment's processes must be stopped when deploy() returns or raises"),
]
