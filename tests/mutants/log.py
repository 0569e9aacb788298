"""Plausible bugs in the message log (flprivacy.log.MessageLog and its model store) beyond those
of flower.py and part12.py: what an exchange records, how a reply enters the aggregate, where a
model is read back from memory or disk.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/log.py
"""

from tools.mutation import Mutant, pytest_command

LOG = "src/flprivacy/log.py"

TESTS = pytest_command("tests/test_federation.py", "tests/test_batched.py", "tests/test_part3_active.py",
                       "tests/test_reliability.py")

MUTANTS = [
    Mutant("update_from_sent_model", LOG, '            rnd["update"] += p * (returned.to(rnd["theta"].dtype) - rnd["theta"])\n',
           '            rnd["update"] += p * (returned.to(rnd["theta"].dtype) - sent.to(rnd["theta"].dtype))\n',
           "Alg. 1: θ^{t+1} = θ^t + η_g Σ p̃_c (θ_c^t − θ^t), also for an aggregated forged reply"),
    Mutant("total_counts_replies", LOG, '            rnd["total"] += p\n', '            rnd["total"] += 1.0 / self.n_clients\n',
           "p̃_c renormalises the weights of the aggregated replies"),
    Mutant("forged_sent_stored_as_global", LOG, "        if not exchange.forged and self._global_equal(t, exchange.sent):\n",
           "        if self._global_equal(t, exchange.sent) or exchange.forged:\n",
           "a forged sent model is stored, not replaced by θ^t"),
    Mutant("global_equal_by_shape", LOG, "        return g.shape == v.shape and g.dtype == v.dtype and bool(torch.equal(g, v))\n",
           "        return g.shape == v.shape and g.dtype == v.dtype\n", "a sent model refers to θ^t only when equal to it"),
    Mutant("memory_store_off_by_one", LOG, "        return self._chunks[i // self.chunk][i % self.chunk]\n",
           "        return self._chunks[i // self.chunk][max(i - 1, 0) % self.chunk]\n", "get(i) reads the i-th stored model"),
    Mutant("disk_store_off_by_one", LOG, "            raw = os.pread(self._fd, size, i * size)\n",
           "            raw = os.pread(self._fd, size, max(i - 1, 0) * size)\n", "on disk, get(i) reads the i-th model"),
    Mutant("last_returned_inclusive", LOG, "            if c == client and (before is None or t < before) and (best is None or t > best):\n",
           "            if c == client and (before is None or t <= before) and (best is None or t > best):\n",
           "the last reply strictly before round t (the active attacker's view when it forges round t)"),
    Mutant("final_model_not_recorded", LOG, "        self.global_models._append(theta.detach())\n", "        pass\n",
           "θ^T is the log's last global model"),
]
