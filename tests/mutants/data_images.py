"""Plausible bugs in the image loaders (flprivacy.data.images): every attack of Parts IV-V compares
its reconstructions with these images in [0, 1] (SSIM, PSNR and LPIPS assume that range), so a
wrong scale or a shifted byte offset changes every number downstream.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD/src:$PWD FLPRIVACY_DATA_DIR=../shared/data python tools/mutation.py tests/mutants/data_images.py

The MNIST tests need the data directory (CI sets it); without it they are skipped and these
mutants survive.
"""

from tools.mutation import Mutant, pytest_command

IM = "src/flprivacy/data/images.py"

TESTS = pytest_command("tests/test_data.py")

MUTANTS = [
    Mutant("mnist_scale_256", IM, "torch.from_numpy(images.copy()).float().div_(255)",
           "torch.from_numpy(images.copy()).float().div_(256)", "MNIST's bytes 0..255 map onto [0, 1]: 255 is white"),
    Mutant("idx_header_offset", IM, "offset=4 + 4 * ndim).reshape(dims)", "offset=4 * ndim).reshape(dims[:1] + [-1])[:, :-1]",
           "an idx file's data start after the magic number and one 4-byte size per dimension"),
    Mutant("mnist_labels_of_images", IM, '    labels = _read_idx(fetch(f"mnist/{prefix}-labels-idx1-ubyte.gz"))[:n]\n',
           '    labels = _read_idx(fetch(f"mnist/{prefix}-labels-idx1-ubyte.gz"))[1:][:n]\n',
           "label i belongs to image i"),
    Mutant("digits_scale_17", IM, "dtype=torch.float32).div_(16)", "dtype=torch.float32).div_(17)",
           "scikit-learn's digits hold 0..16: 16 is white"),
    Mutant("n_negative_accepted", IM, " or n < 1):", " or n < -10):",
           "a negative n would silently drop images from the end"),
]
