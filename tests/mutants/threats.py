"""Plausible bugs in the threat models (flprivacy.threats): what each adversary observes and what
the active server may change. A view that shows the attacker a message it could not see, an
update with the wrong sign or scale, a forgery sent to the wrong client or round.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/threats.py
"""

from tools.mutation import Mutant, pytest_command

THR = "src/flprivacy/threats.py"

TESTS = pytest_command("tests/test_federation.py", "tests/test_part3_active.py", "tests/test_reconstruction.py",
                       "tests/test_inversion.py", "-k", "not slow")

MUTANTS = [
    Mutant("eavesdrop_every_round", THR, "    return log.client_messages(client, rounds)\n",
           "    return log.client_messages(client, None)\n", "the eavesdropper sees only the rounds T_c it observes"),
    Mutant("last_returned_ignores_before", THR, "    theta = log.last_returned(client, before=before)\n",
           "    theta = log.last_returned(client)\n", "the last model returned before a round, not after it"),
    Mutant("consecutive_swapped", THR, "        return self.models[pos[t]], self.models[pos[t + 1]]\n",
           "        return self.models[pos[t + 1]], self.models[pos[t]]\n", "(θ^t, θ^{t+1}) in that order"),
    Mutant("update_sign", THR, "        return (a - b) / self.server_lr\n", "        return (b - a) / self.server_lr\n",
           "Wilson eq. 2: the averaged update is (θ^t - θ^{t+1}) / η_g"),
    Mutant("update_times_server_lr", THR, "        return (a - b) / self.server_lr\n", "        return (a - b) * self.server_lr\n",
           "Wilson eq. 2: divided by the global learning rate"),
    Mutant("curious_sees_every_round", THR, "    rounds = [t for t, part in enumerate(log.participants) if attacker in part]\n",
           "    rounds = list(range(len(log.participants)))\n",
           "a curious client receives the global model only in the rounds it is sampled"),
    Mutant("curious_server_lr_one", THR, "        server_lr=log.server_lr,\n", "        server_lr=1.0,\n",
           "the attacker knows η_g (Wilson §3.1)"),
    Mutant("curious_n_is_own", THR, "        n_samples_total=int(sum(log.n_samples)),\n",
           "        n_samples_total=int(log.n_samples[attacker]),\n", "N is the total over all clients"),
    Mutant("forged_aggregated_by_default", THR, "    aggregate_forged: bool = False\n", "    aggregate_forged: bool = True\n",
           "a reply to a forged model is left out of the aggregate (Diana §2.2)"),
    Mutant("sendback_every_client", THR, "        if client != self.target or round not in self.rounds:\n",
           "        if round not in self.rounds:\n", "only the target is sent her own model"),
    Mutant("sendback_every_round", THR, "        if client != self.target or round not in self.rounds:\n",
           "        if client != self.target:\n", "only in the attack rounds T_c^a"),
    Mutant("sendback_sends_global", THR, "        return last\n", "        return global_model\n",
           "SendBack sends the client's own last model"),
]
