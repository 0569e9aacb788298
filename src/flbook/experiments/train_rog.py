"""Train the book's ROG-style GAN post-processor (Yue et al. 2023) on MNIST, the baseline of Wilson et al.'s Fig. 8 / Fig. 15.

    python -m flbook.experiments.train_rog --minutes 15 --threads 1    # the committed weights
    python -m flbook.experiments.train_rog --steps 20 --out /tmp/tiny.safetensors   # a smoke test

The architecture and the loss are described in :mod:`flprivacy.rog` (the public code's conditional
U-Net generator and patch discriminator, scaled to 32x32 digits; pix2pix's adversarial + L1 loss
where the public code has no training script). Training pairs: the first 20,000 MNIST *training*
digits (the DDPM's data) and their synthetic raw reconstructions (:func:`flprivacy.rog.degrade`);
the attacks the book post-processes are of MNIST *test* digits, so held out.

The committed file was made with ``--minutes 15 --threads 1`` (a time budget; the record names the
steps done, and ``--steps <that number> --threads 1`` repeats exactly those steps on one machine).
Writes ``data/weights/rog_mnist32.safetensors`` and ``rog_mnist32.json`` (command, seed, data,
steps, losses, time, machine, SHA-256, checked by :func:`flprivacy.rog.load_rog`).
"""

from __future__ import annotations

from flprivacy.rog import save_rog, train_rog, weights_path
from . import add_threads_option, exit_on_bad_input, positive_int, training_parser, training_record, use_threads
from .train_ddpm import TRAIN_FILE, TRAIN_SHA256, load_mnist_train_20k

DEFAULTS = dict(steps=4000, batch_size=32, lr=2e-4, l1_weight=100.0, sigma_max=0.6, seed=0)


def main(argv: list[str] | None = None) -> dict:
    parser = training_parser(__doc__.split("\n")[0], DEFAULTS)
    parser.add_argument("--l1-weight", type=float, default=DEFAULTS["l1_weight"])
    parser.add_argument("--sigma-max", type=float, default=DEFAULTS["sigma_max"])
    parser.add_argument("--n-images", type=positive_int, default=None, help="use only the first n training images")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    use_threads(args)
    X, y = load_mnist_train_20k(args.n_images)
    print(f"training on {X.shape[0]} images for up to {args.steps} steps of batch {args.batch_size}", flush=True)
    trained = train_rog(X, y, steps=args.steps, batch_size=args.batch_size, lr=args.lr, l1_weight=args.l1_weight,
                        sigma_max=args.sigma_max, seed=args.seed,
                        time_budget=None if args.minutes is None else 60 * args.minutes,
                        progress=lambda s, l: print(f"step {s:5d} " + " ".join(f"{k} {v:.4f}" for k, v in l.items()),
                                                    flush=True))
    out = args.out or weights_path()
    record = training_record(
        "train_rog", argv, seed=args.seed,
        data=dict(name="MNIST training images 0..19999 (neuralnetvis copy)", file=TRAIN_FILE,
                  sha256=TRAIN_SHA256, n_images=int(X.shape[0]),
                  inputs="flprivacy.rog.degrade: 14x14 least-squares dummy + N(0, σ²), σ ~ U(0, sigma_max), "
                         "bicubic to 28x28, padded to 32x32"),
        steps=trained.settings["steps_done"], steps_requested=args.steps, batch_size=args.batch_size,
        settings=trained.settings, losses={k: [round(v, 5) for v in vs] for k, vs in trained.losses.items()},
        seconds=round(trained.seconds, 1))
    full = save_rog(trained.generator, out, record)
    print(f"wrote {out} ({full['bytes']} bytes, sha256 {full['sha256'][:12]}...) in {trained.seconds:.0f} s", flush=True)
    return full


if __name__ == "__main__":
    exit_on_bad_input(main)
