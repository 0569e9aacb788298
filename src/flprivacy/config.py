"""The book-wide switches: experiment scale and seeding.

Every experiment in the book runs at one of two scales, chosen by the environment variable
``FLPRIVACY_SCALE``:

``quick`` (default)
    fewer rounds, seeds and trials; seconds to a couple of minutes on a laptop CPU. The tests
    and the default book build use it.
``paper``
    the settings of the paper being reproduced; may take hours.

The base seed of every chapter comes from ``FLPRIVACY_SEED`` (:func:`base_seed`). The names
``FEDLEAK_*`` of the package's former name were read, with a warning, until version 0.2; since
0.3 setting one is an error that names its replacement (it is never ignored silently).

Chapters never edit numbers to change scale; they ask :func:`at_scale` for the value of the
current scale.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch

from .validation import check_seed

T = TypeVar("T")

SCALES = ("quick", "paper")
SCALE_ENV = "FLPRIVACY_SCALE"
SEED_ENV = "FLPRIVACY_SEED"
DEFAULT_SEED = 0
_OLD_PREFIX, _NEW_PREFIX = "FEDLEAK_", "FLPRIVACY_"


def project_root() -> Path | None:
    """The project checkout this library runs from (the folder with ``pyproject.toml`` above
    ``src/flprivacy``), or None for an installed copy: where the committed result files
    (``book/results``), weights (``data/weights``) and the Flower app (``deploy``) live."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "flprivacy").is_dir() else None


def env(name: str, default: str = "") -> str:
    """Read the environment variable ``name`` (a ``FLPRIVACY_*`` name), stripped.

    Raises:
        ValueError: when the package's former name ``FEDLEAK_*`` of the variable is set and the
            new one is not (read with a warning until version 0.2, refused since 0.3).
    """
    if not name.startswith(_NEW_PREFIX):
        raise ValueError(f"name={name!r}: expected a variable named {_NEW_PREFIX}*")
    if name in os.environ:
        return os.environ[name].strip()
    old = _OLD_PREFIX + name[len(_NEW_PREFIX):]
    if old in os.environ:
        raise ValueError(f"{old} is no longer read (the package is flprivacy since version 0.2): set {name} instead, "
                         f"e.g. `export {name}={os.environ[old].strip()}`, and unset {old}.")
    return default


def base_seed() -> int:
    """The book's base seed: ``$FLPRIVACY_SEED`` (default 0).

    Every chapter draws all its random instances from this seed (through :func:`child_seed`),
    and its checks hold for any value: ``make test-seeds`` runs every notebook under other seeds.

    Raises:
        ValueError: if the variable is not a non-negative integer.
    """
    value = env(SEED_ENV, str(DEFAULT_SEED)) or str(DEFAULT_SEED)
    try:
        seed = int(value)
    except ValueError:
        seed = -1
    if seed < 0:
        raise ValueError(f"{SEED_ENV}={value!r} is not a non-negative integer; "
                         f"set e.g. `export {SEED_ENV}=1` or unset it for {DEFAULT_SEED}.")
    return seed


def scale() -> str:
    """Return the experiment scale, ``"quick"`` (default) or ``"paper"``.

    Raises:
        ValueError: if ``FLPRIVACY_SCALE`` holds anything else.
    """
    raw = env(SCALE_ENV, "quick")
    value = raw.lower() or "quick"
    if value not in SCALES:
        raise ValueError(
            f"{SCALE_ENV}={raw!r} is not a known scale; "
            f"set it to one of {SCALES} (e.g. `export {SCALE_ENV}=paper`) or unset it for 'quick'."
        )
    return value


def at_scale(quick: T, paper: T) -> T:
    """Return ``quick`` or ``paper`` according to :func:`scale`.

    Example: ``rounds = at_scale(quick=30, paper=300)``.
    """
    return paper if scale() == "paper" else quick


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators.

    Library functions take explicit seeds or generators; this is for notebook cells that use
    the global generators (e.g. a module's default initialisation).
    """
    check_seed("seed", seed, "seed_everything")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def generator(seed: int) -> torch.Generator:
    """A fresh CPU ``torch.Generator`` seeded with ``seed``."""
    check_seed("seed", seed, "generator")
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


def child_seed(seed: int, *keys: int) -> int:
    """A seed derived from ``seed`` and integer ``keys`` (e.g. a client index).

    Independent streams per client keep a client's randomness unchanged when, for example,
    another client is added or the sampling of clients changes. Uses NumPy's ``SeedSequence``,
    which reads ``(seed, *keys)`` as the digits of one integer: trailing zero keys add nothing,
    so ``child_seed(s, 2, 0) == child_seed(s, 2)`` (client 0's shuffling stream is the stream a
    chapter gets from ``child_seed(s, 2)``). Give streams that must differ keys that differ
    before any trailing zeros.
    """
    check_seed("seed", seed, "child_seed")
    if any(int(k) < 0 for k in keys):
        raise ValueError(f"child_seed: keys must be non-negative integers; got {list(keys)}.")
    return int(np.random.SeedSequence([int(seed), *map(int, keys)]).generate_state(1, np.uint64)[0] % 2**63)


# ---- FedAvg's named seed streams ------------------------------------------------------------------
# A federated run with seed s draws from independent streams derived from s: the server's client
# sampling, and one stream per client for her mini-batch shuffling. Every writer of a message log
# (run_fedavg, the Flower strategy) uses these, so that the same seed gives the same log.
SERVER_SAMPLING_STREAM = 1
"""The key of the server's client-sampling stream, ``child_seed(seed, 1)``."""
CLIENT_SHUFFLE_STREAM = 2
"""The key of client c's shuffling stream, ``child_seed(seed, 2, c)``."""


def server_generator(seed: int) -> torch.Generator:
    """The server's client-sampling generator of a run with ``seed``."""
    return generator(child_seed(seed, SERVER_SAMPLING_STREAM))


def client_generator(seed: int, client: int) -> torch.Generator:
    """Client ``client``'s mini-batch shuffling generator of a run with ``seed``."""
    if isinstance(client, bool) or not isinstance(client, int) or client < 0:
        raise ValueError(f"client_generator: client must be a client index >= 0; got {client!r}.")
    return generator(child_seed(seed, CLIENT_SHUFFLE_STREAM, client))
