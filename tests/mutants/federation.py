"""Plausible bugs in FedAvg (flprivacy.federation and flprivacy.clients: Diana Alg. 1-2) beyond those of part12.py and
reliability.py: the mini-batch schedule of Alg. 2, the sampling and weighting of Alg. 1, what the
log records, the seeds.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/federation.py
"""

from tools.mutation import Mutant, pytest_command

FED = "src/flprivacy/federation.py"
CLI = "src/flprivacy/clients.py"

TESTS = pytest_command("tests/test_federation.py", "tests/test_part2_common.py", "tests/test_batched.py")

MUTANTS = [
    Mutant("steps_floor", CLI, "    return epochs * math.ceil(n_samples / B)\n", "    return epochs * (n_samples // B)\n",
           "Alg. 2: K = E⌈S_c/B⌉, the last partial batch is a step"),
    Mutant("last_partial_batch_dropped", CLI, "            batches = order.split(B)\n",
           "            batches = order[: n_samples - n_samples % B].split(B) if n_samples % B else order.split(B)\n",
           "every sample is in one batch of each epoch"),
    Mutant("steps_ignored_by_local_sgd", CLI,
           "    for idx in batch_schedule(n, epochs=epochs, batch_size=batch_size, steps=steps, shuffle=shuffle,\n",
           "    for idx in batch_schedule(n, epochs=epochs, batch_size=batch_size, steps=None, shuffle=shuffle,\n",
           "Xu & Neglia's local steps: exactly K SGD steps"),
    Mutant("uniform_weights_by_size", FED, "        w = torch.ones(len(clients), dtype=torch.float64)\n",
           "        w = torch.tensor([c.n for c in clients], dtype=torch.float64)\n", "eq. (1) with p_c = 1/|C|"),
    Mutant("sampling_with_replacement", FED,
           "            sampled = sorted(torch.randperm(len(clients), generator=server_gen)[:m].tolist())\n",
           "            sampled = sorted(torch.randint(len(clients), (m,), generator=server_gen).tolist())\n",
           "Alg. 1 samples m distinct clients"),
    Mutant("sampling_fixed", FED,
           "            sampled = sorted(torch.randperm(len(clients), generator=server_gen)[:m].tolist())\n",
           "            sampled = list(range(m))\n", "Alg. 1 samples clients at random each round"),
    Mutant("record_clients_ignored", FED, "    keep = [(rec_c is None or c in rec_c) and (rec_t is None or t in rec_t) for c in sampled]\n",
           "    keep = [(rec_t is None or t in rec_t) for c in sampled]\n", "only the recorded clients' exchanges are kept"),
    Mutant("record_rounds_ignored", FED, "    keep = [(rec_c is None or c in rec_c) and (rec_t is None or t in rec_t) for c in sampled]\n",
           "    keep = [(rec_c is None or c in rec_c) for c in sampled]\n", "only the recorded rounds' exchanges are kept"),
    Mutant("theta0_ignores_seed", FED, "        theta0 = model.init_params(seed)\n", "        theta0 = model.init_params(0)\n",
           "the seed draws θ^0"),
    Mutant("client_trains_a_copy_of_global", FED, "                    returned = local(model, sent.clone(), clients[c], client_gens[c]).detach()\n",
           "                    returned = local(model, theta.clone(), clients[c], client_gens[c]).detach()\n",
           "a client trains the model it was sent (a forged one under attack)"),
    Mutant("inversion_step_sign", CLI, "            theta = theta - lr * model.grad(theta, Xb, yb, create_graph=True)\n",
           "            theta = theta + lr * model.grad(theta, Xb, yb, create_graph=True)\n",
           "the differentiable replay (gradient inversion) takes descent steps"),
]
