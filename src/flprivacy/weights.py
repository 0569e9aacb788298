"""Committed model weights: a ``safetensors`` file and a JSON record holding its SHA-256.

The book trains its small networks by committed commands (the DDPM behind the direct
post-processor, :mod:`flprivacy.diffusion`; ROG's GAN, :mod:`flprivacy.rog`; FedInverse's GAN,
:mod:`flprivacy.attacks.model_inversion`) and converts LPIPS's weights once
(:mod:`flprivacy.lpips`). Each is stored as ``<name>.safetensors`` (tensors only: nothing is
unpickled or executed when it is read) beside ``<name>.json``, the record of the command, its
settings and the file's SHA-256. :func:`save_weights` writes both; :func:`load_weights` checks
the hash before it reads the tensors, so a corrupt or substituted file is refused with the
command that remakes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from torch import Tensor


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_weights(state: Mapping[str, Tensor], path: str | Path, record: Mapping) -> dict:
    """Write ``state`` to ``path`` (safetensors) and ``record`` plus the file's SHA-256 and size to
    ``path`` with suffix ``.json``; return the full record."""
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous().clone() for k, v in state.items()}, str(path))
    full = {**record, "sha256": sha256_file(path), "bytes": path.stat().st_size}
    path.with_suffix(".json").write_text(json.dumps(full, indent=1) + "\n")
    return full


def load_weights(path: str | Path, *, where: str, remake: str, sha256: str | None = None,
                 ) -> tuple[dict[str, Tensor], dict]:
    """Read weights written by :func:`save_weights`: the file and its record must exist, the file's
    SHA-256 must equal the record's (or ``sha256`` when given), and it must be a valid safetensors
    file. ``where`` names the caller in the errors and ``remake`` says how to make the file again
    (e.g. "train them with `python -m flbook.experiments.train_ddpm`").

    Returns ``(tensors, record)``.

    Raises:
        FileNotFoundError: the file or its record is missing.
        ValueError: wrong SHA-256 (corrupt or not the committed file), or not safetensors.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    meta = path.with_suffix(".json")
    if not path.is_file() or not meta.is_file():
        raise FileNotFoundError(f"{where}: {path} or its record {meta.name} is missing; {remake}.")
    record = json.loads(meta.read_text())
    expected = sha256 or record.get("sha256")
    actual = sha256_file(path)
    if expected != actual:
        raise ValueError(f"{where}: {path} has SHA-256 {actual}, but {expected} was expected: the file is corrupt or "
                         f"not the committed one. Restore it from git, or {remake}.")
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError) as e:  # e.g. a pickle: never unpickled
        raise ValueError(f"{where}: {path} is not a valid safetensors file ({e}); {remake}.") from None
    return state, record


__all__ = ["load_weights", "save_weights", "sha256_file"]
