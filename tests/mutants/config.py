"""Plausible bugs in the book-wide switches (flprivacy.config): the scale every chapter asks for,
the base seed, and the seed streams that make a run with one seed give one message log (a
client's shuffling must not change when another client joins or the server samples otherwise).

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD/src:$PWD python tools/mutation.py tests/mutants/config.py
"""

from tools.mutation import Mutant, pytest_command

CF = "src/flprivacy/config.py"

TESTS = pytest_command("tests/test_config.py", "tests/test_data.py")

MUTANTS = [
    Mutant("at_scale_swapped", CF, '    return paper if scale() == "paper" else quick\n',
           '    return quick if scale() == "paper" else paper\n', "quick is the default scale"),
    Mutant("scale_case_sensitive", CF, "    value = raw.lower() or \"quick\"\n", "    value = raw or \"quick\"\n",
           "FLPRIVACY_SCALE=Paper is the paper scale"),
    Mutant("unknown_scale_is_quick", CF, "    if value not in SCALES:\n", "    if False:\n",
           "an unknown scale is an error, never quick silently"),
    Mutant("negative_seed_accepted", CF, "    if seed < 0:\n", "    if seed < -1:\n",
           "the base seed is a non-negative integer"),
    Mutant("seed_garbage_is_zero", CF, "    except ValueError:\n        seed = -1\n", "    except ValueError:\n        seed = 0\n",
           "FLPRIVACY_SEED=abc is an error, not seed 0"),
    Mutant("old_prefix_ignored", CF, "    if old in os.environ:\n", "    if False:\n",
           "the former FEDLEAK_* name is refused with its replacement, never ignored"),
    Mutant("child_seed_ignores_keys", CF, "np.random.SeedSequence([int(seed), *map(int, keys)])",
           "np.random.SeedSequence([int(seed)])", "each key gives its own stream (one per client)"),
    Mutant("child_seed_keys_unordered", CF, "np.random.SeedSequence([int(seed), *map(int, keys)])",
           "np.random.SeedSequence([int(seed), *sorted(map(int, keys))])", "child_seed(s, 1, 2) and (s, 2, 1) are two streams"),
    Mutant("streams_shared", CF, "CLIENT_SHUFFLE_STREAM = 2\n", "CLIENT_SHUFFLE_STREAM = 1\n",
           "the server's sampling and the clients' shuffling are independent streams"),
    Mutant("client_stream_ignores_client", CF, "    return generator(child_seed(seed, CLIENT_SHUFFLE_STREAM, client))\n",
           "    return generator(child_seed(seed, CLIENT_SHUFFLE_STREAM))\n", "every client shuffles with her own stream"),
    Mutant("generator_unseeded", CF, "    g.manual_seed(int(seed))\n", "    g.seed()\n", "the same seed gives the same numbers"),
]
