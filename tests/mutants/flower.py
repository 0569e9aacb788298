"""Plausible bugs in the Flower adapter: recording, forging and client training.

Run from the repository root, with a Python that has the Flower extra:

    PYTHONPATH=$PWD:$PWD/src .venv/bin/python tools/mutation.py tests/mutants/flower.py --json /tmp/flower_mut.json

Each mutant breaks one step of Alg. 1 (the server's round), Alg. 2 (the client's update), eq. 1
(FedAvg's weights), Alg. 4 (the forgery) or the recording of the message log; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

FL = "src/flprivacy/flower.py"
LOG = "src/flprivacy/log.py"

TESTS = pytest_command("tests/test_flower_recorder.py", "tests/test_flower.py")

MUTANTS = [
    # ---- the log: what is recorded where ------------------------------------------------------------
    Mutant("round_off_by_one", FL, "t = server_round - 1\n        theta = from_arrays",
           "t = server_round\n        theta = from_arrays", "Flower's server round r is the book's round t = r - 1"),
    Mutant("final_model_not_recorded", FL, "        self.log.finish(self._theta)\n        return self._theta",
           "        return self._theta", "the log holds θ^0..θ^T: T + 1 global models"),
    Mutant("participants_in_flower_order", LOG, "self.participants.append(sorted(int(c) for c in participants))",
           "self.participants.append([int(c) for c in participants])", "C_s^t recorded in Flower's random sampling order"),
    Mutant("forged_logged_as_global", FL, "self._sent[c] = (sent, forged)", "self._sent[c] = (theta, forged)",
           "Alg. 4: the log must hold the forged model the target received, not θ^t"),
    Mutant("parameter_order_reversed", FL, "parts.append(v.reshape(-1).to(model.dtype))",
           "parts.insert(0, v.reshape(-1).to(model.dtype))", "θ read out of the ArrayRecord in the wrong parameter order"),
    Mutant("nodes_assumed_in_partition_order", FL,
           "node_to_client = _query_partitions(grid, nodes, timeout=connect_timeout)",
           "node_to_client = {node: i for i, node in enumerate(nodes)}",
           "the server assumes sorted node ids are clients 0..C-1 instead of asking the nodes"),
    Mutant("forged_flag_dropped", FL, "self._sent[c] = (sent, forged)", "self._sent[c] = (sent, False)",
           "the target's forged exchanges recorded as honest (and aggregated)"),
    Mutant("reply_recorded_against_global", FL, "if self.log.record_reply(c, sent, returned, forged):",
           "if self.log.record_reply(c, self._theta, returned, forged):",
           "the exchange's sent model is θ^t even when the target received θ_c^a"),
    Mutant("clients_mapped_by_sampling_order", FL,
           "            c = self.node_to_client[src] if src in self.node_to_client else sent_to.get(reply.metadata.reply_to_message_id)",
           "            c = sorted(self._sent)[sorted(int(m.metadata.src_node_id) for m in replies).index(src)]",
           "replies attributed to clients by node-id order, not by the node's client index"),
    # ---- eq. 1: FedAvg's weights ------------------------------------------------------------------------
    Mutant("uniform_num_examples", FL, 'n = clients[c].n if weighting == "size" else 1', "n = 1",
           "eq. 1: p_c ∝ S_c; the client reports num-examples = 1"),
    Mutant("log_weights_uniform", FL, "log = MessageLog(n, w / w.sum(), [int(s)", "log = MessageLog(n, torch.ones(n) / n, [int(s)",
           "eq. 1: the log's p_c must be the aggregation's weights"),
    # ---- Alg. 2 on the ClientApp: the client's random stream ------------------------------------------------
    Mutant("rng_not_kept_across_rounds", FL,
           'context.state.array_records["rng"] = ArrayRecord({"state": gen.get_state()})', "pass",
           "Alg. 2: the client's shuffling stream restarts every round instead of continuing"),
    Mutant("one_stream_for_all_clients", FL, "gen = client_generator(seed, c)", "gen = client_generator(seed, 0)",
           "Alg. 2: every client shuffles with client 0's stream"),
    # ---- Alg. 4 on Flower: the forgery and the aggregate ----------------------------------------------------
    Mutant("forgery_not_sent", FL, "content[ARRAYS] = to_arrays(self.model, sent)",
           "content[ARRAYS] = to_arrays(self.model, theta)", "Alg. 4: the target must receive θ_c^a, not θ^t"),
    Mutant("forged_replies_aggregated", FL,
           "            if self.log.record_reply(c, sent, returned, forged):",
           "            if self.log.record_reply(c, sent, returned, forged) or True:",
           "forged replies stay out of the aggregate (run_fedavg's rule)"),
    Mutant("forgery_to_everyone", LOG,
           'forged = adv.forge(rnd["t"], int(client), rnd["theta"], self) if adv is not None else None',
           'forged = adv.forge(rnd["t"], min(getattr(adv, "targets", None) or [getattr(adv, "target", int(client))]), '
           'rnd["theta"], self) if adv is not None else None',
           "Alg. 4 targets one client: the forged model goes to every sampled node"),
    # ---- faults: a node that does not reply, a node that joins late ------------------------------------------
    Mutant("failure_kept_in_participants", LOG, "        self.participants[t].remove(c)\n", "",
           "a client that did not reply is listed among the round's participants"),
    Mutant("failure_not_recorded", FL,
           '                self.log.record_failure(c, failed.get(c, "no reply within the round\'s timeout"))\n', "",
           "a sampled client that did not reply leaves no trace in the log"),
    Mutant("failed_node_sampled_again", FL, "                self.failed_nodes.add(client_node[c])\n", "",
           "a node that missed a reply is sampled again (and every later round waits the timeout for it)"),
    Mutant("late_node_never_queried", FL, "new = [i for i in ids if i not in self.node_to_client]", "new = []",
           "a node that connects after the start never takes part"),
    Mutant("app_error_taken_as_fault", FL, "elif reply.error.code in _APP_ERRORS:", "elif False:",
           "an exception in the ClientApp (a bug) is silently recorded as a node failure"),
    Mutant("transport_error_raises", FL, "_APP_ERRORS = (ErrorCode.LOAD_CLIENT_APP_EXCEPTION,",
           "_APP_ERRORS = (ErrorCode.NODE_UNAVAILABLE, ErrorCode.LOAD_CLIENT_APP_EXCEPTION,",
           "a node reported unavailable by the SuperLink stops the run instead of closing the round without it"),
    Mutant("wait_for_nodes_unbounded", FL, "            if time.monotonic() > deadline:\n                raise RuntimeError(f\"RecordingStrategy: round",
           "            if False:\n                raise RuntimeError(f\"RecordingStrategy: round",
           "too few live nodes: the round waits for ever (Flower's sample_nodes loop) instead of raising"),
    Mutant("failure_weight_aggregated", LOG, "        self.failures[(t, c)] = str(reason)\n",
           "        self.failures[(t, c)] = str(reason)\n        rnd[\"total\"] += float(self.weights[c])\n",
           "eq. 1 renormalised over the replies that arrived, not over the sampled clients"),
]
