"""LPIPS (flprivacy.lpips) against the authors' published example distances, plus its invariants
and its input checks."""

from __future__ import annotations

import io
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from matplotlib.image import imread

from flbook.experiments.convert_lpips import ArraysOnlyUnpickler
from flprivacy.lpips import CONVERT_COMMAND, lpips, weights_path
from flprivacy.weights import sha256_file as _sha256

WEIGHTS = Path(weights_path()).parent
# "Distances: (0.722, 0.138)": test_network.py of github.com/richzhang/PerceptualSimilarity with
# its v0.1 AlexNet weights on its imgs/ex_ref.png vs ex_p0.png and ex_p1.png (issue #120).
PUBLISHED = (0.722, 0.138)
# half a unit of the printed third decimal + float32 summation order across machines
TOL = 0.0005 + 5e-5


def _example(name: str) -> np.ndarray:
    path = WEIGHTS / f"lpips_{name}.png"
    assert _sha256(path) == json.loads((WEIGHTS / "lpips_examples.json").read_text())["sha256"][path.name]
    im = imread(path)[..., :3]  # (64, 64, 3) floats in [0, 1]
    return np.ascontiguousarray(im.transpose(2, 0, 1)[None]).astype(np.float32)


@pytest.fixture(scope="module")
def examples():
    ref, p0, p1 = (_example(k) for k in ("ex_ref", "ex_p0", "ex_p1"))
    return np.concatenate([ref, ref]), np.concatenate([p0, p1])


def test_published_example_distances(examples):
    x, y = examples
    d = lpips(x, y)
    assert isinstance(d, np.ndarray) and d.shape == (2,)
    for ours, ref in zip(d, PUBLISHED):
        assert abs(ours - ref) <= TOL, (d, PUBLISHED)
    # the paper's point of the example: p1 is the closer distortion
    assert d[1] < d[0]


def test_identity_symmetry_torch(examples):
    x, y = (torch.from_numpy(a) for a in examples)
    assert torch.equal(lpips(x, x), torch.zeros(2, dtype=torch.float64))
    d_xy, d_yx = lpips(x, y), lpips(y, x)
    assert d_xy.dtype == torch.float64 and d_xy.shape == (2,)
    # Eq. 1 is symmetric in (x, x0) term by term; float32 rounding only
    assert torch.allclose(d_xy, d_yx, rtol=0, atol=1e-6)
    assert bool((d_xy > 0).all())


def test_grayscale_replicated_to_rgb():
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(2, 1, 32, 32, generator=g), torch.rand(2, 1, 32, 32, generator=g)
    assert torch.equal(lpips(a, b), lpips(a.repeat(1, 3, 1, 1), b.repeat(1, 3, 1, 1)))


@pytest.mark.parametrize("x, match", [
    (np.zeros((1, 3, 32, 32), dtype=np.uint8), "dtype"),
    (np.zeros((3, 32, 32), dtype=np.float32), "shape"),
    (np.zeros((1, 2, 32, 32), dtype=np.float32), "shape"),
    (np.zeros((0, 3, 32, 32), dtype=np.float32), "empty"),
    (np.zeros((1, 1, 28, 28), dtype=np.float32), "Resize MNIST"),
    (np.full((1, 3, 32, 32), np.nan, dtype=np.float32), "NaN"),
    (np.full((1, 3, 32, 32), -0.5, dtype=np.float32), r"\[0, 1\]"),
    (np.full((1, 3, 32, 32), 1.5, dtype=np.float32), r"\[0, 1\]"),
])
def test_bad_inputs(x, match):
    y = np.zeros((1, 3, 32, 32), dtype=np.float32)
    with pytest.raises((TypeError, ValueError), match=match):
        lpips(x, y)


def test_bad_pairs_and_net():
    a = np.zeros((1, 3, 32, 32), dtype=np.float32)
    with pytest.raises(TypeError, match="both"):
        lpips(a, torch.zeros(1, 3, 32, 32))
    with pytest.raises(ValueError, match="must be equal"):
        lpips(a, np.zeros((1, 3, 40, 40), dtype=np.float32))
    with pytest.raises(TypeError, match="torch.Tensor or numpy array"):
        lpips([[0.0]], [[0.0]])
    with pytest.raises(ValueError, match="only net='alex'"):
        lpips(a, a, net="vgg")


def test_missing_or_corrupt_weights(tmp_path):
    a = np.zeros((1, 3, 32, 32), dtype=np.float32)
    with pytest.raises(FileNotFoundError, match=CONVERT_COMMAND):
        lpips(a, a, weights=tmp_path / "lpips_alex.safetensors")
    bad = tmp_path / "lpips_alex.safetensors"
    shutil.copy(weights_path(), bad)
    shutil.copy(weights_path().with_suffix(".json"), tmp_path / "lpips_alex.json")
    raw = bytearray(bad.read_bytes())
    raw[-1] ^= 1
    bad.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="SHA-256"):
        lpips(a, a, weights=bad)


def test_converter_refuses_non_array_pickles():
    class Evil:
        def __reduce__(self):
            return (print, ("executed",))

    with pytest.raises(pickle.UnpicklingError, match="refused global"):
        ArraysOnlyUnpickler(io.BytesIO(pickle.dumps({"k": Evil()}))).load()
    arr = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}
    out = ArraysOnlyUnpickler(io.BytesIO(pickle.dumps(arr, protocol=3))).load()
    assert np.array_equal(out["w"], arr["w"])
