"""Train FedInverse's GMI prior (a WGAN-GP on public MNIST digits 5-9) for the model-inversion attack.

    python -m flbook.experiments.train_fedinverse_gan --minutes 13 --threads 1   # the committed weights
    python -m flbook.experiments.train_fedinverse_gan --minutes 13 --threads 1 --all-digits   # the control prior
    python -m flbook.experiments.train_fedinverse_gan --steps 20 --out /tmp/tiny.safetensors   # a smoke test

Wu et al. (2024) train GMI's generator and critic on public images of classes the attacked model
does not hold (their MNIST attack targets a 5-class model; see
:mod:`flprivacy.attacks.model_inversion`). The public images here are the digits 5-9 among the
first 20,000 MNIST *training* images (9,775 images); the federations the book attacks hold MNIST
*test* images of the digits 0-4, so the prior never sees a client's image nor a private class.
Writes ``data/weights/fedinverse_gan_mnist.safetensors`` and, beside it, ``.json`` with the command,
seed, data, steps, training time, machine and the file's SHA-256 (checked by
:func:`flprivacy.attacks.model_inversion.load_gan`). ``--minutes`` is a time budget: the record names
the critic steps done, and ``--steps N`` with that N repeats them. ``--all-digits`` trains a control
prior on all ten digits of the same 20,000 images (the data of the book's DDPM, which post-processes
our attack's images): the clients' images stay held out, but the private classes are then public (bit-identical weights on another
machine are not guaranteed).
"""

from __future__ import annotations

import torch

from flprivacy.attacks.model_inversion import PUBLIC_CLASSES, save_gan, train_gan, weights_path
from . import add_threads_option, exit_on_bad_input, positive_int, training_parser, training_record, use_threads
from .train_ddpm import TRAIN_FILE, TRAIN_SHA256, load_mnist_train_20k

DEFAULTS = dict(steps=20000, batch_size=64, lr=2e-4, n_critic=5, width=32, seed=0)


def public_images(classes=PUBLIC_CLASSES) -> torch.Tensor:
    """The public images: MNIST training digits ``classes`` among the first 20,000 (default 5-9:
    (9775, 1, 28, 28) in [0, 1])."""
    X, y = load_mnist_train_20k()
    return X[torch.isin(y, torch.tensor(tuple(classes)))]


def main(argv: list[str] | None = None) -> dict:
    parser = training_parser(__doc__.split("\n")[0], DEFAULTS, steps_help="critic steps")
    parser.add_argument("--n-critic", type=positive_int, default=DEFAULTS["n_critic"])
    parser.add_argument("--width", type=positive_int, default=DEFAULTS["width"])
    parser.add_argument("--all-digits", action="store_true",
                        help="train on all ten digits (the same public images as the book's DDPM; weights "
                             "fedinverse_gan_mnist_all.safetensors) instead of the authors' split (digits 5-9)")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    use_threads(args)
    classes = tuple(range(10)) if args.all_digits else PUBLIC_CLASSES
    X = public_images(classes)
    print(f"training on {X.shape[0]} public images (digits {classes}) for up to {args.steps} critic steps",
          flush=True)
    gan = train_gan(X, steps=args.steps, batch_size=args.batch_size, lr=args.lr, n_critic=args.n_critic,
                    width=args.width, seed=args.seed, time_budget=None if args.minutes is None else 60 * args.minutes,
                    progress=lambda s, l: print(f"critic step {s:6d} loss {l:.3f}", flush=True))
    out = args.out or weights_path("all" if args.all_digits else "")
    record = training_record(
        "train_fedinverse_gan", argv, seed=args.seed,
        data=dict(name=f"MNIST training images 0..19999 (neuralnetvis copy), digits {classes}", file=TRAIN_FILE,
                  sha256=TRAIN_SHA256, classes=list(classes), n_images=int(X.shape[0]),
                  padding="28x28 -> 32x32 with 2 black pixels"),
        settings=gan.settings, critic_losses=[round(v, 4) for v in gan.losses[::50]], seconds=round(gan.seconds, 1))
    full = save_gan(gan, out, record)
    print(f"wrote {out} ({full['bytes']} bytes, sha256 {full['sha256'][:12]}...) in {gan.seconds:.0f} s", flush=True)
    return full


if __name__ == "__main__":
    exit_on_bad_input(main)
