"""Song et al. Figs. 3-4 at the paper's model: AWA's SSIM and PSNR over 3,000 iterations at ResNet-18, 32x32.

    python -m flbook.experiments.awa_curves_resnet18 --models resnet18 --cases 1           # one curve, ~45 min on 1 CPU thread
    python -m flbook.experiments.awa_curves_resnet18 --device cuda --cases 1 & \\
        python -m flbook.experiments.awa_curves_resnet18 --device cuda --cases 2 & wait     # on a GPU, a few minutes each

Song §5.2 runs AWA past Table IV's 1,000 iterations: "after 3,000 attack iterations the attained
SSIM values surpass those presented in Table IV" (Fig. 3), with "SSIM values exceeding 0.9 within
1500 attack iterations for all four cases", case 4 "marginally inferior" (Fig. 4). This command
runs, for each (model, case) asked, the AWA cell of ``awa_table4_resnet18``'s grid (the same
client, update, dummy start, Table III's Q* and Adam at 0.1, Alg. 2's final attack) for
``--iterations`` (3,000, Fig. 3's budget) and scores the dummy every ``--every`` iterations
(Hungarian-matched SSIM and PSNR, :func:`~flbook.experiments.awa_diagnostics.run_variant`'s
``trace``). Its first 1,000 iterations are the grid's run step for step, so the curve at 1,000 is
Table IV's cell (to rounding across devices). Each curve goes to its own file
``book/results/awa_curves_resnet18/<model>_case<k>.json``; a finished file is skipped, so an
interrupted command resumes at the next curve.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from ..papers.song import TABLE_III
from . import keep_freed_memory, positive_int, result_path, save_result
from .awa_diagnostics import Variant, run_variant
from .awa_table4_resnet18 import MODELS, client, encode_images, seed
from ..names.awa_curves_resnet18 import NAME, file_name  # noqa: F401 - the curves' file names

ITERATIONS = 3000
"""Fig. 3's budget (Song §5.2: "after 3,000 attack iterations")."""
EVERY = 50
"""Iterations between two points of a curve."""


def curve(model: str, case: str, *, iterations: int = ITERATIONS, every: int = EVERY, device: str = "cpu") -> dict:
    """AWA with Table III's Q* at the grid cell ``(model, case)`` for ``iterations``, scored every
    ``every`` iterations; returns the final scores, the curve (``trace``), timings and images."""
    c = client(model, case, device)
    v = Variant(name=f"AWA, {model}, {case}", change="Song Figs. 3-4 at ResNet-18", method="AWA", model=model,
                n_images=4, epochs=c.E, batches=c.B, gradient_scale=c.scaled)
    out = run_variant(v, c.model, c.theta, c.Xd, c.yd, iterations=iterations, seed=seed(), trace_every=every)
    c.synchronize()
    images = out.pop("images")
    return dict(out, model=model, case=case, E=c.E, B=c.B, method="AWA", iterations=iterations, every=every,
                gradient_scale=c.scaled, device=str(c.device), device_name=c.device_name,
                seconds_per_iteration=out["seconds"] / max(1, out["evaluations"]), Q_source="Song Table III",
                Q_table_iii=TABLE_III[case], images=encode_images(images))


def done(model: str, case: str, iterations: int, every: int) -> bool:
    """Whether the curve's file exists with this budget and spacing."""
    path = result_path(file_name(model, case), "paper")
    if not path.is_file():
        return False
    data = json.loads(path.read_text())["data"]
    return data.get("iterations") == iterations and data.get("every") == every


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cuda (default cpu)")
    parser.add_argument("--iterations", type=positive_int, default=ITERATIONS, help="Adam iterations (Fig. 3: 3,000)")
    parser.add_argument("--every", type=positive_int, default=EVERY, help="iterations between two scored points")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--cases", nargs="+", type=int, default=[1, 2, 3, 4], choices=[1, 2, 3, 4])
    args = parser.parse_args(argv)
    torch.backends.cudnn.allow_tf32 = False  # float32 as on a CPU, as awa_table4_resnet18
    torch.backends.cuda.matmul.allow_tf32 = False
    keep_freed_memory()  # replayed training frees and re-allocates large tensors every iteration
    t0 = time.perf_counter()
    for model in args.models:
        for k in args.cases:
            case = f"case {k}"
            if done(model, case, args.iterations, args.every):
                continue
            data = curve(model, case, iterations=args.iterations, every=args.every, device=args.device)
            save_result(file_name(model, case), data, seeds=[seed()], scale_="paper")
            tr = data["trace"]
            print(f"{model} {case}: SSIM {tr['ssim'][-1]:.3f} at {tr['iteration'][-1]:,} iterations, "
                  f"{data['seconds_per_iteration'] * 1000:.0f} ms/iteration", flush=True)
    print(f"{NAME}: {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
