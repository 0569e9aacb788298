"""Train the book's small DDPM on MNIST (padded to 32x32), the prior of the diffusion post-processing.

    python -m flbook.experiments.train_ddpm                       # the committed weights
    python -m flbook.experiments.train_ddpm --steps 20 --out /tmp/tiny.safetensors   # a smoke test

The committed file was made with ``--minutes 25 --threads 1`` (a time budget: 1,192 steps of batch
32 in 1,500 s on two shared CPU cores); ``--steps 1192 --threads 1`` repeats exactly those steps (the
learning rate does not depend on the total; bit-identical weights on another machine are not
guaranteed, and were not re-checked here).

Wilson et al. (2025) post-process 128x128 ImageNet reconstructions with "a pretrained DDPM" (§3.2)
and a pretrained MDT (§3.3); pretrained weights are not among the book's offline data, so the
book trains its own, a compact class-conditional U-Net (``diffusers``
``UNet2DModel``, about 0.69 M parameters) on the first 20,000 MNIST training images (the
reconstructions it post-processes are of MNIST *test* images, so held out). Writes
``data/weights/ddpm_mnist32.safetensors`` and, beside it, ``ddpm_mnist32.json`` with the command,
seed, data, steps, training time, machine and the file's SHA-256 (checked by
:func:`flprivacy.diffusion.load_ddpm`).
"""

from __future__ import annotations

import numpy as np
import torch

from flprivacy.data.files import data_dir, verify
from flprivacy.diffusion import save_ddpm, train_ddpm, weights_path
from . import add_threads_option, exit_on_bad_input, positive_int, training_parser, training_record, use_threads

TRAIN_FILE = "mnist/neuralnetvis_mnist_20k_x_train.npz"
TRAIN_SHA256 = "020748224657c65c2906541368c7f3a389a2591540437f05ee4a0e88ff7ced30"
LABEL_FILE = "mnist/neuralnetvis_mnist_20k_y_train.npz"
LABEL_SHA256 = "1566e936dfc19e2626da3a694fa7a06a7f45309331ba5b37e834cf36d20e9147"
DEFAULTS = dict(steps=6000, batch_size=32, lr=1e-3, seed=0)


def load_mnist_train_20k(n: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The first 20,000 MNIST training images (see the data directory's SOURCES.md; the full
    60,000 are not available offline) as ``(n, 1, 28, 28)`` floats in [0, 1] and their labels."""
    root = data_dir()
    x_path, y_path = root / TRAIN_FILE, root / LABEL_FILE
    for p, h in ((x_path, TRAIN_SHA256), (y_path, LABEL_SHA256)):
        if not p.is_file():
            raise FileNotFoundError(f"{p} not found: the DDPM trains on the 20k MNIST training subset "
                                    "(neuralnetvis copy); put it in the data directory's mnist/ folder.")
        verify(p, f"sha256:{h}")
    X = np.load(x_path)["arr_0"][:n]
    y = np.load(y_path)["arr_0"][:n]
    return torch.from_numpy(X.copy()).float().div_(255).unsqueeze(1), torch.from_numpy(y.astype(np.int64))


def main(argv: list[str] | None = None) -> dict:
    parser = training_parser(__doc__.split("\n")[0], DEFAULTS)
    parser.add_argument("--n-images", type=positive_int, default=None, help="use only the first n training images")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    use_threads(args)
    X, y = load_mnist_train_20k(args.n_images)
    print(f"training on {X.shape[0]} images for {args.steps} steps of batch {args.batch_size}", flush=True)
    trained = train_ddpm(X, y, steps=args.steps, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                         time_budget=None if args.minutes is None else 60 * args.minutes, progress=lambda s, l: print(f"step {s:5d} loss {l:.4f}", flush=True))
    out = args.out or weights_path()
    record = training_record(
        "train_ddpm", argv, seed=args.seed,
        data=dict(name="MNIST training images 0..19999 (neuralnetvis copy)", file=TRAIN_FILE,
                  sha256=TRAIN_SHA256, n_images=int(X.shape[0]), padding="28x28 -> 32x32 with 2 black pixels"),
        steps=trained.settings["steps_done"], steps_requested=args.steps, batch_size=args.batch_size, lr=args.lr,
        settings=trained.settings, losses=[round(v, 5) for v in trained.losses], seconds=round(trained.seconds, 1))
    full = save_ddpm(trained.model, out, record)
    print(f"wrote {out} ({full['bytes']} bytes, sha256 {full['sha256'][:12]}...) in {trained.seconds:.0f} s", flush=True)
    return full


if __name__ == "__main__":
    exit_on_bad_input(main)
